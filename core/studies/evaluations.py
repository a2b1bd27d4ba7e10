"""Per-input evaluations of a checkpoint on a dataset, cached on disk.

:func:`evaluate_dataset` runs ``n_samples`` stochastic passes (LRT for BBB, exact per input)
over a dataset, summarises them (:func:`core.evaluation.uncertainty.summarize`) and keeps, per
input, the mean probabilities, the predicted class, every score of
:data:`core.evaluation.uncertainty.SCORES` and the label. The first call computes (reporting
progress); later calls load the entry of :func:`core.storage.cache.cache_entry` keyed by the
checkpoint's content, the dataset, split, subset size and seed and the sample count. The
Monte-Carlo noise is seeded too, so results are reproducible.

:func:`rejection_thresholds` derives the "I don't know" limits (90th/99th percentiles of each
score) from the cached evaluation of the checkpoint's own full test set (MNIST, or
Fashion-MNIST for a Fashion-MNIST model). The limits of the shipped checkpoints ship too, in
:data:`SHIPPED_THRESHOLDS` keyed by each file's SHA-256 (:func:`ship_thresholds`), so that a
fresh clone's first drawing is judged at once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from core.atomic import atomic_write_text
from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.metrics import calibration
from core.evaluation.uncertainty import rejection_limits, summarize
from core.paths import CHECKPOINT_DIR
from core.progress import Job, ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import (
    checkpoint_dataset,
    content_hash,
    load_checkpoint,
    resolve_checkpoint,
)

CACHE_VERSION = 2  # bump when what is computed or stored changes
BATCH_SIZE = 500  # inputs per progress step
IN_DISTRIBUTION = "mnist"
SHIPPED_THRESHOLDS = CHECKPOINT_DIR / "thresholds.json"
"""The shipped checkpoints' "I don't know" limits: ``{"version": CACHE_VERSION, "limits":
{"<sha256>-<n_samples>": {score: {"p90", "p99"}}}}``."""


@dataclass(frozen=True)
class DatasetEvaluation:
    """Per-input results of one checkpoint on ``N`` inputs of a dataset.

    The tensors are on the CPU; treat them as read-only.

    Attributes:
        dataset: The dataset's name.
        n_samples: Stochastic passes per input.
        mean: ``(N, C)`` float32 mean predictive probabilities.
        predicted: ``(N,)`` int64 predicted classes.
        scores: Name → ``(N,)`` float32 for each :data:`core.evaluation.uncertainty.SCORES`
            entry (higher = more uncertain).
        labels: ``(N,)`` int64, or None for unlabelled datasets.
    """

    dataset: str
    n_samples: int
    mean: torch.Tensor
    predicted: torch.Tensor
    scores: dict[str, torch.Tensor]
    labels: torch.Tensor | None

    def __len__(self) -> int:
        """Number of inputs ``N``."""
        return len(self.predicted)

    @property
    def correct(self) -> torch.Tensor | None:
        """``(N,)`` bool, whether each prediction equals the label (None without labels)."""
        return None if self.labels is None else self.predicted == self.labels

    @property
    def accuracy(self) -> float | None:
        """Fraction of correct predictions (None without labels)."""
        correct = self.correct
        return None if correct is None else correct.float().mean().item()

    def calibration(self) -> dict[str, float]:
        """Rate the mean probabilities against the labels.

        Returns:
            ``{"accuracy", "ece", "nll", "brier"}`` (:func:`core.evaluation.metrics.calibration`).

        Raises:
            ValueError: If the dataset has no labels.
        """
        if self.labels is None:
            raise ValueError(f"{self.dataset} has no labels")
        return calibration(self.mean, self.labels)

    def to_dict(self) -> dict:
        """Give the fields as a dict (what the cache file stores).

        Returns:
            Field name → value.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def evaluation_entry(
    checkpoint: str | Path,
    dataset: str,
    *,
    split: str = "test",
    n_samples: int = 100,
    n_inputs: int | None = None,
    seed: int = 0,
) -> CacheEntry:
    """Give the cache entry where :func:`evaluate_dataset` stores its result.

    Args:
        checkpoint: Registry name or ``.pt`` path; the key uses the file's content hash.
        dataset: The dataset's name.
        split: "train" or "test".
        n_samples: Stochastic passes per input.
        n_inputs: Inputs drawn from the dataset; None for all.
        seed: Seed of the subset and of the Monte-Carlo noise.

    Returns:
        The entry; :meth:`~core.storage.cache.CacheEntry.exists` tells whether it is computed.
    """
    return cache_entry(
        "evaluations",
        CACHE_VERSION,
        checkpoints=(checkpoint,),
        settings={"data": [dataset, split, n_inputs, seed], "n_samples": n_samples},
        format="pt",
        prefix=f"{dataset}-{split}",
    )


