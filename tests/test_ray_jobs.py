"""Training jobs as Ray tasks on a real (one-CPU, loopback) Ray head: a job trains in a Ray
worker process and reports through the database like an in-process one, a second job waits in
Ray for the CPU, a cancel reaches the running task, and a worker killed mid-job fails its job
with one line and leaves no model."""

from __future__ import annotations

import os
import signal

import pytest

from core.jobs import JobQueue, JobStatus, make_request
from core.jobs.executors import RayExecutor
from core.jobs.owners import Visitor
from tests.test_jobs import wait_for

SMALL = {"n_train": 1000, "n_test": 200, "n_eval_samples": 1}


def in_ray(worker: str) -> bool:
    """Whether a job's worker is a process other than this one (a Ray worker)."""
    return worker.count(":") == 2 and worker.split(":")[1] != str(os.getpid())


@pytest.mark.slow
def test_jobs_train_as_ray_tasks_and_a_cancel_reaches_a_running_one(
    ray_address, lab_db, tmp_path, monkeypatch, mnist_small
):
    monkeypatch.setenv("BNN_RAY_ADDRESS", ray_address)
    models = tmp_path / "models"
    queue = JobQueue(workers=2, threads=1, directory=models, url=lab_db)
    assert isinstance(queue.executor, RayExecutor) and "Ray at" in queue.executor.where
    try:
        short = queue.submit(make_request("ray_short", "mlp", epochs=2, **SMALL), Visitor("a"))
        wait_for(lambda: in_ray(queue.get(short).worker), timeout=120)  # then one waits in Ray
        long = queue.submit(make_request("ray_long", "mlp", epochs=3000, **SMALL), Visitor("b"))
        done = queue.wait(short, 300)
        assert done.status is JobStatus.DONE, done.error
        assert (models / "ray_short.pt").is_file() and done.path == models / "ray_short.pt"
        assert [e.epoch for e in done.history] == [1, 2] and done.steps  # reported from Ray
        assert in_ray(done.worker)  # a Ray worker process trained it
        wait_for(lambda: queue.get(long).fraction > 0, timeout=300)  # the CPU was free again
        assert queue.cancel(long, Visitor("b")), queue.get(long)
        stopped = queue.wait(long, 60)
        assert stopped.status is JobStatus.CANCELLED and stopped.fraction < 1
        assert not (models / "ray_long.pt").exists()
    finally:
        queue.shutdown()


@pytest.mark.slow
def test_a_ray_worker_killed_mid_job_fails_the_job_and_saves_nothing(
    ray_address, tmp_path, monkeypatch, mnist_small
):
    monkeypatch.setenv("BNN_RAY_ADDRESS", ray_address)
    models = tmp_path / "models"
    queue = JobQueue(workers=1, threads=1, directory=models, url=f"sqlite:///{tmp_path}/lab.db")
    try:
        job_id = queue.submit(make_request("doomed", "mlp", epochs=3000, **SMALL))
        wait_for(lambda: in_ray(queue.get(job_id).worker) and queue.get(job_id).fraction > 0, 300)
        worker = int(queue.get(job_id).worker.split(":")[1])
        os.kill(worker, signal.SIGKILL)  # the Ray worker process, mid-epoch
        failed = queue.wait(job_id, 120)
        assert failed.status is JobStatus.FAILED, failed
        # Whichever notices first says so: Ray (the task failed) or the job table (its worker
        # process is gone); one line either way.
        assert failed.error.startswith(("the Ray task failed", "the process that trained it"))
        assert "\n" not in failed.error
        assert not models.exists() or not any(models.iterdir())  # nothing, not even a part
    finally:
        queue.shutdown()
