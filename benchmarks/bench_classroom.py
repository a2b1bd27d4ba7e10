"""Benchmark: the class's drawings store and report (not collected by pytest).

    python benchmarks/bench_classroom.py [--threads 8] [--each 20] [--drawings 200]

Uses a fresh SQLite file in a temporary folder (never ``BNN_CLASS_DB``):

1. one submission at a time: milliseconds per ``submit`` (connection, ``BEGIN IMMEDIATE``,
   insert, commit: WAL mode, so a commit is a WAL append; median and 95th percentile);
2. ``--threads`` threads sending ``--each`` drawings each at once: wall time, submissions per
   second, and whether every one was stored exactly once;
3. reading a class of ``--drawings`` drawings (``records``), the two exports, and the report of
   one shipped checkpoint (100 passes) on them — what a Class page refresh costs when new
   drawings arrived (without new drawings only the read is repeated; the rest is cached).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from core.classroom import export  # noqa: E402
from core.classroom.report import model_report  # noqa: E402
from core.classroom.store import ClassStore, as_tensors  # noqa: E402
from core.storage.checkpoints import CheckpointError, load_checkpoint  # noqa: E402


def drawing(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    image = torch.zeros(28, 28)
    image[4:24, 10:18] = torch.rand(20, 8, generator=g)
    image[12, 12] = 1.0
    return image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--drawings", type=int, default=200)
    parser.add_argument("--checkpoint", default="bbb_mixture")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{Path(folder) / 'bench.sqlite'}")
        store.submit(drawing(0), 0, "warm-up", str(uuid.uuid4()))
        times = []
        for i in range(args.drawings):
            start = time.perf_counter()
            store.submit(drawing(i), i % 10, "one", str(uuid.uuid4()))
            times.append((time.perf_counter() - start) * 1000)
        p95 = statistics.quantiles(times, n=20)[-1]
        print(
            f"1. one at a time: {statistics.median(times):.2f} ms median, {p95:.2f} ms p95 "
            f"per submission ({args.drawings} submissions)"
        )

        keys = [[str(uuid.uuid4()) for _ in range(args.each)] for _ in range(args.threads)]
        barrier = threading.Barrier(args.threads + 1)

        def student(t: int) -> None:
            barrier.wait()
            for i, key in enumerate(keys[t]):
                store.submit(drawing(1000 * t + i), i % 10, "race", key)
                store.submit(drawing(1000 * t + i), i % 10, "race", key)  # a double click

        workers = [threading.Thread(target=student, args=(t,)) for t in range(args.threads)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        sent = 2 * args.threads * args.each
        stored = store.count("race")
        print(
            f"2. {args.threads} threads × {args.each} drawings (each sent twice): {elapsed:.2f} s, "
            f"{sent / elapsed:.0f} submissions/s; stored {stored} of {args.threads * args.each} "
            f"({'exactly once' if stored == args.threads * args.each else 'WRONG'})"
        )

        start = time.perf_counter()
        records = store.records("one")
        read_ms = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        zipped, idx = export.csv_png_zip(records), export.idx_zip(records)
        export_ms = (time.perf_counter() - start) * 1000
        print(
            f"3. {len(records)} drawings: read {read_ms:.1f} ms; exports {export_ms:.0f} ms "
            f"(CSV + PNG zip {len(zipped) / 1024:.0f} KiB, IDX zip {len(idx) / 1024:.0f} KiB)"
        )
        try:
            model = load_checkpoint(args.checkpoint, "cpu")[0]
        except CheckpointError as exc:
            print(f"   report skipped: {exc}")
            return
        images, labels, _, _ = as_tensors(records)
        start = time.perf_counter()
        model_report(args.checkpoint, model, images, labels, 100)
        print(
            f"   report of {args.checkpoint} (100 passes, 1 thread): "
            f"{(time.perf_counter() - start) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
