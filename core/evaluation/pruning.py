"""Weight pruning (Blundell et al. 2015, §5.1) and weight statistics.

A model's *weights* are the matrices of its linear layers; **biases are never pruned** (as in
the paper, which prunes weights; they are 810 of 478,410 parameters of the 784-400-400-10 net).
Each weight gets a score and the lowest-scoring ``round(fraction · N)`` weights over all layers
jointly are removed (one global threshold). Ties are broken by position — layer order, then
row-major index — via a stable sort, so the removed count is exact and the choice deterministic.

Scores (``METHODS``):

* ``"snr"``: signal-to-noise ratio |μ|/σ (BBB only): a weight whose mean is small relative to
  its posterior spread carries little signal — the posterior says it could just as well be zero;
* ``"magnitude"``: |μ| for BBB, |w| for the MLP and the dropout MLP;
* ``"random"``: i.i.d. uniform scores from a seeded generator.

A removed weight becomes deterministic zero: μ = 0 and ρ = −∞, so σ = softplus(−∞) = 0
*exactly* (a finite ρ such as −100 would leave σ ≈ 3.7e-44, a float32 denormal that is not zero
and slows CPU arithmetic). Sampled weights are then μ + σ·ε = 0 and LRT variances x²·σ² = 0,
so :func:`core.engine.sampler.predictive_samples` works unchanged. The complexity cost (KL) of a
pruned BBB model is infinite — a point mass has no density under the prior — so pruned models
are for prediction only, never for training. Pruning returns a deep copy; the input model (for
example a cached, shared checkpoint) is never modified.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from core.engine.interface import LabModel as Model
from core.evaluation.metrics import seeded_error

METHODS = ("snr", "magnitude", "random")
METHOD_LABELS = {"snr": "signal-to-noise |μ|/σ", "magnitude": "magnitude |μ|", "random": "random"}
FLOAT_BYTES = 4  # float32 values
INDEX_BYTES = 4  # int32 column indices and row pointers (CSR)


def _means(model: Model) -> list[torch.Tensor]:
    """Each layer's weight matrix (μ for BBB), ``(out, in)``."""
    bayes = model.weight_posterior
    return [layer.weight_mu if bayes else layer.weight for layer in model.layers]


def num_weights(model: Model) -> int:
    """Number of prunable weights N (all weight-matrix entries, biases excluded).

    Args:
        model: A model with ``layers`` (BBB, MLP or dropout MLP).

    Returns:
        N.
    """
    return sum(w.numel() for w in _means(model))


@torch.no_grad()
def weight_scores(model: Model, method: str, seed: int = 0) -> torch.Tensor:
    """Pruning scores of all weights in layer order (lowest are removed first).

    An already removed BBB weight (0/0) scores 0.

    Args:
        model: A model with ``layers`` (BBB, MLP or dropout MLP).
        method: One of :data:`METHODS`.
        seed: Seed of the ``"random"`` scores.

    Returns:
        Scores ``(N,)`` on the CPU, layers in order, each row-major.

    Raises:
        ValueError: If ``method`` is unknown, or ``"snr"`` for a model without a weight
            posterior.
    """
    if method not in METHODS:
        raise ValueError(f"pruning method must be one of {METHODS}, got {method!r}")
    if method == "random":
        generator = torch.Generator().manual_seed(seed)
        return torch.rand(num_weights(model), generator=generator)
    if method == "snr":
        if not model.weight_posterior:
            raise ValueError("signal-to-noise pruning needs a Bayesian (BBB) model")
        ratios = [layer.weight_mu.abs() / layer.weight_sigma for layer in model.layers]
        return torch.cat([r.flatten().cpu() for r in ratios]).nan_to_num(nan=0.0)
    return torch.cat([w.abs().flatten().cpu() for w in _means(model)])


