"""CLI: ``python -m core attack`` — accuracy of each model on FGSM examples at each ε.

Every available shipped checkpoint (or those named), attacked three ways: naive (one pass per
gradient), EOT (``--k`` passes per gradient) and transferred from the MLP::

    python -m core attack                        # 1,000 test images, ε = 0, 0.05, …, 0.2
    python -m core attack --images 10000 --eps 0 0.1 0.3 --k 50 --json

Curves are cached (:mod:`core.studies.robustness`), so a second run is instant.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from core.catalogue import REGISTRY, list_checkpoints
from core.cli.values import IMAGES, SAMPLES, real
from core.methods import model_class
from core.progress import text_progress
from core.studies.robustness import (
    EPS_GRID,
    CurveSettings,
    RobustnessCurve,
    TargetedSettings,
    cached_curve,
    targeted_detection,
)

SOURCE = "mlp"


def attacks(name: str, k: int, available: list[str]) -> list[tuple[str, int, str | None]]:
    """List the attacks run on a checkpoint.

    A deterministic model gets one white-box row (naive and EOT coincide).

    Args:
        name: The attacked checkpoint's registry name.
        k: Passes per gradient of the EOT attack.
        available: Names of the checkpoints that load; the transfer attack needs the MLP.

    Returns:
        (label, passes per gradient, source checkpoint or None for white-box) per attack.
    """
    stochastic = model_class(REGISTRY[name].model.kind).stochastic
    rows = [("naive", 1, None)] + ([(f"EOT k={k}", k, None)] if stochastic else [])
    if SOURCE in available and name != SOURCE:
        rows.append(("transfer from MLP", 1, SOURCE))
    return rows


def format_table(results: list[dict], eps: tuple[float, ...]) -> str:
    """Format the attack results as a text table, one row per (checkpoint, attack).

    Args:
        results: One dict per (checkpoint, attack) with ``checkpoint``, ``attack`` and
            ``accuracy`` (one value per ε).
        eps: The perturbation sizes ε, in pixel units, in column order.

    Returns:
        The table, the accuracy at each ε per row.
    """
    header = f"{'checkpoint':14s} {'attack':18s}" + "".join(f"{f'ε={e:g}':>9s}" for e in eps)
    lines = ["Accuracy on FGSM examples (predictive mean)", header]
    for r in results:
        accuracy = "".join(f"{a:9.1%}" for a in r["accuracy"])
        lines.append(f"{r['checkpoint']:14s} {r['attack']:18s}{accuracy}")
    return "\n".join(lines)


def _targeted(names: list[str], args) -> int:
    """The ``--targeted`` table: success of a targeted iterative FGSM and its detection."""
    settings = TargetedSettings(
        n_inputs=args.images, n_attack_samples=args.k, n_eval_samples=args.samples
    )
    results = {
        name: targeted_detection(name, settings, progress=text_progress(f"targeted {name}"))
        for name in names
    }
    if args.json:
        print(json.dumps({"settings": asdict(settings), "results": results}))
        return 0
    print(
        f"Targeted iterative FGSM ({settings.steps} steps of {settings.step}, ε = "
        f"{settings.eps}, target = label + 1; EOT k = {settings.n_attack_samples} for "
        "stochastic models): success rate and AUROC of detecting attacked images"
    )
    print(f"{'checkpoint':14s} {'success':>8s} {'AUROC H':>8s} {'AUROC MI':>9s}")
    for name, r in results.items():
        print(
            f"{name:14s} {r['success_rate']:8.1%} {r['auroc_entropy']:8.3f}"
            f" {r['auroc_mutual_information']:9.3f}"
        )
    return 0


def cmd_attack(args) -> int:
    """Run ``python -m core attack``: print each model's accuracy on FGSM examples per ε.

    Args:
        args: The parsed command line (``images``, ``eps``, ``k``, ``samples``, ``checkpoint``,
            ``json``, ``targeted``).

    Returns:
        The exit code: 0, or 1 when no trained checkpoint is available.
    """
    available = [i.spec.name for i in list_checkpoints(dataset="mnist") if i.available]
    names = args.checkpoint or available
    if not names:
        print("no trained checkpoints available (see python -m core list)", file=sys.stderr)
        return 1
    if args.targeted:
        return _targeted(names, args)
    eps = tuple(args.eps)
    results = []
    for name in names:
        for label, k, source in attacks(name, args.k, available):
            settings = CurveSettings(eps, args.images, k, args.samples)
            bar = text_progress(f"attack {name} ({label})")
            curve: RobustnessCurve = cached_curve(name, settings, source, progress=bar)
            results.append({"checkpoint": name, "attack": label, **curve.to_dict()})
    if args.json:
        print(json.dumps({"images": args.images, "samples": args.samples, "results": results}))
    else:
        print(format_table(results, eps))
    return 0


def register(subparsers) -> None:
    """Add the ``attack`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("attack", help="accuracy under FGSM per model and ε (naive/EOT)")
    p.add_argument("--images", type=IMAGES, default=1000, help="MNIST test images (seeded subset)")
    p.add_argument(
        "--eps",
        type=real(0, 1, low_open=False),
        nargs="+",
        default=list(EPS_GRID),
        help="pixel units",
    )
    p.add_argument("--k", type=SAMPLES, default=20, help="passes per gradient for EOT")
    p.add_argument("--samples", type=SAMPLES, default=20, help="passes per prediction")
    p.add_argument("--checkpoint", action="append", choices=sorted(REGISTRY), help="repeatable")
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.add_argument(
        "--targeted",
        action="store_true",
        help="targeted iterative FGSM instead: success rate and detection AUROC (--images 500)",
    )
    p.set_defaults(func=cmd_attack)
