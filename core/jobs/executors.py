"""Where a claimed training job runs: in a thread of the server (the default) or on Ray.

Both run the same :func:`~core.jobs.running.run_job`: it trains the request, reports progress
and live-curve points to the job store every :data:`~core.jobs.running.REPORT_S` seconds (its
sign of life, and how it hears that someone asked to cancel), and stores how the job ended. So
a job reports the same way wherever it runs, and any replica follows and cancels it through the
database.

* :class:`ThreadExecutor`: the calling worker thread of the server trains the job; a server
  that stops stops it (failed, :data:`~core.jobs.running.STOPPED`).
* :class:`~core.jobs.ray_executor.RayExecutor` (``BNN_RAY_ADDRESS``): the job trains in a
  detached Ray actor (:mod:`core.jobs.ray_executor`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from core import settings
from core.engine.device import default_device
from core.jobs.ray_executor import RAY_ADDRESS_ENV, RAY_CPUS_ENV, RAY_GPUS_ENV, RayExecutor
from core.jobs.records import TrainJob
from core.jobs.running import Runner, cancel_here, run_job
from core.jobs.store import JobStore


class Executor(Protocol):
    """Runs one claimed job to its end (blocking the calling worker thread meanwhile)."""

    where: str
    """Where jobs train, in words, for the page."""

    def run(self, store: JobStore, job: TrainJob, stop: threading.Event) -> None:
        """Train ``job`` and store its end; ``stop`` is set when the server stops."""
        ...

    def cancel(self, store: JobStore, job_id: int) -> None:
        """Stop a job whose cancel the store has just recorded, wherever it trains."""
        ...

    def alive(self, actor: str) -> bool | None:
        """Whether a silent Ray actor still runs a job (None: cannot tell)."""
        ...


class ThreadExecutor:
    """Jobs train in the server's own worker thread.

    Args:
        runner: Trains one request.
        directory: Gives the user-model folder at the time a job starts.
        threads: torch threads of each worker, for :attr:`where`.
    """

    def __init__(self, runner: Runner, directory: Callable[[], Path], threads: int) -> None:
        self.runner, self.directory, self.threads = runner, directory, threads
        device = default_device()
        self.where = (
            "the GPU"
            if device.type == "cuda"
            else f"{threads} CPU thread{'s' if threads != 1 else ''} per job"
        ) + " of this server"

    def run(self, store: JobStore, job: TrainJob, stop: threading.Event) -> None:
        """Train the job in this thread (:func:`run_job`)."""
        run_job(store, job.id, job.request, self.runner, self.directory(), stop)

    def cancel(self, store: JobStore, job_id: int) -> None:
        """Stop the job at once if this process trains it (:func:`cancel_here`).

        Args:
            store: The job store (another process's job reads the cancel there).
            job_id: The job.
        """
        cancel_here(job_id)

    def alive(self, actor: str) -> bool | None:
        """A server without Ray cannot tell (a silent Ray actor's job fails when stale).

        Args:
            actor: A Ray actor's name.

        Returns:
            None.
        """
        return None


def make_executor(runner: Runner, directory: Callable[[], Path], threads: int) -> Executor:
    """The executor the settings ask for.

    Args:
        runner: Trains one request in-process (the thread executor's).
        directory: Gives the user-model folder.
        threads: torch threads of each in-process worker.

    Returns:
        A :class:`RayExecutor` when ``BNN_RAY_ADDRESS`` is set, else a :class:`ThreadExecutor`.
    """
    address = settings.text(RAY_ADDRESS_ENV)
    if not address:
        return ThreadExecutor(runner, directory, threads)
    gpus = settings.text(RAY_GPUS_ENV)
    return RayExecutor(
        address,
        directory,
        cpus=settings.positive_int(RAY_CPUS_ENV, 1),
        gpus=float(gpus) if gpus.replace(".", "", 1).isdigit() else 0.0,
    )
