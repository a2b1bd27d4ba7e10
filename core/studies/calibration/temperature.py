"""Temperature scaling: T fitted by NLL on the validation split, and its tests.

The ECE before and after scaling against chance, and whether a checkpoint has seen the split
it was fitted on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from core.engine.device import default_device
from core.evaluation.calibration import (
    calibration_metrics,
    ece_by_chance,
    fit_temperature,
    scaling_effect,
    tempered,
    tempered_nll,
)
from core.progress import ProgressFn
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import (
    CheckpointError,
    checkpoint_dataset,
    load_checkpoint,
    read_metadata,
    resolve_checkpoint,
)
from core.studies.calibration import CACHE_VERSION, STUDY
from core.studies.calibration.validation import (
    NOISE_SEED,
    SPLIT_SEED,
    VALIDATION_SIZE,
    _validation,
    predictive,
    trained_on_validation,
)
from core.studies.evaluations import (
    IN_DISTRIBUTION,
    DatasetEvaluation,
)

TESTS_VERSION = 1  # of calibration_tests' entries
SEEN_RATIO = 0.75
"""Validation NLL below this fraction of the test NLL: the split was trained on. Measured ratios:
1.07–1.20 for models trained without the split, 0.001–0.52 for the shipped ones (trained on it)."""


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
