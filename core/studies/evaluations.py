"""Per-input evaluations of a checkpoint on a dataset, cached on disk.

:func:`evaluate_dataset` runs ``n_samples`` stochastic passes (LRT for BBB, exact per input)
over a dataset, summarises them (:func:`core.evaluation.uncertainty.summarize`) and keeps, per
input, the mean probabilities, the predicted class, every score of
:data:`core.evaluation.uncertainty.SCORES` and the label. The first call computes (reporting
progress); later calls load the entry of :func:`core.storage.cache.cache_entry` keyed by the
checkpoint's content, the dataset, split, subset size and seed and the sample count. The
Monte-Carlo noise is seeded too, so results are reproducible.

:func:`rejection_thresholds` derives the "I don't know" limits (90th/99th percentiles of each
score) from the cached full MNIST test-set evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import torch

from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.evaluation.metrics import calibration
from core.evaluation.uncertainty import rejection_limits, summarize
from core.progress import Job, ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import load_checkpoint, resolve_checkpoint

CACHE_VERSION = 2  # bump when what is computed or stored changes
BATCH_SIZE = 500  # inputs per progress step
IN_DISTRIBUTION = "mnist"


@dataclass(frozen=True)
class DatasetEvaluation:
    """Per-input results of one checkpoint on ``N`` inputs of a dataset (CPU tensors; treat
    them as read-only).

    mean: ``(N, C)`` float32 mean predictive probabilities; predicted: ``(N,)`` int64;
    scores: name → ``(N,)`` float32 for each :data:`core.evaluation.uncertainty.SCORES` entry
    (higher = more uncertain); labels: ``(N,)`` int64, or None for unlabelled datasets."""

    dataset: str
    n_samples: int
    mean: torch.Tensor
    predicted: torch.Tensor
    scores: dict[str, torch.Tensor]
    labels: torch.Tensor | None

    def __len__(self) -> int:
        return len(self.predicted)

    @property
    def correct(self) -> torch.Tensor | None:
        """``(N,)`` bool, whether each prediction equals the label (None without labels)."""
        return None if self.labels is None else self.predicted == self.labels

    @property
    def accuracy(self) -> float | None:
        correct = self.correct
        return None if correct is None else correct.float().mean().item()

    def calibration(self) -> dict[str, float]:
        """``{"accuracy", "ece", "nll", "brier"}`` (:func:`core.evaluation.metrics.calibration`)."""
        if self.labels is None:
            raise ValueError(f"{self.dataset} has no labels")
        return calibration(self.mean, self.labels)

    def to_dict(self) -> dict:
        """The fields as a dict (what the cache file stores)."""
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
    """Where :func:`evaluate_dataset` with these arguments stores its result."""
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
    with torch.random.fork_rng():
        torch.manual_seed(seed)
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
    """Per-input results of ``checkpoint`` (registry name or ``.pt`` path) on ``dataset``
    (``n_inputs`` inputs drawn with ``seed`` by :func:`core.data.load_dataset`, all when None),
    each from ``n_samples`` passes. Cached on disk; raises
    :class:`core.data.DatasetUnavailable` or :class:`core.storage.checkpoints.CheckpointError`
    when inputs are missing."""
    path = resolve_checkpoint(checkpoint)
    entry = evaluation_entry(
        path, dataset, split=split, n_samples=n_samples, n_inputs=n_inputs, seed=seed
    )
    stored = entry.load()
    if isinstance(stored, dict):
        try:
            return DatasetEvaluation(**stored)
        except TypeError:  # another version's fields: compute it again
            pass
    result = _compute(path, dataset, split, n_samples, n_inputs, seed, progress)
    entry.save(result.to_dict())
    return result


def evaluation_jobs(
    checkpoints: list[str], datasets: list[str], *, title=str, **settings
) -> list[Job]:
    """A :class:`~core.progress.Job` per (checkpoint, dataset) evaluation not cached yet;
    ``settings`` are :func:`evaluate_dataset`'s keyword arguments, ``title`` names a checkpoint."""
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


def rejection_thresholds(
    checkpoint: str | Path, *, n_samples: int = 100, progress: ProgressFn | None = None
) -> dict[str, dict[str, float]]:
    """Per score, ``{"p90", "p99"}`` on the full MNIST test set (see
    :func:`core.evaluation.uncertainty.verdict`). Computed once per checkpoint file, then cached."""
    evaluation = evaluate_dataset(
        checkpoint, IN_DISTRIBUTION, n_samples=n_samples, progress=progress
    )
    return {name: rejection_limits(values) for name, values in evaluation.scores.items()}
