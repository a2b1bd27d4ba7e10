"""Metrics on per-input arrays (torch, no sklearn): OOD detection, calibration, rejection.

OOD detection treats the out-of-distribution inputs as positives and an uncertainty score
(higher = more uncertain) as the detector: AUROC, AUPR (average precision) and the FPR at 95 %
TPR. Calibration uses the mean predictive probabilities: ECE over 15 equal-width confidence
bins, reliability-diagram data, NLL (nats) and the Brier score. Inputs may be tensors, arrays
or lists; results are Python floats or CPU tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.engine.interface import LabModel
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded

ECE_BINS = 15


def _vec(x, dtype=torch.float64) -> torch.Tensor:
    return torch.as_tensor(x).detach().cpu().to(dtype).reshape(-1)


def _scores_and_labels(scores_in, scores_out) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = _vec(scores_in), _vec(scores_out)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("need at least one in-distribution and one OOD score")
    return torch.cat([a, b]), torch.cat([torch.zeros(len(a)), torch.ones(len(b))]).double()


def auroc(scores_in, scores_out) -> float:
    """Area under the ROC curve of detecting OOD inputs by their score.

    P(score of an OOD input > score of an in-distribution input), ties counting ½ (Mann–Whitney U
    from average ranks).

    Args:
        scores_in: Uncertainty scores ``(N_in,)`` of the in-distribution inputs.
        scores_out: Uncertainty scores ``(N_out,)`` of the OOD inputs (the positives).

    Returns:
        AUROC in [0, 1]: 1 = perfect, 0.5 = chance.

    Raises:
        ValueError: If either set of scores is empty.
    """
    scores, positive = _scores_and_labels(scores_in, scores_out)
    _, inverse, counts = torch.unique(scores, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()
    ranks = (ends - (counts - 1) / 2)[inverse]  # 1-based, ties get their average rank
    n_pos = positive.sum()
    n_neg = len(scores) - n_pos
    u = ranks[positive.bool()].sum() - n_pos * (n_pos + 1) / 2
    return (u / (n_pos * n_neg)).item()


@dataclass(frozen=True)
class RocCurve:
    """ROC points, one per distinct threshold (descending) after a leading (0, 0) at +inf.

    An input is flagged OOD when its score ≥ threshold. All fields are float64 ``(K + 1,)`` for
    ``K`` distinct scores.

    Attributes:
        thresholds: +inf, then the distinct scores in descending order.
        fpr: False-positive rate at each threshold.
        tpr: True-positive rate (recall) at each threshold.
        precision: Precision at each threshold (1 at the leading point).
    """

    thresholds: torch.Tensor
    fpr: torch.Tensor
    tpr: torch.Tensor
    precision: torch.Tensor


def roc_curve(scores_in, scores_out) -> RocCurve:
    """The ROC curve of detecting OOD inputs by thresholding the score; ties form one point.

    Args:
        scores_in: Uncertainty scores ``(N_in,)`` of the in-distribution inputs.
        scores_out: Uncertainty scores ``(N_out,)`` of the OOD inputs (the positives).

    Returns:
        The curve's points, thresholds descending.

    Raises:
        ValueError: If either set of scores is empty.
    """
    scores, positive = _scores_and_labels(scores_in, scores_out)
    order = torch.argsort(scores, descending=True, stable=True)
    scores, positive = scores[order], positive[order]
    # index of the last input of each group of tied scores
    last = torch.cat(
        [torch.nonzero(scores[1:] != scores[:-1]).flatten(), torch.tensor([len(scores) - 1])]
    )
    tp = positive.cumsum(0)[last]
    fp = (last + 1).double() - tp
    zero = torch.zeros(1, dtype=torch.float64)
    return RocCurve(
        thresholds=torch.cat([torch.tensor([torch.inf], dtype=torch.float64), scores[last]]),
        fpr=torch.cat([zero, fp / fp[-1]]),
        tpr=torch.cat([zero, tp / tp[-1]]),
        precision=torch.cat([torch.ones(1, dtype=torch.float64), tp / (tp + fp)]),
    )


def average_precision(scores_in, scores_out) -> float:
    """AUPR with OOD as positive: Σ_k (R_k − R_{k−1}) P_k over the ROC thresholds.

    Args:
        scores_in: Uncertainty scores ``(N_in,)`` of the in-distribution inputs.
        scores_out: Uncertainty scores ``(N_out,)`` of the OOD inputs (the positives).

    Returns:
        Average precision in [0, 1].

    Raises:
        ValueError: If either set of scores is empty.
    """
    curve = roc_curve(scores_in, scores_out)
    return (torch.diff(curve.tpr) * curve.precision[1:]).sum().item()


def fpr_at_tpr(scores_in, scores_out, tpr: float = 0.95) -> float:
    """FPR at the highest threshold whose TPR reaches ``tpr`` (lower is better).

    Args:
        scores_in: Uncertainty scores ``(N_in,)`` of the in-distribution inputs.
        scores_out: Uncertainty scores ``(N_out,)`` of the OOD inputs (the positives).
        tpr: Required true-positive rate in (0, 1].

    Returns:
        The false-positive rate in [0, 1].

    Raises:
        ValueError: If either set of scores is empty.
    """
    curve = roc_curve(scores_in, scores_out)
    first = torch.nonzero(curve.tpr >= tpr - 1e-12)[0, 0]
    return curve.fpr[first].item()


def ood_metrics(scores_in, scores_out) -> dict[str, float]:
    """OOD-detection metrics of detecting ``scores_out`` among ``scores_in``.

    Args:
        scores_in: Uncertainty scores ``(N_in,)`` of the in-distribution inputs.
        scores_out: Uncertainty scores ``(N_out,)`` of the OOD inputs (the positives).

    Returns:
        ``{"auroc", "aupr", "fpr95"}``: :func:`auroc`, :func:`average_precision` and
        :func:`fpr_at_tpr` at 95 % TPR.

    Raises:
        ValueError: If either set of scores is empty.
    """
    return {
        "auroc": auroc(scores_in, scores_out),
        "aupr": average_precision(scores_in, scores_out),
        "fpr95": fpr_at_tpr(scores_in, scores_out, 0.95),
    }


@dataclass(frozen=True)
class Reliability:
    """Reliability-diagram data for ``bins`` equal-width confidence bins (lo, hi].

    Attributes:
        edges: Bin edges ``(bins + 1,)`` from 0 to 1.
        confidence: Mean confidence per bin ``(bins,)`` (NaN when empty).
        accuracy: Fraction correct per bin ``(bins,)`` (NaN when empty).
        count: Number of inputs per bin ``(bins,)``.
    """

    edges: torch.Tensor
    confidence: torch.Tensor
    accuracy: torch.Tensor
    count: torch.Tensor

    @property
    def ece(self) -> float:
        """Expected calibration error, Σ_b (n_b / N) |accuracy_b − confidence_b|."""
        gap = (self.accuracy - self.confidence).abs().nan_to_num(0.0)
        return (gap * self.count).sum().item() / max(int(self.count.sum()), 1)


def reliability(confidence, correct, bins: int = ECE_BINS) -> Reliability:
    """Bin inputs by their confidence for a reliability diagram.

    Args:
        confidence: Probability of the predicted class ``(N,)``.
        correct: Whether each prediction was right ``(N,)`` (bool or 0/1).
        bins: Number of equal-width bins.

    Returns:
        Per-bin mean confidence, accuracy and counts (its ``ece`` is the calibration error).
    """
    conf, hit = _vec(confidence), _vec(correct)
    edges = torch.linspace(0, 1, bins + 1, dtype=torch.float64)
    index = torch.bucketize(conf, edges[1:-1])
    count = torch.bincount(index, minlength=bins)
    per_bin = count.clamp_min(1).double()
    empty = count == 0
    mean_conf = torch.bincount(index, weights=conf, minlength=bins) / per_bin
    mean_hit = torch.bincount(index, weights=hit, minlength=bins) / per_bin
    nan = torch.tensor(torch.nan, dtype=torch.float64)
    return Reliability(edges, mean_conf.where(~empty, nan), mean_hit.where(~empty, nan), count)


def _probs_labels(probs, labels) -> tuple[torch.Tensor, torch.Tensor]:
    p = torch.as_tensor(probs).detach().cpu().double()
    return p, torch.as_tensor(labels).detach().cpu().long().reshape(-1)


def nll(probs, labels) -> float:
    """Mean negative log-likelihood of ``labels`` under ``probs``.

    Args:
        probs: Class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.

    Returns:
        The mean NLL in nats (probabilities are clamped at 1e-12).
    """
    p, y = _probs_labels(probs, labels)
    return -torch.log(p.gather(1, y[:, None]).clamp_min(1e-12)).mean().item()


def brier(probs, labels) -> float:
    """Multi-class Brier score: mean over inputs of Σ_c (p_c − 1[y = c])².

    Args:
        probs: Class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.

    Returns:
        The score in [0, 2] (lower is better).
    """
    p, y = _probs_labels(probs, labels)
    return ((p - torch.nn.functional.one_hot(y, p.shape[1])) ** 2).sum(1).mean().item()


def calibration(probs, labels, bins: int = ECE_BINS) -> dict[str, float]:
    """Accuracy and calibration of mean predictive probabilities.

    Args:
        probs: Mean predictive class probabilities ``(N, C)``.
        labels: Class indices ``(N,)``.
        bins: Number of confidence bins of the ECE.

    Returns:
        ``{"accuracy", "ece", "nll", "brier"}``: accuracy and ECE as fractions, NLL in nats
        (see :func:`nll`), Brier score (see :func:`brier`).
    """
    p, y = _probs_labels(probs, labels)
    confidence, predicted = p.max(1)
    correct = predicted == y
    return {
        "accuracy": correct.double().mean().item(),
        "ece": reliability(confidence, correct, bins).ece,
        "nll": nll(p, y),
        "brier": brier(p, y),
    }


@torch.no_grad()
def evaluate_model(model: LabModel, x: torch.Tensor, y: torch.Tensor, n_samples: int) -> dict:
    """Metrics of the predictive mean of ``n_samples`` passes on images ``x`` and labels ``y``.

    Args:
        model: The network.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        y: Class indices ``(B,)``.
        n_samples: Number of Monte-Carlo passes.

    Returns:
        ``test_error`` (fraction), ``nll`` (mean nats per example), ``ece`` (expected
        calibration error, 15 bins), ``brier`` (multi-class Brier score), ``n_samples`` and
        ``num_examples`` (see :func:`calibration`).
    """
    probs, y = predictive_samples(model, x, n_samples).mean(0).cpu(), y.cpu()
    metrics = calibration(probs, y)
    return {
        "test_error": (probs.argmax(-1) != y).double().mean().item(),
        "nll": metrics["nll"],
        "ece": metrics["ece"],
        "brier": metrics["brier"],
        "n_samples": n_samples,
        "num_examples": len(y),
    }


def seeded_error(model: LabModel, x: torch.Tensor, y: torch.Tensor, n_samples: int) -> float:
    """Test error of the ``n_samples``-pass predictive mean with fixed Monte-Carlo noise.

    The noise uses seed 0 and the global RNG is left as it was, so repeated evaluations agree.

    Args:
        model: The network.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        y: Class indices ``(B,)``.
        n_samples: Number of Monte-Carlo passes.

    Returns:
        The test error as a fraction.
    """
    with seeded(0):
        return evaluate_model(model, x, y, n_samples)["test_error"]
