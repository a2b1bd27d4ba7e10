"""Benchmark: every method learns a shifted digit set made by the lab (not collected by pytest).

    python -m benchmarks.bench_adapt [--threads 1] [--repeats 3] [--methods bbb mlp ...]

MNIST test digits redrawn as a canvas draws them (thicker, tilted, off-centre); each method
adapts on 20, 50 and 200 of them (:mod:`core.adapt.bench`) and is scored on 500 others kept
aside (accuracy, ECE) and on 1000 MNIST test digits (forgetting), with the seconds it took
(median of ``--repeats`` at 200). Writes ``checkpoints/results/adaptation/adapt-canvas.json``.
"""

from __future__ import annotations

import argparse

import torch

from core.adapt.bench import ROWS, run_study, save_study
from core.progress import text_progress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's own)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs at 200 drawings")
    parser.add_argument("--methods", nargs="*", choices=list(ROWS), default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    result = run_study(args.methods, args.repeats, text_progress("adapt"))
    print(save_study(result))
    for row in result["rows"]:
        big = row["sizes"]["200"]
        print(
            f"{row['title']:34} kept acc {row['before']['accuracy']:.1%} -> {big['accuracy']:.1%}"
            f"  MNIST err {row['before']['mnist_error']:.2%} -> {big['mnist_error']:.2%}"
            f"  {big['seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()
