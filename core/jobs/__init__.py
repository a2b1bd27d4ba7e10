"""Training from the app and the command line: requests, the one run, the server's job queue.

* :mod:`core.jobs.training`: :class:`TrainRequest` (an ad-hoc configuration via
  :func:`make_request`, or a registered spec via :func:`spec_request`) and
  :func:`run_training`, which trains it and saves a user checkpoint atomically when it finishes.
* :mod:`core.jobs.store`: :class:`JobStore`, the jobs in the lab's database (status, progress,
  live-curve points, owner), shared by every replica and kept across restarts; a job's record
  (:mod:`core.jobs.records`), its tables (:mod:`core.jobs.schema`) and its worker's name and
  liveness (:mod:`core.jobs.workers`);
* :mod:`core.jobs.queue`: :class:`JobQueue`, worker threads owned by the server process that run
  the stored jobs one at a time (configurable), with progress, live curves and cancel;
  :func:`training_queue` is the process's one queue; a job runs in a worker thread or a Ray
  actor (:mod:`core.jobs.executors`, :mod:`core.jobs.running`, :mod:`core.jobs.ray_executor`);
* :mod:`core.jobs.owners` and :mod:`core.jobs.limits`: who may act on a job or model, and how
  many jobs a student and the class may queue (the teacher's go first, unlimited).
"""

from core.jobs.queue import JobQueue, set_training_queue, training_queue
from core.jobs.records import JobStatus, TrainJob
from core.jobs.store import JobStore
from core.jobs.training import (
    TrainOutcome,
    TrainRequest,
    kind_template,
    make_request,
    run_training,
    spec_request,
    training_metadata,
)

__all__ = [
    "JobQueue",
    "JobStatus",
    "JobStore",
    "TrainJob",
    "TrainOutcome",
    "TrainRequest",
    "kind_template",
    "make_request",
    "run_training",
    "set_training_queue",
    "spec_request",
    "training_metadata",
    "training_queue",
]
