"""Training jobs on a real (one-CPU, loopback) Ray head, each in a detached actor: a job trains
in a Ray worker process and reports through the database like an in-process one, a cancel reaches
a running actor, a job waiting in Ray for the CPU is cancelled by name from another replica's
queue, a worker killed mid-job fails its job with one line and leaves no model, a job outlives
the replica that started it (killed with SIGKILL), Ray's logs and processes never see the
teacher's key or the database password, and a server off the cluster does the same through a
``ray://`` client address."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from core.jobs import JobQueue, JobStatus, make_request
from core.jobs.owners import Visitor
from core.jobs.ray_executor import FORCE_AFTER_S, SECRET_URL, RayExecutor, actor_name
from core.jobs.store import JobStore
from core.jobs.workers import HOST, PROCESS, STALE_S, ray_actor, ray_worker, worker_gone
from core.storage.database_errors import DatabaseError
from core.storage.database_url import database_url
from harness.browser import REPO_ROOT
from harness.cluster import new_database
from tests.unit.test_jobs import wait_for

# Under pytest-xdist every Ray test runs in one worker, so the session starts one Ray head.
pytestmark = pytest.mark.xdist_group("ray")
SMALL = {"n_train": 1000, "n_test": 200, "n_eval_samples": 1}
REPLICA = str(REPO_ROOT / "tests" / "support" / "ray_replica.py")


def ray_pid(worker: str) -> int | None:
    """The process id of the Ray actor that has begun a job (its worker column), else None."""
    process = worker.partition("@")[2] if ray_actor(worker) else ""
    pid = process.split(":")[1] if process.count(":") == 2 else ""
    return int(pid) if pid.isdigit() else None


def in_ray(worker: str) -> bool:
    """Whether a job's worker is a Ray actor in a process other than this one."""
    return ray_pid(worker) not in (None, os.getpid())


def end_active(queue: JobQueue) -> None:
    """Cancel what a failed test left running, so that its actors free the head's one CPU."""
    active = [job.id for job in queue.jobs() if job.status.active]
    for job_id in active:
        queue.cancel(job_id)
    for job_id in active:
        queue.wait(job_id, FORCE_AFTER_S + 30)


@pytest.mark.slow
def test_jobs_train_in_ray_actors_and_any_replica_cancels_them(
    ray_address, lab_db, tmp_path, monkeypatch, mnist_small
):
    monkeypatch.setenv("BNN_RAY_ADDRESS", ray_address)
    models = tmp_path / "models"
    queue = JobQueue(workers=2, threads=1, directory=models, url=lab_db)
    other = JobQueue(workers=1, threads=1, directory=models, url=lab_db)  # never starts workers
    assert isinstance(queue.executor, RayExecutor) and "Ray at" in queue.executor.where
    try:
        long = queue.submit(make_request("ray_long", "mlp", epochs=1000, **SMALL), Visitor("b"))
        wait_for(lambda: in_ray(queue.get(long).worker) and queue.get(long).fraction > 0, 300)
        assert ray_actor(queue.get(long).worker) == actor_name(lab_db, long)
        assert other.executor.alive(actor_name(lab_db, long)) is True  # asked of Ray, by name
        waiting = queue.submit(make_request("ray_waiting", "mlp", epochs=2, **SMALL))
        wait_for(lambda: ray_actor(queue.get(waiting).worker), 60)  # its actor waits for the CPU
        assert other.cancel(waiting)  # found by name in Ray and killed, as it cannot listen
        cancelled = queue.wait(waiting, FORCE_AFTER_S + 30)
        assert cancelled.status is JobStatus.CANCELLED and cancelled.fraction == 0
        gone = lambda: other.executor.alive(ray_actor(cancelled.worker)) is False  # noqa: E731
        wait_for(gone, 30)  # Ray forgets the killed actor's name soon after
        assert other.cancel(long, Visitor("b"))  # the running actor reads it in the database
        stopped = queue.wait(long, 60)
        assert stopped.status is JobStatus.CANCELLED and 0 < stopped.fraction < 1
        assert not (models / "ray_long.pt").exists()
        short = queue.submit(make_request("ray_short", "mlp", epochs=2, **SMALL), Visitor("a"))
        done = queue.wait(short, 300)  # the actors exited: the CPU is free again
        assert done.status is JobStatus.DONE, done.error
        assert (models / "ray_short.pt").is_file() and done.path == models / "ray_short.pt"
        assert [e.epoch for e in done.history] == [1, 2] and done.steps  # reported from Ray
        assert in_ray(done.worker)  # a Ray worker process trained it
    finally:
        end_active(queue)
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
        os.kill(ray_pid(queue.get(job_id).worker), signal.SIGKILL)  # the actor, mid-epoch
        failed = queue.wait(job_id, 120)
        assert failed.status is JobStatus.FAILED, failed
        # Whichever notices first says so: Ray (the actor died) or the job table (its worker
        # process is gone); one line either way.
        assert failed.error.startswith(("the Ray task failed", "the process that trained it"))
        assert "\n" not in failed.error
        assert not models.exists() or not any(models.iterdir())  # nothing, not even a part
    finally:
        end_active(queue)
        queue.shutdown()


