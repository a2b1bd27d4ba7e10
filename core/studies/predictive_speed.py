"""Speed of the Monte-Carlo predictive: one image, and the MNIST test set, 100 samples each.

``python -m core bench-predictive`` (:mod:`core.cli.bench_predictive`) times
:func:`core.engine.sampler.predictive_samples` (LRT) plus
:func:`core.evaluation.uncertainty.summarize`, i.e. what the Draw page does per model and what
:func:`core.studies.evaluations.evaluate_dataset` does per dataset::

    python -m core bench-predictive                  # bbb_gaussian, 100 samples
    python -m core bench-predictive --threads 1 --json

Speed does not depend on the weights or pixels: without the trained checkpoint an untrained
model of the same architecture is timed, without MNIST random images.
"""

from __future__ import annotations

import statistics
import time

import torch

from core.engine.device import device_name, synchronize
from core.engine.interface import LabModel
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import summarize
from core.progress import ProgressFn, report

GOALS = {"single_image_ms": 10.0, "test_set_s": 60.0}  # upper bounds
STEPS = 20  # progress steps over the test set


def _timed(fn, device: torch.device) -> tuple[float, float]:
    """(wall-clock, process CPU) seconds of ``fn()``."""
    synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    synchronize(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_predictive(
    model: LabModel,
    images: torch.Tensor,
    *,
    n_samples: int = 100,
    repeats: int = 30,
    warmup: int = 5,
    progress: ProgressFn | None = None,
) -> dict:
    """Time ``n_samples`` passes + summaries on single images and on a whole set.

    Wall-clock times are rated against :data:`GOALS`; the process CPU times (``*_cpu_*``,
    summed over threads) show the work itself when other processes compete for the cores.

    Args:
        model: The network, on the device to time.
        images: ``(N, 1, 28, 28)`` in [0, 1], all swept once; the first ``repeats`` are also
            timed one by one.
        n_samples: Monte-Carlo passes per image.
        repeats: Single images timed; the median is reported.
        warmup: Untimed single-image runs first (and one untimed chunk of the sweep, so that
            the device's memory for its tensors is allocated before the timing).
        progress: Called with (fraction done, message) during the sweep; None for silence.

    Returns:
        A JSON-ready dict: ``n_samples``, ``repeats``, ``num_images``, ``single_image_ms``
        (median), ``single_image_ms_min``, ``single_image_cpu_ms``, ``test_set_s``,
        ``test_set_cpu_s``, ``device`` and ``goals`` (name → ``{"value", "target", "met"}``).
    """
    device = next(model.parameters()).device
    images = images.to(device)

    def one(i: int) -> None:
        summarize(predictive_samples(model, images[i : i + 1], n_samples))

    for i in range(warmup):
        one(i)
    single = [_timed(lambda i=i: one(i), device) for i in range(repeats)]

    chunks = images.tensor_split(STEPS)
    summarize(predictive_samples(model, chunks[0], n_samples))  # allocations of a chunk's size

    def sweep() -> None:
        for k, batch in enumerate(chunks):
            report(progress, k / STEPS, f"{k * len(images) // STEPS}/{len(images)} images")
            summarize(predictive_samples(model, batch, n_samples))
        report(progress, 1.0, f"{len(images)} images")

    total, total_cpu = _timed(sweep, device)
    walls, cpus = zip(*single, strict=True)
    values = {"single_image_ms": 1e3 * statistics.median(walls), "test_set_s": total}
    return {
        "n_samples": n_samples,
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
