"""How each model does on the class's own drawings (pure PyTorch, no disk).

Per model, from the predictive mean of ``n_samples`` Monte-Carlo passes
(:func:`core.engine.sampler.predictive_samples`, summarised by
:func:`core.evaluation.uncertainty.summarize`): the accuracy against the digits the students
meant, the 10×10 confusion matrix, the reliability bins with ECE, MCE, NLL and Brier score
(:mod:`core.evaluation.calibration`) and the drawings it said "I don't know" to, by the Draw
page's rule (:func:`core.evaluation.uncertainty.judge` with the model's 90th/99th percentile
thresholds on its test set, :func:`core.studies.evaluations.rejection_thresholds`).

Evaluation is split in two: :func:`predict` runs the model (the mean probabilities and the
uncertainty scores of each drawing, :class:`Predictions`: the costly part, done once per drawing),
and :func:`assemble_report` builds the report from those (cheap), so a live page can keep the
predictions of the drawings it has seen (:mod:`core.classroom.live`) and run the model only on
new ones. :func:`model_report` does both at once.

The Monte-Carlo noise is seeded (and the global generator left as it was), so the same drawings
give the same report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from core.engine.interface import LabModel
from core.evaluation.calibration import calibration_metrics, reliability_of
from core.evaluation.metrics import Reliability
from core.evaluation.uncertainty import DEFAULT_SCORE, REJECT, Thresholds, judge, seeded_summary

NUM_CLASSES = 10


@dataclass(frozen=True)
class ModelReport:
    """One model's results on ``N`` drawings (tensors on the CPU; treat them as read-only).

    Attributes:
        name: The model's name (e.g. its registry name).
        n_samples: Monte-Carlo passes per drawing.
        mean: float32 ``(N, 10)`` mean predictive probabilities.
        predicted: int64 ``(N,)``, the argmax of ``mean``.
        labels: int64 ``(N,)``, the digits the students meant.
        confusion: int64 ``(10, 10)``: row = digit meant, column = digit predicted.
        reliability: Reliability-diagram bins of the predicted class's mean probability.
        metrics: ``{"accuracy", "ece", "mce", "nll", "brier"}``
            (:func:`core.evaluation.calibration.calibration_metrics`).
        score: The uncertainty score of the "I don't know" rule (a key of
            :data:`core.evaluation.uncertainty.SCORES`).
        verdicts: Per drawing ``"confident"``, ``"unsure"`` or ``"reject"``
            (:func:`core.evaluation.uncertainty.judge`); None without thresholds.
    """

    name: str
    n_samples: int
    mean: torch.Tensor
    predicted: torch.Tensor
    labels: torch.Tensor
    confusion: torch.Tensor
    reliability: Reliability
    metrics: dict[str, float]
    score: str
    verdicts: list[str] | None

    def __len__(self) -> int:
        """Number of drawings ``N``."""
        return len(self.labels)

    @property
    def accuracy(self) -> float:
        """Fraction of drawings whose predicted digit is the one meant."""
        return self.metrics["accuracy"]

    @property
    def dont_know(self) -> list[int]:
        """Positions of the drawings the model said "I don't know" to (empty without thresholds)."""
        return [i for i, v in enumerate(self.verdicts or []) if v == REJECT]


def confusion_matrix(labels: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
    """Count each (meant, predicted) pair.

    Args:
        labels: int ``(N,)`` true classes in 0..9.
        predicted: int ``(N,)`` predicted classes in 0..9.

    Returns:
        int64 ``(10, 10)``: entry ``[i, j]`` counts drawings of ``i`` predicted as ``j``; the
        entries sum to ``N``.
    """
    y, p = labels.long().reshape(-1).cpu(), predicted.long().reshape(-1).cpu()
    counts = torch.bincount(y * NUM_CLASSES + p, minlength=NUM_CLASSES * NUM_CLASSES)
    return counts.reshape(NUM_CLASSES, NUM_CLASSES)


@dataclass(frozen=True)
class Predictions:
    """One model's per-drawing results on ``N`` drawings: what a report is assembled from.

    Attributes:
        mean: float32 ``(N, 10)`` mean predictive probabilities.
        scores: Every uncertainty score of :data:`core.evaluation.uncertainty.SCORES`, name →
            float32 ``(N,)``.
    """

    mean: torch.Tensor
    scores: dict[str, torch.Tensor]

    def __len__(self) -> int:
        """Number of drawings ``N``."""
        return len(self.mean)

    def take(self, index: torch.Tensor) -> Predictions:
        """Select drawings.

        Args:
            index: int64 ``(M,)`` positions in ``0..N-1``.

        Returns:
            The ``M`` drawings' predictions, in the order of ``index``.
        """
        return Predictions(self.mean[index], {k: v[index] for k, v in self.scores.items()})

    @staticmethod
    def cat(parts: Sequence[Predictions]) -> Predictions:
        """Join predictions of consecutive sets of drawings.

        Args:
            parts: At least one :class:`Predictions`.

        Returns:
            Their drawings one after the other.
        """
        scores = {k: torch.cat([p.scores[k] for p in parts]) for k in parts[0].scores}
        return Predictions(torch.cat([p.mean for p in parts]), scores)


@torch.no_grad()
def predict(model: LabModel, images: torch.Tensor, n_samples: int, seed: int) -> Predictions:
    """Evaluate one model on drawings: the per-drawing part of a report.

    Args:
        model: The network (not modified).
        images: float ``(N, 1, 28, 28)`` in [0, 1], N ≥ 1.
        n_samples: Monte-Carlo passes per drawing.
        seed: Seed of the Monte-Carlo noise (the global generator is left as it was).

    Returns:
        The mean probabilities and every uncertainty score, on the CPU.

    Raises:
        ValueError: When ``images`` is not ``(N, 1, 28, 28)`` with N ≥ 1.
    """
    if images.dim() != 4 or images.shape[1:] != (1, 28, 28) or len(images) == 0:
        raise ValueError(f"images must be (N, 1, 28, 28), N ≥ 1, got {tuple(images.shape)}")
    summary = seeded_summary(model, images, n_samples, seed)
    return Predictions(summary.mean, summary.scores())


def assemble_report(
    name: str,
    predictions: Predictions,
    labels: torch.Tensor,
    n_samples: int,
    thresholds: Thresholds | None = None,
    score: str = DEFAULT_SCORE,
) -> ModelReport:
    """Build a report from per-drawing predictions (no model pass: cheap).

    Args:
        name: The model's name, kept in the report.
        predictions: The model's predictions on ``N`` drawings (:func:`predict`).
        labels: int ``(N,)``, the digits meant.
        n_samples: Monte-Carlo passes the predictions were averaged over.
        thresholds: The model's "I don't know" limits (score → ``{"p90", "p99"}``), or None.
        score: The score the rule uses.

    Returns:
        The report.

    Raises:
        ValueError: Without drawings, or when ``labels`` does not hold one per drawing.
    """
    labels = labels.long().reshape(-1).cpu()
    if len(predictions) == 0 or len(labels) != len(predictions):
        raise ValueError(
            f"need N ≥ 1 drawings and N labels, got {len(predictions)} and {len(labels)}"
        )
    mean = predictions.mean
    predicted = mean.argmax(-1)
    verdicts = None
    if thresholds is not None and score in thresholds:
        verdicts = judge(predictions.scores[score], thresholds[score])
    return ModelReport(
        name=name,
        n_samples=n_samples,
        mean=mean,
        predicted=predicted,
        labels=labels,
        confusion=confusion_matrix(labels, predicted),
        reliability=reliability_of(mean, labels),
        metrics=calibration_metrics(mean, labels),
        score=score,
        verdicts=verdicts,
    )


def model_report(
    name: str,
    model: LabModel,
    images: torch.Tensor,
    labels: torch.Tensor,
    n_samples: int,
    thresholds: Thresholds | None = None,
    score: str = DEFAULT_SCORE,
    seed: int = 0,
) -> ModelReport:
    """Evaluate one model on the class's drawings: :func:`predict`, then :func:`assemble_report`.

    Args:
        name: The model's name, kept in the report.
        model: The network (not modified).
        images: float ``(N, 1, 28, 28)`` in [0, 1], N ≥ 1.
        labels: int ``(N,)``, the digits meant.
        n_samples: Monte-Carlo passes per drawing.
        thresholds: The model's "I don't know" limits (score → ``{"p90", "p99"}``), or None.
        score: The score the rule uses.
        seed: Seed of the Monte-Carlo noise.

    Returns:
        The report.

    Raises:
        ValueError: Without drawings, or when the shapes disagree.
    """
    predictions = predict(model, images, n_samples, seed)
    return assemble_report(name, predictions, labels, n_samples, thresholds, score)


def class_report(
    models: Sequence[tuple[str, LabModel]],
    images: torch.Tensor,
    labels: torch.Tensor,
    n_samples: int,
    thresholds: Mapping[str, Thresholds] | None = None,
    score: str = DEFAULT_SCORE,
    seed: int = 0,
) -> list[ModelReport]:
    """Evaluate several models on the class's drawings (:func:`model_report` each).

    Args:
        models: ``(name, model)`` pairs.
        images: float ``(N, 1, 28, 28)`` in [0, 1], N ≥ 1.
        labels: int ``(N,)``, the digits meant.
        n_samples: Monte-Carlo passes per drawing.
        thresholds: Name → that model's "I don't know" limits; models missing here get no
            verdicts.
        score: The score the rule uses.
        seed: Seed of the Monte-Carlo noise (the same for every model).

    Returns:
        One report per model, in order.
    """
    limits = thresholds or {}
    return [
        model_report(name, model, images, labels, n_samples, limits.get(name), score, seed)
        for name, model in models
    ]
