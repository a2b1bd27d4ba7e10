"""Calibration, "I don't know" rejection and dataset shift of checkpoints, cached on disk.

Each checkpoint is rated on its own task, the dataset it was trained on (:func:`checkpoint_dataset`:
MNIST for the shipped digit models). Three parts, each computed once per checkpoint content and
settings (:func:`core.storage.cache.cache_entry`, study folder ``calibration``):

* **Temperature** (:func:`temperature_fit`): T fitted by NLL on a validation split of the task's
  *training* set (:func:`split_indices`: the last :data:`VALIDATION_SIZE` images of the seeded
  permutation that ``python -m core train NAME --train-subset 55000`` trains on the first
  55,000 of), never on the test set. The fit acts on the predictive mean, so it applies to
  every model kind (:mod:`core.evaluation.calibration`).
* **Calibration and rejection on the test set** (:func:`calibration_result`): from the cached
  full test-set evaluation (:func:`core.studies.evaluations.evaluate_dataset`, for MNIST shared
  with the Draw page's "I don't know" thresholds): accuracy, ECE, MCE, NLL and Brier score
  before and after temperature scaling, reliability bins, and per uncertainty score the area
  under the accuracy–coverage curve and the operating point of the 99th-percentile rule.
* **Dataset shift** (:func:`shift_curve`): a seeded test subset under each shift of
  :data:`core.evaluation.shift.SHIFTS` at each severity of its grid, one cache entry per
  (checkpoint, shift, severity, settings): accuracy, ECE, MCE, NLL, Brier, ECE and NLL after
  temperature scaling, the mean of every score, and the fraction rejected by the 99th-percentile
  rule fixed on the clean test set.

The shipped checkpoints learn from the first 55,000 training images
(:data:`core.catalogue.TRAIN_SUBSET`), so the validation split is unseen and the fit is a
held-out one. A model trained on all 60,000 (a user's, say) has seen it, and its fitted
temperature is not a held-out fit; :func:`validation_seen` detects this (from the checkpoint's
recorded ``train_subset`` when there is one, else because the validation NLL is far below the
test NLL) and the page and CLI say so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.calibration import (
    ScalingEffect,
    calibration_metrics,
    ece_by_chance,
    fit_temperature,
    operating_point,
    rejection_auc,
    reliability_of,
    scaling_effect,
    tempered,
    tempered_nll,
)
from core.evaluation.metrics import Reliability
from core.evaluation.shift import SHIFTS, shift_images
from core.evaluation.uncertainty import rejection_limits, summarize
from core.progress import Job, ProgressFn, report, run_all, share
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import (
    CheckpointError,
    checkpoint_dataset,
    load_checkpoint,
    read_metadata,
    resolve_checkpoint,
    shared_model,
)
from core.studies.evaluations import (
    BATCH_SIZE,
    IN_DISTRIBUTION,
    DatasetEvaluation,
    evaluate_dataset,
    evaluation_entry,
)

CACHE_VERSION = 1  # bump when what is computed or stored changes
TESTS_VERSION = 1  # of calibration_tests' entries
STUDY = "calibration"
VALIDATION_SIZE = 5000
SPLIT_SEED = 0  # the seed of core.data.load_dataset's subsets, so --train-subset leaves it out
NOISE_SEED = 0  # Monte-Carlo noise of the validation predictions
SEEN_RATIO = 0.75
"""Validation NLL below this fraction of the test NLL: the split was trained on. Measured ratios:
1.07–1.20 for models trained without the split, 0.001–0.52 for the shipped ones (trained on it)."""
REJECTION_LIMIT = "p99"  # the seed's rule: "I don't know" above the 99th percentile on MNIST


# --- the task and its validation split -----------------------------------------------------


def split_indices(
    total: int, validation_size: int = VALIDATION_SIZE, seed: int = SPLIT_SEED
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``total`` training images into a training part and a validation part.

    The order is the seeded permutation of :func:`core.data.load_dataset`, so
    ``load_dataset("mnist", "train", n_inputs=total - validation_size, seed=seed)`` (what
    ``python -m core train NAME --train-subset 55000`` trains on) is exactly the training part.

    Args:
        total: Number of training images (60,000 for MNIST).
        validation_size: Images held out for validation, 0 < size < total.
        seed: Seed of the permutation.

    Returns:
        int64 indices ``(train,)`` and ``(validation,)``, disjoint, together all of
        ``range(total)``.

    Raises:
        ValueError: If ``validation_size`` is not in (0, total).
    """
    if not 0 < validation_size < total:
        raise ValueError(f"validation size must be in (0, {total}), got {validation_size}")
    order = torch.randperm(total, generator=torch.Generator().manual_seed(seed))
    return order[: total - validation_size], order[total - validation_size :]


