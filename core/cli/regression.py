"""``python -m core regression``: fit the 1-D regression methods and print their numbers.

Examples::

    python -m core regression                                  # Blundell's curve, all methods
    python -m core regression --preset gap --methods bbb dropout hmc --json
    python -m core regression --ship                           # ship every fit made

Fits are cached (:mod:`core.regression.study`): a second run prints the stored numbers,
including the training time measured when the fit was computed; ``--refresh`` recomputes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from core.cli.values import IMAGES, SEED, STEPS, WIDTH, real
from core.progress import text_progress
from core.regression.data import PRESETS, make_data
from core.regression.likelihood import NOISE_MODELS
from core.regression.settings import FitSettings
from core.regression.study import compared_numbers, fit_method, ship_fit
from core.regression.variants import VARIANTS

NUMBERS = (
    "rmse_in",
    "nll_in",
    "std_in",
    "std_out",
    "std_ratio",
    "coverage90_in",
    "std_vs_hmc",
    "train_seconds",
    "train_cpu_seconds",
)


def format_table(result: dict) -> str:
    """The numbers as a fixed-width text table.

    Args:
        result: What :func:`regression_result` returned.

    Returns:
        One header line and one line per method.
    """
    heads = ("RMSE", "NLL", "std in", "std out", "ratio", "cov90", "vs HMC", "train s", "CPU s")
    lines = [f"{'method':32s}" + "".join(f"{h:>9s}" for h in heads) + "  source"]
    for method, row in result["methods"].items():
        values = "".join(
            f"{row[k]:9.3f}" if math.isfinite(row[k]) else f"{'–':>9s}" for k in NUMBERS
        )
        lines.append(f"{VARIANTS[method].title[:32]:32s}{values}  {row['source']}")
    return "\n".join(lines)


def regression_result(args: argparse.Namespace) -> dict:
    """Fit (or load) every requested method.

    Args:
        args: The parsed command line.

    Returns:
        ``{"data": key, "settings": {...}, "methods": {method: numbers + "source"}}``; the
        numbers include ``std_vs_hmc`` (:func:`~core.regression.study.compared_numbers`: the
        gap to HMC's band; NaN unless HMC is among the methods).
    """
    data = make_data(args.preset, args.n_inputs, args.noise, args.seed)
    settings = FitSettings(
        hidden=tuple(args.hidden) if args.hidden else FitSettings.hidden,
        noise_model=args.noise_model,
        epochs=args.epochs or FitSettings.epochs,
        seed=args.fit_seed,
    )
    fits = {}
    for method in args.methods:
        fits[method] = fit_method(
            data,
            method,
            settings,
            progress=text_progress(f"{VARIANTS[method].title[:24]:24s}"),
            refresh=args.refresh,
        )
    if args.ship:
        for method in fits:
            print(f"shipped {ship_fit(data, method, settings)}", file=sys.stderr)
    methods = {
        method: {k: numbers[k] for k in NUMBERS} | {"source": fits[method].source}
        for method, numbers in compared_numbers(fits).items()
    }
    return {"data": data.key, "settings": settings.to_dict(), "methods": methods}


def cmd_regression(args: argparse.Namespace) -> int:
    """Run ``python -m core regression``.

    Args:
        args: The parsed command line.

    Returns:
        The exit code, 0.
    """
    result = regression_result(args)
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``regression`` sub-command.

    Args:
        subparsers: The parser's sub-command collection.
    """
    p = subparsers.add_parser("regression", help="1-D regression: BBB, dropout, ensemble, HMC")
    p.add_argument("--preset", choices=list(PRESETS), default="blundell")
    p.add_argument(
        "--methods",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        metavar="METHOD",
        help=f"methods to fit, among {', '.join(VARIANTS)} (default: all)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.add_argument("--n-inputs", type=IMAGES, help="training points (default: the preset's)")
    p.add_argument("--noise", type=real(0, 1_000), help="noise level (default: the preset's)")
    p.add_argument("--seed", type=SEED, default=0, help="data seed")
    p.add_argument("--fit-seed", type=SEED, default=0, help="seed of initialisation and noise")
    p.add_argument("--noise-model", choices=NOISE_MODELS, default=FitSettings.noise_model)
    p.add_argument("--hidden", type=WIDTH, nargs="+", help="hidden widths (default: 100)")
    p.add_argument("--epochs", type=STEPS, help="full-batch steps (default: 2000)")
    p.add_argument("--refresh", action="store_true", help="recompute even when cached")
    p.add_argument(
        "--ship", action="store_true", help="copy the fits to checkpoints/regression/ (shipped)"
    )
    p.set_defaults(func=cmd_regression)
