"""The training queue's limits, on SQLite and on a real PostgreSQL server: a student is counted
by browser and by network address (private windows share one allowance), the class's queue
holds at most its cap of students' jobs even when ten submit at once, the teacher's jobs are
exempt and start first, the teacher's limits are kept in the database, and an older database
gains the new columns."""

from __future__ import annotations

import json
import threading

import pytest

from core.jobs import JobQueue, JobStatus, JobStore, make_request
from core.jobs.limits import LimitError, Limits, client_address
from core.jobs.owners import Visitor
from core.jobs.schema import JOBS
from core.storage.database import Database, Table

SMALL = {"n_train": 1000, "epochs": 2}
TEACHER = Visitor("teacher-browser", teacher=True, address="192.0.2.1")


def student(n: int, address: str = "") -> Visitor:
    return Visitor(f"browser{n}", address=address)


def active(store: JobStore) -> list[str]:
    return [j.request.name for j in store.jobs() if j.status.active]


def test_private_windows_of_one_computer_share_one_allowance(lab_db):
    store = JobStore(lab_db)
    windows = [student(n, "192.0.2.7") for n in range(3)]  # three contexts, one machine
    for n, window in enumerate(windows):
        store.add(make_request(f"w{n}", "mlp", **SMALL), window)
    for window in (*windows, student(9, "192.0.2.7")):
        with pytest.raises(LimitError, match="You have 3 jobs queued or running"):
            store.add(make_request("w4", "mlp", **SMALL), window)
    assert store.room(student(9, "192.0.2.7")).mine == 3
    store.add(make_request("other", "mlp", **SMALL), student(5, "192.0.2.8"))  # its own
    moved = Visitor("browser0", address="198.51.100.4")  # the same browser on another network
    store.add(make_request("m1", "mlp", **SMALL), moved)
    store.add(make_request("m2", "mlp", **SMALL), moved)
    with pytest.raises(LimitError, match="You have 3 jobs"):  # counted by browser there
        store.add(make_request("m3", "mlp", **SMALL), moved)
    local = [student(n) for n in (20, 21)]  # loopback: no address, each browser its own
    for n, window in enumerate(local):
        for k in range(3):
            store.add(make_request(f"l{n}{k}", "mlp", **SMALL), window)
    assert len(active(store)) == 12
    rows = store.db.rows("SELECT owner, address FROM jobs WHERE name = 'w1'")
    assert rows == [("browser1", "192.0.2.7")]


def test_the_class_queue_holds_its_cap_of_students_jobs_and_the_teachers_go_beyond(
    lab_db, monkeypatch
):
    monkeypatch.setenv("BNN_QUEUE_JOBS", "4")
    store = JobStore(lab_db)
    big = make_request("big", "mlp", epochs=200)  # 12,000,000 images: over the per-job limit
    with pytest.raises(LimitError, match="at most 1,000,000"):
        store.add(big, student(4))
    ids = [store.add(make_request(f"s{n}", "mlp", **SMALL), student(n)) for n in range(4)]
    with pytest.raises(LimitError, match=r"The class's queue is full \(4 jobs"):
        store.add(make_request("s4", "mlp", **SMALL), student(4))
    room = store.room(student(4))
    assert (room.mine, room.students, room.free) == (0, 4, 0)
    assert "room for 0 more of 4" in room.describe(teacher=False)
    for n in range(4):  # the teacher's own jobs: no limit, not counted
        store.add(make_request(f"t{n}", "mlp", **SMALL), TEACHER)
    store.add(big, TEACHER)
    assert store.room(student(4)).students == 4
    assert store.cancel(ids[0], student(0))
    store.add(make_request("s4", "mlp", **SMALL), student(4))  # room again
    assert len(active(store)) == 9


def test_workers_take_the_teachers_jobs_first_and_the_page_shows_that_order(lab_db, tmp_path):
    queue = JobQueue(workers=1, threads=1, directory=tmp_path, url=lab_db)  # starts no worker
    store = queue.store
    order = [("s1", student(1)), ("s2", student(2)), ("t1", TEACHER), ("s3", student(3))]
    order.append(("t2", TEACHER))
    ids = {name: store.add(make_request(name, "mlp", **SMALL), v) for name, v in order}
    expected = ["t1", "t2", "s1", "s2", "s3"]
    positions = {j.request.name: j.position for j in store.jobs()}
    assert positions == {name: expected.index(name) + 1 for name in ids}
    assert [queue.position(ids[name]) for name in expected] == [1, 2, 3, 4, 5]
    assert [j.teacher for j in store.jobs()] == [False, False, True, False, True]
    claimed = []
    while (job := store.claim("elsewhere:1:x", "cpu")) is not None:
        claimed.append(job.request.name)
        left = [n for n in expected if n not in claimed]
        assert [store.get(ids[n]).position for n in left] == list(range(1, len(left) + 1))
    assert claimed == expected
    assert all(j.status is JobStatus.RUNNING for j in store.jobs())


