"""Where a claimed training job runs: in a thread of the server (the default) or as a Ray task.

Both run the same :func:`run_job`: it trains the request, reports progress and live-curve points
to the job store every :data:`REPORT_S` seconds (its sign of life, and how it hears that someone
asked to cancel), and stores how the job ended. So a job reports the same way wherever it runs,
and any replica follows and cancels it through the database.

* :class:`ThreadExecutor`: the calling worker thread of the server trains the job.
* :class:`RayExecutor` (``BNN_RAY_ADDRESS``, e.g. ``auto``, ``host:6379`` or
  ``ray://host:10001``): the job is a Ray task asking for ``BNN_RAY_CPUS`` CPUs and
  ``BNN_RAY_GPUS`` GPUs, so jobs spread over the cluster's machines and a GPU job goes to a
  machine with a free GPU. The task runs this repository's code from the same path on the Ray
  node (a department's image has the checkout and its ``.venv`` on every node), with the
  server's ``BNN_*`` settings; it writes the finished model into the user-model folder, which
  all replicas and nodes must share. A cancel reaches the running task through the database
  (it stops within one step and saves nothing); a task that has not started yet is cancelled
  in Ray.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from core import settings
from core.engine.device import default_device, device_name
from core.jobs.store import PROCESS, JobStatus, JobStore, Report, TrainJob
from core.jobs.training import TrainOutcome, TrainRequest, run_training
from core.storage.database import DatabaseError
from core.storage.paths import REPO_ROOT
from core.training import EpochStats, StepStats

RAY_ADDRESS_ENV = "BNN_RAY_ADDRESS"
RAY_CPUS_ENV = "BNN_RAY_CPUS"
RAY_GPUS_ENV = "BNN_RAY_GPUS"
REPORT_S = 0.5
CONNECT_TRIES = 3
CONNECT_WAIT_S = 2.0
"""Seconds between a running job's reports to the database (progress, points, cancel)."""
STOPPED = "the server stopped while this job trained; nothing was saved — start it again"

log = logging.getLogger(__name__)
Runner = Callable[..., TrainOutcome]


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


