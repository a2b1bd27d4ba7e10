"""Benchmark: the class's drawings store and report, and the Class page (not collected by pytest).

    python benchmarks/bench_classroom.py [--threads 8] [--each 20] [--drawings 200]
    python benchmarks/bench_classroom.py --page [--class-size 2000] [--json FILE]

Uses a fresh SQLite file in a temporary folder (never ``BNN_CLASS_DB``):

1. one submission at a time: milliseconds per ``submit`` (connection, ``BEGIN IMMEDIATE``,
   insert, commit: WAL mode, so a commit is a WAL append; median and 95th percentile);
2. ``--threads`` threads sending ``--each`` drawings each at once: wall time, submissions per
   second, and whether every one was stored exactly once;
3. reading a class of ``--drawings`` drawings (``records``), the two exports, and the report of
   one shipped checkpoint (100 passes) on them — what a Class page refresh costs when new
   drawings arrived (without new drawings only the read is repeated; the rest is cached).

``--page`` instead opens the Class page headless (Streamlit's ``AppTest``, the whole script per
run, so a refresh here costs at least what the page's live part costs), with the shipped
checkpoints the sidebar picks by default, 100 passes and the app's torch thread count, in one
process (as one server): after a warm-up open (models, thresholds), a fresh session opens an
empty class, then one of ``--class-size`` drawings (stored in one transaction), refreshes until
every model has evaluated every drawing, refreshes without new drawings, and refreshes after 10
new ones. Per step: wall seconds, CPU seconds of the process and its resident memory
(``VmRSS``; the peak is ``VmHWM``); ``--page-file`` opens another version of the page.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

import torch

from core.classroom import export
from core.classroom.drawings import as_tensors, to_pixels
from core.classroom.report import model_report
from core.classroom.store import ClassStore
from core.storage.checkpoints import CheckpointError, load_checkpoint
from core.storage.database_errors import DB_ENV

REPO_ROOT = Path(__file__).resolve().parent.parent

PAGE = REPO_ROOT / "pages" / "classroom.py"


def drawing(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    image = torch.zeros(28, 28)
    image[4:24, 10:18] = torch.rand(20, 8, generator=g)
    image[12, 12] = 1.0
    return image


def memory_mb(field: str) -> float:
    """This process's ``VmRSS`` (resident now) or ``VmHWM`` (peak) in MB, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def cpu_s() -> float:
    """CPU seconds this process has used (all threads, user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def store_many(url: str, code: str, count: int) -> None:
    """Store ``count`` drawings in one transaction (the store's schema; submitting them one by
    one would take a minute of disk syncs)."""
    ClassStore(url).submit(drawing(0), 0, "setup", str(uuid.uuid4()))  # creates the schema
    rows = [
        (code, i % 10, to_pixels(drawing(i)), "2026-11-25T09:00:00.000+00:00", str(uuid.uuid4()))
        for i in range(count)
    ]
    with sqlite3.connect(ClassStore(url).path) as conn:
        conn.executemany(
            "INSERT INTO drawings (class_code, label, pixels, created, submission_id)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )


def page_benchmark(page: Path, class_size: int) -> dict:
    """Open the Class page on an empty class and on one of ``class_size`` drawings.

    Args:
        page: The page's script.
        class_size: Drawings in the large class.

    Returns:
        Per step ``{"s", "cpu_s", "rss_mb"}`` and the peak RSS, in MB.
    """
    from streamlit.testing.v1 import AppTest

    from app.main import DEFAULT_THREADS

    torch.set_num_threads(DEFAULT_THREADS)
    steps: dict = {}

    def step(name: str, run) -> AppTest:
        start, cpu = time.perf_counter(), cpu_s()
        at = run()
        assert not at.exception, at.exception
        steps[name] = {
            "s": round(time.perf_counter() - start, 2),
            "cpu_s": round(cpu_s() - cpu, 2),
            "rss_mb": round(memory_mb("VmRSS")),
        }
        print(f"{name}: {steps[name]}", flush=True)
        return at

    def opened(code: str) -> AppTest:
        at = AppTest.from_file(str(page), default_timeout=600)
        at.query_params["class"] = code
        return at.run()

    def to_go(at: AppTest) -> bool:
        return any("to go" in i.value for i in at.info)

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'page.sqlite'}"
        os.environ[DB_ENV] = url
        step("warm-up open (empty class)", lambda: opened("warm"))
        step("first open, empty class", lambda: opened("empty"))
        store_many(url, "big", class_size)
        at = step(f"first open, {class_size} drawings", lambda: opened("big"))
        refreshes, start, cpu = 0, time.perf_counter(), cpu_s()
        while to_go(at):
            at, refreshes = at.run(), refreshes + 1
        steps["refreshes until every drawing is evaluated"] = {
            "count": refreshes,
            "s": round(time.perf_counter() - start, 2),
            "cpu_s": round(cpu_s() - cpu, 2),
            "rss_mb": round(memory_mb("VmRSS")),
        }
        print(f"refreshes to finish: {steps['refreshes until every drawing is evaluated']}")
        step("refresh, no new drawings", at.run)
        store = ClassStore(url)
        for i in range(10):
            store.submit(drawing(class_size + i), i, "big", str(uuid.uuid4()))
        step("refresh, 10 new drawings", at.run)
    steps["peak_rss_mb"] = round(memory_mb("VmHWM"))
    return steps


def page_main(args: argparse.Namespace) -> None:
    """``--page``: run :func:`page_benchmark`, print the steps, save them with ``--json``."""
    steps = page_benchmark(args.page_file, args.class_size)
    empty, big = steps["first open, empty class"], steps[f"first open, {args.class_size} drawings"]
    result = {
        "page": str(args.page_file.relative_to(REPO_ROOT))
        if args.page_file.is_relative_to(REPO_ROOT)
        else args.page_file.name,
        "class_size": args.class_size,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "steps": steps,
        "first_open_extra_s": round(big["s"] - empty["s"], 2),
        "first_open_extra_rss_mb": big["rss_mb"] - empty["rss_mb"],
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--drawings", type=int, default=200)
    parser.add_argument("--checkpoint", default="bbb_mixture")
    parser.add_argument("--page", action="store_true", help="benchmark the Class page instead")
    parser.add_argument("--class-size", type=int, default=2000)
    parser.add_argument("--page-file", type=Path, default=PAGE)
    parser.add_argument("--json", type=Path, help="--page: save the figures to this file")
    args = parser.parse_args()
    if args.page:
        page_main(args)
        return
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
