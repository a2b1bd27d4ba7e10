"""Training jobs in the lab's database, on SQLite and on a real PostgreSQL server: two
replicas share one queue, a job runs exactly once, cancel crosses processes, progress and
live-curve points round-trip, and a job whose server died is failed with one line while queued
jobs survive for the next server."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.jobs import JobQueue, JobStatus, JobStore, TrainRequest, make_request
from core.jobs.owners import Visitor
from core.jobs.records import Report
from core.jobs.schema import MAX_STEP_POINTS
from core.jobs.workers import HOST, PROCESS, STALE_S, worker_gone
from core.training import EpochStats, StepStats
from harness.cluster import new_database, restartable_postgres
from tests.unit.test_jobs import Gate, wait_for

ROOT = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "tests.support.job_worker"]
"""A server process's command, run in ROOT (``tests`` imports from there, not installed)."""


def test_two_replicas_share_one_queue_and_each_job_runs_once(lab_db, tmp_path):
    gate = Gate()
    replicas = [
        JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path, url=lab_db)
        for _ in range(2)
    ]
    try:
        names = [f"job{i}" for i in range(6)]
        ids = [
            replicas[i % 2].submit(make_request(name, "mlp"), Visitor(f"student{i}"))
            for i, name in enumerate(names)
        ]
        wait_for(lambda: gate.most == 2, timeout=30)  # one job in each replica
        assert [j.id for j in replicas[0].jobs()] == [j.id for j in replicas[1].jobs()] == ids
        running = [j for j in replicas[1].jobs() if j.status is JobStatus.RUNNING]
        assert len(running) == 2 and len({j.worker for j in running}) == 1  # one process
        assert [replicas[0].position(i) for i in ids[2:]] == [1, 2, 3, 4]
        gate.release.set()
        assert all(replicas[i % 2].wait(i, 30).status is JobStatus.DONE for i in ids)
        assert sorted(gate.order) == names and gate.most == 2  # each exactly once
    finally:
        gate.release.set()
        for queue in replicas:
            queue.shutdown()


def test_a_cancel_reaches_a_job_that_another_server_process_trains(lab_db, tmp_path):
    here = JobQueue(workers=1, threads=1, directory=tmp_path, url=lab_db)  # starts no worker
    job_id = here.store.add(_owned("far", Visitor("anna")))
    server = subprocess.Popen([*WORKER, lab_db], cwd=ROOT)
    try:
        wait_for(lambda: here.get(job_id).fraction == 0.25, timeout=120)
        assert here.get(job_id).worker != PROCESS  # the other process trains it
        assert here.cancel(job_id, Visitor("anna"))
        stopped = here.wait(job_id, 30)  # read at the other process's next report
        assert stopped.status is JobStatus.CANCELLED and stopped.message.startswith("cancelled")
        assert server.poll() is None  # its worker goes on
    finally:
        server.kill()
        server.wait()
        here.shutdown()


def test_progress_and_live_curve_points_round_trip(lab_db):
    store = JobStore(lab_db)
    job_id = store.add(make_request("curves", "bbb", epochs=3))
    job = store.claim(PROCESS, "cpu")
    assert job.id == job_id and job.status is JobStatus.RUNNING and job.device == "cpu"
    assert store.claim(PROCESS, "cpu") is None  # nothing else waits
    epochs = [EpochStats(e, 30.0 - e, 0.2, 1e6, 0.05, 0.04, 0.15, 1.5) for e in (1, 2)]
    steps = [StepStats(1, i / 5000, 31.0, 0.3, 1e6, 0.1) for i in range(2 * MAX_STEP_POINTS + 1)]
    assert not store.report(job_id, Report(0.5, "epoch 2 of 3", epochs, steps[:100]))
    assert not store.report(job_id, Report(0.6, "epoch 3 of 3", [], steps[100:]))
    job = store.get(job_id)
    assert (job.fraction, job.message, job.history) == (0.6, "epoch 3 of 3", epochs)
    assert job.steps == steps[::3] and len(job.steps) <= MAX_STEP_POINTS
    store.finish(
        job_id,
        JobStatus.DONE,
        Report(0.99, "evaluating"),
        message="saved",
        path=Path("/models/curves.pt"),
        metrics={"test_error": 0.02, "nll": 0.07},
    )
    job = store.get(job_id)
    assert (job.status, job.fraction, job.message) == (JobStatus.DONE, 1.0, "saved")
    assert job.path == Path("/models/curves.pt") and job.metrics["nll"] == 0.07
    assert job.request == make_request("curves", "bbb", epochs=3)
    assert store.report(job_id, Report(0.7, "late")) and store.get(job_id).message == "saved"