def test_the_teachers_limits_are_kept_for_every_store_of_the_database(lab_db, monkeypatch):
    JobStore(lab_db).set_limits(Limits(student_jobs=1, class_jobs=2, job_images=1_200_000), TEACHER)
    monkeypatch.setenv("BNN_QUEUE_JOBS", "50")  # the settings are only the defaults now
    other = JobStore(lab_db)  # another replica, or a restart
    assert other.limits() == Limits(1, 2, 1_200_000)
    other.add(make_request("full", "mlp", epochs=20), student(1))  # 20 × 60,000
    with pytest.raises(LimitError, match="You have 1 jobs"):
        other.add(make_request("more", "mlp", **SMALL), student(1, "192.0.2.5"))
    other.add(make_request("next", "mlp", **SMALL), student(2))
    with pytest.raises(LimitError, match="queue is full"):
        other.add(make_request("late", "mlp", **SMALL), student(3))
    with pytest.raises(PermissionError, match="only the teacher"):
        other.set_limits(Limits(9, 99, 9_000_000), student(1))
    with pytest.raises(ValueError, match="at least 1"):
        other.set_limits(Limits(0, 99, 9_000_000), TEACHER)
    other.set_limits(Limits(3, 5, 600_000), TEACHER)
    assert JobStore(lab_db).limits() == Limits(3, 5, 600_000)


def test_ten_students_submitting_at_once_never_pass_the_class_cap(lab_db, monkeypatch):
    """Each thread is a student on its own replica (store); the count and the insert are one
    transaction under the queue's lock, so exactly the cap's number get in."""
    monkeypatch.setenv("BNN_QUEUE_JOBS", "4")
    JobStore(lab_db).jobs()  # the tables exist before the race
    start = threading.Barrier(10)
    results: list[object] = [None] * 10

    def submit(n: int) -> None:
        store = JobStore(lab_db)
        start.wait()
        try:
            results[n] = store.add(make_request(f"r{n}", "mlp", **SMALL), student(n, f"10.0.0.{n}"))
        except Exception as exc:  # recorded, checked below
            results[n] = exc

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    accepted = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, LimitError)]
    assert (len(accepted), len(refused)) == (4, 6), results
    assert all("queue is full" in str(r) for r in refused)
    assert len(active(JobStore(lab_db))) == 4


def test_an_older_database_gains_the_new_columns(lab_db):
    """A jobs table made before addresses and the teacher's jobs were recorded keeps its jobs."""
    added = ", " + ", ".join(JOBS.added)
    old = Table(
        "jobs",
        sqlite=tuple(s.replace(added, "") for s in JOBS.sqlite),
        postgres=tuple(s.replace(added, "") for s in JOBS.postgres if "ALTER" not in s),
    )
    assert all("address" not in s for s in old.sqlite + old.postgres)
    db = Database(lab_db, (old,))
    with db.transaction("jobs") as conn:
        conn.execute(
            db.sql(
                "INSERT INTO jobs (name, owner, request, status, submitted) "
                "VALUES (?, ?, ?, 'queued', 0)"
            ),
            ("before", "anna", json.dumps(make_request("before", "mlp", **SMALL).to_dict())),
        )
    store = JobStore(lab_db)
    (job,) = store.jobs()
    assert (job.request.name, job.teacher, job.position) == ("before", False, 1)
    store.add(make_request("after", "mlp", **SMALL), student(1, "192.0.2.7"))
    assert store.db.rows("SELECT name, address, teacher FROM jobs ORDER BY id") == [
        ("before", "", 0),
        ("after", "192.0.2.7", 0),
    ]


def test_a_students_address_is_the_connections_or_the_trusted_proxys_last_hop(monkeypatch):
    assert client_address("192.0.2.7") == "192.0.2.7"
    assert client_address("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_address(None) == client_address("127.0.0.1") == client_address("::1") == ""
    assert client_address("garbage") == client_address("") == ""
    assert client_address("2001:db8::1") == client_address("2001:db8::ffff:2") == "2001:db8::/64"
    assert client_address("10.0.0.2", "6.6.6.6") == "10.0.0.2"  # no proxy trusted: ignored
    monkeypatch.setenv("BNN_TRUSTED_PROXY", "1")
    assert client_address("10.0.0.2", "6.6.6.6, 192.0.2.9") == "192.0.2.9"  # the proxy's view
    assert client_address("10.0.0.2", "") == "10.0.0.2"  # reached without the proxy
    assert client_address("10.0.0.2", "unknown") == ""
