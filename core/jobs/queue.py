"""The server's training queue: worker threads that run :class:`TrainRequest` s one at a time.

One :class:`JobQueue` per process (:func:`training_queue`) is owned by the server, not by a
page's script run: a job keeps running when the browser tab closes or the page reruns, and any
later script run (a reload, another tab, another student) sees the same jobs and re-attaches by
reading :meth:`JobQueue.jobs`. A classroom shares one server, so by default one job trains at a
time (``BNN_TRAIN_WORKERS``) and later jobs wait in a first-in-first-out queue whose positions
:meth:`JobQueue.position` tells.

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

**Cancel.** :meth:`JobQueue.cancel` removes a queued job at once and sets a running job's
:class:`threading.Event`; the training loop stops within one step and nothing is saved
(:func:`~core.jobs.training.run_training` saves only a finished run, atomically).
"""

from __future__ import annotations

import copy
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from core import settings
from core.engine.device import default_device, device_name
from core.jobs.owners import Visitor, check_request
from core.jobs.training import TrainOutcome, TrainRequest, run_training
from core.storage.checkpoints import checkpoint_path
from core.storage.paths import user_model_dir
from core.training import EpochStats, StepStats

WORKERS_ENV = "BNN_TRAIN_WORKERS"
THREADS_ENV = "BNN_TRAIN_THREADS"
NOBODY = Visitor()  # the command line, or a laptop's one user
KEEP_FINISHED = 50  # finished jobs remembered for display
MAX_STEP_POINTS = 2000  # running-average points kept per job for the live curves


class JobStatus(StrEnum):
    """Where a job is in its life.

    Attributes:
        QUEUED: Waiting for a free worker.
        RUNNING: Training.
        DONE: Finished and saved.
        CANCELLED: Stopped by a user; nothing saved.
        FAILED: Stopped by an error; nothing saved.
    """

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        """Whether the job is queued or running."""
        return self in (JobStatus.QUEUED, JobStatus.RUNNING)


@dataclass
class TrainJob:
    """One training job and everything the page shows about it.

    Read jobs through :meth:`JobQueue.jobs` / :meth:`JobQueue.get`, which return copies; the
    worker updates the originals.

    Attributes:
        id: Job number, 1, 2, ... in order of submission.
        request: What is trained.
        status: Where the job is.
        submitted: Submission time (seconds since the epoch).
        started: When it started training, or None.
        finished: When it ended, or None.
        fraction: Fraction done, in [0, 1].
        message: The last progress message.
        device: Where it trains ("" until it starts).
        history: Every finished epoch's stats.
        steps: Running averages within epochs, every 20 steps (at most
            :data:`MAX_STEP_POINTS`, thinned evenly).
        path: The saved checkpoint, once done.
        metrics: The saved model's whole-test-set metrics, once done.
        error: What went wrong, for a failed job (one line).
        details: The failed job's traceback, for the server log.
        cancel: Set to stop the job.
    """

    id: int
    request: TrainRequest
    status: JobStatus = JobStatus.QUEUED
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    fraction: float = 0.0
    message: str = "queued"
    device: str = ""
    history: list[EpochStats] = field(default_factory=list)
    steps: list[StepStats] = field(default_factory=list)
    path: Path | None = None
    metrics: dict = field(default_factory=dict)
    error: str = ""
    details: str = ""
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def owner(self) -> str:
        """Who asked for the job (:attr:`core.jobs.owners.Visitor.id`)."""
        return self.request.owner

    def elapsed(self, now: float | None = None) -> float:
        """Seconds spent training so far (0 while queued).

        Args:
            now: The current time; None for :func:`time.time`.

        Returns:
            The training time, up to now or to the end.
        """
        if self.started is None:
            return 0.0
        return (self.finished or now or time.time()) - self.started

    def eta(self, now: float | None = None) -> float | None:
        """Estimated seconds left, extrapolated from the fraction done so far.

        Args:
            now: The current time; None for :func:`time.time`.

        Returns:
            The estimate, or None before any progress or once the job ended.
        """
        if self.status is not JobStatus.RUNNING or self.fraction <= 0.0:
            return None
        elapsed = self.elapsed(now)
        return elapsed * (1.0 - self.fraction) / self.fraction


