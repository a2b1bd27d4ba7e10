"""Dataset shift: a seeded test subset under each shift at each severity.

One cache entry per (checkpoint, shift, severity, settings); also the example images and
answers the page shows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.calibration import (
    calibration_metrics,
    operating_point,
    tempered,
    tempered_nll,
)
from core.evaluation.shift import SHIFTS, shift_images
from core.evaluation.uncertainty import rejection_limits, summarize
from core.progress import Job, ProgressFn, report, share
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import (
    checkpoint_dataset,
    load_checkpoint,
    resolve_checkpoint,
    shared_model,
)
from core.studies.calibration import CACHE_VERSION, STUDY
from core.studies.calibration.rejection import (
    REJECTION_LIMIT,
)
from core.studies.calibration.temperature import (
    temperature_fit,
)
from core.studies.calibration.validation import (
    SPLIT_SEED,
    VALIDATION_SIZE,
    predictive,
)
from core.studies.evaluations import (
    evaluate_dataset,
)


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
