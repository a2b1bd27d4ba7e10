"""CLI: ``python -m core calibration`` — calibration, "I don't know" rejection, dataset shift.

Per checkpoint, on the test set of its task (MNIST for the digit models): accuracy, ECE, MCE,
NLL and Brier score, the temperature fitted on the validation split of the training set and
the ECE after scaling, the area under the accuracy–coverage curve per uncertainty score, and
accuracy / ECE at each severity of each shift (:mod:`core.studies.calibration`)::

    python -m core calibration                                  # every available checkpoint
    python -m core calibration --checkpoint mlp --json
    python -m core calibration --shift rotation --shift-inputs 10000 --shift-samples 50

Results are cached on disk, so a second run is instant.
"""

from __future__ import annotations

import argparse
import json
import sys

from core.catalogue import list_checkpoints
from core.cli.values import IMAGES, SAMPLES
from core.evaluation.shift import SHIFTS
from core.evaluation.uncertainty import SCORES
from core.progress import text_progress
from core.studies.calibration.shift import ShiftSettings
from core.studies.calibration.summary import calibration_summary
from core.studies.calibration.validation import VALIDATION_SIZE


def format_table(summary: dict) -> str:
    """Format :func:`core.studies.calibration.summary.calibration_summary` as text tables.

    Args:
        summary: The summary.

    Returns:
        Calibration per model, rejection AUC per model and score, then accuracy / ECE per shift
        severity and model, with a legend.
    """
    models = summary["models"]
    lines = [
        f"Test set of each model's task, {summary['n_samples']} passes per prediction; T fitted "
        f"on {summary['shift_settings']['validation_size']:,} held-out training images",
        f"{'checkpoint':16s} {'task':14s} {'acc':>7s} {'ECE':>7s} {'floor':>7s} {'MCE':>7s}"
        f" {'NLL':>7s} {'Brier':>7s} {'T':>6s} {'ECE(T)':>7s} {'floor':>7s} {'NLL(T)':>7s}",
    ]
    for m in models:
        flag = " *" if m["validation_seen"] else ""
        lines.append(
            f"{m['checkpoint']:16s} {m['dataset'][:14]:14s} {m['accuracy']:7.2%} {m['ece']:7.4f} "
            f"{m['ece_floor']:7.4f} {m['mce']:7.3f} "
            f"{m['nll']:7.4f} {m['brier']:7.4f} {m['temperature']:6.3f} "
            f"{m['ece_tempered']:7.4f} {m['ece_floor_tempered']:7.4f} {m['nll_tempered']:7.4f}"
            f"{flag}"
        )
    lines.append(
        "floor: the ECE that a perfectly calibrated model with the same confidences exceeds by "
        "chance only 5 % of the time on these images; an ECE below it cannot be lowered measurably"
    )
    seen = [m for m in models if m["validation_seen"]]
    if seen:
        lines.append(
            "* trained on the validation images, so T is not a held-out fit (retrain with "
            "--train-subset 55000): "
            + "; ".join(f"{m['checkpoint']}: {m['validation_evidence']}" for m in seen)
        )
    lines += ["", "Area under the accuracy-coverage curve (reject the most uncertain first)"]
    lines.append(f"{'checkpoint':16s}" + "".join(f"{s.short:>8s}" for s in SCORES.values()))
    for m in models:
        aucs = "".join(f"{m['rejection'][name]['auc']:8.4f}" for name in SCORES)
        lines.append(f"{m['checkpoint']:16s}{aucs}")
    lines.append("scores: " + "; ".join(f"{s.short} = {s.title}" for s in SCORES.values()))
    shift_settings = summary["shift_settings"]
    for shift in models[0]["shifts"] if models else []:
        lines += [
            "",
            f"{SHIFTS[shift].title} ({SHIFTS[shift].severity}): accuracy / ECE, "
            f"{shift_settings['n_inputs']:,} test images, {shift_settings['n_samples']} passes",
            f"{'severity':>9s}" + "".join(f"{m['checkpoint'][:15]:>16s}" for m in models),
        ]
        for i, level in enumerate(models[0]["shifts"][shift]):
            cells = "".join(
                f"{m['shifts'][shift][i]['accuracy']:9.1%} {m['shifts'][shift][i]['ece']:5.3f}"
                + " "
                for m in models
            )
            lines.append(f"{level['severity']:9g}{cells}")
    return "\n".join(lines)


def cmd_calibration(args: argparse.Namespace) -> int:
    """Run ``python -m core calibration``.

    Args:
        args: The parsed command line (``checkpoint``, ``samples``, ``shift``,
            ``shift_inputs``, ``shift_samples``, ``validation_size``, ``json``).

    Returns:
        The exit code: 0, or 1 when no checkpoint is available.
    """
    names = args.checkpoint or [i.spec.name for i in list_checkpoints() if i.available]
    if not names:
        print("no trained checkpoints available (see python -m core list)", file=sys.stderr)
        return 1
    settings = ShiftSettings(
        n_inputs=args.shift_inputs,
        n_samples=args.shift_samples,
        validation_size=args.validation_size,
    )
    summary = calibration_summary(
        names,
        n_samples=args.samples,
        shifts=args.shift or list(SHIFTS),
        settings=settings,
        progress=text_progress(f"calibration {len(names)} models"),
    )
    print(json.dumps(summary) if args.json else format_table(summary))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``calibration`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser(
        "calibration", help="calibration, temperature scaling, rejection and dataset shift"
    )
    p.add_argument("--checkpoint", action="append", help="registry name or .pt path (repeatable)")
    p.add_argument("--samples", type=SAMPLES, default=100, help="passes per prediction (test set)")
    p.add_argument("--shift", action="append", choices=sorted(SHIFTS), help="repeatable")
    p.add_argument("--shift-inputs", type=IMAGES, default=2000, help="test images per shift level")
    p.add_argument(
        "--shift-samples", type=SAMPLES, default=20, help="passes per shifted prediction"
    )
    p.add_argument(
        "--validation-size",
        type=IMAGES,
        default=VALIDATION_SIZE,
        help="training images held out for the temperature fit",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.set_defaults(func=cmd_calibration)
