"""Calibration and "I don't know" rejection on the test set, before and after scaling.

Computed from the cached full test-set evaluation and the fitted temperature.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

from core.evaluation.calibration import (
    ScalingEffect,
    calibration_metrics,
    operating_point,
    rejection_auc,
    reliability_of,
    tempered,
)
from core.evaluation.metrics import Reliability
from core.evaluation.uncertainty import rejection_limits
from core.progress import Job, ProgressFn, report, share
from core.storage.checkpoints import checkpoint_dataset, resolve_checkpoint
from core.studies.calibration.temperature import (
    TemperatureFit,
    calibration_tests,
    temperature_entry,
    temperature_fit,
    validation_seen,
)
from core.studies.calibration.validation import (
    SPLIT_SEED,
    VALIDATION_SIZE,
)
from core.studies.evaluations import (
    DatasetEvaluation,
    evaluate_dataset,
    evaluation_entry,
)

REJECTION_LIMIT = "p99"  # the seed's rule: "I don't know" above the 99th percentile on MNIST


@dataclass(frozen=True)
class CalibrationResult:
    """One checkpoint's calibration and rejection on the full test set of its task.

    Attributes:
        checkpoint: The checkpoint's name (file stem).
        dataset: The task, whose test set is rated.
        n_samples: Passes per prediction.
        num_inputs: Test inputs.
        metrics: ``{"accuracy", "ece", "mce", "nll", "brier"}`` of the predictive mean, and
            of chance: ``"ece_chance"``, the ECE a perfectly calibrated model with its
            confidences shows on these inputs on average; ``"ece_floor"``, the one it exceeds
            only 5 % of the time (the 95 % quantile); ``"ece_p_value"``, the share of chance
            ECEs at least this one (:func:`core.evaluation.calibration.ece_by_chance`).
        tempered: The same after temperature scaling with ``fit.temperature``.
        fit: The temperature fit on the validation split.
        scaling: Whether scaling changed the ECE beyond sampling noise (a paired bootstrap).
        reliability: Reliability bins of the predictive mean.
        reliability_tempered: Reliability bins after temperature scaling.
        rejection: Score name → ``{"auc", "threshold", "coverage", "accuracy"}``: the area
            under the accuracy–coverage curve, and the 99th-percentile rule's threshold and
            operating point (:func:`core.evaluation.calibration.operating_point`).
        validation_seen: Whether the checkpoint was trained on the validation images, so that
            ``fit`` is not a held-out calibration (:func:`validation_seen`).
        validation_evidence: Why, in words.
    """

    checkpoint: str
    dataset: str
    n_samples: int
    num_inputs: int
    metrics: dict[str, float]
    tempered: dict[str, float]
    fit: TemperatureFit
    scaling: ScalingEffect
    reliability: Reliability
    reliability_tempered: Reliability
    rejection: dict[str, dict[str, float]]
    validation_seen: bool
    validation_evidence: str

    @property
    def validation_nll_ratio(self) -> float:
        """Validation NLL over test NLL before scaling: about 1 for a held-out split."""
        return self.fit.nll_before / max(self.metrics["nll"], 1e-12)

    def to_dict(self) -> dict:
        """Give the result as a JSON-ready dict (the CLI's output).

        Returns:
            The fields, reliability bins as lists (NaN for empty bins), plus
            ``validation_nll_ratio``.
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["fit"] = self.fit.to_dict()
        out["scaling"] = asdict(self.scaling)
        for name in ("reliability", "reliability_tempered"):
            bins: Reliability = out[name]
            out[name] = {
                "edges": bins.edges.tolist(),
                "confidence": bins.confidence.tolist(),
                "accuracy": bins.accuracy.tolist(),
                "count": bins.count.tolist(),
            }
        out["validation_nll_ratio"] = self.validation_nll_ratio
        return out


def rejection_table(evaluation: DatasetEvaluation) -> dict[str, dict[str, float]]:
    """Rate every score of an evaluation at rejecting the mistakes first.

    Args:
        evaluation: A labelled per-input evaluation (e.g. the MNIST test set).

    Returns:
        Score name → ``{"auc", "threshold", "coverage", "accuracy"}``: the area under the
        accuracy–coverage curve, and the 99th-percentile rule's threshold (from the same
        evaluation) and operating point.

    Raises:
        ValueError: If the evaluation has no labels.
    """
    correct = evaluation.correct
    if correct is None:
        raise ValueError(f"{evaluation.dataset} has no labels")
    table = {}
    for name, values in evaluation.scores.items():
        limit = rejection_limits(values)[REJECTION_LIMIT]
        table[name] = {
            "auc": rejection_auc(values, correct),
            **operating_point(values, correct, limit),
        }
    return table


def calibration_result(
    checkpoint: str | Path,
    *,
    dataset: str | None = None,
    n_samples: int = 100,
    validation_size: int = VALIDATION_SIZE,
    split_seed: int = SPLIT_SEED,
    progress: ProgressFn | None = None,
) -> CalibrationResult:
    """Rate a checkpoint's calibration and rejection on the test set of its task.

    The test-set evaluation and the temperature come from the disk cache (computed there when
    missing, reporting progress); the rest is cheap arithmetic on them.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        dataset: The task; None for :func:`checkpoint_dataset`.
        n_samples: Passes per prediction.
        validation_size: Validation images of the temperature fit.
        split_seed: Seed of the validation split.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The result.

    Raises:
        DatasetUnavailable: If the task's data is missing.
        CheckpointError: If the checkpoint is missing or damaged.
    """
    path = resolve_checkpoint(checkpoint)
    dataset = dataset or checkpoint_dataset(path)
    evaluation = evaluate_dataset(
        path, dataset, n_samples=n_samples, progress=share(progress, 0, 2, "test set")
    )
    fit = temperature_fit(
        path,
        dataset=dataset,
        n_samples=n_samples,
        validation_size=validation_size,
        split_seed=split_seed,
        progress=share(progress, 1, 2, "temperature"),
    )
    report(progress, 1.0, "done")
    scaled = tempered(evaluation.mean, fit.temperature)
    tests = calibration_tests(path, evaluation, fit)
    metrics = calibration_metrics(evaluation.mean, evaluation.labels)
    metrics |= {k: tests[k] for k in ("ece_chance", "ece_floor", "ece_p_value")}
    seen, evidence = validation_seen(path, fit, metrics["nll"])
    return CalibrationResult(
        checkpoint=path.stem,
        dataset=dataset,
        n_samples=n_samples,
        num_inputs=len(evaluation),
        metrics=metrics,
        tempered={
            **calibration_metrics(scaled, evaluation.labels),
            **{k: tests[f"{k}_tempered"] for k in ("ece_chance", "ece_floor", "ece_p_value")},
        },
        scaling=ScalingEffect(
            str(tests["scaling_effect"]),
            float(tests["scaling_change"]),
            float(tests["scaling_low"]),
            float(tests["scaling_high"]),
        ),
        fit=fit,
        reliability=reliability_of(evaluation.mean, evaluation.labels),
        reliability_tempered=reliability_of(scaled, evaluation.labels),
        rejection=rejection_table(evaluation),
        validation_seen=seen,
        validation_evidence=evidence,
    )


EFFECT_WORDS = {"helps": "helps", "harms": "harms", "none": "no measurable change"}
"""What :attr:`CalibrationResult.scaling` found, in a student's words."""
MISCALIBRATED_P = 0.05
"""An ECE whose p-value against chance is below this is measurably miscalibrated."""


def scaling_counts(effects: dict[str, str]) -> dict[str, list[str]]:
    """Group models by what temperature scaling did to their ECE.

    Args:
        effects: Model name → its scaling effect (``"helps"``, ``"harms"`` or ``"none"``).

    Returns:
        Each effect → the models it holds, in the given order (every effect present).
    """
    return {effect: [n for n, e in effects.items() if e == effect] for effect in EFFECT_WORDS}


def calibration_jobs(
    checkpoints: list[str],
    *,
    n_samples: int = 100,
    validation_size: int = VALIDATION_SIZE,
    split_seed: int = SPLIT_SEED,
    title=str,
) -> list[Job]:
    """List the test-set evaluations and temperature fits not cached yet, as jobs.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        n_samples: Passes per prediction.
        validation_size: Validation images of the temperature fit.
        split_seed: Seed of the validation split.
        title: Names a checkpoint in progress messages.

    Returns:
        One :class:`~core.progress.Job` per checkpoint with missing work.
    """
    split = {"validation_size": validation_size, "split_seed": split_seed}
    tasks = {name: checkpoint_dataset(name) for name in checkpoints}
    return [
        Job(
            title(name),
            lambda progress, name=name: calibration_result(
                name, dataset=tasks[name], n_samples=n_samples, progress=progress, **split
            ),
        )
        for name in checkpoints
        if not evaluation_entry(name, tasks[name], n_samples=n_samples).exists()
        or not temperature_entry(name, dataset=tasks[name], n_samples=n_samples, **split).exists()
    ]