def _compute(
    checkpoint: Path,
    dataset: str,
    split: str,
    n_samples: int,
    n_inputs: int | None,
    seed: int,
    progress: ProgressFn | None,
) -> DatasetEvaluation:
    from core.data import load_dataset

    model, _ = load_checkpoint(checkpoint, default_device())
    images, labels = load_dataset(dataset, split, n_inputs=n_inputs, seed=seed)
    parts: dict[str, list[torch.Tensor]] = {"mean": [], "predicted": []}
    scores: dict[str, list[torch.Tensor]] = {}
    with seeded(seed):
        for start in range(0, len(images), BATCH_SIZE):
            report(progress, start / len(images), f"{dataset}: {start}/{len(images)} inputs")
            probs = predictive_samples(model, images[start : start + BATCH_SIZE], n_samples)
            summary = summarize(probs)
            parts["mean"].append(summary.mean)
            parts["predicted"].append(summary.predicted)
            for name, values in summary.scores().items():
                scores.setdefault(name, []).append(values.float())
    report(progress, 1.0, f"{dataset}: {len(images)} inputs")
    return DatasetEvaluation(
        dataset=dataset,
        n_samples=n_samples,
        mean=torch.cat(parts["mean"]),
        predicted=torch.cat(parts["predicted"]),
        scores={name: torch.cat(v) for name, v in scores.items()},
        labels=None if labels is None else labels.long().cpu(),
    )


