"""Benchmark: the Draw page's rerun after a canvas message (not collected by pytest).

    python -m benchmarks.bench_draw [--runs 20] [--samples 100] [--models bbb_mixture mlp]

Runs the app headless (``AppTest``), sets the canvas state the way the browser's message does
(a new drawing each run, alternating "1" and "0") and times each full rerun: decoding the canvas
PNG, preprocessing, ``n_samples`` Monte-Carlo passes per model, summaries, verdicts and a
three-panel plotly figure per model. Uses the checkpoints in checkpoints/; a missing one is
replaced by an untrained model of the same architecture (same cost) in the cache folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import core.storage.checkpoints
from core.catalogue import REGISTRY
from core.methods import build_model
from core.paths import cache_dir
from core.storage.checkpoints import checkpoint_path, save_checkpoint
from harness.drawing import MAIN, canvas_state

REPO_ROOT = Path(__file__).resolve().parent.parent


def checkpoint_folder(names: list[str]) -> Path:
    """checkpoints/ if it holds every model, else a folder under the cache with copies and
    stand-ins, kept between runs so that their MNIST scores stay cached on disk too."""
    if all(checkpoint_path(n).is_file() for n in names):
        return core.storage.checkpoints.CHECKPOINT_DIR
    folder = cache_dir() / "bench_draw"
    for name in names:
        real, copy = checkpoint_path(name), checkpoint_path(name, folder)
        if real.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(real.read_bytes())
        elif not copy.is_file():
            print(f"{name}: no checkpoint, timing an untrained stand-in")
            save_checkpoint(name, build_model(REGISTRY[name].model), {}, folder)
    return folder


def main() -> None:
    from streamlit.testing.v1 import AppTest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--models", nargs="+", default=["bbb_mixture", "mlp", "dropout_mlp"])
    args = parser.parse_args()

    core.storage.checkpoints.CHECKPOINT_DIR = checkpoint_folder(args.models)
    at = AppTest.from_file(MAIN, default_timeout=600).run()
    at.sidebar.multiselect[0].set_value(args.models)
    at.sidebar.number_input[0].set_value(args.samples)
    at.run()
    at.switch_page("../pages/draw.py").run()
    wall, cpu = [], []
    for i in range(args.runs + 2):  # two warm-up runs (the first may score MNIST, once)
        at.session_state["draw_canvas"] = canvas_state("10"[i % 2])
        start, start_cpu = time.perf_counter(), time.process_time()
        at.run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        assert not at.exception, at.exception
    print(f"{len(args.models)} models x {args.samples} samples, {args.runs} reruns")
    print(f"  wall time: {summary(wall[2:])}")
    print(f"  CPU time of this process (all threads): {summary(cpu[2:])}")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def summary(seconds: list[float]) -> str:
    ms = sorted(1000 * s for s in seconds)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    return f"median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, max {ms[-1]:.0f} ms"


if __name__ == "__main__":
    main()
