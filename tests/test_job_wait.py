"""The expected wait of a queued training job: measured seconds per image, workers in order."""

from __future__ import annotations

import pytest

from core.jobs import JobStatus, TrainJob, make_request
from core.jobs.wait import SECONDS_PER_IMAGE, expected_wait, job_seconds

NOW = 1_000_000.0


def job(
    job_id: int,
    status: JobStatus,
    kind: str = "mlp",
    epochs: int = 3,
    n_train: int = 10_000,
    took: float | None = None,
    position: int | None = None,
    started: float | None = None,
    fraction: float = 0.0,
) -> TrainJob:
    request = make_request(f"j{job_id}", kind, epochs=epochs, n_train=n_train)
    done = status is JobStatus.DONE
    return TrainJob(
        job_id,
        request,
        status,
        submitted=NOW - 1000,
        started=NOW - 500 if done else started,
        finished=NOW - 500 + took if done else None,
        fraction=fraction,
        position=position,
    )


def test_before_any_job_finished_a_job_takes_the_documented_rate_per_image():
    queued = job(1, JobStatus.QUEUED, position=1)
    assert job_seconds(queued, [queued]) == pytest.approx(30_000 * SECONDS_PER_IMAGE)
    assert job_seconds(queued, [queued]) == pytest.approx(35.0)


def test_finished_jobs_of_the_same_method_set_the_rate_else_any_finished_job():
    done = [
        job(1, JobStatus.DONE, "mlp", took=30.0),  # 1 ms per image
        job(2, JobStatus.DONE, "mlp", n_train=20_000, took=60.0),  # 1 ms per image
        job(3, JobStatus.DONE, "bbb", took=90.0),  # 3 ms per image
        job(4, JobStatus.FAILED, "mlp"),
    ]
    small = job(5, JobStatus.QUEUED, "mlp", epochs=1, position=1)
    assert job_seconds(small, done + [small]) == pytest.approx(10.0)
    bbb = job(6, JobStatus.QUEUED, "bbb", position=1)
    assert job_seconds(bbb, done + [bbb]) == pytest.approx(90.0)
    dropout = job(7, JobStatus.QUEUED, "dropout", position=1)
    assert job_seconds(dropout, done + [dropout]) == pytest.approx(30.0)  # median of 1, 1, 3 ms


def test_the_wait_is_the_jobs_ahead_taken_in_order_by_the_workers():
    done = [job(1, JobStatus.DONE, took=30.0)]  # 30 s a job of 30,000 images
    running = job(2, JobStatus.RUNNING, started=NOW - 10.0, fraction=0.5)  # 10 s left
    queued = [job(3 + i, JobStatus.QUEUED, position=1 + i) for i in range(4)]
    jobs = done + [running] + queued
    waits = [expected_wait(j, jobs, workers=1, now=NOW) for j in queued]
    assert waits == pytest.approx([10.0, 40.0, 70.0, 100.0])
    waits = [expected_wait(j, jobs, workers=2, now=NOW) for j in queued]
    assert waits == pytest.approx([0.0, 10.0, 30.0, 40.0])  # about half as long
    assert expected_wait(running, jobs, workers=1, now=NOW) is None


def test_a_running_job_without_progress_is_expected_to_take_its_estimate():
    running = job(1, JobStatus.RUNNING, started=NOW - 5.0)
    queued = job(2, JobStatus.QUEUED, position=1)
    assert expected_wait(queued, [running, queued], 1, now=NOW) == pytest.approx(30.0)


def test_thirty_default_jobs_on_one_worker_take_about_eighteen_minutes():
    queued = [job(i, JobStatus.QUEUED, "bbb", position=i) for i in range(1, 31)]
    last = expected_wait(queued[-1], queued, 1, now=NOW) + job_seconds(queued[-1], queued)
    assert last / 60 == pytest.approx(17.5)
