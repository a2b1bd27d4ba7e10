"""Benchmark: bandit runs in lockstep (not collected by pytest).

    python benchmarks/bench_bandits.py [--steps 10000] [--threads 1] [--scaling-steps 1000]
    python benchmarks/bench_bandits.py --protocol blundell2015 --protocol-steps 200

1. The issue's target: 10,000 mushroom steps × {BBB, greedy, ε = 5 %, random} × 2 seeds (goal
   ≤ 2 minutes on the project's 2-core CPU), computed afresh (no cache); prints the seconds in
   total and per agent family.
2. Vectorisation: BBB Thompson alone for ``--scaling-steps`` steps with 1, 2, 4 and 8 seeds in
   lockstep (stacked networks, one vmapped call per step), against running the seeds one after
   the other (the 1-seed time × seeds): milliseconds per step and per run-step.
3. A paper's protocol (``--protocol blundell2015``): ``--protocol-steps`` of its steps, the
   seconds per step of each agent family and per minibatch update, and the whole protocol's
   time projected from them (every step costs the same once the buffer is sampled); on every
   core by default, as ``core bandit`` runs the native engine.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import torch

from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun, RunConfig

REPO_ROOT = Path(__file__).resolve().parent.parent


def timed(config: RunConfig) -> tuple[float, BanditRun]:
    run = BanditRun(config)
    start = time.perf_counter()
    run.advance()
    return time.perf_counter() - start, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--scaling-steps", type=int, default=1000)
    parser.add_argument(
        "--threads", type=int, default=None, help="default: 1, every core for --protocol"
    )
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS), help="only time this protocol")
    parser.add_argument("--protocol-steps", type=int, default=20)
    args = parser.parse_args()
    if args.threads or not args.protocol:
        torch.set_num_threads(args.threads or 1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    if args.protocol:
        protocol_speed(PROTOCOLS[args.protocol].config, args.protocol_steps)
        return

    config = RunConfig(
        env="mushroom", agents=("bbb", "greedy", "eps5", "random"), steps=args.steps, seeds=2
    )
    seconds, run = timed(config)
    families = ", ".join(f"{k} {v:.1f} s" for k, v in run.group_seconds.items())
    print(
        f"mushroom, {args.steps:,} steps × 4 agents × 2 seeds: {seconds:.1f} s "
        f"({1000 * seconds / args.steps:.2f} ms per step; {families}; goal ≤ 120 s for 10,000)"
    )
    final = {n: f"{a['mean']:.0f}" for n, a in run.result(with_snapshot=False)["agents"].items()}
    print(f"  final cumulative regret (mean of 2 seeds): {final}")

    print(f"BBB Thompson alone, {args.scaling_steps:,} mushroom steps:")
    header = ("seeds", 6), ("lockstep s", 11), ("ms/step", 8), ("ms/run-step", 12)
    print(" ".join(f"{h:>{w}s}" for h, w in (*header, ("one by one s", 13))))
    single = None
    for seeds in (1, 2, 4, 8):
        seconds, _ = timed(
            RunConfig(env="mushroom", agents=("bbb",), steps=args.scaling_steps, seeds=seeds)
        )
        single = seconds if seeds == 1 else single
        per_step = 1000 * seconds / args.scaling_steps
        print(
            f"{seeds:6d} {seconds:11.1f} {per_step:8.2f} {per_step / seeds:12.2f} "
            f"{single * seeds:13.1f}"
        )


def protocol_speed(config: RunConfig, steps: int) -> None:
    seconds, run = timed(replace(config, steps=steps))
    updates = steps * config.model.updates_per_step
    print(
        f"{steps} of {config.steps:,} steps, {config.seeds} seeds, "
        f"{config.model.updates_per_step} updates of {config.model.batch_size} per step:"
    )
    print(f"{'family':>8s} {'s/step':>8s} {'ms/update':>10s} {'projected h':>12s}")
    for family, spent in run.group_seconds.items():
        hours = spent / steps * config.steps / 3600
        print(f"{family:>8s} {spent / steps:8.3f} {1000 * spent / updates:10.2f} {hours:12.1f}")
    total = seconds / steps * config.steps / 3600
    print(f"{'all':>8s} {seconds / steps:8.3f} {'':>10s} {total:12.1f}")


if __name__ == "__main__":
    main()