def validation_split(
    validation_size: int = VALIDATION_SIZE,
    seed: int = SPLIT_SEED,
    dataset: str = IN_DISTRIBUTION,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Load the validation images of :func:`split_indices` from a training set.

    Args:
        validation_size: Images held out for validation.
        seed: Seed of the permutation.
        dataset: The dataset, which must have a training split.

    Returns:
        Images ``(validation_size, 1, 28, 28)`` in [0, 1] and int64 labels.

    Raises:
        DatasetUnavailable: If the training set is missing.
        ValueError: If ``validation_size`` is out of range.
    """
    return _validation(dataset, validation_size, seed)[:2]


def held_out_validation(checkpoint: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    """The validation images of a checkpoint's task, for tuning without the test set.

    Args:
        checkpoint: Registry name or ``.pt`` path; its metadata must record a training subset
            (``train_subset``) that leaves the validation images out.

    Returns:
        Images ``(VALIDATION_SIZE, 1, 28, 28)`` in [0, 1] and int64 labels.

    Raises:
        ValueError: If the checkpoint was trained on them, or does not say what it was
            trained on.
        CheckpointError: If the checkpoint is missing or damaged.
        DatasetUnavailable: If the training set is missing.
    """
    path = resolve_checkpoint(checkpoint)
    meta = read_metadata(path)
    images, labels, total = _validation(checkpoint_dataset(path), VALIDATION_SIZE, SPLIT_SEED)
    seen = trained_on_validation(meta, total, VALIDATION_SIZE)
    if seen is None or meta["train_subset"] is None:
        raise ValueError(
            f"{checkpoint} does not record that it was trained on a subset of the training "
            f"images, so its validation images may be among them: train it with "
            f"--train-subset {total - VALIDATION_SIZE} to tune on them"
        )
    if seen:
        raise ValueError(
            f"{checkpoint} was trained on {meta['train_subset']:,} of the {total:,} training "
            f"images, among them the {VALIDATION_SIZE:,} validation images: train it with "
            f"--train-subset {total - VALIDATION_SIZE} to tune on them"
        )
    return images, labels


def trained_on_validation(meta: dict, total: int, validation_size: int) -> bool | None:
    """Whether a checkpoint learnt from the validation images, as its metadata records it.

    The training subset is the first ``train_subset`` images of the seeded permutation (null:
    all of them), the validation images its last ``validation_size``.

    Args:
        meta: The checkpoint's metadata.
        total: Images in the training set.
        validation_size: Validation images at its end.

    Returns:
        True or False; None when the metadata does not record ``train_subset``.
    """
    subset = meta.get("train_subset", "absent")
    if subset is None:
        return True
    if not isinstance(subset, int) or isinstance(subset, bool):
        return None
    return subset <= 0 or subset > total - validation_size


def _validation(
    dataset: str, validation_size: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The validation images and labels, and the size of the training set they come from."""
    from core.data import load_dataset

    images, labels = load_dataset(dataset, "train")
    _, validation = split_indices(len(images), validation_size, seed)
    return images[validation], labels[validation], len(images)


def predictive(
    model: torch.nn.Module,
    images: torch.Tensor,
    n_samples: int,
    seed: int,
    progress: ProgressFn | None = None,
    label: str = "",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean probabilities and every uncertainty score of ``n_samples`` seeded passes.

    Batches and seeding are those of :func:`core.studies.evaluations.evaluate_dataset`, so the
    same images give the same numbers. The global RNG is left as it was.

    Args:
        model: The network (not modified).
        images: ``(N, 1, 28, 28)`` in [0, 1].
        n_samples: Stochastic passes per input.
        seed: Seed of the Monte-Carlo noise.
        progress: Called with (fraction done, message); None for silence.
        label: Prefix of the progress messages.

    Returns:
        float32 ``(N, C)`` mean probabilities and score name → float32 ``(N,)``, on the CPU.
    """
    means: list[torch.Tensor] = []
    scores: dict[str, list[torch.Tensor]] = {}
    with seeded(seed):
        for start in range(0, len(images), BATCH_SIZE):
            report(progress, start / len(images), f"{label}{start}/{len(images)} inputs")
            summary = summarize(
                predictive_samples(model, images[start : start + BATCH_SIZE], n_samples)
            )
            means.append(summary.mean)
            for name, values in summary.scores().items():
                scores.setdefault(name, []).append(values.float())
    report(progress, 1.0, f"{label}{len(images)} inputs")
    return torch.cat(means), {name: torch.cat(v) for name, v in scores.items()}


# --- temperature ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TemperatureFit:
    """A temperature fitted on the validation split, and what it did there.

    Attributes:
        dataset: The task whose training set holds the validation split.
        training_images: Size of that training set (the split's complement is trained on).
        temperature: The fitted T (> 1 softens, < 1 sharpens the predictions).
        at_bound: T lies at an end of the searched range (the NLL kept falling).
        n_samples: Passes per prediction.
        validation_size: Validation images.
        split_seed: Seed of the split.
        accuracy: Accuracy on the validation images.
        nll_before: Validation NLL (nats) before scaling.
        nll_after: Validation NLL (nats) after scaling (≤ ``nll_before``).
        ece_before: Validation ECE before scaling.
        ece_after: Validation ECE after scaling.
    """

    dataset: str
    training_images: int
    temperature: float
    at_bound: bool
    n_samples: int
    validation_size: int
    split_seed: int
    accuracy: float
    nll_before: float
    nll_after: float
    ece_before: float
    ece_after: float

    def to_dict(self) -> dict:
        """Give the fields as a JSON-ready dict (what the cache file stores).

        Returns:
            Field name → value.
        """
        return asdict(self)


def temperature_entry(
    checkpoint: str | Path,
    *,
    dataset: str = IN_DISTRIBUTION,
    n_samples: int = 100,
    validation_size: int = VALIDATION_SIZE,
    split_seed: int = SPLIT_SEED,
) -> CacheEntry:
    """Give the cache entry where :func:`temperature_fit` stores its result.

    Args:
        checkpoint: Registry name or ``.pt`` path; the key uses the file's content hash.
        dataset: The task (:func:`checkpoint_dataset`).
        n_samples: Passes per prediction.
        validation_size: Validation images.
        split_seed: Seed of the split.

    Returns:
        The entry.
    """
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        checkpoints=(checkpoint,),
        settings={
            "part": "temperature",
            "data": [dataset, "train", validation_size, split_seed],
            "n_samples": n_samples,
        },
        prefix=f"temperature-{dataset}",
    )


def temperature_fit(
    checkpoint: str | Path,
    *,
    dataset: str | None = None,
    n_samples: int = 100,
    validation_size: int = VALIDATION_SIZE,
    split_seed: int = SPLIT_SEED,
    progress: ProgressFn | None = None,
) -> TemperatureFit:
    """Fit a checkpoint's temperature on the validation split of the training set, cached.

    Only the training split of the task is read.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        dataset: The task; None for :func:`checkpoint_dataset`.
        n_samples: Passes per prediction.
        validation_size: Validation images (:func:`split_indices`).
        split_seed: Seed of the split.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The fit.

    Raises:
        DatasetUnavailable: If the training set is missing.
        CheckpointError: If the checkpoint is missing or damaged.
    """
    path = resolve_checkpoint(checkpoint)
    dataset = dataset or checkpoint_dataset(path)
    entry = temperature_entry(
        path,
        dataset=dataset,
        n_samples=n_samples,
        validation_size=validation_size,
        split_seed=split_seed,
    )

    def compute() -> TemperatureFit:
        model, _ = load_checkpoint(path, default_device())
        images, labels, training_images = _validation(dataset, validation_size, split_seed)
        mean, _ = predictive(model, images, n_samples, NOISE_SEED, progress, "validation: ")
        temperature, at_bound = fit_temperature(mean, labels)
        before = calibration_metrics(mean, labels)
        after = calibration_metrics(tempered(mean, temperature), labels)
        return TemperatureFit(
            dataset=dataset,
            training_images=training_images,
            temperature=temperature,
            at_bound=at_bound,
            n_samples=n_samples,
            validation_size=validation_size,
            split_seed=split_seed,
            accuracy=before["accuracy"],
            nll_before=before["nll"],
            nll_after=tempered_nll(mean, labels, temperature),
            ece_before=before["ece"],
            ece_after=after["ece"],
        )

    return entry.load_or_compute(
        compute, decode=lambda stored: TemperatureFit(**stored), encode=TemperatureFit.to_dict
    )


def calibration_tests(
    checkpoint: str | Path,
    evaluation: DatasetEvaluation,
    fit: TemperatureFit,
) -> dict[str, float | str]:
    """Test a checkpoint's ECE against chance, before and after scaling, and the change (cached).

    Args:
        checkpoint: Registry name or ``.pt`` path (the cache key uses its content).
        evaluation: Its evaluation on its task's test set.
        fit: Its temperature fit.

    Returns:
        ``ece_chance`` (a perfectly calibrated model's expected ECE here), ``ece_floor`` (its
        95 % quantile), ``ece_p_value`` (:func:`~core.evaluation.calibration.ece_by_chance`),
        the same three with ``_tempered`` after scaling, and ``scaling_effect`` (``"helps"``,
        ``"harms"`` or ``"none"``), ``scaling_change``, ``scaling_low``, ``scaling_high``
        (:func:`~core.evaluation.calibration.scaling_effect`).
    """
    entry = cache_entry(
        STUDY,
        TESTS_VERSION,
        checkpoints=(checkpoint,),
        settings={
            "part": "tests",
            "data": [evaluation.dataset, "test", len(evaluation)],
            "n_samples": evaluation.n_samples,
            "temperature": fit.temperature,
        },
        prefix=f"tests-{evaluation.dataset}",
    )

    def compute() -> dict[str, float | str]:
        scaled = tempered(evaluation.mean, fit.temperature)
        tests: dict[str, float | str] = {}
        for suffix, probs in (("", evaluation.mean), ("_tempered", scaled)):
            ece = calibration_metrics(probs, evaluation.labels)["ece"]
            chance = ece_by_chance(probs, ece)
            tests |= {
                f"ece_chance{suffix}": chance.expected,
                f"ece_floor{suffix}": chance.quantile95,
                f"ece_p_value{suffix}": chance.p_value,
            }
        effect = scaling_effect(evaluation.mean, scaled, evaluation.labels)
        return tests | {
            "scaling_effect": effect.effect,
            "scaling_change": effect.change,
            "scaling_low": effect.low,
            "scaling_high": effect.high,
        }

    return entry.load_or_compute(compute)


def validation_seen(
    checkpoint: str | Path, fit: TemperatureFit, test_nll: float
) -> tuple[bool, str]:
    """Tell whether a checkpoint was trained on the validation images of its temperature fit.

    The checkpoint's metadata decides when it records ``train_subset`` (the number of training
    images, the first ones of the seeded permutation; null for all) and the split uses that
    permutation's seed. Otherwise the NLLs do: a network fits the images it was trained on far
    better than new ones, so a held-out split has about the test NLL, and one below
    :data:`SEEN_RATIO` times the test NLL was trained on.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        fit: Its temperature fit.
        test_nll: Its NLL on the test set (nats), before scaling.

    Returns:
        ``(seen, evidence)``: whether the fit used training images, and why, in words.
    """
    try:
        meta = read_metadata(resolve_checkpoint(checkpoint))
    except CheckpointError:
        meta = {}
    total = fit.training_images
    seen = trained_on_validation(meta, total, fit.validation_size)
    if fit.split_seed == SPLIT_SEED and seen is not None:
        subset = meta["train_subset"]
        if subset is None or subset <= 0 or subset >= total:
            return True, f"trained on all {total:,} training images (its metadata)"
        return seen, f"trained on {subset:,} of the {total:,} training images (its metadata)"
    ratio = fit.nll_before / max(test_nll, 1e-12)
    return ratio < SEEN_RATIO, f"validation NLL {ratio:.2f}× the test NLL"


# --- calibration and rejection on the test set ---------------------------------------------


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


# --- dataset shift -------------------------------------------------------------------------


@dataclass(frozen=True)
class ShiftSettings:
    """What a shift curve depends on besides the model and the shift.

    Attributes:
        n_inputs: Test images of the task drawn with ``seed``.
        n_samples: Passes per prediction (also of the temperature fit and the rejection rule).
        seed: Seed of the subset, of the noise shift and of the Monte-Carlo noise.
        validation_size: Validation images of the temperature fit.
        split_seed: Seed of the validation split.
    """

    n_inputs: int = 2000
    n_samples: int = 20
    seed: int = 0
    validation_size: int = VALIDATION_SIZE
    split_seed: int = SPLIT_SEED


@dataclass(frozen=True)
class ShiftLevel:
    """One model on the shifted test subset at one severity.

    Attributes:
        shift: The :data:`~core.evaluation.shift.SHIFTS` name.
        severity: The severity.
        accuracy: Accuracy of the predictive mean.
        ece: Expected calibration error.
        mce: Maximum calibration error.
        nll: Mean NLL (nats).
        brier: Brier score.
        temperature: The temperature fitted on the (unshifted) validation split.
        ece_tempered: ECE after temperature scaling.
        nll_tempered: NLL after temperature scaling.
        mean_scores: Score name → its mean over the inputs.
        rejected: Score name → fraction of inputs above the score's 99th percentile on the
            clean test set (the "I don't know" rule).
        kept_accuracy: Score name → accuracy on the inputs not rejected (None when all are).
    """

    shift: str
    severity: float
    accuracy: float
    ece: float
    mce: float
    nll: float
    brier: float
    temperature: float
    ece_tempered: float
    nll_tempered: float
    mean_scores: dict[str, float]
    rejected: dict[str, float]
    kept_accuracy: dict[str, float | None]

    def to_dict(self) -> dict:
        """Give the fields as a JSON-ready dict (what the cache file stores).

        Returns:
            Field name → value.
        """
        return asdict(self)


def level_entry(
    checkpoint: str | Path,
    shift: str,
    severity: float,
    settings: ShiftSettings,
    dataset: str | None = None,
) -> CacheEntry:
    """Give the cache entry of one (checkpoint, shift, severity, settings).

    Args:
        checkpoint: Registry name or ``.pt`` path; the key uses the file's content hash.
        shift: A :data:`~core.evaluation.shift.SHIFTS` name.
        severity: The severity.
        settings: Subset, passes and seeds.
        dataset: The task; None for :func:`checkpoint_dataset`.

    Returns:
        The entry.
    """
    dataset = dataset or checkpoint_dataset(checkpoint)
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        checkpoints=(checkpoint,),
        settings={
            "part": "shift",
            "data": dataset,
            "shift": shift,
            "severity": float(severity),
            **asdict(settings),
        },
        prefix=f"shift-{dataset}-{shift}",
    )


def _level(
    shift: str,
    severity: float,
    mean: torch.Tensor,
    scores: dict[str, torch.Tensor],
    labels: torch.Tensor,
    temperature: float,
    limits: dict[str, float],
) -> ShiftLevel:
    metrics = calibration_metrics(mean, labels)
    scaled = tempered(mean, temperature)
    correct = mean.argmax(-1) == labels
    rejected, kept_accuracy = {}, {}
    for name, values in scores.items():
        point = operating_point(values, correct, limits[name])
        rejected[name] = 1.0 - point["coverage"]
        kept_accuracy[name] = None if point["coverage"] == 0 else point["accuracy"]
    return ShiftLevel(
        shift=shift,
        severity=float(severity),
        accuracy=metrics["accuracy"],
        ece=metrics["ece"],
        mce=metrics["mce"],
        nll=metrics["nll"],
        brier=metrics["brier"],
        temperature=temperature,
        ece_tempered=calibration_metrics(scaled, labels)["ece"],
        nll_tempered=tempered_nll(mean, labels, temperature),
        mean_scores={name: values.double().mean().item() for name, values in scores.items()},
        rejected=rejected,
        kept_accuracy=kept_accuracy,
    )


def shift_curve(
    checkpoint: str | Path,
    shift: str,
    settings: ShiftSettings = ShiftSettings(),
    *,
    dataset: str | None = None,
    severities: tuple[float, ...] | None = None,
    progress: ProgressFn | None = None,
) -> list[ShiftLevel]:
    """Get a checkpoint's results at each severity of a shift: cached ones load, others compute.

    Computing needs the clean full test-set evaluation (for the rejection thresholds) and the
    temperature fit at ``settings.n_samples`` passes; both are cached too.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        shift: A :data:`~core.evaluation.shift.SHIFTS` name.
        settings: Subset, passes and seeds.
        dataset: The task, whose test set is shifted; None for :func:`checkpoint_dataset`.
        severities: The severities; None for the shift's grid.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        One :class:`ShiftLevel` per severity, in the given order.

    Raises:
        ValueError: If ``shift`` is unknown.
        DatasetUnavailable: If MNIST is missing.
        CheckpointError: If the checkpoint is missing or damaged.
    """
    if shift not in SHIFTS:
        raise ValueError(f"shift must be one of {sorted(SHIFTS)}, got {shift!r}")
    path = resolve_checkpoint(checkpoint)
    dataset = dataset or checkpoint_dataset(path)
    grid = SHIFTS[shift].severities if severities is None else tuple(severities)
    entries = [level_entry(path, shift, s, settings, dataset) for s in grid]
    levels = [e.read(lambda stored: ShiftLevel(**stored)) for e in entries]
    missing = [i for i, level in enumerate(levels) if level is None]
    if not missing:
        return levels
    from core.data import load_dataset

    steps = len(missing) + 2
    clean = evaluate_dataset(
        path,
        dataset,
        n_samples=settings.n_samples,
        progress=share(progress, 0, steps, "test set"),
    )
    limits = {
        name: rejection_limits(values)[REJECTION_LIMIT] for name, values in clean.scores.items()
    }
    fit = temperature_fit(
        path,
        dataset=dataset,
        n_samples=settings.n_samples,
        validation_size=settings.validation_size,
        split_seed=settings.split_seed,
        progress=share(progress, 1, steps, "temperature"),
    )
    model, _ = load_checkpoint(path, default_device())
    images, labels = load_dataset(dataset, "test", n_inputs=settings.n_inputs, seed=settings.seed)
    unit = SHIFTS[shift].severity.split(" (")[0]
    for step, i in enumerate(missing, start=2):
        label = f"{unit} {grid[i]:g}"
        shifted = shift_images(images, shift, grid[i], settings.seed)
        mean, scores = predictive(
            model, shifted, settings.n_samples, settings.seed, share(progress, step, steps, label)
        )
        levels[i] = _level(shift, grid[i], mean, scores, labels, fit.temperature, limits)
        entries[i].save(levels[i].to_dict())
    report(progress, 1.0, "done")
    return levels


def shift_jobs(
    checkpoints: list[str], shifts: list[str], settings: ShiftSettings, *, title=str
) -> list[Job]:
    """List the (checkpoint, shift) curves with a severity not cached yet, as jobs.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        shifts: :data:`~core.evaluation.shift.SHIFTS` names.
        settings: Subset, passes and seeds.
        title: Names a checkpoint in progress messages.

    Returns:
        One :class:`~core.progress.Job` per curve with missing severities.
    """
    tasks = {name: checkpoint_dataset(name) for name in checkpoints}
    return [
        Job(
            f"{title(name)}, {SHIFTS[shift].title.lower()}",
            lambda progress, name=name, shift=shift: shift_curve(
                name, shift, settings, dataset=tasks[name], progress=progress
            ),
        )
        for name in checkpoints
        for shift in shifts
        if not all(
            level_entry(name, shift, s, settings, tasks[name]).exists()
            for s in SHIFTS[shift].severities
        )
    ]


def shifted_examples(dataset: str, shift: str, severity: float) -> torch.Tensor:
    """The first test image of each class of ``dataset`` under ``shift`` at ``severity``.

    Args:
        dataset: A labelled dataset (a checkpoint's task).
        shift: A :data:`~core.evaluation.shift.SHIFTS` name.
        severity: Its severity (seed 0 for random shifts).

    Returns:
        Images ``(C, 1, 28, 28)`` in [0, 1], in class order (:func:`core.data.class_examples`).

    Raises:
        DatasetUnavailable: If the test set is missing.
    """
    from core.data import class_examples

    return shift_images(class_examples(dataset)[0], shift, severity, seed=0)


@dataclass(frozen=True)
class ExampleAnswers:
    """A model's answers on :func:`shifted_examples`.

    Attributes:
        predicted: Predicted class of each image ``(C,)``.
        scores: Uncertainty score name → its value on each image ``(C,)``.
    """

    predicted: torch.Tensor
    scores: dict[str, torch.Tensor]


def example_answers(
    checkpoint: str | Path, shift: str, severity: float, n_samples: int
) -> ExampleAnswers:
    """A checkpoint's seeded ``n_samples``-pass answers on :func:`shifted_examples` of its task.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        shift: A :data:`~core.evaluation.shift.SHIFTS` name.
        severity: Its severity.
        n_samples: Monte-Carlo passes.

    Returns:
        The predicted classes and every score.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If the test set is missing.
    """
    device = default_device()
    model = shared_model(checkpoint, device)
    images = shifted_examples(checkpoint_dataset(checkpoint), shift, severity).to(device)
    with seeded(0):
        summary = summarize(predictive_samples(model, images, n_samples))
    return ExampleAnswers(summary.predicted, summary.scores())


# --- everything at once (the CLI) ----------------------------------------------------------


def calibration_summary(
    checkpoints: list[str],
    *,
    n_samples: int = 100,
    shifts: list[str] | None = None,
    settings: ShiftSettings = ShiftSettings(),
    progress: ProgressFn | None = None,
) -> dict:
    """Compute the calibration, rejection and shift numbers of several checkpoints.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        n_samples: Passes per prediction on the clean test set and the temperature fit.
        shifts: :data:`~core.evaluation.shift.SHIFTS` names; None for all.
        settings: Subset, passes and seeds of the shifted sets.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        A JSON-ready dict: ``n_samples``, ``shift_settings`` and ``models``, one entry per
        checkpoint with ``checkpoint``, ``dataset`` (its task), ``accuracy``, ``ece``,
        ``ece_chance``, ``ece_floor`` and ``ece_p_value`` (the ECE against chance,
        :class:`CalibrationResult`), ``mce``, ``nll``, ``brier``, ``temperature``,
        ``temperature_at_bound``, ``ece_tempered``, ``ece_floor_tempered``,
        ``ece_chance_tempered``, ``ece_p_value_tempered``, ``nll_tempered``, ``scaling_effect``
        (``"helps"``, ``"harms"`` or ``"none"``), ``scaling_change`` and ``scaling_interval``
        (its 95 % interval),
        ``validation_nll_ratio``, ``validation_seen``, ``validation_evidence``, ``rejection``
        (score → AUC and the
        99th-percentile rule's coverage and accuracy) and ``shifts`` (shift → one
        ``{"severity", "accuracy", "ece", "ece_tempered", "entropy"}`` per severity).
    """
    shifts = list(SHIFTS) if shifts is None else shifts
    split = {"validation_size": settings.validation_size, "split_seed": settings.split_seed}
    jobs = []
    for name in checkpoints:
        stem = Path(name).stem
        jobs.append(
            Job(
                stem,
                lambda p, name=name: calibration_result(
                    name, n_samples=n_samples, progress=p, **split
                ),
            )
        )
        jobs += [
            Job(
                f"{stem}, {s}", lambda p, name=name, s=s: shift_curve(name, s, settings, progress=p)
            )
            for s in shifts
        ]
    results = iter(run_all(jobs, progress))
    models = []
    for _ in checkpoints:
        result: CalibrationResult = next(results)
        curves = {s: next(results) for s in shifts}
        models.append(
            {
                "checkpoint": result.checkpoint,
                "dataset": result.dataset,
                **result.metrics,
                "temperature": result.fit.temperature,
                "temperature_at_bound": result.fit.at_bound,
                "ece_tempered": result.tempered["ece"],
                "ece_floor_tempered": result.tempered["ece_floor"],
                "ece_chance_tempered": result.tempered["ece_chance"],
                "ece_p_value_tempered": result.tempered["ece_p_value"],
                "scaling_effect": result.scaling.effect,
                "scaling_change": result.scaling.change,
                "scaling_interval": [result.scaling.low, result.scaling.high],
                "nll_tempered": result.tempered["nll"],
                "validation_nll_ratio": result.validation_nll_ratio,
                "validation_seen": result.validation_seen,
                "validation_evidence": result.validation_evidence,
                "rejection": result.rejection,
                "shifts": {
                    s: [
                        {
                            "severity": level.severity,
                            "accuracy": level.accuracy,
                            "ece": level.ece,
                            "ece_tempered": level.ece_tempered,
                            "entropy": level.mean_scores["predictive_entropy"],
                        }
                        for level in levels
                    ]
                    for s, levels in curves.items()
                },
            }
        )
    return {"n_samples": n_samples, "shift_settings": asdict(settings), "models": models}
