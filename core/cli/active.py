"""``python -m core active``: pool-based active learning curves per acquisition function.

Examples::

    python -m core active                                   # every function, 3 seeds
    python -m core active --acquisition bald,random --seeds 1 --budget 100 --json
    python -m core active --save                            # the curves the page shows
    python -m core active --arch mlp --budget 300 --save    # the MLP 784-256-10 instead
    python -m core active --protocol gal2017 --save         # the paper's experiment
    python -m core active --protocol gal2017 --workers 2 --save   # in two processes
    python -m core active --protocol gal2017 --acquisition bald,random --seeds 1  # a part
    python -m core active --protocol gal2017 --set init=torch --save   # an ablation
"""

from __future__ import annotations

import argparse
import json
import sys

from core.active.acquisition import ACQUISITIONS
from core.active.loop import ARCHITECTURES, MODEL_KINDS, ActiveConfig
from core.active.protocols import PROTOCOLS, paper_comparison
from core.active.study import RESULT_FILE, STORED, curves_for
from core.cli.overrides import suffix, with_overrides
from core.cli.values import IMAGES, SEEDS, WORKERS
from core.processes import keep_freed_memory
from core.progress import text_progress


def format_table(result: dict) -> str:
    """One line per acquisition function: labels to 85/90/95 %, final and mean accuracy.

    Args:
        result: What :func:`core.active.study.curves_for` returned.

    Returns:
        The table as text.
    """
    header = "".join(f"{f'to {t} %':>9s}" for t in (85, 90, 95))
    lines = [f"{'acquisition':16s}{header} {'final':>15s} {'mean':>7s}"]
    for name, c in result["curves"].items():
        reach = "".join(
            f"{'-' if c[f'labels_to_{t}'] is None else c[f'labels_to_{t}']:>9}"
            for t in (85, 90, 95)
        )
        final = f"{c['mean'][-1]:.1%} ± {c['std'][-1]:.1%}"
        lines.append(f"{name:16s}{reach} {final:>15s} {c['area']:7.1%}")
    return "\n".join(lines)


def format_comparison(rows: list[dict]) -> str:
    """Labels to 10 % and 5 % test error per acquisition beside the paper's, one line each.

    Args:
        rows: What :func:`core.active.protocols.paper_comparison` returned.

    Returns:
        The table as text.
    """
    lines = [
        f"{'acquisition':16s}{'error':>6s}  {'labels (per seed)':24s}{'mean':>7s}{'paper':>7s}"
    ]
    for row in rows:
        seeds = ", ".join("-" if n is None else str(n) for n in row["seeds"])
        mean = "-" if row["mean"] is None else f"{row['mean']:.0f}"
        paper = "-" if row["paper"] is None else str(row["paper"])
        ratio = "" if row["ratio"] is None else f"  ×{row['ratio']:.2f}"
        lines.append(
            f"{row['acquisition']:16s}{row['error']:>5d} %  {seeds:24s}{mean:>7s}{paper:>7s}{ratio}"
        )
    return "\n".join(lines)


def cmd_active(args: argparse.Namespace) -> int:
    """Run ``python -m core active``.

    Args:
        args: The parsed command line (``protocol``, ``acquisition``, ``seeds``, ``kind``,
            ``arch``, ``budget``, ``set``, ``workers``, ``json``, ``save``).

    Returns:
        The exit code: 0, or 2 for the CNN with BBB, a protocol widened or no worker.
    """
    chosen = [a.strip() for a in (args.acquisition or "").split(",") if a.strip()]
    if args.protocol:
        protocol = PROTOCOLS[args.protocol]
        print(protocol.describe(), file=sys.stderr)
        study = protocol.config
        names = chosen or list(study.acquisitions)
        seeds = study.seeds if args.seeds is None else args.seeds
        if not set(names) <= set(study.acquisitions) or not 1 <= seeds <= study.seeds:
            print(
                f"error: {args.protocol} compares {', '.join(study.acquisitions)} over "
                f"{study.seeds} seeds; --acquisition and --seeds can only narrow that",
                file=sys.stderr,
            )
            return 2
        base = study.run
    else:
        names = chosen or list(ACQUISITIONS)
        seeds = 3 if args.seeds is None else args.seeds
        try:
            base = ActiveConfig(kind=args.kind, budget=args.budget, **ARCHITECTURES[args.arch])
        except ValueError as exc:
            print(f"error: {exc}; use --arch mlp", file=sys.stderr)
            return 2
    base = with_overrides(base, args.set or [])
    if args.set:
        print(f"changed for this run: {', '.join(args.set)}", file=sys.stderr)
    keep_freed_memory()  # this process is the command line's own
    result = curves_for(names, seeds, base, progress=text_progress("active"), workers=args.workers)
    print(json.dumps(result) if args.json else format_table(result))
    if args.protocol and not args.json:
        print(format_comparison(paper_comparison(result)))
    if args.save:
        if args.protocol:
            name = f"active_learning-{args.protocol}.json"
        else:
            name = RESULT_FILE if args.arch == "cnn" else "active_learning-mlp.json"
        path = STORED.save(name.replace(".json", f"{suffix(args.set or [])}.json"), result)
        print(f"saved {path}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``active`` sub-command.

    Args:
        subparsers: The parser's sub-command collection.
    """
    p = subparsers.add_parser("active", help="active-learning curves per acquisition function")
    p.add_argument(
        "--protocol",
        choices=list(PROTOCOLS),
        help="a paper's experiment: every setting fixed (printed with its source); "
        "--acquisition and --seeds may narrow it to a part (its runs are cached, so parts run "
        "in separate processes add up), --set changes one of its settings (an ablation); the other "
        "options are ignored",
    )
    p.add_argument(
        "--acquisition", help=f"comma-separated (default: all, {','.join(ACQUISITIONS)})"
    )
    p.add_argument("--seeds", type=SEEDS, help="seeds 0 … N − 1 (default 3; a protocol's own)")
    p.add_argument("--kind", choices=MODEL_KINDS, default="dropout")
    p.add_argument(
        "--arch", choices=tuple(ARCHITECTURES), default="cnn", help="network (cnn: dropout only)"
    )
    p.add_argument("--budget", type=IMAGES, default=ActiveConfig.budget, help="labels at the end")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a run setting, e.g. init=glorot or stop_at=0.9 (repeatable; see ActiveConfig); "
        "with --protocol an ablation of it",
    )
    p.add_argument(
        "--workers",
        type=WORKERS,
        default=1,
        help="processes running the runs side by side, one CPU thread each, the longest runs "
        "first (default 1: one after another in this process; 2 on a 2-core machine)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.add_argument(
        "--save",
        action="store_true",
        help=f"store {RESULT_FILE} (cnn), active_learning-mlp.json or "
        "active_learning-PROTOCOL.json among the stored results (with --set, the settings in "
        "the name: …-init_torch.json)",
    )
    p.set_defaults(func=cmd_active)
