"""The expected wait of a queued training job: modelled durations scaled by how long recent
jobs took here, the jobs ahead taken in order by the workers."""

from __future__ import annotations

import pytest

from core.jobs import JobStatus, TrainJob, make_request
from core.jobs.wait import expected_wait, job_seconds

NOW = 1_000_000.0


def job(
    job_id: int,
    status: JobStatus,
    kind: str = "mlp",
    epochs: int = 3,
    n_train: int = 10_000,
    passes: int = 100,
    took: float | None = None,
    position: int | None = None,
    started: float | None = None,
    fraction: float = 0.0,
) -> TrainJob:
    request = make_request(
        f"j{job_id}", kind, epochs=epochs, n_train=n_train, n_eval_samples=passes
    )
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


def test_before_any_job_finished_a_job_takes_the_documented_time():
    default = job(1, JobStatus.QUEUED, "bbb", position=1)  # the Train page's defaults
    assert job_seconds(default, [default]) == pytest.approx(62.0)  # 27 s + 100 passes' 35 s
    lesson = job(2, JobStatus.QUEUED, "bbb", passes=20, position=1)  # lesson 2's links
    assert job_seconds(lesson, [lesson]) == pytest.approx(34.0)


def test_finished_jobs_of_the_same_method_set_the_speed_else_any_finished_job():
    done = [
        job(1, JobStatus.DONE, "mlp", took=31.0),  # half the modelled 62 s
        job(2, JobStatus.DONE, "mlp", n_train=20_000, took=44.5),  # half of 89 s
        job(3, JobStatus.DONE, "bbb", took=124.0),  # twice
        job(4, JobStatus.FAILED, "mlp"),
    ]
    small = job(5, JobStatus.QUEUED, "mlp", epochs=1, passes=20, position=1)  # 9 s + 7 s
    assert job_seconds(small, done + [small]) == pytest.approx(8.0)
    bbb = job(6, JobStatus.QUEUED, "bbb", position=1)
    assert job_seconds(bbb, done + [bbb]) == pytest.approx(124.0)
    dropout = job(7, JobStatus.QUEUED, "dropout", position=1)
    assert job_seconds(dropout, done + [dropout]) == pytest.approx(31.0)  # median ½, ½, 2


def test_the_wait_is_the_jobs_ahead_taken_in_order_by_the_workers():
    done = [job(1, JobStatus.DONE, took=62.0)]  # as modelled: 62 s a job
    running = job(2, JobStatus.RUNNING, started=NOW - 10.0, fraction=0.5)  # 10 s left
    queued = [job(3 + i, JobStatus.QUEUED, position=1 + i) for i in range(4)]
    jobs = done + [running] + queued
    waits = [expected_wait(j, jobs, workers=1, now=NOW) for j in queued]
    assert waits == pytest.approx([10.0, 72.0, 134.0, 196.0])
    waits = [expected_wait(j, jobs, workers=2, now=NOW) for j in queued]
    assert waits == pytest.approx([0.0, 10.0, 62.0, 72.0])  # about half as long
    assert expected_wait(running, jobs, workers=1, now=NOW) is None


def test_a_running_job_without_progress_is_expected_to_take_its_estimate():
    running = job(1, JobStatus.RUNNING, started=NOW - 5.0)
    queued = job(2, JobStatus.QUEUED, position=1)
    assert expected_wait(queued, [running, queued], 1, now=NOW) == pytest.approx(57.0)


@pytest.mark.parametrize(("passes", "minutes"), [(100, 31.0), (20, 17.0)])
def test_thirty_students_jobs_on_one_worker(passes, minutes):
    """The page's defaults (100 passes) and lesson 2's links (20): docs/teaching.md."""
    queued = [job(i, JobStatus.QUEUED, "bbb", passes=passes, position=i) for i in range(1, 31)]
    last = expected_wait(queued[-1], queued, 1, now=NOW) + job_seconds(queued[-1], queued)
    assert last / 60 == pytest.approx(minutes)