class _Running:
    """A job being trained here: its cancel flag and what it has not reported yet."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.asked = False  # a user asked to cancel (not the server stopping)
        self.report = Report()
        self.lock = threading.Lock()  # guards ``report``
        self.writing = threading.Lock()  # one write of this job's reports at a time

    def take(self) -> Report:
        """What happened since the last report (and forget it here)."""
        with self.lock:
            taken = self.report
            self.report = Report(taken.fraction, taken.message)
            return taken

    def progress(self, fraction: float, message: str) -> None:
        with self.lock:
            self.report.fraction, self.report.message = fraction, message

    def on_epoch(self, stats: EpochStats) -> None:
        with self.lock:
            self.report.epochs.append(stats)

    def on_step(self, stats: StepStats) -> None:
        with self.lock:
            self.report.steps.append(stats)


_HERE: dict[int, _Running] = {}  # jobs this process trains now
_HERE_LOCK = threading.Lock()


def cancel_here(job_id: int) -> None:
    """Stop a job at once if this process trains it (the store's cancel reaches it anyway).

    Args:
        job_id: A job whose cancel the store has just recorded.
    """
    with _HERE_LOCK:
        running = _HERE.get(job_id)
    if running is not None:
        running.asked = True
        running.cancel.set()


def _report_until(
    store: JobStore,
    job_id: int,
    running: _Running,
    done: threading.Event,
    stop: threading.Event | None,
) -> None:
    while not done.wait(REPORT_S):
        with running.writing:
            try:
                asked = store.report(job_id, running.take())
            except DatabaseError as exc:  # the next report tries again
                log.warning("training job #%d: %s", job_id, exc)
                continue
        if asked and not running.cancel.is_set():
            running.asked = True
            running.cancel.set()
        if stop is not None and stop.is_set():
            running.cancel.set()


def run_job(
    store: JobStore,
    job_id: int,
    request: TrainRequest,
    runner: Runner,
    directory: Path,
    stop: threading.Event | None = None,
) -> JobStatus:
    """Train a claimed job here, reporting to the store, and store how it ended.

    Args:
        store: The job store.
        job_id: The job, claimed (running).
        request: What it trains.
        runner: Trains one request (:func:`~core.jobs.training.run_training`'s signature).
        directory: The user-model folder the finished model is saved in.
        stop: Set when this server stops: the job stops within one step and is failed
            with :data:`STOPPED`.

    Returns:
        How it ended (DONE, CANCELLED or FAILED).
    """
    running, done = _Running(), threading.Event()
    store.begin(job_id, PROCESS, device_name(default_device()))
    with _HERE_LOCK:
        _HERE[job_id] = running
    reporter = threading.Thread(
        target=_report_until, args=(store, job_id, running, done, stop), daemon=True
    )
    reporter.start()
    try:
        outcome = runner(
            request,
            progress=running.progress,
            on_epoch=running.on_epoch,
            on_step=running.on_step,
            cancel=running.cancel,
            directory=directory,
        )
    except Exception as exc:  # a failed job is reported on the page, the worker goes on
        status, end = (
            JobStatus.FAILED,
            {
                "message": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "details": traceback.format_exc(),
            },
        )
    else:
        if not outcome.cancelled:
            status = JobStatus.DONE
            end = {"message": "saved", "path": outcome.path, "metrics": dict(outcome.metrics)}
        elif running.asked:
            status, end = JobStatus.CANCELLED, {"message": "cancelled; nothing saved"}
        else:
            status, end = JobStatus.FAILED, {"message": "failed", "error": STOPPED}
    done.set()
    reporter.join()
    finish(store, job_id, status, running.take(), end)
    with _HERE_LOCK:
        del _HERE[job_id]
    return status


def finish(store: JobStore, job_id: int, status: JobStatus, report: Report, end: dict) -> None:
    """Store how a job ended, with a few more tries while the database is busy.

    Args:
        store: The job store.
        job_id: The job.
        status: How it ended.
        report: Its last progress and points.
        end: The keyword arguments of :meth:`JobStore.finish` (message, path, metrics, error).
    """
    for attempt in range(5):
        try:
            store.finish(job_id, status, report, **end)
            return
        except DatabaseError as exc:
            log.warning("training job #%d: %s (try %d of 5)", job_id, exc, attempt + 1)
            time.sleep(1.0)


class Executor(Protocol):
    """Runs one claimed job to its end (blocking the calling worker thread meanwhile)."""

    where: str
    """Where jobs train, in words, for the page."""

    def run(self, store: JobStore, job: TrainJob, stop: threading.Event) -> None:
        """Train ``job`` and store its end; ``stop`` is set when the server stops."""
        ...


class ThreadExecutor:
    """Jobs train in the server's own worker thread.

    Args:
        runner: Trains one request.
        directory: Gives the user-model folder at the time a job starts.
        threads: torch threads of each worker, for :attr:`where`.
    """

    def __init__(self, runner: Runner, directory: Callable[[], Path], threads: int) -> None:
        self.runner, self.directory, self.threads = runner, directory, threads
        device = default_device()
        self.where = (
            "the GPU"
            if device.type == "cuda"
            else f"{threads} CPU thread{'s' if threads != 1 else ''} per job"
        ) + " of this server"

    def run(self, store: JobStore, job: TrainJob, stop: threading.Event) -> None:
        """Train the job in this thread (:func:`run_job`)."""
        run_job(store, job.id, job.request, self.runner, self.directory(), stop)


def _train_in_ray(url: str, job_id: int, directory: str, threads: int) -> str:
    """The Ray task: train one stored job on this node (:func:`run_job`)."""
    import torch

    torch.set_num_threads(threads)
    store = JobStore(url)
    job = store.get(job_id)
    return run_job(store, job_id, job.request, run_training, Path(directory)).value


class RayExecutor:
    """Jobs train as Ray tasks on a cluster (see the module's description).

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

        A connection that fails is tried again (:data:`CONNECT_TRIES` times in all, a few
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
                env = {"PYTHONPATH": str(REPO_ROOT), **settings.environment()}
                try:
                    ray.init(
                        address=self.address,
                        namespace="bnn-lab",
                        runtime_env={"env_vars": env},
                        logging_level=logging.WARNING,
                        log_to_driver=False,
                    )
                except Exception as exc:  # Ray raises many types for an unreachable cluster
                    reason = _first_line(exc)
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
        """Run the job as a Ray task and wait for it.

        Until the task reports itself, this process keeps the job alive in the store; a cancel
        (or a stopping server) that the task does not answer within a few seconds cancels it
        in Ray.
        """
        try:
            ray = self._ray()
        except ConnectionError as exc:
            end = {"message": "failed", "error": str(exc), "details": str(exc.__cause__)}
            finish(store, job.id, JobStatus.FAILED, Report(), end)
            return
        task = ray.remote(_train_in_ray).options(
            num_cpus=self.cpus, num_gpus=self.gpus, max_retries=0, name=f"bnn-job-{job.id}"
        )
        ref = task.remote(store.db.url, job.id, str(self.directory()), self.cpus)
        asked, forced = None, False
        while not ray.wait([ref], timeout=REPORT_S)[0]:
            try:  # a sign of life while Ray has not started the task (it reports itself then)
                cancel = store.touch(job.id, PROCESS)
            except DatabaseError as exc:
                log.warning("training job #%d: %s", job.id, exc)
                continue
            if (cancel or stop.is_set()) and asked is None:
                asked = time.monotonic()
            if asked is not None and not forced and time.monotonic() - asked > 10 * REPORT_S:
                ray.cancel(ref)  # not started yet, or not listening: stop it in Ray
                forced = True
        try:
            ray.get(ref)
        except Exception as exc:  # the task died, or was cancelled before it could say so
            # A task cancelled while it ran comes back as RayTaskError(TaskCancelledError).
            cancelled = isinstance(exc, ray.exceptions.TaskCancelledError)
            status = JobStatus.FAILED if stop.is_set() or not cancelled else JobStatus.CANCELLED
            error = STOPPED if stop.is_set() else f"the Ray task failed: {_first_line(exc)}"
            end = (
                {"message": "cancelled; nothing saved"}
                if status is JobStatus.CANCELLED
                else {"message": "failed", "error": error, "details": str(exc)}
            )
            finish(store, job.id, status, Report(), end)


def make_executor(runner: Runner, directory: Callable[[], Path], threads: int) -> Executor:
    """The executor the settings ask for.

    Args:
        runner: Trains one request in-process (the thread executor's).
        directory: Gives the user-model folder.
        threads: torch threads of each in-process worker.

    Returns:
        A :class:`RayExecutor` when ``BNN_RAY_ADDRESS`` is set, else a :class:`ThreadExecutor`.
    """
    address = settings.text(RAY_ADDRESS_ENV)
    if not address:
        return ThreadExecutor(runner, directory, threads)
    gpus = settings.text(RAY_GPUS_ENV)
    return RayExecutor(
        address,
        directory,
        cpus=settings.positive_int(RAY_CPUS_ENV, 1),
        gpus=float(gpus) if gpus.replace(".", "", 1).isdigit() else 0.0,
    )
