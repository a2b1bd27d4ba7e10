"""A training job as stored and as a worker reports on it: status, record, progress report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from core.jobs.training import TrainRequest
from core.training import EpochStats, StepStats


class JobStatus(StrEnum):
    """Where a job is in its life.

    Attributes:
        QUEUED: Waiting for a free worker.
        RUNNING: Training.
        DONE: Finished and saved.
        CANCELLED: Stopped by a user; nothing saved.
        FAILED: Stopped by an error, or its worker died; nothing saved.
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
    """One training job as stored, and everything the page shows about it.

    Attributes:
        id: Job number, 1, 2, ... in order of submission (across all replicas).
        request: What is trained.
        status: Where the job is.
        submitted: Submission time (seconds since the epoch).
        started: When it started training, or None.
        finished: When it ended, or None.
        fraction: Fraction done, in [0, 1].
        message: The last progress message.
        device: Where it trains ("" until it starts).
        worker: The process that runs it (host, process id, start token; "" until it starts).
        heartbeat: The worker's last sign of life (seconds since the epoch), or None.
        cancelling: Someone asked to cancel the running job; it stops within a second or so.
        position: For a queued job, 1 for the next to start, 2, ... (the teacher's jobs
            first, then in order of submission); else None.
        history: Every finished epoch's stats (read with the job's points only).
        steps: Running averages within epochs, every 20 steps (at most
            :data:`~core.jobs.schema.MAX_STEP_POINTS`, thinned evenly; read with the points).
        path: The saved checkpoint, once done.
        metrics: The saved model's whole-test-set metrics, once done.
        error: What went wrong, for a failed job (one line).
        details: The failed job's traceback, for the server log.
        teacher: Whether the teacher asked for it (it goes first; no limit applies).
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
    worker: str = ""
    heartbeat: float | None = None
    cancelling: bool = False
    position: int | None = None
    history: list[EpochStats] = field(default_factory=list)
    steps: list[StepStats] = field(default_factory=list)
    path: Path | None = None
    metrics: dict = field(default_factory=dict)
    error: str = ""
    details: str = ""
    teacher: bool = False

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


@dataclass
class Report:
    """What a worker tells the store about a running job since its last report.

    Attributes:
        fraction: Fraction done, in [0, 1].
        message: The latest progress message.
        epochs: Epochs finished since the last report.
        steps: Running-average points since the last report.
    """

    fraction: float = 0.0
    message: str = "starting"
    epochs: list[EpochStats] = field(default_factory=list)
    steps: list[StepStats] = field(default_factory=list)