def test_a_running_jobs_reports_and_end_outlast_a_postgresql_restart():
    """A 3 s restart of the database mid-job: the progress report sent meanwhile waits for the
    server and is stored, its curve points once; a cancel and the job's end are stored too."""
    with restartable_postgres() as server:
        store = JobStore(new_database(server.url))
        job_id = store.add(make_request("restart", "mlp", epochs=3))
        store.claim(PROCESS, "cpu")
        store.begin(job_id, PROCESS, "cpu")
        epoch = EpochStats(1, 30.0, 0.2, 1e6, 0.05, 0.04, 0.15, 1.5)
        server.stop()
        restart = threading.Timer(3.0, server.start)
        restart.start()
        try:
            asked = store.report(job_id, Report(0.4, "epoch 1 of 3", [epoch], []))
        finally:
            restart.join()
        assert not asked and store.get(job_id).history == [epoch]
        server.stop()
        threading.Timer(2.0, server.start).start()
        assert store.cancel(job_id, Visitor(teacher=True))  # waits for the server, then stored
        store.finish(job_id, JobStatus.CANCELLED, Report(0.5, "stopping"), message="cancelled")
        job = store.get(job_id)
        assert (job.status, job.message, job.history) == (JobStatus.CANCELLED, "cancelled", [epoch])


def test_a_killed_server_fails_its_running_job_and_keeps_the_queued_one(lab_db, tmp_path):
    store = JobStore(lab_db)
    running = store.add(make_request("running", "mlp"))
    waiting = store.add(make_request("waiting", "mlp"))
    server = subprocess.Popen([*WORKER, lab_db], cwd=ROOT)
    try:
        wait_for(lambda: store.get(running).fraction == 0.25, timeout=120)
        assert store.get(waiting).status is JobStatus.QUEUED  # one worker
        server.send_signal(signal.SIGKILL)
        server.wait(30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    jobs = {j.id: j for j in store.jobs()}  # this host: the dead process is seen at once
    assert jobs[running].status is JobStatus.FAILED and jobs[running].finished
    assert "stopped" in jobs[running].error and "\n" not in jobs[running].error
    assert jobs[waiting].status is JobStatus.QUEUED and jobs[waiting].position == 1
    gate = Gate()
    gate.release.set()
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path, url=lab_db).resume()
    try:
        assert queue.wait(waiting, 30).status is JobStatus.DONE
        assert store.get(running).status is JobStatus.FAILED  # not re-run
    finally:
        queue.shutdown()


def test_a_worker_elsewhere_is_dead_once_its_heartbeat_is_stale(lab_db):
    store = JobStore(lab_db)
    job_id = store.add(make_request("remote", "mlp"))
    store.claim("gpu-box:4242:0badf00d", "cuda")
    now = time.time()
    assert store.jobs()[0].status is JobStatus.RUNNING
    (job,) = store.fail_dead(store.jobs(), now=now + STALE_S + 1)
    assert job.status is JobStatus.FAILED and "last sign of life" in job.error
    assert store.get(job_id).status is JobStatus.FAILED


def test_which_workers_count_as_gone():
    now = time.time()
    assert not worker_gone(PROCESS, now, now)
    assert not worker_gone("elsewhere:1:abc", now - STALE_S / 2, now)
    assert worker_gone("elsewhere:1:abc", now - STALE_S - 1, now)
    assert worker_gone("elsewhere:1:abc", None, now)
    pid, token = PROCESS.split(":")[1:]
    assert worker_gone(f"{HOST}:{pid}:earlier", now, now)  # this pid, an earlier process
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert worker_gone(f"{HOST}:{done.stdout.strip()}:x", now, now)  # exited


def _owned(name: str, visitor: Visitor) -> TrainRequest:
    return replace(make_request(name, "mlp"), owner=visitor.id)


def test_limits_and_names_hold_across_replicas(lab_db, tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_JOBS_PER_VISITOR", "2")
    one, two = (JobStore(lab_db) for _ in range(2))
    anna = Visitor("anna")
    one.add(_owned("a1", anna))
    two.add(_owned("a2", anna))
    with pytest.raises(ValueError, match="2 jobs queued or running"):
        one.add(_owned("a3", anna))
    with pytest.raises(ValueError, match="named 'a1' already"):
        two.add(_owned("a1", Visitor("ben")))
    with pytest.raises(PermissionError, match="another student"):
        two.cancel(1, Visitor("ben"))
    assert two.cancel(1, anna) and one.get(1).status is JobStatus.CANCELLED
    one.add(_owned("a3", anna))  # room again
