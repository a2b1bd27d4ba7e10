"""How long a queued training job will wait: from how long recent jobs took, per image.

A job's duration is estimated from the last :data:`RECENT` finished jobs, per image trained
(epochs × training images, :func:`~core.jobs.limits.job_images`): the median over those of the
same method, else over all of them, else :data:`SECONDS_PER_IMAGE`. The queue's workers then
take the jobs ahead in order, each the next one as it frees (:func:`expected_wait`), so with
``w`` workers a queue drains about ``w`` times faster.
"""

from __future__ import annotations

import heapq
import statistics
import time
from collections.abc import Sequence

from core.jobs.limits import job_images
from core.jobs.store import JobStatus, TrainJob

SECONDS_PER_IMAGE = 35.0 / 30_000
"""Seconds per image of a job before any job has finished here: the Train page's default job
(Bayes by Backprop, 3 epochs × 10,000 MNIST images, test curve on 10,000 test images, the saved
test error with 100 passes) took about 35 s on one thread of a quiet 2-core CPU (docs/train.md)."""
RECENT = 10
"""Finished jobs the estimate learns from (the most recent ones)."""


def images(job: TrainJob) -> int:
    """Images a job trains on in all (epochs × training images).

    Args:
        job: The job.

    Returns:
        At least 1.
    """
    return max(1, job_images(job.request.n_train, job.request.training.epochs))


def seconds_per_image(job: TrainJob, finished: Sequence[TrainJob]) -> float:
    """The measured seconds per image of jobs like ``job``.

    Args:
        job: The job to estimate.
        finished: Jobs of the queue (any status); the last :data:`RECENT` done ones count.

    Returns:
        The median over recent done jobs of the same method, else over all recent done jobs,
        else :data:`SECONDS_PER_IMAGE`.
    """
    done = [j for j in finished if j.status is JobStatus.DONE and j.started and j.finished]
    done = sorted(done, key=lambda j: j.finished or 0.0)[-RECENT:]
    same = [j for j in done if j.request.model.kind == job.request.model.kind]
    for pool in (same, done):
        if pool:
            return statistics.median(j.elapsed() / images(j) for j in pool)
    return SECONDS_PER_IMAGE


def job_seconds(job: TrainJob, jobs: Sequence[TrainJob]) -> float:
    """How long ``job`` will train, from the recent jobs in ``jobs``.

    Args:
        job: The job.
        jobs: The queue's jobs.

    Returns:
        Seconds.
    """
    return seconds_per_image(job, jobs) * images(job)


def remaining(job: TrainJob, jobs: Sequence[TrainJob], now: float) -> float:
    """Seconds a running job has left: its own extrapolation, else the estimate less its time.

    Args:
        job: A running job.
        jobs: The queue's jobs.
        now: The current time.

    Returns:
        Seconds, at least 0.
    """
    eta = job.eta(now)
    if eta is None:
        eta = job_seconds(job, jobs) - job.elapsed(now)
    return max(0.0, eta)


def expected_wait(
    job: TrainJob, jobs: Sequence[TrainJob], workers: int, now: float | None = None
) -> float | None:
    """Seconds until a queued job starts, if the queue's ``workers`` take the jobs in order.

    Each worker is free once its running job ends; the queued jobs ahead of ``job`` (smaller
    :attr:`~core.jobs.store.TrainJob.position`) each go to the first free worker, and ``job``
    starts when the next worker frees after them.

    Args:
        job: A queued job (with its position, as :meth:`~core.jobs.store.JobStore.jobs` gives).
        jobs: Every job of the queue, with positions.
        workers: Jobs trained at once.
        now: The current time; None for :func:`time.time`.

    Returns:
        Seconds, or None if the job is not queued.
    """
    if job.status is not JobStatus.QUEUED or job.position is None:
        return None
    now = time.time() if now is None else now
    running = [remaining(j, jobs, now) for j in jobs if j.status is JobStatus.RUNNING]
    free = sorted(running)[:workers] + [0.0] * max(0, workers - len(running))
    # more running jobs than workers (other replicas'): the earliest ends free a worker first
    heapq.heapify(free)
    ahead = sorted(
        (j for j in jobs if j.status is JobStatus.QUEUED and (j.position or 0) < job.position),
        key=lambda j: j.position or 0,
    )
    for other in ahead:
        heapq.heapreplace(free, free[0] + job_seconds(other, jobs))
    return free[0]
