"""The training queue: jobs kept in the lab's database, trained by worker threads of the server.

Jobs live in the database (:mod:`core.jobs.store`), not in a process's memory: every app replica
on the same database lists, follows and cancels every job, and a restarted server shows what
happened to each (a job whose server stopped while it trained is marked failed with one line;
queued jobs start again). One :class:`JobQueue` per process (:func:`training_queue`) owns that
process's workers: a job keeps running when the browser tab closes or the page reruns. A
classroom shares one server, so by default one job trains at a time per process
(``BNN_TRAIN_WORKERS``) and later jobs wait in a first-in-first-out queue whose positions
:meth:`JobQueue.position` tells. A running job reports its progress and live-curve points to the
database every :data:`REPORT_S` seconds, which is also its sign of life.

**Threads.** Each worker is a daemon thread that sets torch's intra-op thread count *once*, when
it starts, to ``BNN_TRAIN_THREADS`` (default 1, the app's default too). With OpenMP (torch's CPU
backend) that count is a per-thread setting, so it bounds this worker's computations only; a
thread that has set its own count and used it keeps it (tested), and the app's policy is applied
by ``app/main.py`` to every script run, not changed per request. One caveat: torch also keeps
the last value set anywhere as the default that a thread adopts at its *first* parallel
operation, so a worker starting with a count other than the app's at that very moment can hand
it to a script run starting alongside; keep ``BNN_TRAIN_THREADS`` equal to ``BNN_TORCH_THREADS``
(both 1 by default) unless the machine is yours alone. Training on CUDA, when present, uses the
GPU.

**Cancel.** :meth:`JobQueue.cancel` ends a queued job at once and marks a running one in the
database; the process training it reads the mark at its next report and the training loop stops
within one step. Nothing is saved (:func:`~core.jobs.training.run_training` saves only a
finished run, atomically). A server that stops (``atexit``, e.g. after SIGTERM) stops its jobs
the same way and marks them failed.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from core import settings
from core.engine.device import default_device, device_name
from core.jobs.owners import Visitor
from core.jobs.store import PROCESS, JobStatus, JobStore, Report, TrainJob
from core.jobs.training import TrainOutcome, TrainRequest, run_training
from core.storage.checkpoints import checkpoint_path
from core.storage.database import DatabaseError
from core.storage.paths import user_model_dir
from core.training import EpochStats, StepStats

WORKERS_ENV = "BNN_TRAIN_WORKERS"
THREADS_ENV = "BNN_TRAIN_THREADS"
NOBODY = Visitor()  # the command line, or a laptop's one user
REPORT_S = 0.5
"""Seconds between a running job's reports to the database (progress, points, cancel)."""
IDLE_POLL_S = 1.0
"""Seconds an idle worker waits before it looks for jobs other processes queued."""
STOPPED = "the server stopped while this job trained; nothing was saved — start it again"

log = logging.getLogger(__name__)
Runner = Callable[..., TrainOutcome]


