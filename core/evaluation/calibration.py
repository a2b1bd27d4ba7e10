"""Calibration and rejection on per-input arrays (pure, no disk).

Temperature scaling, the maximum calibration error, tie-aware accuracy–coverage curves and the
"I don't know" operating point.

Temperature scaling (Guo et al. 2017) divides a network's logits by one scalar T fitted by
minimising the NLL on held-out data. Here it acts on the *predictive* probabilities p̄ (the
mean of the Monte-Carlo passes): ``p_T ∝ p̄^(1/T)``, i.e. ``softmax(log p̄ / T)``. For a
deterministic network ``log p̄`` is its logits up to a constant per input, so this is exactly
Guo et al.'s method; for a Bayesian or ensemble model it rescales the model-averaged
predictive, which needs nothing but the predictive mean, so it applies to every model kind.
T > 1 softens over-confident predictions, T < 1 sharpens under-confident ones; the predicted
class never changes, so neither does the accuracy.

ECE, the reliability bins, NLL and the Brier score are those of :mod:`core.evaluation.metrics`.
An ECE measured on finitely many inputs is never 0, even for a perfectly calibrated model:
:func:`ece_noise_floor` gives the level that sampling alone reaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.evaluation.metrics import ECE_BINS, Reliability, calibration, reliability

TEMPERATURE_BOUNDS = (0.05, 20.0)
"""The range searched for T; a fit at either end is reported as at the bound."""
_TINY = torch.finfo(torch.float32).tiny  # probabilities are clamped here before the log
_GOLDEN = (math.sqrt(5) - 1) / 2


def _probs(probs) -> torch.Tensor:
    return torch.as_tensor(probs).detach().cpu().double()


def _labels(labels) -> torch.Tensor:
    return torch.as_tensor(labels).detach().cpu().long().reshape(-1)


def tempered(probs, temperature: float) -> torch.Tensor:
    """Temperature-scale predictive probabilities: ``softmax(log p / T)``.

    Args:
        probs: Class probabilities ``(N, C)`` (rows summing to 1).
        temperature: T > 0; 1 returns the probabilities themselves (up to rounding).

    Returns:
        float64 ``(N, C)`` probabilities, each row ∝ ``p^(1/T)``.

    Raises:
        ValueError: If ``temperature`` is not positive.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    log_p = _probs(probs).clamp_min(_TINY).log()
    return torch.softmax(log_p / temperature, dim=-1)


def tempered_nll(probs, labels, temperature: float) -> float:
    """Mean NLL of ``labels`` under :func:`tempered` probabilities.

    Args:
        probs: Class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.
        temperature: T > 0.

    Returns:
        The mean NLL in nats.
    """
    log_p = _probs(probs).clamp_min(_TINY).log() / temperature
    y = _labels(labels)
    return (torch.logsumexp(log_p, -1) - log_p.gather(1, y[:, None]).squeeze(1)).mean().item()


