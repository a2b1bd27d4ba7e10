"""The training queue: jobs kept in the lab's database, trained by worker threads of the server.

Jobs live in the database (:mod:`core.jobs.store`), not in a process's memory: every app replica
on the same database lists, follows and cancels every job, and a restarted server shows what
happened to each (a job whose server stopped while it trained is marked failed with one line;
queued jobs start again). One :class:`JobQueue` per process (:func:`training_queue`) owns that
process's workers: a job keeps running when the browser tab closes or the page reruns. A
classroom shares one server, so by default one job trains at a time per process
(``BNN_TRAIN_WORKERS``) and later jobs wait in a queue whose positions :meth:`JobQueue.position`
tells: the teacher's first, then first in, first out. How many jobs a student and the class may
queue, and how large one may be, is :mod:`core.jobs.limits`. A running job reports its progress
and live-curve points to the database every :data:`REPORT_S` seconds, which is also its sign of
life.

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
finished run, atomically). A server that stops (``atexit``, e.g. after SIGTERM) stops the jobs
training in its own threads the same way and marks them failed; jobs it started on Ray keep
training there (:mod:`core.jobs.executors`).

**Start.** :func:`training_queue` starts the process's workers; the app's server calls it
before its first visitor (:mod:`app.warmup`), so jobs queued before a restart start at once.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from pathlib import Path

from core import settings
from core.jobs.executors import make_executor
from core.jobs.limits import Limits, Room
from core.jobs.owners import Visitor
from core.jobs.records import TrainJob
from core.jobs.running import Runner
from core.jobs.store import JobStore
from core.jobs.training import TrainRequest, run_training
from core.jobs.workers import PROCESS
from core.paths import user_model_dir
from core.storage.checkpoints import checkpoint_path
from core.storage.database_errors import DatabaseError

WORKERS_ENV = "BNN_TRAIN_WORKERS"
THREADS_ENV = "BNN_TRAIN_THREADS"
NOBODY = Visitor(teacher=True)  # the command line: the operator at the machine
IDLE_POLL_S = 1.0
"""Seconds an idle worker waits before it looks for jobs other processes queued."""

log = logging.getLogger(__name__)


class JobQueue:
    """Training jobs in the lab's database, run by this process's workers.

    The teacher's jobs start first, then the others first in, first out. Every process (app
    replica) with a queue on the same database sees, follows and cancels the same jobs, and its
    workers take queued jobs whoever submitted them.

    Args:
        workers: Jobs this process trains at the same time; None for ``BNN_TRAIN_WORKERS``
            (default 1).
        threads: torch intra-op threads of each worker; None for ``BNN_TRAIN_THREADS``
            (default 1); 0 leaves the worker's count alone.
        runner: Runs one request in-process (:func:`~core.jobs.training.run_training`'s
            signature); tests pass another. With ``BNN_RAY_ADDRESS`` set, jobs train in Ray actors
            instead (:mod:`core.jobs.executors`).
        directory: The user-model folder; None for
            :func:`~core.paths.user_model_dir` at submission time.
        url: The database; None for :func:`~core.storage.database_url.database_url`.
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
        self._directory = directory
        self.executor = make_executor(runner, self.folder, self.threads)
        self.store = JobStore(url, alive=self.executor.alive)
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

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
                under that name, or the queue is shut down.
            LimitError: If the student has the most jobs allowed, the class's queue is full or
                the job is too large (:func:`~core.jobs.limits.check_request`).
            DatabaseError: If the database cannot be used (nothing was queued).
        """
        if self._stop.is_set():
            raise ValueError("the training queue is shut down")
        if checkpoint_path(request.name, self.folder()).exists():
            raise ValueError(f"a model named {request.name!r} exists already; choose another name")
        job_id = self.store.add(request, visitor)
        self._start_workers()
        return job_id

    def cancel(self, job_id: int, visitor: Visitor = NOBODY) -> bool:
        """Cancel a job: a queued one leaves the queue, a running one stops within a second.

        Args:
            job_id: The job.
            visitor: Who asks; only the job's owner or the teacher may.

        Returns:
            True if the job was queued or running.

        Raises:
            PermissionError: If the job is another visitor's.
        """
        if not self.store.cancel(job_id, visitor):
            return False
        self.executor.cancel(self.store, job_id)
        return True

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

    def room(self, visitor: Visitor = NOBODY) -> Room:
        """How full the queue is for a visitor (:meth:`JobStore.room`).

        Args:
            visitor: Who asks.

        Returns:
            Its jobs, the students' and the class's limits.
        """
        return self.store.room(visitor)

    def set_limits(self, limits: Limits, visitor: Visitor) -> None:
        """Store the class's limits for every replica (:meth:`JobStore.set_limits`).

        Args:
            limits: The new limits, each at least 1.
            visitor: Who asks; only the teacher may.

        Raises:
            PermissionError: If the visitor is not the teacher.
            ValueError: If a limit is below 1.
            DatabaseError: If the database cannot be used.
        """
        self.store.set_limits(limits, visitor)

    def position(self, job_id: int) -> int | None:
        """Where a queued job waits.

        Args:
            job_id: The job.

        Returns:
            1 for the next to start, 2, ... (the teacher's jobs first); None if it is not
            waiting.
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
            time.sleep(0.1 if left is None else min(left, 0.1))

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

        A job training in this process stops within one step and is marked failed ("the server
        stopped"); a job this process started on Ray keeps training there (it belongs to the
        cluster, and any replica follows it).

        Args:
            timeout: Seconds to wait for each worker.
        """
        with self._lock:
            self._stop.set()
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    # --- workers --------------------------------------------------------------------------

    def _start_workers(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            if not self._threads:
                atexit.register(self.shutdown, 10.0)  # a stopping server marks its jobs
            self._threads = [t for t in self._threads if t.is_alive()]
            for n in range(len(self._threads), self.workers):
                thread = threading.Thread(target=self._work, name=f"bnn-train-{n + 1}", daemon=True)
                self._threads.append(thread)
                thread.start()
            self._lock.notify_all()

    def _work(self) -> None:
        if self.threads:
            import torch

            # Once per worker thread: with OpenMP the count is per thread (see module doc).
            torch.set_num_threads(self.threads)
        while not self._stop.is_set():
            try:
                job = self.store.claim(PROCESS, "")
            except DatabaseError as exc:
                log.warning("training worker: %s", exc)
                job = None
            if job is None:
                with self._lock:  # woken by a submission here, or the next look
                    if not self._stop.is_set():
                        self._lock.wait(IDLE_POLL_S)
                continue
            self.executor.run(self.store, job, self._stop)


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
