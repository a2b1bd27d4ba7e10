"""A server process's training worker for the job-store tests (run as a script, not collected).

    python -m tests.support.job_worker DB_URL

Starts a :class:`~core.jobs.JobQueue` on the database whose runner reports progress and then
trains forever (until cancelled), so that the test can kill the process while a job runs.
"""

from __future__ import annotations

import sys
import time

from core.jobs import JobQueue, TrainOutcome


def forever(request, *, progress, on_epoch, on_step, cancel, directory) -> TrainOutcome:
    """Report a little progress, then wait for a cancel that a killed process never sees."""
    progress(0.25, "epoch 1 of 4")
    while not cancel.wait(0.05):
        pass
    return TrainOutcome(None, True)


if __name__ == "__main__":
    JobQueue(workers=1, threads=1, runner=forever, url=sys.argv[1]).resume()
    while True:
        time.sleep(1)