def fit_temperature(
    probs, labels, bounds: tuple[float, float] = TEMPERATURE_BOUNDS, tol: float = 1e-5
) -> tuple[float, bool]:
    """Fit the temperature that minimises the NLL of held-out predictions.

    The NLL of ``softmax(β log p)`` is convex in β = 1/T, hence unimodal in log T, so a
    golden-section search over log T in ``bounds`` finds the minimum.

    Args:
        probs: Predictive probabilities ``(N, C)`` of held-out (validation) inputs — never the
            inputs the result is judged on.
        labels: Their class indices ``(N,)``.
        bounds: The range of T searched, ``(low, high)`` with 0 < low < high.
        tol: Stop when the bracket of log T is narrower than this.

    Returns:
        ``(temperature, at_bound)``: the fitted T, and whether it lies at (within 1 % of) an end
        of ``bounds`` (e.g. predictions that are all right, whose NLL keeps falling as T → 0).

    Raises:
        ValueError: If ``bounds`` is not an increasing pair of positive numbers or there are no
            inputs.
    """
    low, high = bounds
    if not 0 < low < high:
        raise ValueError(f"temperature bounds must satisfy 0 < low < high, got {bounds}")
    p, y = _probs(probs), _labels(labels)
    if len(y) == 0:
        raise ValueError("need at least one input to fit a temperature")
    log_p = p.clamp_min(_TINY).log()
    picked = log_p.gather(1, y[:, None]).squeeze(1)

    def nll(log_t: float) -> float:
        scaled = log_p / math.exp(log_t)
        return (torch.logsumexp(scaled, -1) - picked / math.exp(log_t)).mean().item()

    a, b = math.log(low), math.log(high)
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = nll(c), nll(d)
    while b - a > tol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = nll(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = nll(d)
    log_t = (a + b) / 2
    # the ends themselves are candidates too (a monotone NLL pushes the bracket to one end)
    best = min((log_t, math.log(low), math.log(high)), key=nll)
    at_bound = abs(best - math.log(low)) < 0.01 or abs(best - math.log(high)) < 0.01
    return math.exp(best), at_bound


def max_calibration_error(bins: Reliability) -> float:
    """The maximum calibration error: the largest |accuracy − confidence| of a non-empty bin.

    Args:
        bins: Reliability-diagram data (:func:`core.evaluation.metrics.reliability`).

    Returns:
        MCE in [0, 1] (0 when every bin is empty).
    """
    gap = (bins.accuracy - bins.confidence).abs()[bins.count > 0]
    return gap.max().item() if len(gap) else 0.0


def reliability_of(probs, labels, bins: int = ECE_BINS) -> Reliability:
    """Reliability-diagram data of predictive probabilities.

    Args:
        probs: Class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.
        bins: Number of equal-width confidence bins.

    Returns:
        The bins of the predicted class's probability (the confidence) against correctness.
    """
    p, y = _probs(probs), _labels(labels)
    confidence, predicted = p.max(1)
    return reliability(confidence, predicted == y, bins)


def _ece_by_draws(confidence: torch.Tensor, gaps_of, n_draws: int, bins: int) -> torch.Tensor:
    """The ECE of each of ``n_draws`` redrawn answer sets, 500 at a time.

    ``gaps_of(count)`` gives ``count`` rows of per-input (right − confidence) weights.
    """
    edges = torch.linspace(0, 1, bins + 1, dtype=torch.float64)
    members = torch.nn.functional.one_hot(torch.bucketize(confidence, edges[1:-1]), bins)
    eces = []
    for start in range(0, n_draws, 500):
        gaps = gaps_of(min(500, n_draws - start)) @ members.double()  # (draws, bins)
        eces.append(gaps.abs().sum(1) / len(confidence))
    return torch.cat(eces)


def _chance_eces(probs, n_draws: int, bins: int, seed: int) -> torch.Tensor:
    """Consistency resampling: each answer redrawn right with its own confidence."""
    confidence = _probs(probs).max(1).values
    generator = torch.Generator().manual_seed(seed)

    def gaps_of(count: int) -> torch.Tensor:
        return torch.bernoulli(confidence.expand(count, -1), generator=generator) - confidence

    return _ece_by_draws(confidence, gaps_of, n_draws, bins)


def ece_noise_floor(
    probs, n_draws: int = 4000, bins: int = ECE_BINS, level: float = 0.95, seed: int = 0
) -> float:
    """The ``level`` quantile of the ECE a perfectly calibrated model shows by chance.

    A perfectly calibrated model with these confidences exceeds it only ``1 − level`` of the
    time.

    Consistency resampling (Bröcker & Smith 2007; Vaicenavicius et al. 2019): whether each
    answer is right is redrawn ``n_draws`` times from the predicted class's own probability,
    so every bin's expected accuracy equals its confidence and each draw's ECE is sampling
    noise alone. An ECE below the returned quantile cannot be told apart from perfect
    calibration on this many inputs (:func:`ece_by_chance` gives the mean and a p-value).

    Args:
        probs: Class probabilities ``(N, C)``.
        n_draws: Redrawn sets of answers.
        bins: Number of equal-width confidence bins, as in the ECE it is compared with.
        level: The quantile of the draws' ECE returned.
        seed: Seed of the draws.

    Returns:
        The ``level`` quantile of the ECE (a fraction) over the draws.
    """
    return torch.quantile(_chance_eces(probs, n_draws, bins, seed), level).item()


@dataclass(frozen=True)
class ChanceEce:
    """An ECE beside the ECE chance alone gives a perfectly calibrated model.

    Attributes:
        expected: The mean chance ECE (a perfectly calibrated model's expected ECE here).
        quantile95: Its 95 % quantile: an ECE above it is measurably miscalibrated at 5 %.
        p_value: The share of chance ECEs at least the observed one, ``(k + 1) / (n + 1)``.
    """

    expected: float
    quantile95: float
    p_value: float


def ece_by_chance(
    probs, ece: float, n_draws: int = 4000, bins: int = ECE_BINS, seed: int = 0
) -> ChanceEce:
    """Test an ECE against perfect calibration by consistency resampling.

    Args:
        probs: Class probabilities ``(N, C)`` the ECE was measured on.
        ece: The observed ECE (a fraction).
        n_draws: Redrawn sets of answers (the p-value's resolution is ``1 / (n_draws + 1)``).
        bins: Number of confidence bins of the ECE.
        seed: Seed of the draws.

    Returns:
        The chance ECE's mean and 95 % quantile, and the observed ECE's p-value.
    """
    draws = _chance_eces(probs, n_draws, bins, seed)
    above = int((draws >= ece).sum())
    return ChanceEce(
        expected=draws.mean().item(),
        quantile95=torch.quantile(draws, 0.95).item(),
        p_value=(above + 1) / (n_draws + 1),
    )


SCALING_EFFECTS = ("helps", "harms", "none")
"""What temperature scaling did to the ECE: lowered it, raised it, or no measurable change."""


@dataclass(frozen=True)
class ScalingEffect:
    """Whether temperature scaling changed the ECE beyond sampling noise.

    Attributes:
        effect: ``"helps"`` (the interval of the change lies below 0), ``"harms"`` (above 0)
            or ``"none"`` (it holds 0).
        change: ECE after − ECE before, on the inputs themselves.
        low: The lower end of the change's 95 % paired-bootstrap interval.
        high: Its upper end.
    """

    effect: str
    change: float
    low: float
    high: float


def scaling_effect(
    probs, scaled, labels, n_boot: int = 2000, bins: int = ECE_BINS, seed: int = 0
) -> ScalingEffect:
    """Test whether scaling changed the ECE: a paired bootstrap over the inputs.

    Each bootstrap set of inputs (drawn with replacement) is rated before and after scaling,
    so the interval is that of the change itself, not of two independent ECEs.

    Args:
        probs: Class probabilities before scaling ``(N, C)``.
        scaled: The same inputs' probabilities after scaling ``(N, C)``.
        labels: Class indices ``(N,)``.
        n_boot: Bootstrap sets.
        bins: Number of confidence bins of the ECE.
        seed: Seed of the bootstrap.

    Returns:
        The change and its 95 % interval, and the verdict.
    """
    labels = _labels(labels)
    before, after = _probs(probs), _probs(scaled)
    generator = torch.Generator().manual_seed(seed)
    n = len(labels)
    changes = []
    for start in range(0, n_boot, 250):
        count = min(250, n_boot - start)
        picks = torch.randint(n, (count, n), generator=generator)
        weights = torch.zeros(count, n, dtype=torch.float64).scatter_add_(
            1, picks, torch.ones(count, n, dtype=torch.float64)
        )
        rated = []
        for p in (before, after):
            confidence, predicted = p.max(1)
            gaps = (predicted == labels).double() - confidence
            rated.append(_ece_by_draws(confidence, lambda c, w=weights * gaps: w, count, bins))
        changes.append(rated[1] - rated[0])
    changes = torch.cat(changes)
    low, high = torch.quantile(changes, torch.tensor([0.025, 0.975], dtype=torch.float64))
    ece = [calibration(p, labels, bins)["ece"] for p in (before, after)]
    effect = "helps" if high < 0 else "harms" if low > 0 else "none"
    return ScalingEffect(effect, ece[1] - ece[0], low.item(), high.item())


def calibration_metrics(probs, labels, bins: int = ECE_BINS) -> dict[str, float]:
    """Accuracy and calibration of predictive probabilities, with the MCE.

    Args:
        probs: Class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.
        bins: Number of confidence bins of the ECE and MCE.

    Returns:
        ``{"accuracy", "ece", "mce", "nll", "brier"}``: accuracy, ECE and MCE as fractions,
        NLL in nats, multi-class Brier score (:func:`core.evaluation.metrics.calibration`).
    """
    metrics = calibration(probs, labels, bins)
    metrics["mce"] = max_calibration_error(reliability_of(probs, labels, bins))
    return metrics


def coverage_curve(scores, correct) -> tuple[torch.Tensor, torch.Tensor]:
    """Accuracy against coverage when the most uncertain inputs are rejected first.

    Inputs with equal scores are treated alike: where the cut falls inside a group of ties, the
    accuracy is its expectation over a random choice among them. So a score that is the same for
    every input (e.g. the mutual information of a deterministic network) gives a flat curve at
    the plain accuracy, not one that depends on the inputs' order.

    Args:
        scores: Uncertainty scores ``(N,)`` (higher = more uncertain).
        correct: Whether each prediction was right ``(N,)``.

    Returns:
        ``(coverage, accuracy)``, float64 ``(N,)`` each: keeping the ``k`` least uncertain
        inputs gives coverage k/N and the (expected) fraction of them that is correct.

    Raises:
        ValueError: If there are no inputs or the lengths differ.
    """
    s = torch.as_tensor(scores).detach().cpu().double().reshape(-1)
    hit = torch.as_tensor(correct).detach().cpu().double().reshape(-1)
    if len(s) == 0 or len(s) != len(hit):
        raise ValueError(f"need as many scores as outcomes (> 0), got {len(s)} and {len(hit)}")
    s, order = torch.sort(s, stable=True)
    hit = hit[order]
    _, group, counts = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    group_hits = torch.zeros(len(counts), dtype=torch.float64).index_add_(0, group, hit)
    starts = counts.cumsum(0) - counts
    hits_before = group_hits.cumsum(0) - group_hits
    kept = torch.arange(1, len(s) + 1, dtype=torch.float64)
    rate = group_hits / counts
    expected = hits_before[group] + (kept - starts[group]) * rate[group]
    return kept / len(s), expected / kept


def rejection_auc(scores, correct) -> float:
    """Area under the accuracy–coverage curve of :func:`coverage_curve`.

    The mean accuracy over the coverages 1/N, 2/N, …, 1: the higher, the better the score puts
    the mistakes last. A score unrelated to the mistakes gives about the plain accuracy; one
    that ranks every mistake as most uncertain gives the most possible.

    Args:
        scores: Uncertainty scores ``(N,)`` (higher = more uncertain).
        correct: Whether each prediction was right ``(N,)``.

    Returns:
        The area, in [0, 1].
    """
    return coverage_curve(scores, correct)[1].mean().item()


def operating_point(scores, correct, threshold: float) -> dict[str, float]:
    """Coverage and accuracy of a rejection rule: answer when score ≤ ``threshold``.

    This is the rule of :func:`core.evaluation.uncertainty.judge` ("I don't know" above the
    threshold).

    Args:
        scores: Uncertainty scores ``(N,)``.
        correct: Whether each prediction was right ``(N,)``.
        threshold: Largest score still answered.

    Returns:
        ``{"threshold", "coverage", "accuracy"}``: the fraction answered and the fraction of
        them correct (NaN when none is answered).
    """
    s = torch.as_tensor(scores).detach().cpu().double().reshape(-1)
    hit = torch.as_tensor(correct).detach().cpu().double().reshape(-1)
    kept = s <= threshold
    accuracy = hit[kept].mean().item() if kept.any() else math.nan
    return {
        "threshold": float(threshold),
        "coverage": kept.double().mean().item(),
        "accuracy": accuracy,
    }
