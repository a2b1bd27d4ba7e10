"""How long a queued training job will wait: from how long recent jobs took.

A job's duration is modelled as its training (epochs × training images,
:func:`~core.jobs.limits.job_images`, at :data:`TRAIN_SECONDS_PER_IMAGE`) plus its final test
error (:attr:`~core.jobs.training.TrainRequest.n_eval_samples` passes over the test set, at
:data:`EVAL_SECONDS_PER_PASS`), times this server's measured speed: the median, over the last
:data:`RECENT` finished jobs of the same method (else of any method), of the time each took over
its model (1 before any job has finished). The queue's workers then take the jobs ahead in order,
each the next one as it frees (:func:`expected_wait`), so with ``w`` workers a queue drains
about ``w`` times faster.
"""

from __future__ import annotations

import heapq
import statistics
import time
from collections.abc import Sequence

from core.jobs.limits import job_images
from core.jobs.records import JobStatus, TrainJob

TRAIN_SECONDS_PER_IMAGE = 27.0 / 30_000
EVAL_SECONDS_PER_PASS = 35.0 / 100
"""The Train page's default job (Bayes by Backprop, 3 epochs × 10,000 MNIST images, test curve
on the 10,000 test images) took 27 s of training and 35 s for its saved test error with 100
passes on one thread of this project's 2-core CPU with other jobs running (docs/train.md): 62 s
in all, and about 34 s with the lesson's 20 passes."""
RECENT = 10
"""Finished jobs the estimate learns from (the most recent ones)."""


def modelled_seconds(job: TrainJob) -> float:
    """A job's duration at the documented rates.

    :data:`TRAIN_SECONDS_PER_IMAGE` for its training, :data:`EVAL_SECONDS_PER_PASS` for its
    saved test error.

    Args:
        job: The job.

    Returns:
        Seconds, more than 0.
    """
    request = job.request
    images = job_images(request.n_train, request.training.epochs)
    passes = max(1, request.n_eval_samples)
    return images * TRAIN_SECONDS_PER_IMAGE + passes * EVAL_SECONDS_PER_PASS


def speed(job: TrainJob, jobs: Sequence[TrainJob]) -> float:
    """How much longer than modelled jobs like ``job`` took here.

    Args:
        job: The job to estimate.
        jobs: The queue's jobs (any status); the last :data:`RECENT` done ones count.

    Returns:
        The median of measured over modelled seconds, over recent done jobs of the same method,
        else over all recent done jobs; 1 before any job has finished.
    """
    done = [j for j in jobs if j.status is JobStatus.DONE and j.started and j.finished]
    done = sorted(done, key=lambda j: j.finished or 0.0)[-RECENT:]
    same = [j for j in done if j.request.model.kind == job.request.model.kind]
    for pool in (same, done):
        if pool:
            return statistics.median(j.elapsed() / modelled_seconds(j) for j in pool)
    return 1.0


def job_seconds(job: TrainJob, jobs: Sequence[TrainJob]) -> float:
    """How long ``job`` will train, from the recent jobs in ``jobs``.

    Args:
        job: The job.
        jobs: The queue's jobs.

    Returns:
        Seconds.
    """
    return speed(job, jobs) * modelled_seconds(job)


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
    :attr:`~core.jobs.records.TrainJob.position`) each go to the first free worker, and ``job``
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
