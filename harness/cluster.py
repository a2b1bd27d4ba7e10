"""Real servers for tests: a throw-away PostgreSQL cluster and a Ray head on free loopback ports.

The tests that use them skip on a machine without PostgreSQL's binaries, ``psycopg`` or ``ray``
(a laptop that never installed ``requirements-cluster.txt``), and fail in CI (``CI=true``),
where ``scripts/run_tests.sh`` installs them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

from harness.browser import free_port


def missing(what: str) -> None:
    """Skip the test for want of ``what``; fail it in CI (``CI=true``), where it must be there."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}; CI must install it (scripts/run_tests.sh)")
    pytest.skip(what)


def postgres_binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``, or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away PostgreSQL cluster (see :func:`restartable_postgres`).

    Attributes:
        url: Its base URL, ``postgresql://lab@127.0.0.1:PORT``.
        stop: Stops it (``pg_ctl stop -m fast``: sessions are cut, as in a restart).
        start: Starts it again on the same port and data.
    """

    url: str
    stop: Callable[[], None]
    start: Callable[[], None]


@contextmanager
def restartable_postgres() -> Iterator[PostgresServer]:
    """Start a PostgreSQL cluster (trust auth, user ``lab``) for the block, which may stop and
    start it again; it is stopped at the end.

    Skips (fails in CI) without the server binaries or ``psycopg``. As root, the server runs as
    the ``postgres`` user (PostgreSQL refuses root).
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg is not installed (pip install -r requirements-cluster.txt)")
    binaries = postgres_binaries()
    if binaries is None:
        missing("PostgreSQL is not installed (apt-get install postgresql)")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="bnn-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    pg_ctl = [*as_user, str(binaries / "pg_ctl"), "-D", str(data)]
    run = lambda *cmd: subprocess.run(  # noqa: E731
        cmd, check=True, capture_output=True, text=True, timeout=120
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    server = PostgresServer(
        f"postgresql://lab@127.0.0.1:{port}",
        stop=lambda: run(*pg_ctl, "stop", "-m", "fast", "-w"),
        start=lambda: run(*pg_ctl, "-l", str(folder / "log"), "-o", options, "-w", "start"),
    )
    try:
        run(*as_user, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "lab")
        server.start()
        yield server
    finally:
        subprocess.run([*pg_ctl, "stop", "-m", "fast"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """A :func:`restartable_postgres` for the block; yields its base URL."""
    with restartable_postgres() as server:
        yield server.url


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


class RayHead(NamedTuple):
    """A running Ray head (:func:`ray_head`).

    Attributes:
        address: The cluster's address (``host:port``), for a process on a node.
        client_address: Its Ray Client server's (``ray://host:port``), for a process elsewhere.
        temp_dir: Ray's temporary folder: its sessions' logs and sockets.
    """

    address: str
    client_address: str
    temp_dir: Path


@contextmanager
def ray_head() -> Iterator[RayHead]:
    """Start a one-CPU Ray head on loopback for the block, in a temporary folder of its own.

    Skips (fails in CI) without ``ray``. The head is stopped by its own PID (``ray stop`` would
    end every Ray process of the user), this process's Ray connection is closed and the folder
    removed.
    """
    try:
        import ray
    except ImportError:
        missing("ray is not installed (pip install -r requirements-cluster.txt)")
    port, client_port = free_port(), free_port()
    command = [
        str(Path(sys.executable).parent / "ray"),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--ray-client-server-port={client_port}",
        "--num-cpus=1",
        "--num-gpus=0",
        "--include-dashboard=false",
        "--object-store-memory=200000000",
        "--disable-usage-stats",
    ]
    folder = Path(tempfile.mkdtemp(prefix="bnn-ray-"))
    command.append(f"--temp-dir={folder}")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    log = folder / "head.log"
    with open(log, "wb") as out:
        head = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not (_listening(port) and _listening(client_port)):
            if head.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Ray head did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield RayHead(address, f"ray://127.0.0.1:{client_port}", folder)
    finally:
        ray.shutdown()
        head.terminate()
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        shutil.rmtree(log.parent, ignore_errors=True)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
