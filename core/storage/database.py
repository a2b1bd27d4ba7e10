"""The lab's one database: SQLite by default, PostgreSQL for several app replicas.

The class's drawings (:mod:`core.classroom.store`) and the training jobs (:mod:`core.jobs.store`)
live in the same database, named by one URL, ``BNN_CLASS_DB``: ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db`` (SQLAlchemy's convention), a plain file path, or
``postgresql://user:password@host/dbname`` (needs ``psycopg``, from
``requirements-cluster.txt``). By default it is the SQLite file ``class_drawings.sqlite`` in the
writable data folder (:func:`core.paths.data_dir`).

SQLite runs in WAL mode (readers never wait for a writer; one writer at a time), with a busy
timeout, and every write is one short ``BEGIN IMMEDIATE … COMMIT`` transaction, so any number of
threads and processes on one host may write the file at once. The file is reached only through
SQLite: opening and closing it with anything else would drop the process's POSIX locks on it and
let two writers corrupt it. On PostgreSQL a write transaction takes a transaction-scoped advisory
lock on a key its caller names, so writers of one key (a class, the job queue) run one after
another and a count read inside the transaction stays true until the commit.

A locked database (busy beyond the timeout), a file that is not a SQLite database, a folder
SQLite cannot write in or a server that cannot be reached raises :class:`DatabaseError` with one
clear line, chosen by SQLite's own error name; such a file is never replaced, and reading a
database that does not exist yet creates nothing (only a write creates the file).

A PostgreSQL server that restarts refuses connections and cuts the open ones for a few seconds
(:class:`ConnectionLost`). :meth:`Database.write` and :meth:`Database.rows` then try again, after
pauses growing from 0.1 s to 1 s, for up to :data:`RETRY_SECONDS` (:func:`retrying`), so a
restart shorter than about 6 s fails no call. A write cut while it commits may have been
stored, so only idempotent writes belong in :meth:`Database.write` (the class's drawings are:
their submission id is unique). A wrong URL, user or database name is reported the same way, so
it too is reported only after those seconds.

Each store declares its tables (:class:`Table`, one statement list per dialect); they are created
on first use. The SQL is written with ``?`` placeholders and rewritten per dialect.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.storage.database_errors import (
    DB_ENV,
    DatabaseError,
    T,
    busy_message,
    is_driver_error,
    retrying,
    translated,
)
from core.storage.database_url import database_url, describe, sqlite_path

BUSY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Table:
    """One table a store keeps in the database, created on first use.

    Attributes:
        name: The table's name (checked for existence on SQLite).
        sqlite: Its ``CREATE … IF NOT EXISTS`` statements for SQLite.
        postgres: The same for PostgreSQL.
        added: Columns added since the table was first created (``"name TYPE …"``, each with
            a default), added to an older database's table on first use.
    """

    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]
    added: tuple[str, ...] = ()

    @classmethod
    def with_id(
        cls, name: str, columns: str, indexes: tuple[str, ...] = (), added: tuple[str, ...] = ()
    ) -> Table:
        """A table whose first column is an increasing ``id``, written once for both dialects.

        Args:
            name: The table's name.
            columns: The other columns' definitions, where ``{bytes}`` stands for the binary
                type and ``{length}`` for its length function.
            indexes: ``CREATE INDEX IF NOT EXISTS`` statements.
            added: Columns added later (see :attr:`added`), each with a default.

        Returns:
            The table, with ``id`` an autoincrement key (SQLite) or identity (PostgreSQL).
        """

        def create(key: str, binary: str, length: str) -> tuple[str, ...]:
            body = ", ".join([columns.format(bytes=binary, length=length), *added])
            return (f"CREATE TABLE IF NOT EXISTS {name} ({key}, {body})",)

        alter = tuple(f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {c}" for c in added)
        return cls(
            name,
            sqlite=(*create("id INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB", "length"), *indexes),
            postgres=(
                *create(
                    "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BYTEA", "octet_length"
                ),
                *alter,
                *indexes,
            ),
            added=added,
        )


# --- connections -----------------------------------------------------------------------------

_initialised: set[tuple[str, Table]] = set()  # (PostgreSQL URL, table) this process ensured
_init_lock = threading.Lock()
_writer_locks: dict[Path, threading.Lock] = {}
_writer_locks_guard = threading.Lock()


@contextmanager
def _writers_of(path: Path, timeout: float, where: str) -> Iterator[None]:
    """Wait up to ``timeout`` s for this process's turn to write the SQLite file ``path``.

    The threads of one process (an app server's sessions) queue here, blocked rather than
    polling, so that only one of them at a time waits in SQLite's busy handler: that handler
    retries on a timer, first come is not first served, and with many threads of many
    processes polling one file a thread can be passed over past the timeout.

    Raises:
        DatabaseError: The busy line (``where``), if the turn did not come in time (nothing
            was done).
    """
    with _writer_locks_guard:
        lock = _writer_locks.setdefault(path.resolve(), threading.Lock())
    if not lock.acquire(timeout=timeout):
        raise DatabaseError(busy_message(where, timeout))
    try:
        yield
    finally:
        lock.release()


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return conn.execute(query, (name,)).fetchone() is not None


def _lacking(conn: sqlite3.Connection, table: Table) -> list[str]:
    """The :attr:`Table.added` columns an existing SQLite table lacks."""
    have = {row[1] for row in conn.execute(f"PRAGMA table_info({table.name})")}
    return [column for column in table.added if column.split()[0] not in have]


def _add_columns(conn: sqlite3.Connection, table: Table) -> None:
    """Add the columns an older SQLite table lacks (another process may add them first)."""
    for column in _lacking(conn, table):
        try:
            conn.execute(f"ALTER TABLE {table.name} ADD COLUMN {column}")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):
                raise


class Database:
    """The lab's database at one URL, with the tables one store needs.

    Every call opens its own short-lived connection, so one object may be shared by all threads
    of a server, and several processes on one host may share the SQLite file (not over a network
    file system: use PostgreSQL for replicas on several hosts).

    Args:
        url: A database URL; None for :func:`database_url`.
        tables: The tables the caller uses, created on first use.
        timeout: Seconds a write waits for another writer (and a connection for the server)
            before :class:`DatabaseError`.

    Raises:
        DatabaseError: If the URL is not a supported database.
    """

    def __init__(
        self, url: str | None = None, tables: Sequence[Table] = (), timeout: float = BUSY_TIMEOUT_S
    ):
        self.url = url or database_url()
        self.tables = tuple(tables)
        self.timeout = float(timeout)
        self.path = sqlite_path(self.url)
        self._param = "?" if self.path is not None else "%s"

    def __repr__(self) -> str:
        """The database, without credentials."""
        return f"Database({describe(self.url)!r})"

    def exists(self) -> bool:
        """Tell whether the database may hold rows.

        Returns:
            False when the SQLite file does not exist yet (reading then creates nothing); always
            True for PostgreSQL.
        """
        return self.path is None or self.path.exists()

    def sql(self, statement: str) -> str:
        """Rewrite a statement's ``?`` placeholders for this database's dialect.

        Args:
            statement: SQL with ``?`` placeholders.

        Returns:
            The statement as this database's driver takes it.
        """
        return statement.replace("?", self._param)

    @contextmanager
    def connect(self, create: bool) -> Iterator[Any]:
        """Open a connection (autocommit; write through :meth:`transaction`).

        Args:
            create: Create the SQLite file and folder if missing (only writes should).

        Yields:
            A DB-API connection whose ``execute`` returns a cursor.

        Raises:
            DatabaseError: With one line, if the database cannot be used.
        """
        where = describe(self.url)
        try:
            conn = self._postgres() if self.path is None else self._sqlite(create)
        except DatabaseError:
            raise
        except Exception as exc:
            if not (isinstance(exc, OSError) or is_driver_error(exc)):
                raise
            raise translated(exc, where, self.timeout) from exc
        try:
            with closing(conn):
                yield conn
        except (DatabaseError, OSError):
            raise  # ours, or the caller's own (PermissionError is an OSError)
        except Exception as exc:  # SQLite's, or psycopg's when PostgreSQL is used
            if not is_driver_error(exc):
                raise
            raise translated(exc, where, self.timeout) from exc

    @contextmanager
    def transaction(self, key: str) -> Iterator[Any]:
        """Run one write transaction that no other writer of ``key`` runs beside.

        On SQLite the process's threads take turns (:func:`_writers_of`, up to the timeout),
        then ``BEGIN IMMEDIATE`` takes the database's one write lock; on PostgreSQL a
        transaction-scoped advisory lock on ``key`` serialises the writers of that key. The
        transaction commits when the block ends and rolls back if it raises.

        Args:
            key: What the transaction writes (e.g. a class code, ``"jobs"``).

        Yields:
            The connection, inside the transaction.

        Raises:
            DatabaseError: With one line, if the database cannot be used.
        """
        turn = (
            nullcontext()
            if self.path is None
            else _writers_of(self.path, self.timeout, describe(self.url))
        )
        with turn, self.connect(create=True) as conn:
            if self.path is not None:
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except Exception:  # the connection closes next; the first error is raised
                    pass
                raise

    def write(self, key: str, work: Callable[[Any], T]) -> T:
        """Run ``work(conn)`` in one :meth:`transaction` of ``key``, again on a cut connection.

        Tried again for up to :data:`RETRY_SECONDS` (:func:`retrying`).

        Args:
            key: What the transaction writes (e.g. a class code).
            work: Does the writing on the connection it is given. It may run more than once and
                an attempt cut while committing may have been stored, so it must be idempotent
                (e.g. an ``INSERT … ON CONFLICT DO NOTHING`` on a client's unique id).

        Returns:
            What ``work`` returns (of the attempt that committed).

        Raises:
            DatabaseError: With one line, if the database cannot be used (the server did not
                come back within :data:`RETRY_SECONDS`: :class:`ConnectionLost`).
        """

        def attempt() -> T:
            with self.transaction(key) as conn:
                return work(conn)

        return retrying(attempt)

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one query (``?`` placeholders) outside a transaction, again on a cut connection.

        Tried again for up to :data:`RETRY_SECONDS` (:func:`retrying`).

        Args:
            statement: A ``SELECT``.
            params: Its parameters.

        Returns:
            Every row; none when the SQLite file does not exist yet (nothing is created).

        Raises:
            DatabaseError: With one line, if the database cannot be used.
        """
        if not self.exists():
            return []

        def attempt() -> list[tuple]:
            with self.connect(create=False) as conn:
                return conn.execute(self.sql(statement), tuple(params)).fetchall()

        return retrying(attempt)

    def _sqlite(self, create: bool) -> sqlite3.Connection:
        path = self.path
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(
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
            missing = [t for t in self.tables if not _has_table(conn, t.name)]
            older = [t for t in self.tables if t not in missing and t.added and _lacking(conn, t)]
            if missing or older:
                with _init_lock:  # one thread of this process sets the file up
                    conn.execute("PRAGMA journal_mode = WAL")
                    for table in missing:
                        for statement in table.sqlite:
                            conn.execute(statement)
                    for table in older:
                        _add_columns(conn, table)
        except BaseException:
            conn.close()
            raise
        return conn

    def _postgres(self) -> Any:
        try:
            import psycopg  # optional: only PostgreSQL deployments install it
        except ImportError:
            raise DatabaseError(
                f"{DB_ENV} is a PostgreSQL URL, which needs the psycopg package "
                "(pip install -r requirements-cluster.txt); it is not installed"
            ) from None
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=int(self.timeout) or 1)
        try:
            for table in self.tables:
                if (self.url, table) not in _initialised:
                    with _init_lock:
                        conn.execute("SELECT pg_advisory_lock(hashtext('bnn-lab-schema'))")
                        try:
                            for statement in table.postgres:
                                conn.execute(statement)
                        finally:
                            conn.execute("SELECT pg_advisory_unlock(hashtext('bnn-lab-schema'))")
                        _initialised.add((self.url, table))
        except BaseException:
            conn.close()
            raise
        return conn
