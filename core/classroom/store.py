"""The class's drawings in a database: one small storage module (SQLite by default).

Each row is one student's drawing: an id, the class code (from the link's ``?class=...``), the
digit the student meant (0–9), the 28×28 input the models saw as 784 uint8 bytes (row-major,
0 = black, 255 = white ink), the UTC time it was stored and the client's submission id (a UUID,
``UNIQUE``: a double click or a retried submit is stored exactly once). No names, no addresses.

Where: the lab's database (:mod:`core.storage.database`: SQLite by default, PostgreSQL for
several app replicas, one URL in ``BNN_CLASS_DB``), table ``drawings``. Every submission is one
short write transaction keyed by its class code, so any number of threads, processes and
replicas may submit at once.

A class holds at most ``BNN_CLASS_LIMIT`` drawings (default :data:`DEFAULT_LIMIT`); past it a
new drawing is refused with :class:`ClassFullError` (counted inside the write transaction, so
concurrent writers cannot overshoot it).

A submission whose connection to a PostgreSQL server failed or was cut (a restart) is sent
again with the same submission id for a few seconds (:meth:`Database.write
<core.storage.database.Database.write>`), so a restart of a few seconds loses none and stores
none twice; a full class or a bad drawing is never retried.

The SQL is plain ``INSERT``/``SELECT``/``DELETE`` and ``INSERT … ON CONFLICT (submission_id) DO
NOTHING`` (SQLite ≥ 3.24, PostgreSQL ≥ 9.5); only the schema differs.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from core import settings
from core.storage.database import BUSY_TIMEOUT_S, Database, Table
from core.storage.database_errors import DatabaseError

CLASS_CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")
SIDE = 28
PIXELS = SIDE * SIDE
NUM_CLASSES = 10
EMPTY_INK = 0.05
"""A drawing whose brightest pixel is below this (in [0, 1]) is empty (as
:data:`core.data.preprocess.BLANK`)."""
LIMIT_ENV = "BNN_CLASS_LIMIT"
DEFAULT_LIMIT = 2000
"""Most drawings one class holds unless ``BNN_CLASS_LIMIT`` says otherwise."""

DRAWINGS = Table.with_id(
    "drawings",
    """class_code TEXT NOT NULL,
    label INTEGER NOT NULL CHECK (label BETWEEN 0 AND 9),
    pixels {bytes} NOT NULL CHECK ({length}(pixels) = 784),
    created TEXT NOT NULL,
    submission_id TEXT NOT NULL UNIQUE""",
    ("CREATE INDEX IF NOT EXISTS drawings_by_class ON drawings (class_code, id)",),
)
_COLUMNS = "id, class_code, label, pixels, created"


class ClassFullError(ValueError):
    """The class already holds as many drawings as a class may; nothing was stored."""


@dataclass(frozen=True)
class Drawing:
    """One stored drawing.

    Attributes:
        id: The row's id (increasing with submission order, never reused).
        class_code: The class it belongs to.
        label: The digit the student meant, 0–9.
        pixels: The 28×28 image as 784 uint8 bytes, row-major, 255 = full ink.
        created: When it was stored (UTC, timezone-aware).
    """

    id: int
    class_code: str
    label: int
    pixels: bytes
    created: datetime

    def image(self) -> np.ndarray:
        """Give the drawing as an array.

        Returns:
            uint8 ``(28, 28)``.
        """
        return np.frombuffer(self.pixels, np.uint8).reshape(SIDE, SIDE)


class ClassDrawings(NamedTuple):
    """A class's drawings as tensors, oldest first (unpacks as ``images, labels, ids, times``).

    Attributes:
        images: float32 ``(N, 1, 28, 28)`` in [0, 1], the inputs the models saw (to 1/255).
        labels: int64 ``(N,)``, the digits the students meant.
        ids: The rows' ids, ``N`` ints.
        times: When each was stored, ``N`` UTC datetimes.
    """

    images: torch.Tensor
    labels: torch.Tensor
    ids: list[int]
    times: list[datetime]


# --- validation ----------------------------------------------------------------------------


def check_class_code(code: str | None) -> str:
    """Validate a class code.

    There is no default class: a code nobody chose would be every teacher's, and guessable.

    Args:
        code: The code, e.g. from the link's ``?class=``.

    Returns:
        The code, surrounding spaces removed.

    Raises:
        ValueError: If it is missing, or not 1–32 letters, digits, ``_`` or ``-``.
    """
    code = (code or "").strip()
    if not code:
        raise ValueError("no class code: use the code your teacher gave")
    if not CLASS_CODE_PATTERN.fullmatch(code):
        raise ValueError(
            f"bad class code: use 1 to 32 letters, digits, '_' or '-' (got {len(code)} characters)"
        )
    return code


CODE_WORDS = (
    ("amber", "brave", "calm", "clever", "coral", "eager", "gentle", "golden", "happy", "jolly")
    + ("lively", "lucky", "merry", "quick", "quiet", "silver", "sunny", "swift", "witty"),
    ("badger", "beaver", "falcon", "gecko", "heron", "koala", "lynx", "marten", "otter", "panda")
    + ("puffin", "raven", "robin", "salmon", "tiger", "walrus", "wombat", "zebra", "finch"),
)
"""Words of :func:`new_class_code`: an adjective, then an animal."""


def new_class_code() -> str:
    """Propose a fresh class code that is easy to read out and type.

    Returns:
        ``adjective-animal-NN``, e.g. ``"swift-otter-42"`` (one of 36,100).
    """
    adjective, animal = (secrets.choice(words) for words in CODE_WORDS)
    return f"{adjective}-{animal}-{secrets.randbelow(100):02d}"


def _label(label: Any) -> int:
    if isinstance(label, bool) or not isinstance(label, int | np.integer):
        raise ValueError(f"label must be a whole number 0-9, got {label!r}")
    if not 0 <= int(label) < NUM_CLASSES:
        raise ValueError(f"label out of range: {int(label)} is not a digit 0-9")
    return int(label)


def _submission_id(submission_id: Any) -> str:
    try:
        return str(uuid.UUID(str(submission_id)))
    except ValueError:
        raise ValueError(f"bad submission id: {str(submission_id)[:40]!r} is not a UUID") from None


def to_pixels(image: torch.Tensor | np.ndarray) -> bytes:
    """Quantise a 28×28 input to the stored 784 bytes.

    Args:
        image: float ``(28, 28)`` or ``(1, 28, 28)`` in [0, 1], white ink on black (the
            preprocessed input the models saw).

    Returns:
        784 uint8 bytes, row-major, ``round(255 · value)``.

    Raises:
        ValueError: On a wrong shape, values outside [0, 1] (or NaN), or an empty drawing
            (brightest pixel below :data:`EMPTY_INK`).
    """
    x = torch.as_tensor(image).detach().cpu()
    if tuple(x.shape) not in ((SIDE, SIDE), (1, SIDE, SIDE)):
        raise ValueError(f"wrong shape: expected (28, 28) or (1, 28, 28), got {tuple(x.shape)}")
    x = x.double().reshape(SIDE, SIDE)
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise ValueError("pixel values must lie in [0, 1]")
    if float(x.max()) < EMPTY_INK:
        raise ValueError("empty drawing: there is no ink to send")
    return (x * 255).round().to(torch.uint8).numpy().tobytes()


# --- the store ------------------------------------------------------------------------------


def class_limit() -> int:
    """Give the most drawings one class may hold.

    Returns:
        ``BNN_CLASS_LIMIT``, or :data:`DEFAULT_LIMIT`.

    Raises:
        DatabaseError: If ``BNN_CLASS_LIMIT`` is not a whole number ≥ 1.
    """
    text = settings.text(LIMIT_ENV)
    if not text:
        return DEFAULT_LIMIT
    if not text.isdigit() or int(text) < 1:
        raise DatabaseError(f"{LIMIT_ENV} must be a whole number ≥ 1, got {text[:20]!r}")
    return int(text)


class ClassStore:
    """The class's drawings in the lab's database (see the module's description).

    Every call opens its own short-lived connection, so one store may be shared by all threads
    (Streamlit sessions) of a server and by several processes.

    Args:
        url: A database URL; None for :func:`~core.storage.database_url.database_url`.
        timeout: Seconds a write waits for another writer before :class:`DatabaseError`.
        limit: Most drawings one class may hold; None for :func:`class_limit`.

    Raises:
        DatabaseError: If the URL is not a supported database.
    """

    def __init__(
        self, url: str | None = None, timeout: float = BUSY_TIMEOUT_S, limit: int | None = None
    ):
        self.db = Database(url, (DRAWINGS,), timeout)
        self.limit = class_limit() if limit is None else int(limit)

    def __repr__(self) -> str:
        """The store's database, without credentials."""
        return f"ClassStore({self.db!r})"

    @property
    def url(self) -> str:
        """The database's URL."""
        return self.db.url

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None on PostgreSQL."""
        return self.db.path

    def exists(self) -> bool:
        """Tell whether the database may hold drawings (:meth:`Database.exists`)."""
        return self.db.exists()

    # -- the API --

    def submit(
        self,
        image: torch.Tensor | np.ndarray,
        label: int,
        class_code: str | None,
        submission_id: str,
    ) -> int:
        """Store one drawing, exactly once per submission id.

        Args:
            image: float ``(28, 28)`` or ``(1, 28, 28)`` in [0, 1], the input the models saw.
            label: The digit the student meant, 0–9.
            class_code: The class (see :func:`check_class_code`).
            submission_id: The client's UUID for this drawing; a repeat of it stores nothing.

        Returns:
            The row's id (the existing row's for a repeated submission id, even when the class
            is full).

        Raises:
            ClassFullError: If the class already holds :attr:`limit` drawings (a
                :class:`ValueError`).
            ValueError: On an empty drawing, a wrong shape, a label out of range, a bad class
                code or submission id.
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        pixels = to_pixels(image)
        label = _label(label)
        code = check_class_code(class_code)
        key = _submission_id(submission_id)
        created = datetime.now(UTC).isoformat(timespec="milliseconds")
        sql = self.db.sql
        find = sql("SELECT id FROM drawings WHERE submission_id = ?")

        def store_once(conn: Any) -> int:
            row = conn.execute(find, (key,)).fetchone()
            if row is None:
                self._check_room(conn, code)
                conn.execute(
                    sql(
                        "INSERT INTO drawings (class_code, label, pixels, created, "
                        "submission_id) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (submission_id) DO NOTHING"
                    ),
                    (code, label, pixels, created, key),
                )
                row = conn.execute(find, (key,)).fetchone()
            return int(row[0])

        return self.db.write(code, store_once)

    def _check_room(self, conn: Any, class_code: str) -> None:
        """Raise :class:`ClassFullError` when the class already holds :attr:`limit` drawings."""
        query = self.db.sql("SELECT COUNT(*) FROM drawings WHERE class_code = ?")
        (held,) = conn.execute(query, (class_code,)).fetchone()
        if int(held) >= self.limit:
            raise ClassFullError(
                f"class {class_code!r} is full: it holds {int(held)} drawings, the most one "
                "class may hold; nothing was stored (the teacher can export and clear it, or "
                "use a new class code)"
            )

    def records(self, class_code: str | None, limit: int | None = None) -> list[Drawing]:
        """List a class's drawings as records.

        Args:
            class_code: The class (see :func:`check_class_code`).
            limit: Keep only the newest ``limit`` drawings; None for all.

        Returns:
            The drawings, oldest first.

        Raises:
            ValueError: On a bad class code.
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        code = check_class_code(class_code)
        query = f"SELECT {_COLUMNS} FROM drawings WHERE class_code = ? ORDER BY id DESC"
        params: tuple = (code,)
        if limit is not None:
            query += " LIMIT ?"
            params = (code, max(int(limit), 0))
        rows = self.db.rows(query, params)
        return [
            Drawing(int(i), str(c), int(y), bytes(p), datetime.fromisoformat(t))
            for i, c, y, p, t in reversed(rows)
        ]

    def drawings(self, class_code: str | None) -> ClassDrawings:
        """Give a class's drawings as tensors, oldest first.

        Args:
            class_code: The class (see :func:`check_class_code`).

        Returns:
            ``(images (N, 1, 28, 28) float32 in [0, 1], labels (N,) int64, ids, times)``.

        Raises:
            ValueError: On a bad class code.
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        return as_tensors(self.records(class_code))

    def count(self, class_code: str | None = None) -> int:
        """Count drawings.

        Args:
            class_code: The class (see :func:`check_class_code`); None counts every class.

        Returns:
            The number of stored drawings.

        Raises:
            ValueError: On a bad class code.
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        if class_code is None:
            rows = self.db.rows("SELECT COUNT(*) FROM drawings")
        else:
            code = check_class_code(class_code)
            rows = self.db.rows("SELECT COUNT(*) FROM drawings WHERE class_code = ?", (code,))
        return int(rows[0][0]) if rows else 0

    def classes(self) -> dict[str, int]:
        """Count the drawings of every class.

        Returns:
            Class code → number of drawings, sorted by code.

        Raises:
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        rows = self.db.rows(
            "SELECT class_code, COUNT(*) FROM drawings GROUP BY class_code ORDER BY class_code"
        )
        return {str(code): int(n) for code, n in rows}

    def clear(self, class_code: str | None, up_to: int | None = None) -> int:
        """Delete a class's drawings (one transaction; other classes are kept).

        Args:
            class_code: The class (see :func:`check_class_code`).
            up_to: Delete only the drawings numbered ``up_to`` or lower (the newest one the
                teacher saw), keeping any sent since; None deletes them all.

        Returns:
            How many drawings were deleted.

        Raises:
            ValueError: On a bad class code.
            DatabaseError: If the database is busy, corrupt or cannot be opened.
        """
        code = check_class_code(class_code)
        if not self.exists():
            return 0
        query, params = "DELETE FROM drawings WHERE class_code = ?", (code,)
        if up_to is not None:
            query, params = f"{query} AND id <= ?", (code, int(up_to))
        return self.db.write(
            code, lambda conn: int(conn.execute(self.db.sql(query), params).rowcount)
        )


