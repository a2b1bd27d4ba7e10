"""The class's drawings in a database: one small storage module (SQLite by default).

Each row is one student's drawing: an id, the class code (from the link's ``?class=...``), the
digit the student meant (0–9), the 28×28 input the models saw as 784 uint8 bytes (row-major,
0 = black, 255 = white ink), the UTC time it was stored and the client's submission id (a UUID,
``UNIQUE``: a double click or a retried submit is stored exactly once). No names, no addresses.

Where: ``BNN_CLASS_DB`` is a database URL, ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db`` (SQLAlchemy's convention), a plain file path, or
``postgresql://user:password@host/dbname`` for a deployment with several app replicas (needs
the ``psycopg`` package, which this project does not install; not tested here). By default it
is the SQLite file ``class_drawings.sqlite`` in the writable data folder
(:func:`core.storage.paths.data_dir`).

SQLite runs in WAL mode (readers never wait for a writer; one writer at a time), with a busy
timeout, and every submission is one short ``BEGIN IMMEDIATE … COMMIT`` transaction, so any
number of threads and processes on one host may write the file at once. The store reaches the
file only through SQLite: opening and closing it with anything else would drop the process's
POSIX locks on it and let two writers corrupt it. A locked database (busy beyond the timeout), a
file that is not a SQLite database or a folder SQLite cannot write in raises
:class:`ClassStoreError` with one clear line, chosen by SQLite's own error name; such a file is
never replaced, and reading a database that does not exist yet creates nothing (only a
submission creates the file).

A class holds at most ``BNN_CLASS_LIMIT`` drawings (default :data:`DEFAULT_LIMIT`); past it a
new drawing is refused with :class:`ClassFullError` (counted inside the write transaction, so
concurrent writers cannot overshoot it).

The SQL is plain ``INSERT``/``SELECT``/``DELETE`` with ``?`` placeholders, rewritten per
dialect, and ``INSERT … ON CONFLICT (submission_id) DO NOTHING`` (SQLite ≥ 3.24, PostgreSQL ≥
9.5); only the schema differs.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from core import settings
from core.storage.paths import data_dir

DB_ENV = "BNN_CLASS_DB"
DEFAULT_FILE = "class_drawings.sqlite"
DEFAULT_CLASS = "default"
CLASS_CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")
SIDE = 28
PIXELS = SIDE * SIDE
NUM_CLASSES = 10
EMPTY_INK = 0.05
"""A drawing whose brightest pixel is below this (in [0, 1]) is empty (as
:data:`core.data.preprocess.BLANK`)."""
BUSY_TIMEOUT_S = 5.0
LIMIT_ENV = "BNN_CLASS_LIMIT"
DEFAULT_LIMIT = 2000
"""Most drawings one class holds unless ``BNN_CLASS_LIMIT`` says otherwise."""

_SQLITE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS drawings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        class_code TEXT NOT NULL,
        label INTEGER NOT NULL CHECK (label BETWEEN 0 AND 9),
        pixels BLOB NOT NULL CHECK (length(pixels) = 784),
        created TEXT NOT NULL,
        submission_id TEXT NOT NULL UNIQUE
    )""",
    "CREATE INDEX IF NOT EXISTS drawings_by_class ON drawings (class_code, id)",
)
_POSTGRES_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS drawings (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        class_code TEXT NOT NULL,
        label INTEGER NOT NULL CHECK (label BETWEEN 0 AND 9),
        pixels BYTEA NOT NULL CHECK (octet_length(pixels) = 784),
        created TEXT NOT NULL,
        submission_id TEXT NOT NULL UNIQUE
    )""",
    "CREATE INDEX IF NOT EXISTS drawings_by_class ON drawings (class_code, id)",
)
_COLUMNS = "id, class_code, label, pixels, created"


class ClassFullError(ValueError):
    """The class already holds as many drawings as a class may; nothing was stored."""


class ClassStoreError(RuntimeError):
    """The class database cannot be used (busy, corrupt, unreachable); its message is one line.

    Nothing already stored is lost when it is raised: the failed operation changed nothing.
    """


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

    Args:
        code: The code, e.g. from the link's ``?class=``; None or blank means the default.

    Returns:
        The code (surrounding spaces removed), or :data:`DEFAULT_CLASS`.

    Raises:
        ValueError: If it is not 1–32 letters, digits, ``_`` or ``-``.
    """
    code = (code or "").strip() or DEFAULT_CLASS
    if not CLASS_CODE_PATTERN.fullmatch(code):
        raise ValueError(
            f"bad class code: use 1 to 32 letters, digits, '_' or '-' (got {len(code)} characters)"
        )
    return code


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


