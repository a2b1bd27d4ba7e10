"""Real servers for tests: a throw-away PostgreSQL cluster on a free loopback port.

The tests that use it skip on a machine without PostgreSQL's binaries or ``psycopg`` (a laptop
that never installed ``requirements-cluster.txt``), and fail in CI (``CI=true``), where
``scripts/run_tests.sh`` installs both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser_util import free_port


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}; CI must install it (scripts/run_tests.sh)")
    pytest.skip(what)


def postgres_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``, or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a PostgreSQL cluster (trust auth, user ``lab``) for the block; yields its base URL.

    Skips (fails in CI) without the server binaries or ``psycopg``. As root, the server runs as
    the ``postgres`` user (PostgreSQL refuses root).
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install -r requirements-cluster.txt)")
    binaries = postgres_binaries()
    if binaries is None:
        _missing("PostgreSQL is not installed (apt-get install postgresql)")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="bnn-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    run = lambda *cmd: subprocess.run(  # noqa: E731
        [*as_user, *cmd], check=True, capture_output=True, text=True, timeout=120
    )
    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "lab")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(folder / "log")
        run(str(binaries / "pg_ctl"), "-D", str(data), "-l", log, "-o", options, "-w", "start")
        yield f"postgresql://lab@127.0.0.1:{port}"
    finally:
        subprocess.run(
            [*as_user, str(binaries / "pg_ctl"), "-D", str(data), "stop", "-m", "fast"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


def new_database(server: str) -> str:
    """Create an empty database on a cluster from :func:`postgres_cluster`.

    Args:
        server: The cluster's base URL.

    Returns:
        The new database's URL.
    """
    import psycopg

    name = f"lab_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"
