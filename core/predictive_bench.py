"""Speed of the Monte-Carlo predictive: one image, and the MNIST test set, 100 samples each.

``python -m core bench-predictive`` times :func:`core.predictive.predictive_samples` (LRT) plus
:func:`core.uncertainty.summarize`, i.e. what the Draw page does per model and what
:func:`core.evalcache.evaluate_dataset` does per dataset::

    python -m core bench-predictive                  # bbb_gaussian, 100 samples
    python -m core bench-predictive --threads 1 --json

Speed does not depend on the weights or pixels: without the trained checkpoint an untrained
model of the same architecture is timed, without MNIST random images.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

from core.checkpoints import REGISTRY, CheckpointError, load_checkpoint
from core.device import default_device, device_name, synchronize
from core.models import build_model
from core.predictive import predictive_samples
from core.progress import ProgressFn, report, text_progress
from core.uncertainty import summarize

GOALS = {"single_image_ms": 10.0, "test_set_s": 60.0}  # upper bounds
TEST_SET_SIZE = 10_000
STEPS = 20  # progress steps over the test set


def _timed(fn, device: torch.device) -> tuple[float, float]:
    """(wall-clock, process CPU) seconds of ``fn()``."""
    synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    synchronize(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_predictive(
    model: torch.nn.Module,
    images: torch.Tensor,
    *,
    samples: int = 100,
    repeats: int = 30,
    warmup: int = 5,
    progress: ProgressFn | None = None,
) -> dict:
    """Seconds for ``samples`` passes + summaries: median over ``repeats`` single images (after
    ``warmup`` runs), and one sweep over all ``images`` ``(N, 1, 28, 28)``. Wall-clock times
    are rated against :data:`GOALS`; the process CPU times (``*_cpu_*``, summed over threads)
    show the work itself when other processes compete for the cores."""
    device = next(model.parameters()).device
    images = images.to(device)

    def one(i: int) -> None:
        summarize(predictive_samples(model, images[i : i + 1], samples))

    for i in range(warmup):
        one(i)
    single = [_timed(lambda i=i: one(i), device) for i in range(repeats)]

    def sweep() -> None:
        for k, batch in enumerate(images.tensor_split(STEPS)):
            report(progress, k / STEPS, f"{k * len(images) // STEPS}/{len(images)} images")
            summarize(predictive_samples(model, batch, samples))
        report(progress, 1.0, f"{len(images)} images")

    total, total_cpu = _timed(sweep, device)
    walls, cpus = zip(*single, strict=True)
    values = {"single_image_ms": 1e3 * statistics.median(walls), "test_set_s": total}
    return {
        "samples": samples,
        "repeats": repeats,
        "num_images": len(images),
        "single_image_ms_min": 1e3 * min(walls),
        "single_image_cpu_ms": 1e3 * statistics.median(cpus),
        "test_set_cpu_s": total_cpu,
        **values,
        "device": device_name(device),
        "goals": {
            k: {"value": v, "target": GOALS[k], "met": v < GOALS[k]} for k, v in values.items()
        },
    }


def _inputs(checkpoint: str, device: torch.device) -> tuple[torch.nn.Module, torch.Tensor, list]:
    """The model and MNIST test images, or stand-ins of the same shapes (with notes)."""
    from core.data import DatasetUnavailable, load_dataset

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
    if args.threads:
        torch.set_num_threads(args.threads)
    model, images, notes = _inputs(args.checkpoint, default_device())
    bar = text_progress(f"predictive {args.checkpoint}")
    result = bench_predictive(
        model, images, samples=args.samples, repeats=args.repeats, progress=bar
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
    p = subparsers.add_parser("bench-predictive", help="time the Monte-Carlo predictive")
    p.add_argument("--checkpoint", default="bbb_gaussian", choices=sorted(REGISTRY))
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--repeats", type=int, default=30, help="single-image timings (median)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_predictive)