def evaluate_dataset(
    checkpoint: str | Path,
    dataset: str,
    *,
    split: str = "test",
    n_samples: int = 100,
    n_inputs: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DatasetEvaluation:
    """Evaluate a checkpoint input by input on a dataset, cached on disk.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        dataset: The dataset's name (see :func:`core.data.list_datasets`).
        split: "train" or "test".
        n_samples: Stochastic passes per input.
        n_inputs: Inputs drawn with ``seed`` by :func:`core.data.load_dataset`; None for all.
        seed: Seed of the subset and of the Monte-Carlo noise.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The per-input results.

    Raises:
        DatasetUnavailable: If the dataset's files are missing.
        CheckpointError: If the checkpoint is missing or damaged.
    """
    path = resolve_checkpoint(checkpoint)
    entry = evaluation_entry(
        path, dataset, split=split, n_samples=n_samples, n_inputs=n_inputs, seed=seed
    )
    return entry.load_or_compute(
        lambda: _compute(path, dataset, split, n_samples, n_inputs, seed, progress),
        decode=lambda stored: DatasetEvaluation(**stored),
        encode=DatasetEvaluation.to_dict,
    )


def test_metrics(
    checkpoint: str | Path,
    *,
    n_samples: int = 100,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> dict:
    """A checkpoint's metrics on the test set of the task it was trained on, with their spread.

    The numbers ``python -m core evaluate`` prints and the documents state: the predictive mean
    of ``n_samples`` seeded passes over every test image (the cached :func:`evaluate_dataset`,
    so the Home page's table and this agree to the last digit).

    Args:
        checkpoint: Registry name, ``user:NAME`` or ``.pt`` path.
        n_samples: Monte-Carlo passes per image.
        seed: Seed of the Monte-Carlo noise.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        ``test_error`` (fraction) and ``test_error_se`` (its binomial standard error over the
        test images), ``nll`` (nats per image) and ``nll_se`` (standard error of that mean),
        ``ece`` and ``brier`` (see :func:`core.evaluation.metrics.calibration`), ``dataset``,
        ``n_samples``, ``num_examples`` and ``seed``.
    """
    dataset = checkpoint_dataset(checkpoint)
    evaluation = evaluate_dataset(
        checkpoint, dataset, n_samples=n_samples, seed=seed, progress=progress
    )
    metrics = evaluation.calibration()
    n = len(evaluation)
    error = 1.0 - metrics["accuracy"]
    true_class = evaluation.mean.double().gather(1, evaluation.labels[:, None])
    nll_per_image = -true_class.clamp_min(1e-12).log()
    return {
        "test_error": error,
        "test_error_se": math.sqrt(error * (1.0 - error) / n),
        "nll": metrics["nll"],
        "nll_se": nll_per_image.std().item() / math.sqrt(n),
        "ece": metrics["ece"],
        "brier": metrics["brier"],
        "dataset": dataset,
        "n_samples": n_samples,
        "num_examples": n,
        "seed": seed,
    }


def evaluation_jobs(
    checkpoints: list[str], datasets: list[str], *, title=str, **settings
) -> list[Job]:
    """List the (checkpoint, dataset) evaluations not cached yet, as jobs.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        datasets: Dataset names.
        title: Names a checkpoint in progress messages.
        **settings: :func:`evaluate_dataset`'s keyword arguments (``split``, ``n_samples``,
            ``n_inputs``, ``seed``).

    Returns:
        A :class:`~core.progress.Job` per missing evaluation.
    """
    return [
        Job(
            title(name),
            lambda progress, name=name, d=d: evaluate_dataset(
                name, d, progress=progress, **settings
            ),
        )
        for name in checkpoints
        for d in datasets
        if not evaluation_entry(name, d, **settings).exists()
    ]


def _threshold_key(path: Path, n_samples: int) -> str:
    return f"{content_hash(path)}-{n_samples}"


def _shipped_limits() -> dict:
    try:
        stored = json.loads(SHIPPED_THRESHOLDS.read_text())
    except (OSError, ValueError):
        return {}
    return stored.get("limits", {}) if stored.get("version") == CACHE_VERSION else {}


def rejection_thresholds(
    checkpoint: str | Path, *, n_samples: int = 100, progress: ProgressFn | None = None
) -> dict[str, dict[str, float]]:
    """Derive the "I don't know" limits of each score from the checkpoint's own test set.

    The test set is that of the task it was trained on
    (:func:`~core.storage.checkpoints.checkpoint_dataset`: MNIST, or Fashion-MNIST).
    Read from :data:`SHIPPED_THRESHOLDS` when the file is a shipped one, else computed once
    per checkpoint file and cached (see :func:`core.evaluation.uncertainty.verdict`).

    Args:
        checkpoint: Registry name or ``.pt`` path.
        n_samples: Stochastic passes per input.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        Score name → ``{"p90", "p99"}``, the 90th and 99th percentiles on the test set.
    """
    path = resolve_checkpoint(checkpoint)
    shipped = _shipped_limits().get(_threshold_key(path, n_samples))
    if shipped is not None:
        report(progress, 1.0, "shipped")
        return shipped
    dataset = checkpoint_dataset(path)
    evaluation = evaluate_dataset(path, dataset, n_samples=n_samples, progress=progress)
    return {name: rejection_limits(values) for name, values in evaluation.scores.items()}


def ship_thresholds(
    checkpoints: list[str | Path], *, n_samples: int = 100, progress: ProgressFn | None = None
) -> Path:
    """Write the limits of ``checkpoints`` to :data:`SHIPPED_THRESHOLDS`, replacing its content.

    Args:
        checkpoints: Registry names or ``.pt`` paths (the shipped ones).
        n_samples: Stochastic passes per input.
        progress: Called with (fraction done, message) while computing.

    Returns:
        The file written.
    """
    limits = {}
    for i, name in enumerate(checkpoints):
        path = resolve_checkpoint(name)
        limits[_threshold_key(path, n_samples)] = rejection_thresholds(
            path,
            n_samples=n_samples,
            progress=lambda f, m, i=i, name=name: report(
                progress, (i + f) / len(checkpoints), f"{name}: {m}"
            ),
        )
    text = json.dumps({"version": CACHE_VERSION, "limits": limits}, indent=1, sort_keys=True)
    atomic_write_text(SHIPPED_THRESHOLDS, text + "\n")
    return SHIPPED_THRESHOLDS
