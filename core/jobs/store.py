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
life is :data:`STALE_S` old — unless the reader can ask the worker's owner, e.g. Ray for a job
of a Ray actor (:func:`ray_worker`), which may wait silently in Ray's queue after the replica
that submitted it has gone.

A write whose PostgreSQL connection was cut (a restart) is tried again for a few seconds
(:meth:`~core.storage.database.Database.write`): cancelling, a worker's sign of life, progress
and a job's end are safe to repeat (a progress report cut while committing may store its curve
points twice); adding and claiming a job are not repeated, and fail with one line.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.jobs.limits import Limits, Room, check_request, job_images
from core.jobs.owners import Visitor
from core.jobs.training import TrainRequest
from core.storage.database import Database, Table
from core.training import EpochStats, StepStats

STALE_S = 60.0
"""Seconds without a sign of life after which a running job's worker counts as dead."""
MAX_STEP_POINTS = 2000
"""Most running-average points a job gives for its live curves (thinned evenly)."""
KEEP_FINISHED = 50
"""Finished jobs kept in the list; older ones are forgotten when a job is added."""
HOST = socket.gethostname()
PROCESS = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""This process's worker name: host, process id and a token new at every start."""
RAY_WORKER = "ray:"
"""How the worker name of a job trained by a Ray actor begins (:func:`ray_worker`)."""
Alive = Callable[[str], bool | None]
"""Tells whether a Ray actor (by name) is alive: True, False, or None when it cannot tell."""

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
_COLUMNS = (
    "id, request, status, submitted, started, finished, fraction, message, device, worker, "
    "heartbeat, cancel_asked, path, metrics, error, details, teacher"
)
_QUEUE_KEY = "jobs"  # the write lock of adding and claiming (PostgreSQL advisory lock key)
_ACTIVE = "status IN ('queued', 'running')"
_NEXT = "ORDER BY teacher DESC, id"  # the order queued jobs start in: the teacher's first


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
            :data:`MAX_STEP_POINTS`, thinned evenly; read with the job's points only).
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


def ray_worker(actor: str, process: str = "") -> str:
    """The worker name of a job that a Ray actor trains.

    Args:
        actor: The actor's name in the lab's Ray namespace.
        process: :data:`PROCESS` of the actor's process, once it has begun the job.

    Returns:
        ``ray:<actor>``, or ``ray:<actor>@<process>``.
    """
    return f"{RAY_WORKER}{actor}@{process}" if process else f"{RAY_WORKER}{actor}"


def ray_actor(worker: str) -> str:
    """The Ray actor a worker name names (:func:`ray_worker`).

    Args:
        worker: A job's worker.

    Returns:
        The actor's name; "" for a worker that is not a Ray actor.
    """
    if not worker.startswith(RAY_WORKER):
        return ""
    return worker.removeprefix(RAY_WORKER).partition("@")[0]


def worker_gone(
    worker: str, heartbeat: float | None, now: float, alive: Alive | None = None
) -> bool:
    """Whether the worker running a job is certainly or probably dead.

    Args:
        worker: :data:`PROCESS` of the worker's process, or a Ray actor's :func:`ray_worker`.
        heartbeat: Its last sign of life.
        now: The current time.
        alive: Asked about a Ray actor whose last sign of life is older than :data:`STALE_S`
            (it may wait in Ray's queue, where nobody reports for it); None: nobody to ask.

    Returns:
        True for an earlier run of this process's id, a process of this host that no longer
        exists, or a last sign of life older than :data:`STALE_S` (for a Ray actor: that Ray
        does not know as alive).
    """
    actor = ray_actor(worker)
    process = worker.partition("@")[2] if actor else worker
    host, _, rest = process.partition(":")
    pid, _, token = rest.partition(":")
    if host == HOST and pid.isdigit():
        if int(pid) == os.getpid():
            return process != PROCESS
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # alive, another user's
    if heartbeat is not None and now - heartbeat <= STALE_S:
        return False
    return not (actor and alive is not None and alive(actor))


class JobStore:
    """The training jobs in the lab's database (see the module's description).

    Args:
        url: A database URL; None for :func:`~core.storage.database.database_url`.
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
        with self.db.transaction(_QUEUE_KEY) as conn:
            taken = conn.execute(
                sql(f"SELECT 1 FROM jobs WHERE {_ACTIVE} AND name = ?"), (request.name,)
            ).fetchone()
            if taken:
                raise ValueError(f"a queued or running job is named {request.name!r} already")
            room = self._room(lambda q, p: conn.execute(sql(q), p).fetchall(), visitor)
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
        return self._room(self.db.rows, visitor)

    def limits(self) -> Limits:
        """The class's limits: the teacher's, else the server's settings.

        Returns:
            The limits now.

        Raises:
            DatabaseError: If the database cannot be used.
        """
        return self._limits(self.db.rows)

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

        self.db.write(_QUEUE_KEY, work)

    @staticmethod
    def _limits(query: Callable[[str, tuple], list]) -> Limits:
        stored = dict(query("SELECT name, value FROM job_limits", ()))
        defaults = Limits.defaults()
        return Limits(**{k: int(stored.get(k, v)) for k, v in asdict(defaults).items()})

    def _room(self, query: Callable[[str, tuple], list], visitor: Visitor) -> Room:
        rows = query(
            "SELECT COUNT(*), "
            "COALESCE(SUM(CASE WHEN owner = ? THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(CASE WHEN address = ? AND address <> '' THEN 1 ELSE 0 END), 0) "
            f"FROM jobs WHERE {_ACTIVE} AND teacher = 0",
            (visitor.id, visitor.address),
        )
        students, by_browser, by_address = rows[0] if rows else (0, 0, 0)
        mine = max(int(by_browser), int(by_address))
        return Room(mine=mine, students=int(students), limits=self._limits(query))

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

        return self.db.write(_QUEUE_KEY, work)

    def forget(self, job_id: int) -> None:
        """Drop a finished job and its points (its checkpoint, if any, stays).

        Args:
            job_id: The job; active jobs are kept.
        """

        def work(conn: Any) -> Any:
            self._delete(conn, f"id = {int(job_id)} AND status NOT IN ('queued', 'running')")

        self.db.write(_QUEUE_KEY, work)

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
        with self.db.transaction(_QUEUE_KEY) as conn:
            row = conn.execute(
                f"SELECT id FROM jobs WHERE status = 'queued' {_NEXT} LIMIT 1"
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
                sql(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?"), (row[0],)
            ).fetchone()
        return self._job(found)

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
        with self.db.transaction(_QUEUE_KEY) as conn:
            for job in dead:
                seen = (
                    "never"
                    if job.heartbeat is None
                    else time.strftime("%H:%M:%S", time.localtime(job.heartbeat))
                )
                job.error = (
                    f"the process that trained it stopped (last sign of life {seen}); "
                    "nothing was saved — start it again"
                )
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
        rows = self.db.rows(f"SELECT {_COLUMNS} FROM jobs ORDER BY id")
        jobs = self.fail_dead([self._job(r) for r in rows])
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
        rows = self.db.rows(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            return None
        (job,) = self.fail_dead([self._job(rows[0])])
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
        job.history = [EpochStats(**json.loads(d)) for k, d in points if k == "epoch"]
        steps = [StepStats(**json.loads(d)) for k, d in points if k == "step"]
        stride = math.ceil(len(steps) / MAX_STEP_POINTS) if steps else 1
        job.steps = steps[::stride]
        return job

    @staticmethod
    def _job(row: Sequence[Any]) -> TrainJob:
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