def replica(models: Path, env: dict[str, str], *job: str) -> subprocess.Popen:
    """An app replica (tests/support/ray_replica.py), submitting ``job`` (name, kind, epochs)
    if given."""
    return subprocess.Popen(
        [sys.executable, REPLICA, str(models), *job],
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ended(process: subprocess.Popen) -> dict:
    """What a replica printed when no job was active any more (its jobs and listed models)."""
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.splitlines()[-1])


@pytest.mark.slow
def test_a_job_outlives_the_replica_that_started_it(
    ray_address, postgres_server, tmp_path, mnist_small
):
    """Replica A submits a BBB job and is killed (SIGKILL) at 10 %: the job's actor trains on,
    and replica B, which never ran it, does not fail it but lists it done with its model."""
    url = new_database(postgres_server)
    models = tmp_path / "models"
    env = {**os.environ, "BNN_RAY_ADDRESS": ray_address, "BNN_CLASS_DB": url}
    store = JobStore(url)
    a = replica(models, env, "survivor", "bbb", "40")
    b = None
    try:
        wait_for(lambda: store.jobs() and in_ray(store.jobs()[0].worker), 300)
        b = replica(models, env)  # after A's claim (B would take a queued job)
        wait_for(lambda: store.jobs()[0].fraction >= 0.1, 300)
        running = store.jobs()[0]
        assert running.status is JobStatus.RUNNING and running.fraction < 0.5, running
        a.kill()
        a.wait(30)
        listed = ended(b)
    finally:
        for process in (a, b):
            if process is not None and process.poll() is None:
                process.kill()
    [[job_id, status, worker, error, path]] = listed["jobs"]
    assert status == "done", error
    assert ray_actor(worker) == actor_name(url, job_id) and in_ray(worker)
    assert path == str(models / "survivor.pt") and Path(path).is_file()
    assert listed["models"] == ["survivor"]


def test_a_silent_ray_job_is_failed_only_when_ray_does_not_know_its_actor():
    """A job whose actor waits in Ray's queue reports nothing, and the replica that started it
    may be gone: past :data:`STALE_S`, a replica asks Ray before it fails the job."""
    now, stale, fresh = time.time(), time.time() - STALE_S - 1, time.time() - 1
    waiting = ray_worker("bnn-job-0123abcd-7")
    assert not worker_gone(waiting, fresh, now)
    assert worker_gone(waiting, stale, now)  # nobody to ask (a process without Ray)
    assert not worker_gone(waiting, stale, now, alive=lambda actor: True)
    assert worker_gone(waiting, stale, now, alive=lambda actor: False)
    assert worker_gone(waiting, stale, now, alive=lambda actor: None)  # Ray unreachable
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    ).stdout.strip()
    dead = ray_worker("bnn-job-0123abcd-7", f"{HOST}:{gone}:0123abcd")  # its process ended
    assert worker_gone(dead, fresh, now, alive=lambda actor: True)
    assert ray_actor(dead) == "bnn-job-0123abcd-7" and ray_actor(PROCESS) == ""


