"""Training jobs on a Ray cluster: a detached actor per job, found by name from any replica.

With :class:`RayExecutor` (``BNN_RAY_ADDRESS``, e.g. ``auto``, ``host:6379`` or
``ray://host:10001``): the job trains in a *detached* Ray actor (:class:`JobActor`) named after
the job (:func:`actor_name`) in the namespace :data:`NAMESPACE`, asking for ``BNN_RAY_CPUS``
CPUs and ``BNN_RAY_GPUS`` GPUs, so jobs spread over the cluster's machines and a GPU job goes
to a machine with a free GPU. The actor belongs to the cluster, not to the replica that
started it: it keeps training when that replica stops or dies, reports to the database, and
exits when its job ends. The job's worker column names it
(:func:`~core.jobs.workers.ray_worker`); a replica that finds the job silent asks Ray whether
the actor is alive (it may wait in Ray's queue) before failing the job. A cancel reaches the
running actor through the database (it stops within one step and saves nothing); an actor
that has not stopped after :data:`FORCE_AFTER_S` (e.g. one still waiting for a CPU) is killed
by name by the replica that took the cancel.

**What Ray sees.** The actor runs this repository's code from the same path on its node (a
department's image has the checkout and its ``.venv`` on every node). It gets, as Ray's
``runtime_env``, ``PYTHONPATH`` and only the settings a training job reads
(:func:`~core.settings.job_settings`: data, model, cache and checkpoint folders, the kernel
switches, ``BNN_CLASS_DB_FILE``), never the teacher's key or ``BNN_CLASS_DB``; and, as
arguments, the job's id, the user-model folder (shared by every replica and node), its thread
count and the database URL only when it holds no password (:func:`ray_database`). A URL with a
password reaches the actor only through ``BNN_CLASS_DB_FILE``, a file readable only by the
service user that the actor reads on its node; a replica whose URL has a password and is not in
that file fails each Ray job with one line (:data:`SECRET_URL`) instead of handing the password
to Ray, whose logs (mode 644) and workers' environments would keep it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from core import settings
from core.jobs.records import JobStatus, Report, TrainJob
from core.jobs.running import CANCELLED, REPORT_S, failed_end, finish, first_line, run_job
from core.jobs.store import JobStore
from core.jobs.training import run_training
from core.jobs.workers import PROCESS, ray_actor, ray_worker
from core.paths import REPO_ROOT
from core.storage.database_errors import DB_FILE_ENV, DatabaseError
from core.storage.database_url import database_url, describe

log = logging.getLogger(__name__)


RAY_ADDRESS_ENV = "BNN_RAY_ADDRESS"


RAY_CPUS_ENV = "BNN_RAY_CPUS"


RAY_GPUS_ENV = "BNN_RAY_GPUS"


NAMESPACE = "bnn-lab"
"""The lab's Ray namespace: its jobs' actors are found there by name from any replica."""


FORCE_AFTER_S = 10 * REPORT_S
"""Seconds a cancelled Ray job has to stop by itself before its actor is killed."""


CONNECT_TRIES = 3


CONNECT_WAIT_S = 2.0


SECRET_URL = (
    "the database URL holds a password, which Ray would copy into its logs and workers: write "
    "the URL in a file only the server's user can read (chmod 600), at the same path on every "
    "Ray node, and set BNN_CLASS_DB_FILE to that file instead of BNN_CLASS_DB"
)


def has_password(url: str) -> bool:
    """Whether a database URL holds a password (in its user part or its query).

    Args:
        url: A database URL.

    Returns:
        True for e.g. ``postgresql://lab:SECRET@host/db`` or ``...?password=SECRET``.
    """
    parts = urlsplit(url)
    return parts.password is not None or "password" in parse_qs(parts.query)


def ray_database(url: str) -> str | None:
    """The database URL a job's Ray actor is given as an argument (Ray stores and may log it).

    Args:
        url: The replica's database URL.

    Returns:
        The URL itself when it holds no password; None when it holds one and comes from
        ``BNN_CLASS_DB_FILE``, which the actor then reads on its node.

    Raises:
        ValueError: One line, for a URL with a password that is not in ``BNN_CLASS_DB_FILE``.
    """
    if not has_password(url):
        return url
    if settings.text(DB_FILE_ENV) and database_url() == url:
        return None
    raise ValueError(SECRET_URL)


def actor_name(url: str, job_id: int) -> str:
    """The name of the Ray actor that trains a job, in the lab's namespace :data:`NAMESPACE`.

    Args:
        url: The database the job is stored in (two labs may share a cluster).
        job_id: The job.

    Returns:
        ``bnn-job-<8 hex digits of the database, credentials left out>-<job id>``.
    """
    return f"bnn-job-{hashlib.sha256(describe(url).encode()).hexdigest()[:8]}-{job_id}"


class JobActor:
    """The detached Ray actor that trains one stored job, reports to the database and exits.

    It belongs to the cluster, not to the replica that created it: a replica that stops or dies
    leaves it training. The database URL comes as an argument only when it holds no password;
    otherwise :func:`~core.storage.database_url.database_url` reads ``BNN_CLASS_DB_FILE`` here.
    """

    def run(self, name: str, job_id: int, directory: str, threads: int, url: str | None) -> None:
        """Train the job (:func:`run_job`) unless it ended or was cancelled meanwhile, then exit.

        Args:
            name: This actor's name (for the job's worker column).
            job_id: The job, claimed (running).
            directory: The user-model folder (shared by every node).
            threads: torch threads.
            url: The database URL; None for this node's :func:`database_url`.
        """
        import ray
        import torch

        try:
            torch.set_num_threads(threads)
            store = JobStore(url)
            job = store.get(job_id)
            if job is not None and job.cancelling:
                finish(store, job_id, JobStatus.CANCELLED, Report(), CANCELLED)
            elif job is not None and job.status is JobStatus.RUNNING:
                worker = ray_worker(name, PROCESS)
                run_job(store, job_id, job.request, run_training, Path(directory), worker=worker)
        except Exception:  # e.g. no database URL file on this node: the node's Ray log says so
            log.exception("training job #%d in Ray", job_id)
        finally:
            ray.actor.exit_actor()  # frees its CPU (or GPU) for the next job


class RayExecutor:
    """Jobs train in detached Ray actors on a cluster (see the module's description).

    Args:
        address: The cluster, as ``ray.init`` takes it.
        directory: Gives the user-model folder (shared by every node) when a job starts.
        cpus: CPUs each job asks for (also its torch threads).
        gpus: GPUs each job asks for (0: CPU-only).
    """

    _lock = threading.Lock()

    def __init__(
        self, address: str, directory: Callable[[], Path], cpus: int = 1, gpus: float = 0
    ) -> None:
        self.address, self.directory, self.cpus, self.gpus = address, directory, cpus, gpus
        self.where = f"Ray at {address}, {cpus} CPU(s)" + (f" and {gpus:g} GPU" if gpus else "")

    def _ray(self) -> Any:
        """Ray, connected to the cluster (once per process).

        Ray's workers get this repository on ``PYTHONPATH`` and the settings a job reads
        (:func:`~core.settings.job_settings`), nothing else of the server's environment. A
        connection that fails is tried again (:data:`CONNECT_TRIES` times in all, a few
        seconds apart): a Ray Client server sometimes fails to start the server of a new
        client on a busy head.

        Raises:
            ConnectionError: One line, if the cluster cannot be reached.
        """
        import ray

        with self._lock:
            for attempt in range(1, CONNECT_TRIES + 1):
                if ray.is_initialized():
                    break
                env = {"PYTHONPATH": str(REPO_ROOT), **settings.job_settings()}
                try:
                    ray.init(
                        address=self.address,
                        namespace=NAMESPACE,
                        runtime_env={"env_vars": env},
                        logging_level=logging.WARNING,
                        log_to_driver=False,
                    )
                except Exception as exc:  # Ray raises many types for an unreachable cluster
                    reason = first_line(exc)
                    log.warning(
                        "Ray at %s (try %d of %d): %s", self.address, attempt, CONNECT_TRIES, reason
                    )
                    if attempt == CONNECT_TRIES:
                        raise ConnectionError(
                            f"the Ray cluster at {self.address} cannot be reached ({reason})"
                        ) from exc
                    time.sleep(CONNECT_WAIT_S * attempt)
        return ray

    def run(self, store: JobStore, job: TrainJob, stop: threading.Event) -> None:
        """Start the job's actor and follow it until it ends or this server stops.

        The job's worker becomes the actor (:func:`~core.jobs.workers.ray_worker`); until the
        actor begins, this process keeps the job alive in the store. A stopping server leaves
        the actor training (the job belongs to the cluster). An actor that died without storing
        the job's end fails the job with one line (cancelled, if a cancel was asked).
        """
        try:
            url = ray_database(store.db.url)
            ray = self._ray()
        except (ValueError, ConnectionError) as exc:
            log.error("training job #%d: %s", job.id, exc)
            finish(store, job.id, JobStatus.FAILED, Report(), failed_end(str(exc), exc.__cause__))
            return
        name = actor_name(store.db.url, job.id)
        worker = ray_worker(name)
        try:
            store.begin(job.id, worker, "waiting for Ray")
            actor = (
                ray.remote(JobActor)
                .options(
                    name=name,
                    namespace=NAMESPACE,
                    lifetime="detached",
                    num_cpus=self.cpus,
                    num_gpus=self.gpus,
                    max_restarts=0,
                )
                .remote()
            )
            ref = actor.run.remote(name, job.id, str(self.directory()), self.cpus, url)
        except Exception as exc:  # the database is busy, or Ray refused the actor
            error = f"the Ray task failed: {first_line(exc)}"
            finish(store, job.id, JobStatus.FAILED, Report(), failed_end(error, exc))
            return
        while not ray.wait([ref], timeout=REPORT_S)[0]:
            if stop.is_set():
                return
            try:  # a sign of life while the actor has not begun (it reports itself then)
                store.touch(job.id, worker)
            except DatabaseError as exc:
                log.warning("training job #%d: %s", job.id, exc)
        try:
            ray.get(ref)
        except Exception as exc:  # the actor exits when done; the store tells whether it said so
            self._ended(store, job.id, exc)

    @staticmethod
    def _ended(store: JobStore, job_id: int, exc: Exception) -> None:
        try:
            ended = store.get(job_id)
        except DatabaseError as error:  # another replica fails it once it is stale
            log.warning("training job #%d: %s", job_id, error)
            return
        if ended is not None and ended.status is JobStatus.RUNNING:
            failed = failed_end(f"the Ray task failed: {first_line(exc)}", exc)
            status = JobStatus.CANCELLED if ended.cancelling else JobStatus.FAILED
            finish(store, job_id, status, Report(), CANCELLED if ended.cancelling else failed)

    def cancel(self, store: JobStore, job_id: int) -> None:
        """Make sure a job whose cancel was just stored stops, whichever replica started it.

        The actor reads the cancel at its next report and stops within one step. One that has
        not stopped after :data:`FORCE_AFTER_S` (still waiting in Ray's queue, or not
        listening) is killed in Ray, found by its name, and the job stored as cancelled.

        Args:
            store: The job store.
            job_id: The job.
        """
        threading.Thread(
            target=self._force, args=(store, job_id), name=f"bnn-cancel-{job_id}", daemon=True
        ).start()

    def _force(self, store: JobStore, job_id: int) -> None:
        deadline = time.monotonic() + FORCE_AFTER_S
        try:
            while True:
                job = store.get(job_id)
                if job is None or not job.status.active or not ray_actor(job.worker):
                    return  # ended, or not in Ray yet: its actor will read the cancel
                if time.monotonic() > deadline:
                    break
                time.sleep(REPORT_S)
            finish(store, job_id, JobStatus.CANCELLED, Report(), CANCELLED)
            ray = self._ray()
            ray.kill(ray.get_actor(ray_actor(job.worker), namespace=NAMESPACE))
        except ValueError:  # the actor is gone already
            pass
        except (ConnectionError, DatabaseError) as exc:
            log.warning("cancelling training job #%d: %s", job_id, exc)

    def alive(self, actor: str) -> bool | None:
        """Whether Ray knows a job's actor as alive (waiting for resources, or training).

        Args:
            actor: The actor's name.

        Returns:
            True or False; None when the cluster cannot be reached.
        """
        try:
            ray = self._ray()
        except ConnectionError:
            return None
        try:
            ray.get_actor(actor, namespace=NAMESPACE)
        except ValueError:
            return False
        return True
