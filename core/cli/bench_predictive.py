"""``python -m core bench-predictive``: time the Monte-Carlo predictive of a checkpoint.

The timing itself is :mod:`core.studies.predictive_speed`.
"""

from __future__ import annotations

import json
import sys

import torch

from core.catalogue import REGISTRY
from core.cli.values import REPEATS, SAMPLES, THREADS
from core.data import DatasetUnavailable, load_dataset
from core.engine.device import default_device
from core.methods import build_model
from core.progress import text_progress
from core.storage.checkpoints import CheckpointError, load_checkpoint
from core.studies.predictive_speed import bench_predictive

TEST_SET_SIZE = 10_000


def _inputs(checkpoint: str, device: torch.device) -> tuple[torch.nn.Module, torch.Tensor, list]:
    """The model and MNIST test images, or stand-ins of the same shapes (with notes)."""
    notes = []
    try:
        model, _ = load_checkpoint(checkpoint, device)
    except CheckpointError as exc:
        notes.append(f"untrained {checkpoint} architecture timed ({exc})")
        model = build_model(REGISTRY[checkpoint].model).to(device).eval().requires_grad_(False)
    try:
        images, _ = load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        notes.append(f"random images timed ({exc})")
        images = torch.rand(TEST_SET_SIZE, 1, 28, 28)
    return model, images, notes


def cmd_bench_predictive(args) -> int:
    """Run ``python -m core bench-predictive``: time the predictive of one checkpoint.

    A checkpoint or dataset that is missing is replaced by a stand-in of the same shape, and
    a note says so.

    Args:
        args: The parsed command line (``checkpoint``, ``samples``, ``repeats``, ``threads``,
            ``json``).

    Returns:
        The exit code: 0.
    """
    if args.threads:
        torch.set_num_threads(args.threads)
    model, images, notes = _inputs(args.checkpoint, default_device())
    bar = text_progress(f"predictive {args.checkpoint}")
    result = bench_predictive(
        model, images, n_samples=args.samples, repeats=args.repeats, progress=bar
    )
    result |= {"checkpoint": args.checkpoint, "notes": notes}
    if args.json:
        print(json.dumps(result))
        return 0
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"{args.checkpoint} on {result['device']}, {args.samples} samples (LRT) + summaries:\n"
        f"  one image: {result['single_image_ms']:.2f} ms median of {args.repeats}"
        f" (min {result['single_image_ms_min']:.2f} ms,"
        f" CPU {result['single_image_cpu_ms']:.2f} ms)\n"
        f"  {result['num_images']} images: {result['test_set_s']:.1f} s"
        f" (CPU {result['test_set_cpu_s']:.1f} s)"
    )
    for name, goal in result["goals"].items():
        status = "met" if goal["met"] else "NOT met"
        print(f"goal {name} < {goal['target']}: {goal['value']:.2f} {status}")
    return 0


def register(subparsers) -> None:
    """Add the ``bench-predictive`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("bench-predictive", help="time the Monte-Carlo predictive")
    p.add_argument("--checkpoint", default="bbb_gaussian", choices=sorted(REGISTRY))
    p.add_argument("--samples", type=SAMPLES, default=100)
    p.add_argument("--repeats", type=REPEATS, default=30, help="single-image timings (median)")
    p.add_argument("--threads", type=THREADS, default=0, help="CPU threads (0: torch default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_predictive)