def removal_mask(scores: torch.Tensor, fraction: float) -> torch.Tensor:
    """Flag the ``round(fraction · N)`` lowest scores for removal.

    Among equal scores the lower index goes first (the same set as a stable sort's first k).

    Args:
        scores: Pruning scores ``(N,)``.
        fraction: Share of weights to remove, in [0, 1].

    Returns:
        Boolean mask ``(N,)``, True for a removed weight.

    Raises:
        ValueError: If ``fraction`` is outside [0, 1].
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"pruning fraction must be in [0, 1], got {fraction}")
    k = round(fraction * scores.numel())
    if k == 0:
        return torch.zeros(scores.numel(), dtype=torch.bool)
    threshold = torch.kthvalue(scores, k).values  # O(N), unlike a full sort
    removed = scores < threshold
    ties = torch.nonzero(scores == threshold).squeeze(1)
    removed[ties[: k - int(removed.sum())]] = True
    return removed


def cutoff(scores: torch.Tensor, fraction: float) -> float | None:
    """The largest removed score at ``fraction`` (the pruning threshold).

    Args:
        scores: Pruning scores ``(N,)``.
        fraction: Share of weights removed, in [0, 1].

    Returns:
        The threshold score, or None if nothing is removed.
    """
    k = round(fraction * scores.numel())
    return None if k == 0 else torch.kthvalue(scores, k).values.item()


def prune(model: Model, fraction: float, method: str = "snr", seed: int = 0) -> Model:
    """A pruned deep copy of ``model``.

    The ``round(fraction · N)`` lowest-scoring weights are set to μ = 0, σ = 0 (see the module
    docstring).

    Args:
        model: The model to copy; it is not modified.
        fraction: Share of weights to remove, in [0, 1].
        method: Score, one of :data:`METHODS`.
        seed: Seed of the ``"random"`` scores (ignored by the other methods).

    Returns:
        The pruned copy (for prediction only: a pruned BBB model's KL is infinite).

    Raises:
        ValueError: If ``method`` or ``fraction`` is invalid (see :func:`weight_scores` and
            :func:`removal_mask`).
    """
    return remove_weights(model, removal_mask(weight_scores(model, method, seed), fraction))


@torch.no_grad()
def remove_weights(model: Model, removed: torch.Tensor) -> Model:
    """A deep copy of ``model`` without the weights flagged in ``removed``.

    Each removed weight becomes μ = 0, σ = 0 (ρ = −∞).

    Args:
        model: The model to copy; it is not modified.
        removed: Boolean mask ``(N,)``, layer order, row-major.

    Returns:
        The pruned copy.

    Raises:
        ValueError: If ``removed`` is not shaped ``(N,)``.
    """
    if removed.shape != (num_weights(model),):
        raise ValueError(f"removal mask must have shape ({num_weights(model)},)")
    pruned = copy.deepcopy(model)
    bayes, offset = pruned.weight_posterior, 0
    for layer, w in zip(pruned.layers, _means(pruned), strict=True):
        mask = removed[offset : offset + w.numel()].view_as(w).to(w.device)
        offset += w.numel()
        w.masked_fill_(mask, 0.0)
        if bayes:
            layer.weight_rho.masked_fill_(mask, -math.inf)
    return pruned


@torch.no_grad()
def kept_masks(model: Model) -> list[torch.Tensor]:
    """Which weights are still present, per layer.

    Args:
        model: A model with ``layers`` (BBB, MLP or dropout MLP).

    Returns:
        Per layer, a boolean ``(out, in)`` mask, True where μ ≠ 0 (or σ ≠ 0 for BBB).
    """
    if not model.weight_posterior:
        return [w != 0 for w in _means(model)]
    return [(layer.weight_mu != 0) | (layer.weight_sigma != 0) for layer in model.layers]


@dataclass(frozen=True)
class StorageSize:
    """Bytes to store a model's weights and biases, dense and sparse (CSR).

    Attributes:
        dense_bytes: Every weight and bias as ``values`` float32 numbers.
        sparse_bytes: Weight matrices in CSR form plus dense biases (see :func:`storage_size`).
        kept_weights: Number of weights still present.
        total_weights: Number of weights N (biases excluded).
        values: float32 numbers per parameter (2 for BBB: μ and σ; 1 otherwise).
    """

    dense_bytes: int
    sparse_bytes: int
    kept_weights: int
    total_weights: int
    values: int

    @property
    def compression(self) -> float:
        """Compression ratio dense / sparse (> 1 when the sparse form is smaller)."""
        return self.dense_bytes / self.sparse_bytes


def storage_size(model: Model) -> StorageSize:
    """Dense vs sparse storage of ``model``'s weights and biases.

    Dense: every weight and bias as ``values`` float32 numbers. Sparse: each weight matrix in CSR
    form — per kept weight its ``values`` float32 numbers and an int32 column index, plus
    ``out + 1`` int32 row pointers — and biases dense.

    Args:
        model: A model with ``layers`` (BBB, MLP or dropout MLP).

    Returns:
        Both sizes in bytes and the kept and total weight counts.
    """
    values = 2 if model.weight_posterior else 1
    per_param = values * FLOAT_BYTES
    masks = kept_masks(model)
    biases = sum(layer.out_features for layer in model.layers)
    kept = sum(int(m.sum()) for m in masks)
    total = sum(m.numel() for m in masks)
    row_pointers = sum(m.shape[0] + 1 for m in masks) * INDEX_BYTES
    return StorageSize(
        dense_bytes=(total + biases) * per_param,
        sparse_bytes=kept * (per_param + INDEX_BYTES) + row_pointers + biases * per_param,
        kept_weights=kept,
        total_weights=total,
        values=values,
    )


def snr_db(scores: torch.Tensor) -> torch.Tensor:
    """Signal-to-noise ratios |μ|/σ in decibels, ``10 · log10(|μ|/σ)`` (the paper's axis).

    Args:
        scores: Ratios |μ|/σ, any shape (e.g. :func:`weight_scores` with ``"snr"``).

    Returns:
        dB values, same shape (−inf for a ratio of 0).
    """
    return 10.0 * torch.log10(scores)


@torch.no_grad()
def weight_values(model: Model, sample: bool, seed: int = 0) -> torch.Tensor:
    """All weights (biases excluded), for histograms.

    Args:
        model: A model with ``layers`` (BBB, MLP or dropout MLP).
        sample: BBB only: True for one posterior draw μ + σ·ε, False for the means μ.
        seed: Seed of the posterior draw.

    Returns:
        Weights ``(N,)`` on the CPU, layer order: w for MLPs, a draw or μ for BBB.
    """
    if not (sample and model.weight_posterior):
        return torch.cat([w.flatten().cpu() for w in _means(model)])
    generator = torch.Generator().manual_seed(seed)
    draws = []
    for layer in model.layers:
        mu, sigma = layer.weight_mu.cpu(), layer.weight_sigma.cpu()
        draws.append((mu + sigma * torch.randn(mu.shape, generator=generator)).flatten())
    return torch.cat(draws)


def density(
    values: torch.Tensor, bins: int, value_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Histogram density estimate.

    Args:
        values: Values, any shape.
        bins: Number of equal-width bins.
        value_range: ``(low, high)`` of the histogram.

    Returns:
        ``(centres, densities)``, ``(bins,)`` each; the densities integrate to the fraction of
        ``values`` inside ``value_range``.
    """
    v = values.detach().cpu().numpy()
    counts, edges = np.histogram(v, bins=bins, range=value_range)
    widths = np.diff(edges)
    return (edges[:-1] + edges[1:]) / 2, counts / (len(v) * widths)


@dataclass(frozen=True)
class SnrDistribution:
    """Signal-to-noise ratios of all weights of a BBB model, for plotting.

    Attributes:
        db: SNR of every weight in dB ``(N,)``, layer order.
        centres: Histogram bin centres ``(bins,)`` over ``value_range``.
        density: Histogram density ``(bins,)`` over ``value_range``.
        cdf: Fraction of all weights at or below each centre ``(bins,)``.
        value_range: ``(low, high)`` in whole dB, starting no lower than the floor (μ ≈ 0
            reaches −380 dB or −inf, which would squash the plot; those weights still count in
            the CDF).
    """

    db: np.ndarray
    centres: np.ndarray
    density: np.ndarray
    cdf: np.ndarray
    value_range: tuple[float, float]


def snr_distribution(model: Model, bins: int = 200, floor_db: float = -60.0) -> SnrDistribution:
    """The :class:`SnrDistribution` of ``model``'s weights.

    Args:
        model: A model with a weight posterior (BBB).
        bins: Number of histogram bins.
        floor_db: Lowest start of the plotted range in dB.

    Returns:
        The SNRs, their histogram density and CDF.

    Raises:
        ValueError: If ``model`` has no weight posterior.
    """
    db = snr_db(weight_scores(model, "snr"))
    lowest = max(db.quantile(0.001).item(), floor_db)
    value_range = (float(np.floor(lowest)), float(db.max().ceil()))
    centres, dens = density(db, bins, value_range)
    cdf = np.searchsorted(np.sort(db.numpy()), centres) / len(db)
    return SnrDistribution(db.numpy(), centres, dens, cdf, value_range)


@dataclass(frozen=True)
class PruningPoint:
    """One model pruned by one method to one fraction.

    Attributes:
        error: Test error (fraction) on the given inputs.
        size: Storage size of the pruned model.
        removed_density: The removed weights' share of the SNR density per bin ``(bins,)``;
            None when nothing is removed or there is no SNR distribution.
        threshold_db: The SNR cut-off in dB (SNR pruning with something removed, else None).
    """

    error: float
    size: StorageSize
    removed_density: np.ndarray | None
    threshold_db: float | None


def pruning_point(
    model: Model,
    method: str,
    fraction: float,
    x: torch.Tensor,
    y: torch.Tensor,
    n_samples: int,
    snr: SnrDistribution | None = None,
) -> PruningPoint:
    """Prune ``model`` (a copy) and measure it with seeded passes.

    Args:
        model: The model to prune; it is not modified.
        method: Score, one of :data:`METHODS`.
        fraction: Share of weights to remove, in [0, 1].
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        y: Class indices ``(B,)``.
        n_samples: Number of Monte-Carlo passes, seeded (see
            :func:`core.evaluation.metrics.seeded_error`).
        snr: The unpruned model's SNR distribution, or None.

    Returns:
        The pruned model's error, storage size, removed SNR density and SNR cut-off.

    Raises:
        ValueError: If ``method`` or ``fraction`` is invalid.
    """
    scores = weight_scores(model, method)
    removed = removal_mask(scores, fraction)
    pruned = remove_weights(model, removed)
    removed_density = None
    if snr is not None and removed.any():
        _, dens = density(
            torch.from_numpy(snr.db[removed.numpy()]), len(snr.centres), snr.value_range
        )
        removed_density = dens * removed.float().mean().item()
    threshold = cutoff(scores, fraction) if method == "snr" else None
    threshold_db = None if threshold is None else snr_db(torch.tensor(threshold)).item()
    return PruningPoint(
        seeded_error(pruned, x, y, n_samples), storage_size(pruned), removed_density, threshold_db
    )
