"""Running one claimed job here: training it, reporting every :data:`REPORT_S` s, ending it."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from core.engine.device import default_device, device_name
from core.jobs.records import JobStatus, Report
from core.jobs.store import JobStore
from core.jobs.training import TrainOutcome, TrainRequest
from core.jobs.workers import PROCESS
from core.storage.database_errors import DatabaseError
from core.training import EpochStats, StepStats

log = logging.getLogger(__name__)
Runner = Callable[..., TrainOutcome]
"""Trains one request in-process: :func:`~core.jobs.training.run_training`'s signature."""


REPORT_S = 0.5
"""Seconds between a running job's reports to the database (progress, points, cancel)."""


STOPPED = "the server stopped while this job trained; nothing was saved — start it again"


CANCELLED = {"message": "cancelled; nothing saved"}
"""How a cancelled job ends (:meth:`JobStore.finish`'s keyword arguments)."""


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an error's message (its type's name if it has none)."""
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
    worker: str = PROCESS,
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
        worker: The job's worker as stored (this process, or the Ray actor running here).

    Returns:
        How it ended (DONE, CANCELLED or FAILED).
    """
    running, done = _Running(), threading.Event()
    store.begin(job_id, worker, device_name(default_device()))
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
            status, end = JobStatus.CANCELLED, CANCELLED
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


def failed_end(error: str, details: object) -> dict:
    """How a failed job ends (:meth:`JobStore.finish`'s keyword arguments)."""
    return {"message": "failed", "error": error, "details": str(details or error)}
