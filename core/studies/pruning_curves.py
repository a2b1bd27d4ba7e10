"""Test error against the pruned fraction, cached on disk, and Blundell et al.'s table.

A curve is the MNIST test error (all 10,000 images, predictive mean of ``n_samples`` passes)
of the model pruned to each fraction in ``fractions``. Each point is stored as soon as it is
computed in the disk cache (:func:`core.storage.cache.cache_entry`), keyed by the checkpoint
file's contents, the method, the number of samples and the seed — so an interrupted
computation resumes where it stopped, and a retrained checkpoint gets a new curve.

The quick numbers of one pruned model (:func:`quick_point`, on the first
:data:`QUICK_INPUTS` test images with :data:`QUICK_SAMPLES` passes: fast enough for every move
of a slider), the SNR distribution (:func:`checkpoint_snr`) and the weight densities
(:func:`weight_histogram`) are computed from the checkpoint each time; the app keeps them in
memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from core.engine.device import default_device
from core.evaluation.metrics import seeded_error
from core.evaluation.pruning import (
    METHODS,
    PruningPoint,
    SnrDistribution,
    density,
    prune,
    pruning_point,
    snr_distribution,
    weight_values,
)
from core.progress import Job, ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import checkpoint_dataset, load_checkpoint, shared_model

CURVE_FRACTIONS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
CURVE_SAMPLES = 10
CACHE_VERSION = 2
QUICK_INPUTS = 1000
QUICK_SAMPLES = 5
SNR_BINS = 200
"""Bins of the SNR distribution the Pruning page draws (and marks the removed weights on)."""
SNR_FLOOR_DB = -60.0
"""Left end of the page's SNR axis in dB; the CDF still counts the weights below it."""

# Blundell et al. (2015), Table 2: SNR pruning of their 2×1200-unit BBB network (scale-mixture
# prior) on MNIST; test error in percent.
PAPER_FRACTIONS = (0.0, 0.5, 0.75, 0.95, 0.98)
PAPER_WEIGHTS = ("2.4m", "1.2m", "600k", "120k", "48k")
PAPER_ERRORS = (1.24, 1.24, 1.24, 1.29, 1.39)
TABLE_FRACTIONS = (0.0, 0.5, 0.75, 0.9, 0.95, 0.98)
"""Rows of the page's table: the paper's fractions and 90 %, the page's default."""


@dataclass(frozen=True)
class PruningCurve:
    """Test errors of a model pruned by ``method`` to each of ``fractions``.

    Attributes:
        method: The pruning method (see :func:`core.evaluation.pruning.prune`).
        fractions: Fractions of the weights removed, in [0, 1].
        errors: MNIST test error at each fraction, in [0, 1].
        n_samples: Stochastic passes of the predictive mean.
    """

    method: str
    fractions: tuple[float, ...]
    errors: tuple[float, ...]
    n_samples: int

    def error_at(self, fraction: float) -> float:
        """Look up the test error at one of the curve's fractions.

        Args:
            fraction: One of :attr:`fractions`.

        Returns:
            The test error, in [0, 1].

        Raises:
            ValueError: If the curve has no point at ``fraction``.
        """
        return self.errors[self.fractions.index(fraction)]


def curve_entry(checkpoint: str | Path, method: str, n_samples: int, seed: int) -> CacheEntry:
    """Give the cache entry where the points of one curve are kept.

    Args:
        checkpoint: Registry name or ``.pt`` path; the key uses the file's content hash.
        method: The pruning method.
        n_samples: Stochastic passes of the predictive mean.
        seed: Seed of the pruning; only matters for ``"random"`` pruning.

    Returns:
        The entry.
    """
    data = f"{checkpoint_dataset(checkpoint)}/test"
    settings = {"method": method, "n_samples": n_samples, "seed": seed, "data": data}
    return cache_entry("pruning", CACHE_VERSION, checkpoints=(checkpoint,), settings=settings)


def _read_points(entry: CacheEntry) -> dict[str, float]:
    points = entry.read(lambda stored: {k: float(v) for k, v in stored["errors"].items()})
    return points or {}


def _point_key(fraction: float) -> str:
    return f"{fraction:.6f}"


