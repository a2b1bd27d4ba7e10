"""Department figures: drawing submissions per second, SQLite vs PostgreSQL, and how long a
training job waits to start, in-process vs through Ray.

* **Submissions**: ``--writers`` threads each send ``--each`` drawings with their own
  submission ids through :class:`~core.classroom.store.ClassStore` (the Draw page's path), to a
  fresh SQLite file and to a fresh database on a throw-away PostgreSQL cluster; drawings stored
  per second of wall clock, and every one counted back.
* **Job start**: with an empty queue, a two-epoch MLP job on 10,000 images is submitted to a
  :class:`~core.jobs.queue.JobQueue` on PostgreSQL ``--jobs`` times in a row; the latency is
  from its submission to its first progress report in the job table (the queue's poll, the
  executor's start, for Ray the task's scheduling and the worker's imports, loading the data),
  and the total is submission to the saved model.

Run by hand (not a test); it starts PostgreSQL and a one-CPU Ray head on loopback as the tests
do (``harness/cluster.py``), in scratch folders::

    .venv/bin/python -m benchmarks.bench_department --json notebook/classroom/department.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

import torch

from core.classroom.store import ClassStore
from core.jobs.queue import JobQueue
from core.jobs.training import make_request
from harness.cluster import new_database, postgres_cluster, ray_head


def submissions_per_second(url: str, writers: int, each: int) -> dict:
    """Drawings stored per second by ``writers`` threads sending ``each`` drawings each."""
    store = ClassStore(url)
    store.submit(torch.rand(28, 28), 0, "warmup", str(uuid.uuid4()))  # creates the tables
    image = torch.zeros(28, 28)
    image[6:22, 12:16] = 1.0
    start = threading.Barrier(writers + 1)
    errors: list[str] = []

    def writer() -> None:
        start.wait()
        for _ in range(each):
            try:
                store.submit(image, 1, "bench", str(uuid.uuid4()))
            except Exception as exc:  # counted, the figure is then not clean
                errors.append(str(exc))

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    stored = store.count("bench")
    return {
        "writers": writers,
        "each": each,
        "stored": stored,
        "errors": len(errors),
        "seconds": round(seconds, 3),
        "per_second": round(stored / seconds, 1),
    }


def job_start(url: str, models: Path, jobs: int) -> dict:
    """Time to the first progress report, and to the saved model, of ``jobs`` tiny jobs, one
    after the other (empty queue)."""
    queue = JobQueue(url=url, directory=models).resume()
    latencies, totals = [], []
    try:
        for i in range(jobs):
            request = make_request(f"latency_{i}", "mlp", epochs=2, n_train=10_000, n_test=200)
            job_id = queue.submit(request)
            job = queue.store.get(job_id)
            while job.status.active and job.fraction == 0:  # until its first progress report
                time.sleep(0.005)
                job = queue.store.get(job_id)
            latencies.append(time.time() - job.submitted)
            job = queue.wait(job_id, timeout=600)
            if job is None or job.finished is None:
                raise RuntimeError(f"job {i} did not run: {job}")
            totals.append(job.finished - job.submitted)
    finally:
        queue.shutdown()
    return {
        "executor": queue.executor.where,
        "jobs": jobs,
        "start_latency_s": {
            "median": round(statistics.median(latencies), 3),
            "first": round(latencies[0], 3),
            "max": round(max(latencies), 3),
        },
        "submit_to_saved_s": round(statistics.median(totals), 2),
    }


def main() -> None:
    """Measure both figures on both back ends; print and optionally save them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--each", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="save the figures to this file")
    args = parser.parse_args()
    report: dict = {"cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory() as scratch, postgres_cluster() as server:
        sqlite = f"sqlite:///{scratch}/lab.sqlite"
        report["submissions"] = {
            "sqlite": submissions_per_second(sqlite, args.writers, args.each),
            "postgresql": submissions_per_second(new_database(server), args.writers, args.each),
        }
        os.environ.pop("BNN_RAY_ADDRESS", None)
        models = Path(scratch)
        report["job_start"] = {
            "in_process": job_start(new_database(server), models / "threads", args.jobs)
        }
        with ray_head() as head:
            os.environ["BNN_RAY_ADDRESS"] = head.address
            report["job_start"]["ray"] = job_start(new_database(server), models / "ray", args.jobs)
            os.environ.pop("BNN_RAY_ADDRESS")
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
