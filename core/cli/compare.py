"""``python -m core compare``: every shipped method side by side (:mod:`core.studies.comparison`).

Examples::

    python -m core compare                 # table of all available checkpoints
    python -m core compare --save --json   # and store it for the Home page
    python -m core compare --save --keep-times   # a busy machine: keep the stored times
"""

from __future__ import annotations

import argparse
import json
import sys

from core.catalogue import list_checkpoints
from core.progress import text_progress
from core.studies.comparison import (
    OOD_SETS,
    comparison,
    load_comparison,
    row_title,
    save_comparison,
    stored_times,
)
from core.studies.ood import ood_datasets


def format_table(result: dict) -> str:
    """The comparison as a fixed-width text table.

    Args:
        result: What :func:`core.studies.comparison.comparison` returned.

    Returns:
        One header line and one line per method.
    """
    sets = sorted({d for row in result["rows"] for d in row["ood_auroc"]}, key=OOD_SETS.index)
    header = f"{'method':30s} {'error':>6s} {'NLL':>6s} {'ECE':>6s}" + "".join(
        f"{d[:9]:>10s}" for d in sets
    )
    lines = [header + f"{'FGSM .1':>9s}{'ms/img':>8s}{'train s':>9s}"]
    for row in result["rows"]:
        auroc = "".join(f"{row['ood_auroc'].get(d, float('nan')):10.3f}" for d in sets)
        train = "" if row["train_seconds"] is None else f"{row['train_seconds']:9.0f}"
        title = row_title(row)[:30]
        lines.append(
            f"{title:30s} {row['test_error']:6.2%} {row['nll']:6.3f} {row['ece']:6.3f}"
            f"{auroc}{row['fgsm_accuracy']:9.1%}{row['predict_ms']:8.1f}{train}"
        )
    return "\n".join(lines)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``python -m core compare``.

    Args:
        args: The parsed command line (``checkpoint``, ``json``, ``save``, ``keep_times``).

    Returns:
        The exit code: 0, or 1 when no checkpoint is available or ``--keep-times`` finds no
        stored time of one of them.
    """
    names = args.checkpoint or [
        i.spec.name for i in list_checkpoints(dataset="mnist") if i.available
    ]
    if not names:
        print("no trained checkpoints available (see python -m core list)", file=sys.stderr)
        return 1
    kept = None
    if args.keep_times:
        stored = load_comparison()
        if stored is None:
            print("no stored comparison to keep the times of", file=sys.stderr)
            return 1
        kept = stored_times(stored)
    sets = tuple(d for d in OOD_SETS if d in ood_datasets())
    try:
        result = comparison(names, sets, progress=text_progress("compare"), kept=kept)
    except ValueError as exc:  # a method without a kept time
        print(exc, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        print(format_table(result))
    if args.save:
        print(f"saved {save_comparison(result)}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` sub-command.

    Args:
        subparsers: The parser's sub-command collection.
    """
    p = subparsers.add_parser("compare", help="every shipped method on one evaluation")
    p.add_argument("--checkpoint", action="append", help="registry name (repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.add_argument("--save", action="store_true", help="store the result for the Home page")
    p.add_argument(
        "--keep-times",
        action="store_true",
        help="carry the prediction times of the stored comparison over (with their device and "
        "date) instead of timing on a busy machine",
    )
    p.set_defaults(func=cmd_compare)
