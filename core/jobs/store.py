"""Training jobs in the lab's database, so that every replica sees them and a restart keeps them.

Table ``jobs`` holds one row per job: the request (JSON), who asked (browser, network address,
whether the teacher), its status (queued, running, done, cancelled, failed), progress, the worker
that runs it and that worker's last sign of life, the outcome; table ``job_points`` holds its
live-curve points (every finished epoch, and running averages every few steps), appended as they
come; table ``job_limits`` holds the limits the teacher set (:mod:`core.jobs.limits`). All live
in the same database as the class drawings (:mod:`core.storage.database`: SQLite by default,
PostgreSQL for several replicas).

Any process may add, list, follow and cancel any job; adding one checks the limits in the same
transaction. A worker *claims* the next queued job — the teacher's first, then the oldest — in
one transaction (so two replicas never run the same job), reports progress and points while
it trains, and reads back whether someone asked to cancel. A job whose worker died is marked
failed with one line when anyone next reads it: at once when the worker was a process on this
host that is gone (or an earlier run of this very process), otherwise once its last sign of
life is :data:`~core.jobs.workers.STALE_S` old — unless the reader can ask the worker's owner,
e.g. Ray for a job of a Ray actor (:func:`~core.jobs.workers.ray_worker`), which may wait
silently in Ray's queue after the replica that submitted it has gone. The job's record is
:mod:`core.jobs.records`, the tables :mod:`core.jobs.schema`.

A write whose PostgreSQL connection was cut (a restart) is tried again for a few seconds
(:meth:`~core.storage.database.Database.write`): cancelling, a worker's sign of life, progress
and a job's end are safe to repeat (a progress report cut while committing may store its curve
points twice); adding and claiming a job are not repeated, and fail with one line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from core.jobs.limits import Limits, Room, check_request, job_images
from core.jobs.owners import Visitor
from core.jobs.records import JobStatus, Report, TrainJob
from core.jobs.schema import (
    ACTIVE,
    COLUMNS,
    JOBS,
    LIMITS,
    NEXT,
    POINTS,
    QUEUE_KEY,
    curves_from_points,
    job_from_row,
    room_of,
    stored_limits,
)
from core.jobs.training import TrainRequest
from core.jobs.workers import Alive, dead_worker_error, worker_gone
from core.storage.database import Database

KEEP_FINISHED = 50
"""Finished jobs kept in the list; older ones are forgotten when a job is added."""


class JobStore:
    """The training jobs in the lab's database (see the module's description).

    Args:
        url: A database URL; None for :func:`~core.storage.database_url.database_url`.
        alive: Asked whether a silent Ray actor still runs a job (:func:`worker_gone`); None
            for a process that does not use Ray.

    Raises:
        DatabaseError: If the URL is not a supported database.
    """

    def __init__(self, url: str | None = None, alive: Alive | None = None) -> None:
        self.db = Database(url, (JOBS, POINTS, LIMITS))
        self.alive = alive

    def __repr__(self) -> str:
        """The store's database, without credentials."""
        return f"JobStore({self.db!r})"

    # --- adding and cancelling ----------------------------------------------------------

    def add(self, request: TrainRequest, visitor: Visitor | None = None) -> int:
        """Queue a request, checking its name and the limits in one transaction.

        Args:
            request: What to train.
            visitor: Who asks, recorded as the job's owner with its address and whether it is
                the teacher; None for ``request.owner``, a student of no known address.

        Returns:
            The job's id.

        Raises:
            ValueError: If another active job will save under that name.
            LimitError: If the student has the most jobs allowed, the class's queue is full or
                the job is too large (:func:`~core.jobs.limits.check_request`).
            DatabaseError: If the database cannot be used.
        """
        if visitor is None:
            visitor = Visitor(request.owner)
        request = replace(request, owner=visitor.id)
        sql = self.db.sql
        with self.db.transaction(QUEUE_KEY) as conn:
            taken = conn.execute(
                sql(f"SELECT 1 FROM jobs WHERE {ACTIVE} AND name = ?"), (request.name,)
            ).fetchone()
            if taken:
                raise ValueError(f"a queued or running job is named {request.name!r} already")
            room = room_of(lambda q, p: conn.execute(sql(q), p).fetchall(), visitor)
            images = job_images(request.n_train, request.training.epochs)
            check_request(images, visitor.teacher, room)
            row = conn.execute(
                sql(
                    "INSERT INTO jobs (name, owner, address, teacher, request, status, submitted) "
                    "VALUES (?, ?, ?, ?, ?, 'queued', ?) RETURNING id"
                ),
                (
                    request.name,
                    visitor.id,
                    visitor.address,
                    int(visitor.teacher),
                    json.dumps(request.to_dict()),
                    time.time(),
                ),
            ).fetchone()
            self._forget_old(conn)
        return int(row[0])

    # --- limits ---------------------------------------------------------------------------

    def room(self, visitor: Visitor) -> Room:
        """How full the queue is for a visitor, and the class's limits now.

        Args:
            visitor: Who asks.

        Returns:
            Its jobs (by browser or address, whichever are more), the students' and the limits.

        Raises:
            DatabaseError: If the database cannot be used.
        """
        return room_of(self.db.rows, visitor)

    def limits(self) -> Limits:
        """The class's limits: the teacher's, else the server's settings.

        Returns:
            The limits now.

        Raises:
            DatabaseError: If the database cannot be used.
        """
        return stored_limits(self.db.rows)

    def set_limits(self, limits: Limits, visitor: Visitor) -> None:
        """Store the class's limits, for every replica and restart (the teacher only).

        Args:
            limits: The new limits, each at least 1.
            visitor: Who asks.

        Raises:
            PermissionError: If the visitor is not the teacher.
            ValueError: If a limit is below 1.
            DatabaseError: If the database cannot be used.
        """
        if not visitor.teacher:
            raise PermissionError("only the teacher can change the class's limits")
        values = asdict(limits)
        if min(values.values()) < 1:
            raise ValueError("every limit must be at least 1")

        def work(conn: Any) -> Any:
            conn.cursor().executemany(
                self.db.sql(
                    "INSERT INTO job_limits (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                ),
                [(name, int(value)) for name, value in values.items()],
            )

        self.db.write(QUEUE_KEY, work)

    def cancel(self, job_id: int, visitor: Visitor) -> bool:
        """Cancel a job: a queued one ends at once, a running one is asked to stop.

        Args:
            job_id: The job.
            visitor: Who asks; only the job's owner or the teacher may.

        Returns:
            True if the job was queued or running.

        Raises:
            PermissionError: If the job is another visitor's.
            DatabaseError: If the database cannot be used.
        """
        sql = self.db.sql

        def work(conn: Any) -> Any:
            row = conn.execute(
                sql("SELECT status, owner FROM jobs WHERE id = ?"), (job_id,)
            ).fetchone()
            if row is None or not JobStatus(row[0]).active:
                return False
            if not visitor.may_act_on(row[1]):
                raise PermissionError(
                    f"job #{job_id} was started by another student: only they or the teacher "
                    "can cancel it"
                )
            if row[0] == JobStatus.QUEUED:
                conn.execute(
                    sql(
                        "UPDATE jobs SET status = 'cancelled', finished = ?, "
                        "message = 'cancelled' WHERE id = ?"
                    ),
                    (time.time(), job_id),
                )
            else:
                conn.execute(sql("UPDATE jobs SET cancel_asked = 1 WHERE id = ?"), (job_id,))
            return True

        return self.db.write(QUEUE_KEY, work)

    def forget(self, job_id: int) -> None:
        """Drop a finished job and its points (its checkpoint, if any, stays).

        Args:
            job_id: The job; active jobs are kept.
        """

        def work(conn: Any) -> Any:
            self._delete(conn, f"id = {int(job_id)} AND status NOT IN ('queued', 'running')")

        self.db.write(QUEUE_KEY, work)

    def _forget_old(self, conn: Any) -> None:
        rows = conn.execute(
            "SELECT id FROM jobs WHERE status NOT IN ('queued', 'running') "
            f"ORDER BY id DESC LIMIT 1 OFFSET {KEEP_FINISHED}"
        ).fetchone()
        if rows is not None:
            self._delete(conn, f"id <= {int(rows[0])} AND status NOT IN ('queued', 'running')")

    @staticmethod
    def _delete(conn: Any, where: str) -> None:
        conn.execute(f"DELETE FROM job_points WHERE job_id IN (SELECT id FROM jobs WHERE {where})")
        conn.execute(f"DELETE FROM jobs WHERE {where}")

    # --- workers --------------------------------------------------------------------------

    def claim(self, worker: str, device: str) -> TrainJob | None:
        """Take the next queued job for a worker (never given to two workers).

        The teacher's queued jobs come first, then the others, each in order of submission.

        Args:
            worker: The worker's process (:data:`PROCESS`).
            device: Where it will train, for display.

        Returns:
            The job, now running; None when nothing waits.
        """
        sql = self.db.sql
        now = time.time()
        with self.db.transaction(QUEUE_KEY) as conn:
            row = conn.execute(
                f"SELECT id FROM jobs WHERE status = 'queued' {NEXT} LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                sql(
                    "UPDATE jobs SET status = 'running', started = ?, heartbeat = ?, "
                    "worker = ?, device = ?, message = 'starting' WHERE id = ?"
                ),
                (now, now, worker, device, row[0]),
            )
            found = conn.execute(
                sql(f"SELECT {COLUMNS} FROM jobs WHERE id = ?"), (row[0],)
            ).fetchone()
        return job_from_row(found)

    def begin(self, job_id: int, worker: str, device: str) -> None:
        """Record the process that trains a claimed job (it may not be the one that claimed it).

        Args:
            job_id: The job.
            worker: The training process (:data:`PROCESS` there).
            device: Where it trains, for display.
        """

        def work(conn: Any) -> Any:
            conn.execute(
                self.db.sql(
                    "UPDATE jobs SET worker = ?, device = ?, heartbeat = ? "
                    "WHERE id = ? AND status = 'running'"
                ),
                (worker, device, time.time(), job_id),
            )

        self.db.write(f"job-{job_id}", work)

    def touch(self, job_id: int, worker: str) -> bool:
        """A sign of life from ``worker`` for a running job it was given but has not begun.

        Args:
            job_id: The job.
            worker: The process that claimed it; the heartbeat is written only while the job is
                still recorded as that process's.

        Returns:
            Whether someone asked to cancel the job (or it is no longer running).
        """
        sql = self.db.sql

        def work(conn: Any) -> Any:
            conn.execute(
                sql(
                    "UPDATE jobs SET heartbeat = ? WHERE id = ? AND status = 'running' "
                    "AND worker = ?"
                ),
                (time.time(), job_id, worker),
            )
            row = conn.execute(
                sql("SELECT status, cancel_asked FROM jobs WHERE id = ?"), (job_id,)
            ).fetchone()
            return row is None or row[0] != JobStatus.RUNNING or bool(row[1])

        return self.db.write(f"job-{job_id}", work)

    def report(self, job_id: int, report: Report) -> bool:
        """Store a running job's progress and new points, as a sign of its worker's life.

        Args:
            job_id: The job.
            report: What happened since the last report.

        Returns:
            Whether someone asked to cancel the job (or it is no longer running).
        """
        sql = self.db.sql

        def work(conn: Any) -> Any:
            self._append(conn, job_id, report)
            conn.execute(
                sql(
                    "UPDATE jobs SET fraction = ?, message = ?, heartbeat = ? "
                    "WHERE id = ? AND status = 'running'"
                ),
                (report.fraction, report.message, time.time(), job_id),
            )
            row = conn.execute(
                sql("SELECT status, cancel_asked FROM jobs WHERE id = ?"), (job_id,)
            ).fetchone()
            return row is None or row[0] != JobStatus.RUNNING or bool(row[1])

        asked = self.db.write(f"job-{job_id}", work)
        report.epochs, report.steps = [], []  # stored: not sent again
        return asked

    def finish(
        self,
        job_id: int,
        status: JobStatus,
        report: Report,
        *,
        message: str,
        path: Path | None = None,
        metrics: dict | None = None,
        error: str = "",
        details: str = "",
    ) -> None:
        """Store how a running job ended, with its last points.

        Args:
            job_id: The job.
            status: DONE, CANCELLED or FAILED.
            report: What happened since the last report.
            message: The final message.
            path: The saved checkpoint (DONE).
            metrics: Its test metrics (DONE).
            error: One line on what went wrong (FAILED).
            details: The traceback (FAILED).
        """
        sql = self.db.sql
        fraction = 1.0 if status is JobStatus.DONE else report.fraction

        def work(conn: Any) -> Any:
            self._append(conn, job_id, report)
            conn.execute(
                sql(
                    "UPDATE jobs SET status = ?, finished = ?, fraction = ?, message = ?, "
                    "path = ?, metrics = ?, error = ?, details = ? "
                    "WHERE id = ? AND status = 'running'"
                ),
                (
                    status.value,
                    time.time(),
                    fraction,
                    message,
                    "" if path is None else str(path),
                    json.dumps(metrics or {}),
                    error,
                    details,
                    job_id,
                ),
            )

        self.db.write(f"job-{job_id}", work)
        report.epochs, report.steps = [], []

    def _append(self, conn: Any, job_id: int, report: Report) -> None:
        points = [("epoch", s) for s in report.epochs] + [("step", s) for s in report.steps]
        if points:
            conn.cursor().executemany(
                self.db.sql("INSERT INTO job_points (job_id, kind, data) VALUES (?, ?, ?)"),
                [(job_id, kind, json.dumps(asdict(s))) for kind, s in points],
            )

    def fail_dead(self, jobs: Sequence[TrainJob], now: float | None = None) -> list[TrainJob]:
        """Mark running jobs whose worker died as failed, with one line.

        Args:
            jobs: Jobs just read.
            now: The current time; None for :func:`time.time`.

        Returns:
            The jobs, the dead ones updated.
        """
        now = time.time() if now is None else now
        dead = [
            j
            for j in jobs
            if j.status is JobStatus.RUNNING and worker_gone(j.worker, j.heartbeat, now, self.alive)
        ]
        if not dead:
            return list(jobs)
        sql = self.db.sql
        with self.db.transaction(QUEUE_KEY) as conn:
            for job in dead:
                job.error = dead_worker_error(job.heartbeat)
                job.status, job.finished, job.message = JobStatus.FAILED, now, "failed"
                conn.execute(
                    sql(
                        "UPDATE jobs SET status = 'failed', finished = ?, message = 'failed', "
                        "error = ? WHERE id = ? AND status = 'running' AND worker = ?"
                    ),
                    (now, job.error, job.id, job.worker),
                )
        return list(jobs)

    # --- reading --------------------------------------------------------------------------

    def jobs(self) -> list[TrainJob]:
        """Every remembered job, oldest first, without its points (dead workers' jobs failed).

        Returns:
            The jobs, each with its queue position.
        """
        rows = self.db.rows(f"SELECT {COLUMNS} FROM jobs ORDER BY id")
        jobs = self.fail_dead([job_from_row(r) for r in rows])
        waiting = sorted(
            (j for j in jobs if j.status is JobStatus.QUEUED), key=lambda j: (not j.teacher, j.id)
        )
        for place, job in enumerate(waiting, start=1):
            job.position = place
        return jobs

    def get(self, job_id: int) -> TrainJob | None:
        """One job with its live-curve points.

        Args:
            job_id: The job.

        Returns:
            The job, or None if unknown or forgotten.
        """
        rows = self.db.rows(f"SELECT {COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            return None
        (job,) = self.fail_dead([job_from_row(rows[0])])
        if job.status is JobStatus.QUEUED:
            (ahead,) = self.db.rows(
                "SELECT COUNT(*) FROM jobs WHERE status = 'queued' "
                "AND (teacher > ? OR (teacher = ? AND id <= ?))",
                (int(job.teacher), int(job.teacher), job_id),
            )[0]
            job.position = int(ahead)
        points = self.db.rows(
            "SELECT kind, data FROM job_points WHERE job_id = ? ORDER BY id", (job_id,)
        )
        job.history, job.steps = curves_from_points(points)
        return job