def as_tensors(records: Sequence[Drawing]) -> ClassDrawings:
    """Turn drawing records into tensors.

    Args:
        records: The drawings, in the order wanted.

    Returns:
        ``(images (N, 1, 28, 28) float32 in [0, 1], labels (N,) int64, ids, times)``.
    """
    if records:
        raw = np.frombuffer(b"".join(r.pixels for r in records), np.uint8)
        images = torch.from_numpy(raw.reshape(-1, 1, SIDE, SIDE).astype(np.float32) / 255.0)
    else:
        images = torch.zeros(0, 1, SIDE, SIDE)
    labels = torch.tensor([r.label for r in records], dtype=torch.long)
    return ClassDrawings(images, labels, [r.id for r in records], [r.created for r in records])


# --- module-level shortcuts on the configured database -------------------------------------


def store() -> ClassStore:
    """Open the configured store (``BNN_CLASS_DB`` is read at each call).

    Returns:
        A :class:`ClassStore` on :func:`~core.storage.database_url.database_url`.

    Raises:
        DatabaseError: If the URL is not a supported database.
    """
    return ClassStore()


def submit(
    image: torch.Tensor | np.ndarray, label: int, class_code: str | None, submission_id: str
) -> int:
    """Store one drawing in the configured database (:meth:`ClassStore.submit`).

    Args:
        image: float ``(28, 28)`` or ``(1, 28, 28)`` in [0, 1].
        label: The digit meant, 0–9.
        class_code: The class.
        submission_id: The client's UUID for this drawing.

    Returns:
        The row's id.
    """
    return store().submit(image, label, class_code, submission_id)


def drawings(class_code: str | None) -> ClassDrawings:
    """Give a class's drawings from the configured database (:meth:`ClassStore.drawings`).

    Args:
        class_code: The class.

    Returns:
        ``(images (N, 1, 28, 28), labels (N,), ids, times)``, oldest first.
    """
    return store().drawings(class_code)


def count(class_code: str | None = None) -> int:
    """Count drawings in the configured database (:meth:`ClassStore.count`).

    Args:
        class_code: The class; None for all.

    Returns:
        The number of drawings.
    """
    return store().count(class_code)


def clear(class_code: str | None, up_to: int | None = None) -> int:
    """Delete a class's drawings from the configured database (:meth:`ClassStore.clear`).

    Args:
        class_code: The class.
        up_to: Delete only the drawings numbered ``up_to`` or lower; None for all.

    Returns:
        How many were deleted.
    """
    return store().clear(class_code, up_to)


def classes() -> dict[str, int]:
    """Count each class's drawings in the configured database (:meth:`ClassStore.classes`).

    Returns:
        Class code → number of drawings.
    """
    return store().classes()