Runner = Callable[..., TrainOutcome]


class JobQueue:
    """Training jobs run by a fixed number of worker threads, first in, first out.

    Args:
        workers: Jobs trained at the same time; None for ``BNN_TRAIN_WORKERS`` (default 1).
        threads: torch intra-op threads of each worker; None for ``BNN_TRAIN_THREADS``
            (default 1); 0 leaves the worker's count alone.
        runner: Runs one request (:func:`~core.jobs.training.run_training`'s signature);
            tests pass another.
        directory: The user-model folder; None for
            :func:`~core.storage.paths.user_model_dir` at submission time.
    """

    def __init__(
        self,
        workers: int | None = None,
        threads: int | None = None,
        runner: Runner = run_training,
        directory: Path | None = None,
    ) -> None:
        self.workers = workers or settings.positive_int(WORKERS_ENV, 1)
        self.threads = settings.positive_int(THREADS_ENV, 1) if threads is None else threads
        self._runner = runner
        self._directory = directory
        self._lock = threading.Condition()
        self._jobs: dict[int, TrainJob] = {}
        self._waiting: deque[int] = deque()
        self._threads: list[threading.Thread] = []
        self._next_id = 1
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
        """
        if checkpoint_path(request.name, self.folder()).exists():
            raise ValueError(f"a model named {request.name!r} exists already; choose another name")
        request = replace(request, owner=visitor.id)
        with self._lock:
            if self._closed:
                raise ValueError("the training queue is shut down")
            if any(j.status.active and j.request.name == request.name for j in self._jobs.values()):
                raise ValueError(f"a queued or running job is named {request.name!r} already")
            active = sum(j.status.active and j.owner == visitor.id for j in self._jobs.values())
            check_request(request.n_train, request.training.epochs, active)
            job = TrainJob(self._next_id, request)
            self._next_id += 1
            self._jobs[job.id] = job
            self._waiting.append(job.id)
            self._forget_old()
            self._start_workers()
            self._lock.notify_all()
            return job.id

    def cancel(self, job_id: int, visitor: Visitor = NOBODY) -> bool:
        """Cancel a job: a queued one leaves the queue, a running one stops within one step.

        Args:
            job_id: The job.
            visitor: Who asks; only the job's owner or the teacher may (on a shared server).

        Returns:
            True if the job was queued or running.

        Raises:
            PermissionError: If the job is another visitor's.
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or not job.status.active:
                return False
            if not visitor.may_act_on(job.owner):
                raise PermissionError(
                    f"job #{job_id} was started by another student: only they or the teacher "
                    "can cancel it"
                )
            job.cancel.set()
            if job.status is JobStatus.QUEUED:
                self._waiting.remove(job_id)
                job.status, job.finished, job.message = (
                    JobStatus.CANCELLED,
                    time.time(),
                    "cancelled",
                )
            return True

    def forget(self, job_id: int) -> None:
        """Drop a finished job from the list (its checkpoint, if any, stays).

        Args:
            job_id: The job; active jobs are kept.
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and not job.status.active:
                del self._jobs[job_id]

    # --- reading --------------------------------------------------------------------------

    def jobs(self) -> list[TrainJob]:
        """Copies of every remembered job, oldest first.

        Returns:
            The jobs (safe to read while the workers go on).
        """
        with self._lock:
            return [self._copy(j) for j in self._jobs.values()]

    def get(self, job_id: int) -> TrainJob | None:
        """A copy of one job.

        Args:
            job_id: The job.

        Returns:
            The job, or None if unknown or forgotten.
        """
        with self._lock:
            job = self._jobs.get(job_id)
            return None if job is None else self._copy(job)

    def position(self, job_id: int) -> int | None:
        """Where a queued job waits.

        Args:
            job_id: The job.

        Returns:
            1 for the next to start, 2, ...; None if it is not waiting.
        """
        with self._lock:
            try:
                return self._waiting.index(job_id) + 1
            except ValueError:
                return None

    def wait(self, job_id: int, timeout: float | None = None) -> TrainJob | None:
        """Block until a job has ended.

        Args:
            job_id: The job.
            timeout: Seconds to wait at most; None for no limit.

        Returns:
            A copy of the job (still active if the timeout passed), or None if unknown.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                job = self._jobs.get(job_id)
                if job is None or not job.status.active:
                    return None if job is None else self._copy(job)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return self._copy(job)
                self._lock.wait(left)

    def shutdown(self, timeout: float | None = 30.0) -> None:
        """Cancel every job and stop the workers (tests; the server simply exits).

        Args:
            timeout: Seconds to wait for each worker.
        """
        with self._lock:
            self._closed = True
            for job_id in list(self._waiting):
                self.cancel(job_id)
            for job in self._jobs.values():
                job.cancel.set()
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # --- workers --------------------------------------------------------------------------

    @staticmethod
    def _copy(job: TrainJob) -> TrainJob:
        clone = copy.copy(job)
        clone.history, clone.steps, clone.metrics = (
            list(job.history),
            list(job.steps),
            dict(job.metrics),
        )
        return clone

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if not j.status.active]
        for job_id in finished[: max(len(finished) - KEEP_FINISHED, 0)]:
            del self._jobs[job_id]

    def _start_workers(self) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        while len(self._threads) < self.workers:
            thread = threading.Thread(
                target=self._work, name=f"bnn-train-{len(self._threads) + 1}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _next(self) -> TrainJob | None:
        with self._lock:
            while not self._waiting and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            job = self._jobs[self._waiting.popleft()]
            job.status, job.started, job.message = JobStatus.RUNNING, time.time(), "starting"
            device = default_device()
            job.device = device_name(device)
            return job

    def _work(self) -> None:
        if self.threads:
            import torch

            # Once per worker thread: with OpenMP the count is per thread (see module doc).
            torch.set_num_threads(self.threads)
        while (job := self._next()) is not None:
            self._run(job)

    def _run(self, job: TrainJob) -> None:
        def progress(fraction: float, message: str) -> None:
            with self._lock:
                job.fraction, job.message = fraction, message

        def on_epoch(stats: EpochStats) -> None:
            with self._lock:
                job.history.append(stats)

        def on_step(stats: StepStats) -> None:
            with self._lock:
                job.steps.append(stats)
                if len(job.steps) > MAX_STEP_POINTS:
                    job.steps = job.steps[::2]

        try:
            outcome = self._runner(
                job.request,
                progress=progress,
                on_epoch=on_epoch,
                on_step=on_step,
                cancel=job.cancel,
                directory=self.folder(),
            )
        except Exception as exc:  # a failed job is reported on the page, the worker goes on
            with self._lock:
                job.status, job.error = JobStatus.FAILED, f"{type(exc).__name__}: {exc}"
                job.message = "failed"
                job.finished = time.time()
                job.details = traceback.format_exc()
                self._lock.notify_all()
            return
        with self._lock:
            job.finished = time.time()
            if outcome.cancelled:
                job.status, job.message = JobStatus.CANCELLED, "cancelled; nothing saved"
            else:
                job.status, job.fraction, job.message = JobStatus.DONE, 1.0, "saved"
                job.path, job.metrics = outcome.path, dict(outcome.metrics)
            self._lock.notify_all()


_QUEUE: JobQueue | None = None
_QUEUE_LOCK = threading.Lock()


def training_queue() -> JobQueue:
    """The process's one training queue, created on first use.

    Returns:
        The queue (``BNN_TRAIN_WORKERS`` workers, ``BNN_TRAIN_THREADS`` threads each).
    """
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE is None:
            _QUEUE = JobQueue()
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
