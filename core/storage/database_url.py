"""Where the lab's database is: ``BNN_CLASS_DB``, a file naming it, or SQLite in the data folder."""

from __future__ import annotations

from pathlib import Path

from core import settings
from core.paths import data_dir
from core.storage.database_errors import DB_ENV, DB_FILE_ENV, DatabaseError

DEFAULT_FILE = "class_drawings.sqlite"


def database_url() -> str:
    """Give the configured database URL.

    A URL with a password belongs in ``BNN_CLASS_DB_FILE``: a file readable only by the
    server's user (mode 0600), which Ray workers read on their node, where an environment
    variable would be copied into Ray's logs and every worker's environment.

    Returns:
        The URL in ``BNN_CLASS_DB_FILE`` (first line), else ``BNN_CLASS_DB``, else
        ``sqlite:///<data folder>/class_drawings.sqlite`` (absolute).

    Raises:
        DatabaseError: If ``BNN_CLASS_DB_FILE`` cannot be read, is empty, or may be read by
            other users (group or others have any permission on it).
    """
    file = settings.text(DB_FILE_ENV)
    if not file:
        return settings.text(DB_ENV) or f"sqlite:///{data_dir() / DEFAULT_FILE}"
    path = Path(file).expanduser()
    try:
        mode = path.stat().st_mode & 0o777
        lines = path.read_text(encoding="utf-8").strip().splitlines()
    except OSError as exc:
        raise DatabaseError(f"{DB_FILE_ENV} {path}: {exc.strerror or exc}") from exc
    if mode & 0o077:
        raise DatabaseError(
            f"{DB_FILE_ENV} {path} may be read by other users (mode {mode:04o}): chmod 600 it"
        )
    if not lines:
        raise DatabaseError(f"{DB_FILE_ENV} {path} is empty: write the database URL in it")
    return lines[0].strip()


def sqlite_path(url: str) -> Path | None:
    """Give the SQLite file a database URL names.

    Args:
        url: ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or a plain path.

    Returns:
        The file's absolute path; None for a ``postgresql://`` URL.

    Raises:
        DatabaseError: For another scheme, or an in-memory or empty SQLite URL.
    """
    if url.startswith(("postgresql://", "postgres://")):
        return None
    if url.startswith("sqlite:"):
        if not url.startswith("sqlite:///"):
            raise DatabaseError(f"{DB_ENV}: write sqlite:///path/to/file.db, got {url[:60]!r}")
        path = url.removeprefix("sqlite:///")
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        raise DatabaseError(f"{DB_ENV}: unsupported database {scheme!r}: use sqlite or postgresql")
    else:
        path = url
    if path in ("", ":memory:"):
        raise DatabaseError(f"{DB_ENV}: an in-memory or empty SQLite path keeps nothing")
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
    except DatabaseError:
        path = None
    if path is not None:
        return str(path)
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}"
