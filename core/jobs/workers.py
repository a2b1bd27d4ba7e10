"""Who trains a job, and whether it is gone: worker names of processes and Ray actors."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable

STALE_S = 60.0
"""Seconds without a sign of life after which a running job's worker counts as dead."""


HOST = socket.gethostname()


PROCESS = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""This process's worker name: host, process id and a token new at every start."""


RAY_WORKER = "ray:"
"""How the worker name of a job trained by a Ray actor begins (:func:`ray_worker`)."""


Alive = Callable[[str], bool | None]
"""Tells whether a Ray actor (by name) is alive: True, False, or None when it cannot tell."""


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


def dead_worker_error(heartbeat: float | None) -> str:
    """What a job whose worker died says, in one line.

    Args:
        heartbeat: The worker's last sign of life (seconds since the epoch), or None.

    Returns:
        The job's error: when the worker was last heard of, and that nothing was saved.
    """
    seen = "never" if heartbeat is None else time.strftime("%H:%M:%S", time.localtime(heartbeat))
    return (
        f"the process that trained it stopped (last sign of life {seen}); "
        "nothing was saved — start it again"
    )
