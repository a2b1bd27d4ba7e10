"""The database's errors in one clear line each, and trying again while a server restarts."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

DB_ENV = "BNN_CLASS_DB"
"""The setting naming the database, which the errors that ask to change it name."""
DB_FILE_ENV = "BNN_CLASS_DB_FILE"
"""The setting naming a file that holds the database URL (one with a password)."""
RETRY_SECONDS = 8.0
"""How long a call whose connection to the server failed is tried again (a restart)."""
_SERVER_GOING = ("57P01", "57P02", "57P03")
"""PostgreSQL's admin_shutdown, crash_shutdown and cannot_connect_now."""
T = TypeVar("T")


class DatabaseError(RuntimeError):
    """The lab's database cannot be used (busy, corrupt, unreachable); its message is one line.

    Nothing already stored is lost when it is raised: the failed operation changed nothing.
    """


class ConnectionLost(DatabaseError):
    """The connection to the database server could not be opened or was cut (a restart).

    :func:`retrying` tries such a call again; raised to its caller, its message is one line.
    """


def busy_message(where: str, timeout: float) -> str:
    """The line for a write that waited ``timeout`` seconds for another writer."""
    return (
        f"{where}: the lab's database is busy (locked by another writer for more than "
        f"{timeout:g} s); nothing was changed, try again"
    )


def translated(exc: Exception, where: str, timeout: float) -> DatabaseError:
    """One clear line for a database exception (SQLite's own error name decides which)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    name = getattr(exc, "sqlite_errorname", "") or ""
    keep = f"it was left untouched (move it away or point {DB_ENV} elsewhere)"
    if _connection_lost(exc):
        return ConnectionLost(
            f"{where}: the database server cannot be reached or cut the connection ({text}); "
            f"is it running, and is {DB_ENV} right?"
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return DatabaseError(busy_message(where, timeout))
    if name == "SQLITE_READONLY_DIRECTORY":
        return DatabaseError(
            f"{where}: the folder is not writable, and SQLite must create its -wal and -shm "
            f"files beside the database; nothing was changed (let the server's user write "
            f"in {Path(where).parent} or point {DB_ENV} elsewhere)"
        )
    if name.startswith("SQLITE_READONLY"):
        return DatabaseError(
            f"{where}: the lab's database is read-only for this server; nothing was changed "
            f"(let the server's user write it or point {DB_ENV} elsewhere)"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return DatabaseError(
            f"{where}: cannot open or create the lab's database (is the folder missing or "
            f"not writable?); point {DB_ENV} elsewhere"
        )
    if name == "SQLITE_NOTADB":
        return DatabaseError(f"{where}: file is not a SQLite database; {keep}")
    if isinstance(exc, sqlite3.DatabaseError):
        return DatabaseError(f"{where}: not a usable SQLite database ({text}); {keep}")
    return DatabaseError(f"{where}: database error ({text})")


def is_driver_error(exc: Exception) -> bool:
    """Whether an exception comes from the database driver (sqlite3 or psycopg)."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.split(".")[0] == "psycopg"


def _connection_lost(exc: Exception) -> bool:
    """Whether a driver's exception says that the connection to the server failed or was cut.

    psycopg reports a connection that could not be opened (refused, server starting or shutting
    down, but also a wrong user or database name) without a SQLSTATE, one cut by the server with
    class 08 or as an operator's shutdown; a constraint, a lock or a full class is none of them.
    """
    if isinstance(exc, sqlite3.Error) or not is_driver_error(exc):
        return False
    import psycopg  # the exception came from it

    state = getattr(exc, "sqlstate", None)
    return isinstance(exc, psycopg.OperationalError) and (
        state is None or state.startswith("08") or state in _SERVER_GOING
    )


def retrying(call: Callable[[], T], seconds: float = RETRY_SECONDS) -> T:
    """Run ``call``, again after a pause each time it raises :class:`ConnectionLost`.

    The pauses grow from 0.1 s to 1 s (doubling); no attempt starts after ``seconds``.

    Args:
        call: The operation; it must be safe to run again after a cut connection.
        seconds: How long to keep trying after the first attempt started.

    Returns:
        What ``call`` returns.

    Raises:
        ConnectionLost: The last attempt's line, saying how long it was tried, when the server
            did not come back in time.
    """
    deadline, pause = time.monotonic() + seconds, 0.1
    while True:
        try:
            return call()
        except ConnectionLost as exc:
            if time.monotonic() + pause > deadline:
                raise ConnectionLost(f"{exc} (tried for {seconds:g} s)") from exc
        time.sleep(pause)
        pause = min(2 * pause, 1.0)
