"""``python -m core adapt``: a trained model learns the class's handwriting, before and after.

The class's drawings come from the class store (``--class CODE``) or from the IDX zip the
teacher downloaded from the Class drawings page (``--from FILE``). They are split into drawings
to learn from and drawings kept aside (``--split time|random``); each ``--checkpoint`` is
adapted on the first part (:mod:`core.adapt`) and scored before and after: kept-aside accuracy,
NLL, ECE, the "I don't know" rate, and the error on a fixed MNIST subset (forgetting).
``--save NAME`` keeps each adapted model as ``user:NAME-CHECKPOINT``::

    python -m core adapt --class 7b --checkpoint bbb_gaussian --checkpoint mlp --save ours
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from core.adapt import ADAPTERS, adapter
from core.adapt.run import STEPS, Recipe
from core.adapt.study import SPLITS, Trial, before_after, mnist_subset, split_drawings
from core.classroom.export import read_idx_zip
from core.classroom.store import drawings
from core.cli.values import SAMPLES, SEED, THREADS, real, whole
from core.progress import text_progress
from core.storage.checkpoints import load_checkpoint

OPTIONS = {s.name: s for a in ADAPTERS.values() for s in a.settings}
"""Every kind's own adaptation options by name (each applies to the kinds that declare it)."""


def class_drawings(args: argparse.Namespace) -> tuple:
    """The drawings named on the command line: ``(images (N, 1, 28, 28), labels (N,))``."""
    if args.source:
        try:
            return read_idx_zip(Path(args.source).read_bytes())
        except OSError as exc:
            raise ValueError(f"{args.source}: cannot be read ({exc.strerror})") from None
    images, labels, _, _ = drawings(args.class_code)
    return images, labels


def cmd_adapt(args: argparse.Namespace) -> int:
    """Run ``adapt``: adapt each checkpoint and print (or emit as JSON) before and after."""
    if args.threads:
        torch.set_num_threads(args.threads)
    images, labels = class_drawings(args)
    learn, kept = split_drawings(len(labels), args.split, args.seed)
    mnist = mnist_subset()
    given = {name: getattr(args, name) for name in OPTIONS if getattr(args, name) is not None}
    trial = Trial((images[learn], labels[learn]), (images[kept], labels[kept]), mnist, args.samples)
    results = []
    for checkpoint in args.checkpoint:
        own = adapter(load_checkpoint(checkpoint)[0].config.kind).own(given)
        name = f"{args.save}-{checkpoint.removeprefix('user:')}" if args.save else None
        progress = None if args.json else text_progress(f"adapt {checkpoint}")
        result = before_after(
            checkpoint,
            trial,
            Recipe(steps=args.steps, options=own, seed=args.seed),
            name=name,
            progress=progress,
        )
        saved = result.adapted.path
        results.append(
            {
                "checkpoint": checkpoint,
                "learned": result.learned,
                "kept_aside": len(kept),
                "before": result.before.row(),
                "after": result.after.row(),
                "changed": [
                    {"position": int(kept[p]), "meant": m, "before": b, "after": a}
                    for p, m, b, a in result.changed
                ],
                "seconds": result.adapted.metadata["train_seconds"],
                "saved": f"user:{saved.stem}" if saved else None,
            }
        )
    if args.json:
        json.dump({"split": args.split, "seed": args.seed, "models": results}, sys.stdout, indent=2)
        print()
        return 0
    for r in results:
        print(f"\n{r['checkpoint']}: learned {r['learned']} drawings, {r['kept_aside']} kept aside")
        print(f"  {'':10}{'accuracy':>10}{'NLL':>8}{'ECE':>8}{'IDK':>8}{'MNIST err':>11}")
        for when in ("before", "after"):
            s = r[when]
            print(
                f"  {when:10}{s['accuracy']:>10.1%}{s['nll']:>8.3f}{s['ece']:>8.3f}"
                f"{s['dont_know']:>8.1%}{s['mnist_error']:>11.2%}"
            )
        print(f"  answers changed: {len(r['changed'])}; {r['seconds']:.1f} s", end="")
        print(f"; saved as {r['saved']}" if r["saved"] else "")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``adapt`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("adapt", help="a trained model learns the class's handwriting")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--class", dest="class_code", help="the class code of the drawings")
    source.add_argument("--from", dest="source", help="the class's IDX zip (Class drawings page)")
    p.add_argument(
        "--checkpoint",
        action="append",
        required=True,
        help="registry name or user:NAME (repeatable)",
    )
    p.add_argument(
        "--split", choices=sorted(SPLITS), default="time", help="how drawings are kept aside"
    )
    p.add_argument("--seed", type=SEED, default=0, help="seed of the random split and the steps")
    p.add_argument(
        "--steps",
        type=whole(0, 2000),
        default=int(STEPS.default),
        help="Adam steps (default %(default)s)",
    )
    p.add_argument("--samples", type=SAMPLES, default=20, help="passes per prediction when scoring")
    for name, setting in OPTIONS.items():
        kinds = ", ".join(k for k, a in ADAPTERS.items() if setting in a.settings)
        p.add_argument(
            f"--{name.replace('_', '-')}",
            type=real(0, 1e6, low_open=False) if setting.type is float else whole(1, 64),
            default=None,
            help=f"{setting.help} ({kinds}; default {setting.default})",
        )
    p.add_argument("--threads", type=THREADS, default=0, help="CPU threads (0: torch default)")
    p.add_argument("--save", help="keep each adapted model as user:SAVE-CHECKPOINT")
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.set_defaults(func=cmd_adapt)
