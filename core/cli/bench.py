"""CLI: ``python -m core bench`` — training time per epoch of the ELBO implementations.

Examples::

    python -m core bench          # S = 1…10, all implementations, 3 rounds of 10 timed steps
    python -m core bench --samples 1,2,4,8 --steps 10 --impl vmap,vmap_lrt
    python -m core bench --threads 2 --save   # a reference run, stored for the page
"""

from __future__ import annotations

import json
import re
import sys

import torch

from core.cli.values import REPEATS, SAMPLE_COUNTS, STEPS, THREADS, WIDTHS, whole
from core.progress import text_progress
from core.studies.training_speed import (
    BBB_IMPLEMENTATIONS,
    PRIORS,
    TASKS,
    BenchConfig,
    regression_config,
    run_benchmark,
)
from core.studies.training_speed_goals import slope_speedups
from core.studies.training_speed_runs import save_result


def _impls(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _epoch_table(timings: list[dict], mlp: dict | None, impls: list[str], digits: int) -> list:
    """Lines of seconds per epoch: one row per S, one column per implementation, the floor."""
    epoch = {(r["impl"], r["samples"]): r["epoch_seconds"] for r in timings}
    lines = ["   S " + "".join(f"{i:>12s}" for i in impls)]
    for s in sorted({r["samples"] for r in timings}):
        lines.append(
            f"{s:4d} " + "".join(f"{epoch.get((i, s), float('nan')):12.{digits}f}" for i in impls)
        )
    if mlp:
        lines.append(f"plain MLP (floor): {mlp['epoch_seconds']:.{digits}f} s per epoch")
    return lines


def format_result(result: dict) -> str:
    """Summarise a benchmark result for people.

    Args:
        result: A result of :func:`core.studies.training_speed.run_benchmark`.

    Returns:
        Text: seconds per epoch per S and implementation, the linear fits, the goals.
    """
    impls = list(result["fits"])
    digits = 1 if max(r["epoch_seconds"] for r in result["timings"]) >= 1 else 4
    graphs = "on" if result.get("cuda_graphs") else "off"
    lines = [
        f"device {result['device']}, data {result['data']}, {result['config']['steps']} timed "
        f"steps → epoch of {result['epoch_steps']} steps; compiled CPU kernels: "
        f"{result.get('native_kernels', 'not recorded')}; CUDA graphs: {graphs}; "
        "seconds per epoch:",
        *_epoch_table(result["timings"], result["mlp"], impls, digits),
    ]
    if result.get("eager"):
        lines.append("without CUDA graphs (eager):")
        lines += _epoch_table(result["eager"]["timings"], result["eager"]["mlp"], impls, digits)
    speed = slope_speedups(result["fits"])
    for impl, fit in result["fits"].items():
        if fit:
            lines.append(
                f"{impl:>10s}: time = {fit['intercept']:.{digits + 1}f} + "
                f"{fit['slope']:.{digits + 1}f}·S s "
                f"(R² {fit['r2']:.3f}, slope speedup ×{speed.get(impl, float('nan')):.2f})"
            )
    for name, goal in {**result["goals"], **result.get("speed_goals", {})}.items():
        status = "met" if goal["met"] else "NOT met"
        best = f" ({goal['impl']})" if "impl" in goal else ""
        lines.append(f"goal {name}{best}: {goal['value']:.2f} (target {goal['target']}) {status}")
    return "\n".join(lines)


def cmd_peers(args) -> int:
    """Time bayesian-torch and blitz beside ours and check their multi-sample gradients.

    Args:
        args: The parsed command line (``samples``, ``steps``, ``repeats``, ``threads``,
            ``save``).

    Returns:
        The exit code: 0, or 1 when no peer library imports.
    """
    import datetime

    from core.engine.device import device_name, library_versions, processor
    from core.studies import peers
    from core.studies.training_speed_runs import RUNS

    missing = {name: why for name, why in peers.available_peers().items() if why}
    present = tuple(name for name in peers.PEERS if name not in missing)
    for name, why in missing.items():
        print(f"{name} unavailable ({why}); pip install -r requirements-peers.txt", file=sys.stderr)
    if not present:
        return 1
    checks = [peers.gradient_check(library, s) for library in ("ours", *present) for s in (1, 4)]
    rows = peers.time_peers(
        args.samples,
        peers=present,
        steps=args.steps,
        repeats=args.repeats,
        progress=text_progress("peers"),
    )
    device = torch.device("cpu")
    result = {
        "schema": 1,
        "kind": "peers",
        "device": device_name(device),
        "threads": torch.get_num_threads(),
        "processor": processor(),
        "versions": library_versions() | {p: importlib_version(p) for p in present},
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "network": "784-400-400-10, batch 128, Adam (fused), N(0, 1) prior, σ0 = 1e-3",
        "timings": rows,
        "gradient_checks": checks,
    }
    for r in rows:
        label = f"{r['library']}/{r['impl']}"
        print(f"{label:28s} S={r['samples']}: {r['epoch_seconds']:8.2f} s per epoch")
    for c in checks:
        print(
            f"{c['library']:15s} S={c['samples']}: ρ-gradient rel. error {c['rho_rel_error']:.2e}, "
            f"μ {c['mu_rel_error']:.2e}"
        )
    if args.save:
        slug = re.sub(r"[^a-z0-9]+", "-", result["device"].lower()).strip("-") or "device"
        path = RUNS.save(f"peers-{slug}-{result['date'][:10]}.json", result)
        print(f"saved {path}", file=sys.stderr)
    return 0


def importlib_version(peer: str) -> str | None:
    """Give a peer library's installed version.

    Args:
        peer: A display name of :data:`core.studies.peers.PEERS`.

    Returns:
        The version, or None if unknown.
    """
    from importlib import metadata

    dist = {"bayesian-torch": "bayesian-torch", "blitz": "blitz-bayesian-pytorch"}[peer]
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cmd_bench(args) -> int:
    """Run ``python -m core bench``: time training epochs of the ELBO implementations.

    Args:
        args: The parsed command line (``samples``, ``steps``, ``warmup``, ``repeats``,
            ``impl``, ``hidden``, ``prior``, ``data``, ``task``, ``no_mlp``, ``threads``,
            ``device``, ``json``, ``save``).

    Returns:
        The exit code: 0.
    """
    settings = {
        "impls": _impls(args.impl),
        "n_samples": args.samples,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "prior": args.prior,
        "include_mlp": not args.no_mlp,
    }
    if args.task == "regression":
        config = regression_config(**settings, **({"hidden": args.hidden} if args.hidden else {}))
    else:
        config = BenchConfig(**settings, hidden=args.hidden or (400, 400), data=args.data)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.peers:
        return cmd_peers(args)
    device = torch.device(args.device) if args.device else None
    result = run_benchmark(config, device=device, progress=text_progress("bench"))
    if args.json:
        json.dump(result, sys.stdout)
        print()
    else:
        print(format_result(result))
    if args.save:
        print(f"saved {save_result(result)}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add the ``bench`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("bench", help="time training epochs of the ELBO implementations")
    p.add_argument(
        "--samples",
        type=SAMPLE_COUNTS,
        default="1,2,3,4,5,6,7,8,9,10",
        help="comma-separated S values",
    )
    p.add_argument("--steps", type=STEPS, default=10, help="timed steps per point and round")
    p.add_argument(
        "--warmup", type=whole(0, 100_000), default=3, help="untimed steps before timing"
    )
    p.add_argument("--repeats", type=REPEATS, default=3, help="rounds over all points; median used")
    p.add_argument("--impl", default=",".join(BBB_IMPLEMENTATIONS), help="comma-separated")
    p.add_argument(
        "--hidden",
        type=WIDTHS,
        help="hidden layer sizes (default 400,400; regression 100)",
    )
    p.add_argument(
        "--task",
        choices=TASKS,
        default="mnist",
        help="mnist: 784-400-400-10, 60,000 images; regression: 1-100-1, 1,000 points, one batch",
    )
    p.add_argument("--prior", choices=sorted(PRIORS), default="gaussian")
    p.add_argument("--data", choices=("mnist", "random"), default="mnist")
    p.add_argument("--no-mlp", action="store_true", help="skip the plain-MLP floor")
    p.add_argument("--threads", type=THREADS, default=0, help="CPU threads (0: torch default)")
    p.add_argument("--device", default="", help="cpu or cuda (default: CUDA when available)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--save",
        action="store_true",
        help="store the run for the Training speed page (<device>-<date>.json)",
    )
    p.add_argument(
        "--peers",
        action="store_true",
        help="time bayesian-torch and blitz beside ours and check their S-sample gradients "
        "(needs requirements-peers.txt; --save stores peers-<device>-<date>.json for the page)",
    )
    p.set_defaults(func=cmd_bench)
