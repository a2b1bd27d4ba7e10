"""CLI: ``python -m core ood`` — AUROC of each uncertainty score at telling MNIST from OOD data.

Every available shipped checkpoint against every available OOD dataset (or those named)::

    python -m core ood                          # 100 samples, full test sets
    python -m core ood --samples 50 --subset 2000 --json
    python -m core ood --checkpoint bbb_gaussian --dataset fashion_mnist

Evaluations are cached (:mod:`core.studies.evaluations`), so a second run is instant.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from core.catalogue import REGISTRY, list_checkpoints
from core.cli.values import IMAGES, SAMPLES
from core.evaluation.uncertainty import SCORES
from core.progress import text_progress
from core.studies.ood import OodResult, ood_datasets, ood_table


def format_table(results: list[OodResult]) -> str:
    """Format OOD results as a text table, one row per (checkpoint, dataset).

    Args:
        results: The results of :func:`core.studies.ood.ood_table`.

    Returns:
        The table: the AUROC of every score and the OOD-label accuracy, then a legend.
    """
    header = f"{'checkpoint':14s} {'dataset':16s}" + "".join(
        f"{s.short:>8s}" for s in SCORES.values()
    )
    lines = ["AUROC (MNIST test vs. dataset; 1 = perfect, 0.5 = chance)", header + "  OOD acc"]
    for r in results:
        aurocs = "".join(f"{r.metrics[name]['auroc']:8.3f}" for name in SCORES)
        acc = "" if r.ood_accuracy is None else f"{r.ood_accuracy:9.1%}"
        lines.append(f"{r.checkpoint:14s} {r.dataset:16s}{aurocs}{acc}")
    lines.append("scores: " + "; ".join(f"{s.short} = {s.title}" for s in SCORES.values()))
    lines.append("OOD acc: accuracy on the dataset's labels where they are digits")
    return "\n".join(lines)


def cmd_ood(args) -> int:
    """Run ``python -m core ood``: print the OOD-detection AUROC table.

    Args:
        args: The parsed command line (``samples``, ``subset``, ``checkpoint``, ``dataset``,
            ``json``).

    Returns:
        The exit code: 0, or 1 when no checkpoint or no OOD dataset is available.
    """
    checkpoints = args.checkpoint or [
        i.spec.name for i in list_checkpoints(dataset="mnist") if i.available
    ]
    datasets = args.dataset or ood_datasets()
    if not checkpoints or not datasets:
        missing = "trained checkpoints" if not checkpoints else "OOD datasets"
        print(
            f"no {missing} available (see python -m core list / python -m core data)",
            file=sys.stderr,
        )
        return 1
    bar = text_progress(f"ood {len(checkpoints)}×{len(datasets)}")
    results = ood_table(
        checkpoints, datasets, n_samples=args.samples, n_inputs=args.subset, progress=bar
    )
    if args.json:
        print(
            json.dumps(
                {
                    "samples": args.samples,
                    "subset": args.subset,
                    "results": [asdict(r) for r in results],
                }
            )
        )
    else:
        print(format_table(results))
    return 0


def register(subparsers) -> None:
    """Add the ``ood`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("ood", help="OOD-detection AUROC table (model × dataset × score)")
    p.add_argument("--samples", type=SAMPLES, default=100, help="stochastic passes per input")
    p.add_argument("--subset", type=IMAGES, default=None, help="inputs per dataset (default: all)")
    p.add_argument("--checkpoint", action="append", choices=sorted(REGISTRY), help="repeatable")
    p.add_argument("--dataset", action="append", help="repeatable (default: all available)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.set_defaults(func=cmd_ood)