# --- database URLs -------------------------------------------------------------------------


def database_url() -> str:
    """Give the configured database URL.

    Returns:
        ``BNN_CLASS_DB``, or ``sqlite:///<data folder>/class_drawings.sqlite`` (absolute).
    """
    return settings.text(DB_ENV) or f"sqlite:///{data_dir() / DEFAULT_FILE}"


def class_limit() -> int:
    """Give the most drawings one class may hold.

    Returns:
        ``BNN_CLASS_LIMIT``, or :data:`DEFAULT_LIMIT`.

    Raises:
        ClassStoreError: If ``BNN_CLASS_LIMIT`` is not a whole number ≥ 1.
    """
    text = settings.text(LIMIT_ENV)
    if not text:
        return DEFAULT_LIMIT
    if not text.isdigit() or int(text) < 1:
        raise ClassStoreError(f"{LIMIT_ENV} must be a whole number ≥ 1, got {text[:20]!r}")
    return int(text)


def sqlite_path(url: str) -> Path | None:
    """Give the SQLite file a database URL names.

    Args:
        url: ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or a plain path.

    Returns:
        The file's absolute path; None for a ``postgresql://`` URL.

    Raises:
        ClassStoreError: For another scheme, or an in-memory or empty SQLite URL.
    """
    if url.startswith(("postgresql://", "postgres://")):
        return None
    if url.startswith("sqlite:"):
        if not url.startswith("sqlite:///"):
            raise ClassStoreError(f"{DB_ENV}: write sqlite:///path/to/file.db, got {url[:60]!r}")
        path = url.removeprefix("sqlite:///")
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        raise ClassStoreError(
            f"{DB_ENV}: unsupported database {scheme!r}: use sqlite or postgresql"
        )
    else:
        path = url
    if path in ("", ":memory:"):
        raise ClassStoreError(f"{DB_ENV}: an in-memory or empty SQLite path keeps nothing")
    return Path(path).expanduser().absolute()


def describe(url: str) -> str:
    """Name a database for display, without credentials.

    Args:
        url: A database URL.

    Returns:
        The SQLite file's path, or ``postgresql://host/dbname`` with the user and password left
        out.
    """
    try:
        path = sqlite_path(url)
    except ClassStoreError:
        path = None
    if path is not None:
        return str(path)
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}"


# --- connections ---------------------------------------------------------------------------

_initialised: set[str] = set()  # PostgreSQL URLs whose schema this process has ensured
_init_lock = threading.Lock()


def _has_table(conn: sqlite3.Connection) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drawings'"
    return conn.execute(query).fetchone() is not None


