"""The class database under a hostile class: several writer processes (one killed mid-burst),
a class limit that concurrent writers cannot overshoot, and a folder SQLite cannot write in."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import torch

from core.classroom.drawings import to_pixels
from core.classroom.store import DEFAULT_LIMIT, LIMIT_ENV, ClassFullError, ClassStore, class_limit
from core.storage.database import Database
from core.storage.database_errors import RETRY_SECONDS, ConnectionLost, DatabaseError
from harness.browser import free_port
from harness.cluster import new_database, restartable_postgres
from tests.support.class_writer import drawing_of, own_id, run_threads, shared_ids

ROOT = Path(__file__).resolve().parents[2]
WRITER = [sys.executable, "-m", "tests.support.class_writer"]
"""A writer process's command, run in ROOT (``tests`` imports from there, not installed)."""
DEADLINE_S = 600  # generous: start-up of five interpreters on a loaded two-core machine


def digit(seed: int) -> torch.Tensor:
    """A (28, 28) drawing in [0, 1] with ink."""
    return drawing_of(str(uuid.UUID(int=seed)))[0]


def read_log(path: Path) -> list[list[str]]:
    """A writer's log as split lines (missing file: empty)."""
    return [line.split(" ", 2) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(condition, what: str) -> None:
    """Poll ``condition`` until it holds; fail after :data:`DEADLINE_S`."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_writer_processes_one_killed_mid_burst_lose_no_confirmed_drawing(lab_db, tmp_path):
    """4 writer processes × 4 threads (plus one killed by SIGKILL while it writes), each drawing
    also sent under ids every process shares: every confirmed drawing is stored exactly once,
    under the row id it was confirmed with and with the pixels and digit sent; no submission
    fails; a SQLite file passes SQLite's integrity check. On SQLite and on PostgreSQL."""
    url = lab_db
    threads, each, n_shared = 4, 12, 7
    survivors, victim = range(4), 4
    logs = {w: tmp_path / f"writer-{w}.log" for w in (*survivors, victim)}
    procs = {
        w: subprocess.Popen(
            [*WRITER, url, str(log), str(w), str(threads), str(each), str(n_shared)], cwd=ROOT
        )
        for w, log in logs.items()
    }
    try:
        # Kill the victim mid-burst: once it has some confirmed drawings, while it still sends.
        wait_for(
            lambda: (
                sum(r[0] == "ok" for r in read_log(logs[victim])) >= 5
                or procs[victim].poll() is not None
            ),
            "the victim's first confirmed drawings",
        )
        procs[victim].send_signal(signal.SIGKILL)
        for w in survivors:
            procs[w].wait(timeout=DEADLINE_S)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
    assert procs[victim].returncode == -signal.SIGKILL

    for w in survivors:
        lines = read_log(logs[w])
        assert procs[w].returncode == 0 and lines[-1] == ["done"]
        assert sum(r[0] == "ok" for r in lines) == threads * each * 2
    stored = check_confirmed_stored_once(url, logs.values())
    expected = {own_id(w, t, i) for w in survivors for t in range(threads) for i in range(each)}
    assert expected | set(shared_ids(n_shared)) <= stored


def check_confirmed_stored_once(url: str, logs) -> set[str]:
    """Check the writers' logs against the database: no failed submission, and every confirmed
    drawing stored exactly once, under the row id it was confirmed with and with the pixels and
    digit sent (a SQLite file also passes SQLite's integrity check).

    Returns:
        The submission ids stored.
    """
    confirmed: dict[str, set[int]] = {}
    for log in logs:
        lines = read_log(log)
        failed = [r for r in lines if r[0] == "error"]
        assert failed == [], f"{log.name}: {len(failed)} failed submissions, first {failed[0]}"
        for r in lines:
            if r[0] == "ok":
                confirmed.setdefault(r[1], set()).add(int(r[2]))
    db = Database(url)
    if db.path is not None:
        with sqlite3.connect(db.path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    rows = db.rows("SELECT id, label, pixels, submission_id FROM drawings")
    by_key: dict[str, list[tuple[int, int, bytes]]] = {}
    for row_id, label, pixels, key in rows:
        by_key.setdefault(key, []).append((row_id, label, bytes(pixels)))
    assert all(len(stored) == 1 for stored in by_key.values())  # UNIQUE held
    for key, row_ids in confirmed.items():
        assert len(row_ids) == 1, f"{key} was confirmed under several rows {row_ids}"
        assert key in by_key, f"confirmed drawing {key} is missing"
        (row_id, label, pixels) = by_key[key][0]
        image, meant = drawing_of(key)
        assert (row_id, label, pixels) == (next(iter(row_ids)), meant, to_pixels(image))
    return set(by_key)


def test_a_postgresql_restart_of_3_s_mid_burst_fails_and_doubles_no_submission(tmp_path):
    """3 writer processes × 2 threads send drawings (and ids every process shares) while the
    server stops (``pg_ctl stop -m fast``: open sessions are cut) and starts again 3 s later:
    every submission is confirmed, each stored exactly once (26 % of those sent during a 0.7 s
    restart failed before issue 60)."""
    writers, threads, each, n_shared = 3, 2, 60, 7
    logs = [tmp_path / f"writer-{w}.log" for w in range(writers)]
    confirmed = lambda: sum(r[0] == "ok" for log in logs for r in read_log(log))  # noqa: E731
    with restartable_postgres() as server:
        url = new_database(server.url)
        ClassStore(url).count()  # the table exists before the burst
        procs = [
            subprocess.Popen(
                [*WRITER, url, str(log), str(w), str(threads), str(each), str(n_shared)],
                cwd=ROOT,
            )
            for w, log in enumerate(logs)
        ]
        try:
            wait_for(lambda: confirmed() >= 60, "the writers' first confirmed drawings")
            server.stop()
            before = confirmed()
            time.sleep(3)
            down = confirmed() - before
            server.start()
            after = confirmed()
            for p in procs:
                p.wait(timeout=DEADLINE_S)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
        total = confirmed()
        print(f"confirmed: {before} before the stop, {down} while down, {total - after} after")
        stored = check_confirmed_stored_once(url, logs)
        assert total > after  # the burst went on through the restart
        assert [p.returncode for p in procs] == [0] * writers
        assert total == writers * threads * each * 2
    expected = {
        own_id(w, t, i) for w in range(writers) for t in range(threads) for i in range(each)
    }
    assert stored == expected | set(shared_ids(n_shared))


def test_a_server_that_does_not_come_back_is_reported_in_one_line_after_the_retries():
    pytest.importorskip("psycopg")
    store = ClassStore(f"postgresql://teacher:secret@127.0.0.1:{free_port()}/lab")
    began = time.monotonic()
    with pytest.raises(ConnectionLost, match="cannot be reached") as info:
        store.submit(digit(0), 0, "a", str(uuid.uuid4()))
    waited = time.monotonic() - began
    assert RETRY_SECONDS - 1.5 <= waited <= RETRY_SECONDS + 2  # tried again, then gave up
    assert "\n" not in str(info.value) and "secret" not in str(info.value)


# --- the class limit ---------------------------------------------------------------------


def test_a_full_class_refuses_new_drawings_with_one_line_and_keeps_the_rest(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'c.sqlite'}", limit=3)
    keys = [str(uuid.uuid4()) for _ in range(4)]
    rows = [store.submit(digit(i), i, "small", keys[i]) for i in range(3)]
    with pytest.raises(ClassFullError, match="full") as info:
        store.submit(digit(3), 3, "small", keys[3])
    assert "\n" not in str(info.value) and "3 drawings" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert store.submit(digit(0), 0, "small", keys[0]) == rows[0]  # a repeat is still answered
    assert store.records("small")[-1].id == rows[-1] and store.count("small") == 3
    store.submit(digit(3), 3, "other", keys[3])  # the limit is per class
    assert store.classes() == {"other": 1, "small": 3}
    store.clear("small")
    store.submit(digit(4), 4, "small", str(uuid.uuid4()))  # room again after a clear


def test_a_clear_up_to_the_newest_drawing_seen_keeps_the_later_ones(lab_db):
    store = ClassStore(lab_db)
    seen = [store.submit(digit(i), i, "small", str(uuid.uuid4())) for i in range(3)]
    later = store.submit(digit(3), 3, "small", str(uuid.uuid4()))
    store.submit(digit(4), 4, "other", str(uuid.uuid4()))
    assert store.clear("small", up_to=seen[-1]) == 3
    assert [r.id for r in store.records("small")] == [later]
    assert store.classes() == {"other": 1, "small": 1}


def test_threads_of_one_process_take_turns_to_write_and_give_up_with_one_line(tmp_path):
    """While one thread's write transaction is open, another thread of the process waits its
    turn; past the timeout it is told in one line and nothing is written; then it writes."""
    store = ClassStore(f"sqlite:///{tmp_path / 'lab.sqlite'}", timeout=0.3)
    kept = store.submit(digit(0), 0, "a", str(uuid.uuid4()))
    opened, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.db.transaction("a"):
            opened.set()
            release.wait(DEADLINE_S)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert opened.wait(DEADLINE_S)
        with pytest.raises(DatabaseError, match="busy") as info:
            store.submit(digit(1), 1, "a", str(uuid.uuid4()))
        assert "\n" not in str(info.value) and "0.3 s" in str(info.value)
        assert store.drawings("a").ids == [kept]  # readers do not wait
    finally:
        release.set()
        holder.join()
    later = store.submit(digit(1), 1, "a", str(uuid.uuid4()))
    assert store.drawings("a").ids == [kept, later]


def test_concurrent_writers_cannot_overshoot_the_limit(lab_db):
    limit, threads, each = 10, 6, 5
    url = lab_db
    stored, full, errors = [], [], []
    barrier = threading.Barrier(threads)
    lock = threading.Lock()

    def student(t: int) -> None:
        store = ClassStore(url, limit=limit)
        barrier.wait()
        for i in range(each):
            try:
                row = store.submit(digit(t * 10 + i), i, "race", str(uuid.uuid4()))
                with lock:
                    stored.append(row)
            except ClassFullError:
                with lock:
                    full.append(t)
            except Exception as exc:  # collected: a failure in a thread must fail the test
                errors.append(repr(exc))

    run_threads(student, threads)
    assert errors == []
    assert len(stored) == limit and len(full) == threads * each - limit
    assert ClassStore(url).count("race") == limit


def test_the_limit_is_configurable(monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert class_limit() == DEFAULT_LIMIT == ClassStore().limit
    monkeypatch.setenv(LIMIT_ENV, " 250 ")
    assert class_limit() == 250 == ClassStore().limit
    for bad in ("0", "-3", "many", "2.5"):
        monkeypatch.setenv(LIMIT_ENV, bad)
        with pytest.raises(DatabaseError, match=LIMIT_ENV) as info:
            ClassStore()
        assert "\n" not in str(info.value)


# --- a folder SQLite cannot write in ----------------------------------------------------------


def outcome_as_another_user(action) -> str:
    """Run ``action()`` in a forked child that cannot write the test's folders (as root, the
    child drops to the ``nobody`` user; root ignores file modes), and give what it raised or
    "ok"."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report one line through the pipe, never return into pytest
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                action()
                result = "ok"
            except Exception as exc:
                result = f"{type(exc).__name__}: {exc}"
            os.write(write, result.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return text


@pytest.fixture
def read_only_folder():
    """A folder the test's child cannot write in, holding a class database it may write."""
    base = Path(tempfile.mkdtemp(prefix="class-ro-"))
    folder = base / "data"
    folder.mkdir()
    db = folder / "class.sqlite"
    ClassStore(f"sqlite:///{db}").submit(digit(0), 1, "a", str(uuid.uuid4()))
    for extra in folder.glob("class.sqlite-*"):  # as a teacher copies one file in
        extra.unlink()
    db.chmod(0o666)
    for path in (base, folder):
        path.chmod(0o555)
    yield db
    for path in (base, folder):
        path.chmod(0o755)
    for path in sorted(base.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    base.rmdir()


def test_a_folder_sqlite_cannot_write_in_gets_its_own_message(read_only_folder):
    db = read_only_folder
    before = db.read_bytes()
    store = ClassStore(f"sqlite:///{db}")
    for action in (
        lambda: store.submit(digit(1), 2, "a", str(uuid.uuid4())),
        lambda: store.records("a"),
    ):
        text = outcome_as_another_user(action)
        assert text.startswith("DatabaseError: ") and "\n" not in text, text
        assert "folder is not writable" in text and "-wal" in text, text
        assert "not a usable" not in text
    assert db.read_bytes() == before
    new = read_only_folder.parent / "new.sqlite"
    text = outcome_as_another_user(
        lambda: ClassStore(f"sqlite:///{new}").submit(digit(1), 2, "a", str(uuid.uuid4()))
    )
    assert text.startswith("DatabaseError: ") and "cannot open or create" in text, text
    assert not new.exists()
