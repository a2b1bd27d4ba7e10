"""An app replica for the Ray tests (run as a script, not collected).

    python tests/support/ray_replica.py MODELS [NAME KIND EPOCHS]

Starts a :class:`~core.jobs.JobQueue` (one worker, the Ray executor of ``BNN_RAY_ADDRESS``) on
the database :func:`~core.storage.database_url.database_url` names, saving in the folder MODELS.
With NAME, KIND and EPOCHS it submits one small job (1,000 MNIST images) and prints its id.
Then it lists the jobs every half second, as a replica's pages do (failing the jobs of dead
workers), and once a job has been seen and none is active it prints one JSON line, every job
(id, status, worker, error, path) and the user models listed in MODELS, and exits.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from core.jobs import JobQueue, make_request
from core.storage.user_models import list_user_checkpoints

SMALL = {"n_train": 1000, "n_test": 200, "n_eval_samples": 1}

if __name__ == "__main__":
    models = Path(sys.argv[1])
    queue = JobQueue(workers=1, threads=1, directory=models).resume()
    if len(sys.argv) > 2:
        name, kind, epochs = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(queue.submit(make_request(name, kind, epochs=epochs, **SMALL)), flush=True)
    while not (jobs := queue.jobs()) or any(j.status.active for j in jobs):
        time.sleep(0.5)
    listed = [info.path.stem for info in list_user_checkpoints(models)] if models.is_dir() else []
    ended = [[j.id, j.status.value, j.worker, j.error, str(j.path)] for j in jobs]
    print(json.dumps({"jobs": ended, "models": listed}), flush=True)
    queue.shutdown()
