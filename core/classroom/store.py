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
NOTHING`` (SQLite ≥ 3.24, PostgreSQL ≥ 9.5); only the schema differs. A drawing's record and
its checks are :mod:`core.classroom.drawings`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core import settings
from core.classroom.drawings import (
    ClassDrawings,
    Drawing,
    as_tensors,
    check_class_code,
    checked_label,
    checked_submission_id,
    to_pixels,
)
from core.storage.database import BUSY_TIMEOUT_S, Database, Table
from core.storage.database_errors import DatabaseError

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
        label = checked_label(label)
        code = check_class_code(class_code)
        key = checked_submission_id(submission_id)
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