def missing_fractions(
    checkpoint: str | Path,
    method: str,
    fractions: tuple[float, ...] | None = None,
    n_samples: int = CURVE_SAMPLES,
    seed: int = 0,
) -> list[float]:
    """List the fractions of a curve not cached yet.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        method: The pruning method.
        fractions: The curve's fractions; None for :data:`CURVE_FRACTIONS`.
        n_samples: Stochastic passes of the predictive mean.
        seed: Seed of the pruning; only matters for ``"random"`` pruning.

    Returns:
        The missing fractions, in the curve's order.
    """
    points = _read_points(curve_entry(checkpoint, method, n_samples, seed))
    return [f for f in fractions or CURVE_FRACTIONS if _point_key(f) not in points]


def cached_pruning_curve(
    checkpoint: str | Path,
    method: str,
    fractions: tuple[float, ...] | None = None,
    n_samples: int = CURVE_SAMPLES,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> PruningCurve:
    """Get a checkpoint's pruning curve on its task's full test set (MNIST or Fashion-MNIST).

    Points not cached yet are computed (reporting progress) and cached one by one, so an
    interrupted computation resumes where it stopped.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        method: The pruning method (see :func:`core.evaluation.pruning.prune`).
        fractions: Fractions of the weights removed; None for :data:`CURVE_FRACTIONS`.
        n_samples: Stochastic passes of the predictive mean.
        seed: Seed of the pruning; only matters for ``"random"`` pruning.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The curve.
    """
    fractions = tuple(fractions or CURVE_FRACTIONS)
    entry = curve_entry(checkpoint, method, n_samples, seed)
    points = _read_points(entry)
    missing = [f for f in fractions if _point_key(f) not in points]
    if missing:
        from core.data import load_dataset

        model = load_checkpoint(checkpoint, default_device())[0]
        x, y = load_dataset(checkpoint_dataset(checkpoint), "test")
        for i, fraction in enumerate(missing):
            report(progress, i / len(missing), f"{fraction:.0%} removed")
            pruned = prune(model, fraction, method, seed)
            points[_point_key(fraction)] = seeded_error(pruned, x, y, n_samples)
            entry.save({"errors": points})
        report(progress, 1.0, "done")
    errors = tuple(points[_point_key(f)] for f in fractions)
    return PruningCurve(method, fractions, errors, n_samples)


POINT_MODELS = {
    "mnist": ("mlp", "dropout_mlp"),
    "fashion_mnist": ("fashion_mlp", "fashion_dropout"),
}
"""Per task: the MLP and the MC dropout network the Pruning page may compare a BBB model with."""
POINT_METHODS = ("magnitude", "random")
"""How those point-estimate networks are pruned (they have no σ, so no signal-to-noise ratio)."""


def compared_curves(
    checkpoint: str, task: str, compare: bool, available: list[str]
) -> list[tuple[str, str]]:
    """List the curves of the Pruning page's figure.

    Args:
        checkpoint: The BBB model's registry name (or ``user:NAME``).
        task: The dataset it was trained on.
        compare: Also prune the task's MLP and MC dropout network (:data:`POINT_MODELS`).
        available: The checkpoints that load; compared networks not among them are left out.

    Returns:
        ``(checkpoint, method)`` per curve: the BBB model by every method first.
    """
    curves = [(checkpoint, method) for method in METHODS]
    if compare:
        curves += [
            (name, method)
            for name in POINT_MODELS.get(task, ())
            if name in available
            for method in POINT_METHODS
        ]
    return curves


def pruning_jobs(curves: list[tuple[str, str, str]]) -> list[Job]:
    """List the curves with points not cached yet, as jobs.

    Args:
        curves: ``(checkpoint, method, title)`` per curve, at the default settings.

    Returns:
        A :class:`~core.progress.Job` per curve with missing points.
    """
    return [
        Job(title, lambda progress, c=c, m=m: cached_pruning_curve(c, m, progress=progress))
        for c, m, title in curves
        if missing_fractions(c, m)
    ]


def paper_table(curves: dict[str, PruningCurve], total_weights: int) -> list[dict[str, str]]:
    """Build rows in the format of Blundell et al.'s Table 2, at :data:`TABLE_FRACTIONS`.

    Args:
        curves: Method label → curve; each must have points at :data:`TABLE_FRACTIONS`.
        total_weights: Number of weights of our unpruned model.

    Returns:
        One row per fraction: our weight count and test error per method beside the paper's
        ("–" at a fraction the paper did not report), as display strings keyed by column title.
    """
    paper = dict(zip(PAPER_FRACTIONS, zip(PAPER_WEIGHTS, PAPER_ERRORS, strict=True), strict=True))
    rows = []
    for fraction in TABLE_FRACTIONS:
        kept = total_weights - round(fraction * total_weights)
        row = {"Proportion removed": f"{fraction:.0%}", "Weights (ours)": f"{kept:,}"}
        for label, curve in curves.items():
            row[f"Test error, {label}"] = f"{curve.error_at(fraction):.2%}"
        paper_weights, paper_error = paper.get(fraction, ("–", None))
        row["Weights (paper, 2×1200)"] = paper_weights
        row["Test error (paper, 2×1200, SNR)"] = (
            "–" if paper_error is None else f"{paper_error:.2f}%"
        )
        rows.append(row)
    return rows


# --- one pruned model, quickly ---------------------------------------------------------------


def _quick_test_set(checkpoint: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    from core.data import load_dataset

    x, y = load_dataset(checkpoint_dataset(checkpoint), "test")
    device = default_device()
    return x[:QUICK_INPUTS].to(device), y[:QUICK_INPUTS].to(device)


def quick_error(checkpoint: str | Path) -> float:
    """The unpruned model's test error on the quick subset (seeded passes).

    Args:
        checkpoint: Registry name or ``.pt`` path.

    Returns:
        The error as a fraction, on the first :data:`QUICK_INPUTS` test images of the
        checkpoint's task with :data:`QUICK_SAMPLES` passes.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If its test set is missing.
    """
    x, y = _quick_test_set(checkpoint)
    return seeded_error(shared_model(checkpoint, default_device()), x, y, QUICK_SAMPLES)


def checkpoint_snr(checkpoint: str | Path, bins: int, floor_db: float) -> SnrDistribution:
    """The SNR distribution of a BBB checkpoint's weights.

    Args:
        checkpoint: Registry name or ``.pt`` path of a model with a weight posterior.
        bins: Number of histogram bins.
        floor_db: Lowest start of the plotted range in dB.

    Returns:
        See :func:`core.evaluation.pruning.snr_distribution`.

    Raises:
        CheckpointError: If the checkpoint does not load.
    """
    return snr_distribution(shared_model(checkpoint, default_device()), bins, floor_db)


def quick_point(
    checkpoint: str | Path, method: str, fraction: float, bins: int, floor_db: float
) -> PruningPoint:
    """The model pruned by ``method`` to ``fraction``, measured on the quick subset.

    Args:
        checkpoint: Registry name or ``.pt`` path of a model with a weight posterior.
        method: A :data:`core.evaluation.pruning.METHODS` score.
        fraction: Share of the weights removed, in [0, 1].
        bins: Bins of the SNR distribution the removed weights are shown on.
        floor_db: Its lowest start in dB (as :func:`checkpoint_snr`).

    Returns:
        The pruned model's error, size, removed SNR density and SNR cut-off.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If its test set is missing.
    """
    x, y = _quick_test_set(checkpoint)
    model = shared_model(checkpoint, default_device())
    snr = checkpoint_snr(checkpoint, bins, floor_db)
    return pruning_point(model, method, fraction, x, y, QUICK_SAMPLES, snr)


def weight_histogram(
    checkpoint: str | Path, bins: int, value_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """The density of a checkpoint's weights (biases excluded); one posterior sample for BBB.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        bins: Number of histogram bins.
        value_range: ``(low, high)`` of the weights counted.

    Returns:
        Bin centres and density ``(bins,)``.

    Raises:
        CheckpointError: If the checkpoint does not load.
    """
    weights = weight_values(shared_model(checkpoint, default_device()), sample=True)
    return density(weights, bins, value_range)
