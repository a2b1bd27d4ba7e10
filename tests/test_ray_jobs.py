"""Training jobs as Ray tasks on a real (one-CPU, loopback) Ray head: a job trains in a Ray
worker process and reports through the database like an in-process one, a second job waits in
Ray for the CPU, a cancel reaches the running task, and a worker killed mid-job fails its job
with one line and leaves no model; a server off the cluster does the same through a ``ray://``
client address."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from core.jobs import JobQueue, JobStatus, make_request
from core.jobs.executors import RayExecutor
from core.jobs.owners import Visitor
from tests.browser_util import REPO_ROOT
from tests.test_jobs import wait_for

# Under pytest-xdist every Ray test runs in one worker, so the session starts one Ray head.
pytestmark = pytest.mark.xdist_group("ray")
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
        long = queue.submit(make_request("ray_long", "mlp", epochs=1000, **SMALL), Visitor("b"))
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
        job_id = queue.submit(make_request("doomed", "mlp", epochs=1000, **SMALL))
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


CLIENT = """
import os, sys, time
from pathlib import Path
from core.jobs import JobQueue, make_request
from core.jobs.owners import Visitor

small = dict(n_train=1000, n_test=200, n_eval_samples=1)
queue = JobQueue(workers=1, threads=1, directory=Path(sys.argv[1]), url=sys.argv[2])
print(os.getpid(), queue.executor.where)
done = queue.wait(queue.submit(make_request("client_short", "mlp", epochs=2, **small)), 300)
print(done.status.value, done.worker, [e.epoch for e in done.history])
long = queue.submit(make_request("client_long", "mlp", epochs=1000, **small), Visitor("a"))
deadline = time.monotonic() + 300
while queue.get(long).fraction == 0 and time.monotonic() < deadline:
    time.sleep(0.2)
print(queue.cancel(long, Visitor("a")), queue.wait(long, 60).status.value)
queue.shutdown()
"""


@pytest.mark.slow
def test_a_server_off_the_cluster_trains_and_cancels_through_a_ray_client_address(
    ray_client_address, tmp_path, mnist_small
):
    """``BNN_RAY_ADDRESS=ray://host:port`` (the Ray Client server): an app server that is not a
    node of the cluster runs its jobs there. A separate process, as this one already joined the
    cluster as a node's driver (Ray connects a process once)."""
    models = tmp_path / "models"
    env = {**os.environ, "BNN_RAY_ADDRESS": ray_client_address, "PYTHONPATH": str(REPO_ROOT)}
    url = f"sqlite:///{tmp_path}/lab.db"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, str(models), url],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    server, done, cancelled = result.stdout.splitlines()[-3:]
    pid, where = server.split(" ", 1)
    assert where == f"Ray at {ray_client_address}, 1 CPU(s)"
    status, worker, epochs = done.split(" ", 2)
    assert status == "done" and epochs == "[1, 2]", result.stdout + result.stderr[-3000:]
    assert in_ray(worker) and worker.split(":")[1] != pid  # a Ray worker, not the server
    assert (models / "client_short.pt").is_file()
    assert cancelled == "True cancelled" and not (models / "client_long.pt").exists()
