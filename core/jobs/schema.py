"""The job tables of the lab's database and how their rows read."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.jobs.limits import Limits, Room
from core.jobs.owners import Visitor
from core.jobs.records import JobStatus, TrainJob
from core.jobs.training import TrainRequest
from core.storage.database import Table
from core.training import EpochStats, StepStats

JOBS = Table.with_id(
    "jobs",
    """name TEXT NOT NULL,
    owner TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    submitted DOUBLE PRECISION NOT NULL,
    started DOUBLE PRECISION,
    finished DOUBLE PRECISION,
    fraction DOUBLE PRECISION NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT 'queued',
    device TEXT NOT NULL DEFAULT '',
    worker TEXT NOT NULL DEFAULT '',
    heartbeat DOUBLE PRECISION,
    cancel_asked INTEGER NOT NULL DEFAULT 0,
    path TEXT NOT NULL DEFAULT '',
    metrics TEXT NOT NULL DEFAULT '{{}}',
    error TEXT NOT NULL DEFAULT '',
    details TEXT NOT NULL DEFAULT ''""",
    ("CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, id)",),
    added=("address TEXT NOT NULL DEFAULT ''", "teacher INTEGER NOT NULL DEFAULT 0"),
)


POINTS = Table.with_id(
    "job_points",
    "job_id BIGINT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL",
    ("CREATE INDEX IF NOT EXISTS job_points_by_job ON job_points (job_id, id)",),
)


_LIMITS_TABLE = (
    "CREATE TABLE IF NOT EXISTS job_limits (name TEXT PRIMARY KEY, value BIGINT NOT NULL)"
)


LIMITS = Table("job_limits", sqlite=(_LIMITS_TABLE,), postgres=(_LIMITS_TABLE,))


COLUMNS = (
    "id, request, status, submitted, started, finished, fraction, message, device, worker, "
    "heartbeat, cancel_asked, path, metrics, error, details, teacher"
)


QUEUE_KEY = "jobs"  # the write lock of adding and claiming (PostgreSQL advisory lock key)


ACTIVE = "status IN ('queued', 'running')"


NEXT = "ORDER BY teacher DESC, id"  # the order queued jobs start in: the teacher's first
MAX_STEP_POINTS = 2000
"""Most running-average points a job gives for its live curves (thinned evenly)."""
Query = Callable[[str, tuple], list]
"""Runs a SQL query (``?`` placeholders) with its parameters and returns the rows."""


def stored_limits(query: Query) -> Limits:
    """The class's limits: the teacher's as stored, else the server's settings.

    Args:
        query: Runs a query with parameters and returns its rows.

    Returns:
        The limits.
    """
    stored = dict(query("SELECT name, value FROM job_limits", ()))
    defaults = Limits.defaults()
    return Limits(**{k: int(stored.get(k, v)) for k, v in asdict(defaults).items()})


def room_of(query: Query, visitor: Visitor) -> Room:
    """How full the queue is for a visitor, and the class's limits now.

    Args:
        query: Runs a query with parameters and returns its rows.
        visitor: Who asks.

    Returns:
        Its active jobs (by browser or address, whichever are more), the students' and the
        limits.
    """
    rows = query(
        "SELECT COUNT(*), "
        "COALESCE(SUM(CASE WHEN owner = ? THEN 1 ELSE 0 END), 0), "
        "COALESCE(SUM(CASE WHEN address = ? AND address <> '' THEN 1 ELSE 0 END), 0) "
        f"FROM jobs WHERE {ACTIVE} AND teacher = 0",
        (visitor.id, visitor.address),
    )
    students, by_browser, by_address = rows[0] if rows else (0, 0, 0)
    mine = max(int(by_browser), int(by_address))
    return Room(mine=mine, students=int(students), limits=stored_limits(query))


def job_from_row(row: Sequence[Any]) -> TrainJob:
    """A job from a row of :data:`COLUMNS` (without its points).

    Args:
        row: The row's values in :data:`COLUMNS` order.

    Returns:
        The job.
    """
    (job_id, request, status, submitted, started, finished, fraction, message, device) = row[:9]
    worker, heartbeat, cancel_asked, path, metrics, error, details, teacher = row[9:]
    return TrainJob(
        id=int(job_id),
        request=TrainRequest.from_dict(json.loads(request)),
        status=JobStatus(status),
        submitted=float(submitted),
        started=None if started is None else float(started),
        finished=None if finished is None else float(finished),
        fraction=float(fraction),
        message=str(message),
        device=str(device),
        worker=str(worker),
        heartbeat=None if heartbeat is None else float(heartbeat),
        cancelling=bool(cancel_asked) and status == JobStatus.RUNNING,
        path=Path(path) if path else None,
        metrics=json.loads(metrics),
        error=str(error),
        details=str(details),
        teacher=bool(teacher),
    )


def curves_from_points(points: Sequence[Sequence[Any]]) -> tuple[list[EpochStats], list[StepStats]]:
    """A job's live curves from its rows of ``job_points``.

    Args:
        points: ``(kind, data)`` rows in order: ``"epoch"`` or ``"step"``, and the JSON stats.

    Returns:
        Every finished epoch's stats, and the running averages thinned evenly to at most
        :data:`MAX_STEP_POINTS`.
    """
    history = [EpochStats(**json.loads(d)) for k, d in points if k == "epoch"]
    steps = [StepStats(**json.loads(d)) for k, d in points if k == "step"]
    stride = math.ceil(len(steps) / MAX_STEP_POINTS) if steps else 1
    return history, steps[::stride]