def holders(secrets: list[str], exclude: set[int]) -> list[str]:
    """The processes (other than ``exclude``) whose environment holds any of the secrets."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone meanwhile
        if any(secret.encode() in environ for secret in secrets):
            found.append(f"{entry.name}: {command[:120]}")
    return found


def files_holding(folder: Path, secrets: list[str]) -> list[str]:
    """The files under ``folder`` (``grep -r``) that hold any of the secrets."""
    found = []
    for path in folder.rglob("*"):
        try:
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        except OSError:
            continue
        found += [f"{path}: {s[:8]}…" for s in secrets if s.encode() in data]
    return found


@pytest.mark.slow
def test_ray_sees_neither_the_teacher_key_nor_the_database_password(
    ray_address, ray_temp_dir, postgres_server, tmp_path, mnist_small
):
    """A replica with a teacher's key and a password in its database URL (also left in
    ``BNN_CLASS_DB``) runs a job on Ray: no Ray file and no process but the replica's holds
    either. The test server trusts every local user, so the password is simply not checked."""
    key, password = f"key-{uuid.uuid4().hex}", f"pw{uuid.uuid4().hex}"
    url = new_database(postgres_server).replace("://lab@", f"://lab:{password}@")
    secret = tmp_path / "db-url"
    secret.write_text(url + "\n")
    secret.chmod(0o600)
    env = {
        **os.environ,
        "BNN_RAY_ADDRESS": ray_address,
        "BNN_TEACHER_KEY": key,
        "BNN_CLASS_DB": url,
        "BNN_CLASS_DB_FILE": str(secret),
    }
    models = tmp_path / "models"
    process = replica(models, env, "keeper", "mlp", "2")
    store = JobStore(url)
    try:
        wait_for(lambda: store.jobs() and store.jobs()[0].fraction > 0, 300)
        during = holders([key, password], {process.pid})  # the actor, and the idle workers
        listed = ended(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert listed["jobs"][0][1] == "done", listed
    assert during == [] and holders([key, password], set()) == []
    assert files_holding(ray_temp_dir, [key, password]) == []


def test_a_password_in_bnn_class_db_is_not_handed_to_ray(postgres_server, tmp_path, monkeypatch):
    """Without ``BNN_CLASS_DB_FILE`` a job fails with one line before anything reaches Ray (the
    address is not even a cluster's)."""
    url = new_database(postgres_server).replace("://lab@", "://lab:SECRET@")
    monkeypatch.setenv("BNN_RAY_ADDRESS", "127.0.0.1:9")
    monkeypatch.setenv("BNN_CLASS_DB", url)
    queue = JobQueue(workers=1, threads=1, directory=tmp_path / "models")
    try:
        failed = queue.wait(queue.submit(make_request("leaky", "mlp", epochs=1, **SMALL)), 60)
    finally:
        queue.shutdown()
    assert failed.status is JobStatus.FAILED and failed.error == SECRET_URL


def test_the_database_url_file_is_read_only_when_no_one_else_may_read_it(tmp_path, monkeypatch):
    secret = tmp_path / "db-url"
    secret.write_text("postgresql://lab:SECRET@db/lab\n")
    monkeypatch.setenv("BNN_CLASS_DB_FILE", str(secret))
    secret.chmod(0o640)
    with pytest.raises(DatabaseError, match="may be read by other users .* chmod 600"):
        database_url()
    secret.chmod(0o600)
    assert database_url() == "postgresql://lab:SECRET@db/lab"  # before BNN_CLASS_DB (a test's)
    secret.write_text("\n")
    with pytest.raises(DatabaseError, match="is empty"):
        database_url()
    secret.unlink()
    with pytest.raises(DatabaseError, match="No such file"):
        database_url()


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
    node of the cluster runs its jobs there, in actors. A separate process, as this one already
    joined the cluster as a node's driver (Ray connects a process once)."""
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
    assert ray_actor(worker) == actor_name(url, 1)
    assert ray_pid(worker) not in (None, int(pid))  # a Ray worker, not the server
    assert (models / "client_short.pt").is_file()
    assert cancelled == "True cancelled" and not (models / "client_long.pt").exists()