class _Running:
    """A job this process trains: its cancel flag and what it has not reported yet."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
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


class JobQueue:
    """Training jobs in the lab's database, run first in, first out by this process's workers.

    Every process (app replica) with a queue on the same database sees, follows and cancels
    the same jobs, and its workers take queued jobs whoever submitted them.

    Args:
        workers: Jobs this process trains at the same time; None for ``BNN_TRAIN_WORKERS``
            (default 1).
        threads: torch intra-op threads of each worker; None for ``BNN_TRAIN_THREADS``
            (default 1); 0 leaves the worker's count alone.
        runner: Runs one request (:func:`~core.jobs.training.run_training`'s signature);
            tests pass another.
        directory: The user-model folder; None for
            :func:`~core.storage.paths.user_model_dir` at submission time.
        url: The database; None for :func:`~core.storage.database.database_url`.
    """

    def __init__(
        self,
        workers: int | None = None,
        threads: int | None = None,
        runner: Runner = run_training,
        directory: Path | None = None,
        url: str | None = None,
    ) -> None:
        self.workers = workers or settings.positive_int(WORKERS_ENV, 1)
        self.threads = settings.positive_int(THREADS_ENV, 1) if threads is None else threads
        self.store = JobStore(url)
        self._runner = runner
        self._directory = directory
        self._lock = threading.Condition()
        self._running: dict[int, _Running] = {}
        self._threads: list[threading.Thread] = []
        self._closed = False

    # --- submitting and cancelling --------------------------------------------------------

    def folder(self) -> Path:
        """The folder finished jobs are saved in.

        Returns:
            The queue's directory, or the current user-model folder.
        """
        return self._directory or user_model_dir()

    def submit(self, request: TrainRequest, visitor: Visitor = NOBODY) -> int:
        """Queue a training request on behalf of ``visitor``, who then owns the job and model.

        Args:
            request: What to train.
            visitor: Who asks (:mod:`core.jobs.owners`); the command line's by default.

        Returns:
            The job's id.

        Raises:
            ValueError: If a user model of that name exists, another active job will save
                under that name, the visitor has the most jobs allowed or the job is too large
                (:func:`~core.jobs.owners.check_request`), or the queue is shut down.
            DatabaseError: If the database cannot be used (nothing was queued).
        """
        if self._closed:
            raise ValueError("the training queue is shut down")
        if checkpoint_path(request.name, self.folder()).exists():
            raise ValueError(f"a model named {request.name!r} exists already; choose another name")
        job_id = self.store.add(replace(request, owner=visitor.id))
        self._start_workers()
        return job_id

    def cancel(self, job_id: int, visitor: Visitor = NOBODY) -> bool:
        """Cancel a job: a queued one leaves the queue, a running one stops within a second.

        Args:
            job_id: The job.
            visitor: Who asks; only the job's owner or the teacher may (on a shared server).

        Returns:
            True if the job was queued or running.

        Raises:
            PermissionError: If the job is another visitor's.
        """
        cancelled = self.store.cancel(job_id, visitor)
        with self._lock:
            running = self._running.get(job_id)
            if cancelled and running is not None:  # trained here: stop it now
                running.asked = True
                running.cancel.set()
            self._lock.notify_all()
        return cancelled

    def forget(self, job_id: int) -> None:
        """Drop a finished job from the list (its checkpoint, if any, stays).

        Args:
            job_id: The job; active jobs are kept.
        """
        self.store.forget(job_id)

    # --- reading --------------------------------------------------------------------------

    def jobs(self) -> list[TrainJob]:
        """Every remembered job, oldest first, without live-curve points (:meth:`get` has them).

        Returns:
            The jobs, with queue positions; a job whose worker died is failed first.
        """
        return self.store.jobs()

    def get(self, job_id: int) -> TrainJob | None:
        """One job, with its live-curve points.

        Args:
            job_id: The job.

        Returns:
            The job, or None if unknown or forgotten.
        """
        return self.store.get(job_id)

    def position(self, job_id: int) -> int | None:
        """Where a queued job waits.

        Args:
            job_id: The job.

        Returns:
            1 for the next to start, 2, ...; None if it is not waiting.
        """
        job = self.store.get(job_id)
        return None if job is None else job.position

    def wait(self, job_id: int, timeout: float | None = None) -> TrainJob | None:
        """Block until a job has ended (whichever process runs it).

        Args:
            job_id: The job.
            timeout: Seconds to wait at most; None for no limit.

        Returns:
            The job (still active if the timeout passed), or None if unknown.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.store.get(job_id)
            if job is None or not job.status.active:
                return job
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return job
            with self._lock:
                self._lock.wait(0.1 if left is None else min(left, 0.1))

    def resume(self) -> JobQueue:
        """Fail jobs whose worker died and start this process's workers (e.g. after a restart).

        The workers then take queued jobs whoever queued them, checking every
        :data:`IDLE_POLL_S` while idle.

        Returns:
            The queue.
        """
        try:
            self.store.jobs()  # reading fails the jobs of dead workers
        except DatabaseError as exc:  # the pages say so; the workers keep trying
            log.warning("training queue: %s", exc)
        self._start_workers()
        return self

    def shutdown(self, timeout: float | None = 30.0) -> None:
        """Stop this process's workers; queued jobs stay queued for any other (or later) process.

        A job training here stops within one step and is marked failed ("the server stopped").

        Args:
            timeout: Seconds to wait for each worker.
        """
        with self._lock:
            self._closed = True
            for running in self._running.values():
                running.cancel.set()
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # --- workers --------------------------------------------------------------------------

    def _start_workers(self) -> None:
        with self._lock:
            if self._closed:
                return
            if not self._threads:
                atexit.register(self.shutdown, 10.0)  # a stopping server marks its jobs
                self._start("bnn-report", self._report_loop)
            self._threads = [t for t in self._threads if t.is_alive()]
            workers = sum(t.name.startswith("bnn-train") for t in self._threads)
            for n in range(workers, self.workers):
                self._start(f"bnn-train-{n + 1}", self._work)
            self._lock.notify_all()

    def _start(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _work(self) -> None:
        if self.threads:
            import torch

            # Once per worker thread: with OpenMP the count is per thread (see module doc).
            torch.set_num_threads(self.threads)
        device = device_name(default_device())
        while not self._closed:
            try:
                job = self.store.claim(PROCESS, device)
            except DatabaseError as exc:
                log.warning("training worker: %s", exc)
                job = None
            if job is None:
                with self._lock:
                    if not self._closed:
                        self._lock.wait(IDLE_POLL_S)
                continue
            self._run(job)

    def _report_loop(self) -> None:
        while True:
            with self._lock:
                if self._closed and not self._running:
                    return
                self._lock.wait(REPORT_S)
                running = list(self._running.values())
            for job in running:
                with job.writing:
                    try:
                        stop = self.store.report(job.job_id, job.take())
                    except DatabaseError as exc:
                        log.warning("training job #%d: %s", job.job_id, exc)
                        continue
                if stop and not job.cancel.is_set():
                    job.asked = True
                    job.cancel.set()

    def _run(self, job: TrainJob) -> None:
        running = _Running(job.id)
        with self._lock:
            self._running[job.id] = running
        try:
            outcome = self._runner(
                job.request,
                progress=running.progress,
                on_epoch=running.on_epoch,
                on_step=running.on_step,
                cancel=running.cancel,
                directory=self.folder(),
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
        with running.writing:
            self._finish(job.id, status, running.take(), end)
        with self._lock:
            del self._running[job.id]
            self._lock.notify_all()

    def _finish(self, job_id: int, status: JobStatus, report: Report, end: dict) -> None:
        for attempt in range(5):  # a busy database gets a few more tries
            try:
                self.store.finish(job_id, status, report, **end)
                return
            except DatabaseError as exc:
                log.warning("training job #%d: %s (try %d of 5)", job_id, exc, attempt + 1)
                time.sleep(1.0)


_QUEUE: JobQueue | None = None
_QUEUE_LOCK = threading.Lock()


def training_queue() -> JobQueue:
    """The process's one training queue, created on first use.

    Returns:
        The queue (``BNN_TRAIN_WORKERS`` workers, ``BNN_TRAIN_THREADS`` threads each), resumed:
        jobs that waited before a restart start again.
    """
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE is None:
            _QUEUE = JobQueue().resume()
        return _QUEUE


def set_training_queue(queue: JobQueue | None) -> JobQueue | None:
    """Replace the process's training queue (tests); the old one is returned, not stopped.

    Args:
        queue: The new queue; None to create a default one on next use.

    Returns:
        The previous queue, or None.
    """
    global _QUEUE
    with _QUEUE_LOCK:
        old, _QUEUE = _QUEUE, queue
        return old