def _translate(exc: Exception, where: str, timeout: float) -> ClassStoreError:
    """One clear line for a database exception (SQLite's own error name decides which)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    name = getattr(exc, "sqlite_errorname", "") or ""
    keep = f"it was left untouched (move it away or point {DB_ENV} elsewhere)"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return ClassStoreError(
            f"{where}: the class database is busy (locked by another writer for more than "
            f"{timeout:g} s); nothing was changed, try again"
        )
    if name == "SQLITE_READONLY_DIRECTORY":
        return ClassStoreError(
            f"{where}: the folder is not writable, and SQLite must create its -wal and -shm "
            f"files beside the database; nothing was changed (let the server's user write "
            f"in {Path(where).parent} or point {DB_ENV} elsewhere)"
        )
    if name.startswith("SQLITE_READONLY"):
        return ClassStoreError(
            f"{where}: the class database is read-only for this server; nothing was changed "
            f"(let the server's user write it or point {DB_ENV} elsewhere)"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return ClassStoreError(
            f"{where}: cannot open or create the class database (is the folder missing or "
            f"not writable?); point {DB_ENV} elsewhere"
        )
    if name == "SQLITE_NOTADB":
        return ClassStoreError(f"{where}: file is not a SQLite database; {keep}")
    if isinstance(exc, sqlite3.DatabaseError):
        return ClassStoreError(f"{where}: not a usable SQLite database ({text}); {keep}")
    return ClassStoreError(f"{where}: class database error ({text})")


class ClassStore:
    """The class's drawings in one database (see the module's description).

    Every call opens its own short-lived connection, so one store may be shared by all threads
    (Streamlit sessions) of a server, and several processes on one host may share the SQLite
    file (not over a network file system: use PostgreSQL for replicas on several hosts).

    Args:
        url: A database URL; None for :func:`database_url`.
        timeout: Seconds a write waits for another writer before :class:`ClassStoreError`.
        limit: Most drawings one class may hold; None for :func:`class_limit`.
    """

    def __init__(
        self, url: str | None = None, timeout: float = BUSY_TIMEOUT_S, limit: int | None = None
    ):
        self.url = url or database_url()
        self.timeout = float(timeout)
        self.limit = class_limit() if limit is None else int(limit)
        self.path = sqlite_path(self.url)
        self._param = "?" if self.path is not None else "%s"

    def __repr__(self) -> str:
        """The store's database, without credentials."""
        return f"ClassStore({describe(self.url)!r})"

    # -- connections --

    def exists(self) -> bool:
        """Tell whether the database may hold drawings.

        Returns:
            False when the SQLite file does not exist yet (reading then creates nothing); always
            True for PostgreSQL.
        """
        return self.path is None or self.path.exists()

    @contextmanager
    def _connection(self, create: bool) -> Iterator[Any]:
        where = describe(self.url)
        try:
            if self.path is None:
                conn = self._postgres()
            else:
                conn = self._sqlite(create)
            try:
                yield conn
            finally:
                conn.close()
        except ClassStoreError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise _translate(exc, where, self.timeout) from exc
        except Exception as exc:  # psycopg's errors, when PostgreSQL is used
            if type(exc).__module__.split(".")[0] != "psycopg":
                raise
            raise _translate(exc, where, self.timeout) from exc

    def _sqlite(self, create: bool) -> sqlite3.Connection:
        path = self.path
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ClassStoreError(
                    f"{path}: cannot create the folder {path.parent} ({exc.strerror}); point "
                    f"{DB_ENV} elsewhere"
                ) from exc
        mode = "rwc" if create else "rw"
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode={mode}",
            uri=True,
            timeout=self.timeout,
            isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE … COMMIT
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if not _has_table(conn):
                with _init_lock:  # one thread of this process sets the file up
                    if not _has_table(conn):
                        conn.execute("PRAGMA journal_mode = WAL")
                        for statement in _SQLITE_SCHEMA:
                            conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        return conn

    def _postgres(self) -> Any:
        try:
            import psycopg  # optional: only PostgreSQL deployments install it
        except ImportError:
            raise ClassStoreError(
                f"{DB_ENV} is a PostgreSQL URL, which needs the psycopg package "
                "(pip install 'psycopg[binary]'); it is not installed"
            ) from None
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=int(self.timeout) or 1)
        if self.url not in _initialised:
            for statement in _POSTGRES_SCHEMA:
                conn.execute(statement)
            _initialised.add(self.url)
        return conn

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._param)

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
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
        """
        pixels = to_pixels(image)
        label = _label(label)
        code = check_class_code(class_code)
        key = _submission_id(submission_id)
        created = datetime.now(UTC).isoformat(timespec="milliseconds")
        find = self._sql("SELECT id FROM drawings WHERE submission_id = ?")
        with self._connection(create=True) as conn:
            self._begin(conn, code)
            try:
                row = conn.execute(find, (key,)).fetchone()
                if row is None:
                    self._check_room(conn, code)
                    conn.execute(
                        self._sql(
                            "INSERT INTO drawings (class_code, label, pixels, created, "
                            "submission_id) VALUES (?, ?, ?, ?, ?) "
                            "ON CONFLICT (submission_id) DO NOTHING"
                        ),
                        (code, label, pixels, created, key),
                    )
                    row = conn.execute(find, (key,)).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise
        return int(row[0])

    def _begin(self, conn: Any, class_code: str) -> None:
        """Start a write transaction that no other writer of the class runs beside.

        SQLite's ``BEGIN IMMEDIATE`` takes the database's one write lock; on PostgreSQL a
        transaction-scoped advisory lock on the class code serialises its writers, so the
        count that :meth:`_check_room` reads stays true until the commit.
        """
        if self.path is not None:
            conn.execute("BEGIN IMMEDIATE")
            return
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (class_code,))

    def _check_room(self, conn: Any, class_code: str) -> None:
        """Raise :class:`ClassFullError` when the class already holds :attr:`limit` drawings."""
        query = self._sql("SELECT COUNT(*) FROM drawings WHERE class_code = ?")
        (held,) = conn.execute(query, (class_code,)).fetchone()
        if int(held) >= self.limit:
            raise ClassFullError(
                f"class {class_code!r} is full: it holds {int(held)} drawings, the most one "
                "class may hold; nothing was stored (the teacher can export and clear it, or "
                "use a new class code)"
            )

    @staticmethod
    def _rollback(conn: Any) -> None:
        try:
            conn.execute("ROLLBACK")
        except Exception:  # the connection is closed next; the first error is the one raised
            pass

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple]:
        if not self.exists():
            return []
        with self._connection(create=False) as conn:
            return conn.execute(self._sql(statement), tuple(params)).fetchall()

    def records(self, class_code: str | None, limit: int | None = None) -> list[Drawing]:
        """List a class's drawings as records.

        Args:
            class_code: The class (see :func:`check_class_code`).
            limit: Keep only the newest ``limit`` drawings; None for all.

        Returns:
            The drawings, oldest first.

        Raises:
            ValueError: On a bad class code.
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
        """
        code = check_class_code(class_code)
        query = f"SELECT {_COLUMNS} FROM drawings WHERE class_code = ? ORDER BY id DESC"
        params: tuple = (code,)
        if limit is not None:
            query += " LIMIT ?"
            params = (code, max(int(limit), 0))
        rows = self._rows(query, params)
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
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
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
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
        """
        if class_code is None:
            rows = self._rows("SELECT COUNT(*) FROM drawings")
        else:
            code = check_class_code(class_code)
            rows = self._rows("SELECT COUNT(*) FROM drawings WHERE class_code = ?", (code,))
        return int(rows[0][0]) if rows else 0

    def classes(self) -> dict[str, int]:
        """Count the drawings of every class.

        Returns:
            Class code → number of drawings, sorted by code.

        Raises:
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
        """
        rows = self._rows(
            "SELECT class_code, COUNT(*) FROM drawings GROUP BY class_code ORDER BY class_code"
        )
        return {str(code): int(n) for code, n in rows}

    def clear(self, class_code: str | None) -> int:
        """Delete every drawing of one class (one transaction; other classes are kept).

        Args:
            class_code: The class (see :func:`check_class_code`).

        Returns:
            How many drawings were deleted.

        Raises:
            ValueError: On a bad class code.
            ClassStoreError: If the database is busy, corrupt or cannot be opened.
        """
        code = check_class_code(class_code)
        if not self.exists():
            return 0
        with self._connection(create=False) as conn:
            self._begin(conn, code)
            try:
                deleted = conn.execute(
                    self._sql("DELETE FROM drawings WHERE class_code = ?"), (code,)
                ).rowcount
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise
        return int(deleted)


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
        A :class:`ClassStore` on :func:`database_url`.

    Raises:
        ClassStoreError: If the URL is not a supported database.
    """
    return ClassStore(database_url())


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


def clear(class_code: str | None) -> int:
    """Delete a class's drawings from the configured database (:meth:`ClassStore.clear`).

    Args:
        class_code: The class.

    Returns:
        How many were deleted.
    """
    return store().clear(class_code)


def classes() -> dict[str, int]:
    """Count each class's drawings in the configured database (:meth:`ClassStore.classes`).

    Returns:
        Class code → number of drawings.
    """
    return store().classes()
