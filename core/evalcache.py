"""Per-input evaluations of a checkpoint on a dataset, cached on disk.

:func:`evaluate_dataset` runs ``samples`` stochastic passes (LRT for BBB, exact per input) over
a dataset, summarises them (:func:`core.uncertainty.summarize`) and keeps, per input, the mean
probabilities, the predicted class, every score of :data:`core.uncertainty.SCORES` and the
label. The first call computes (reporting progress); later calls load
``cache_dir()/evaluations/<dataset>-<key>.pt`` (written atomically, read with
``weights_only=True``). The key hashes the checkpoint file's bytes (so a retrained checkpoint
gets new results), the dataset, split, subset size and seed, the sample count and
:data:`CACHE_VERSION`. The Monte-Carlo noise is seeded too, so results are reproducible.

:func:`rejection_thresholds` derives the "I don't know" limits (90th/99th percentiles of each
score) from the cached full MNIST test-set evaluation.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

import torch

from core.atomic import atomic_write
from core.checkpoints import checkpoint_path, load_checkpoint
from core.device import default_device
from core.metrics import calibration
from core.paths import cache_dir
from core.predictive import predictive_samples
from core.progress import ProgressFn, report
from core.uncertainty import rejection_limits, summarize

CACHE_VERSION = 1  # bump when what is computed or stored changes
BATCH_SIZE = 500  # inputs per progress step
IN_DISTRIBUTION = "mnist"


@lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int, inode: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def content_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, memoised per (path, size, modification time, inode): an atomic
    rewrite is a new inode, even within one tick of the file-system clock."""
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def resolve_checkpoint(checkpoint: str | Path) -> Path:
    """The ``.pt`` file of a registry name (in ``checkpoints/``) or the path itself."""
    path = Path(checkpoint)
    return path if path.suffix == ".pt" else checkpoint_path(str(checkpoint))


@dataclass(frozen=True)
class DatasetEvaluation:
    """Per-input results of one checkpoint on ``N`` inputs of a dataset (CPU tensors; treat
    them as read-only).

    mean: ``(N, C)`` float32 mean predictive probabilities; predicted: ``(N,)`` int64;
    scores: name → ``(N,)`` float32 for each :data:`core.uncertainty.SCORES` entry (higher =
    more uncertain); labels: ``(N,)`` int64, or None for unlabelled datasets."""

    dataset: str
    samples: int
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
        """``{"accuracy", "ece", "nll", "brier"}`` (:func:`core.metrics.calibration`)."""
        if self.labels is None:
            raise ValueError(f"{self.dataset} has no labels")
        return calibration(self.mean, self.labels)

    def to_dict(self) -> dict:
        """The fields as a dict (what the cache file stores)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def cache_file(
    checkpoint: str | Path,
    dataset: str,
    *,
    split: str = "test",
    samples: int = 100,
    n: int | None = None,
    seed: int = 0,
) -> Path:
    """Where :func:`evaluate_dataset` with these arguments stores its result."""
    key = json.dumps(
        {
            "version": CACHE_VERSION,
            "checkpoint": content_hash(resolve_checkpoint(checkpoint)),
            "data": [dataset, split, n, seed],
            "samples": samples,
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return cache_dir() / "evaluations" / f"{dataset}-{split}-{digest}.pt"


def _compute(
    checkpoint: Path,
    dataset: str,
    split: str,
    samples: int,
    n: int | None,
    seed: int,
    progress: ProgressFn | None,
) -> DatasetEvaluation:
    from core.data import load_dataset

    model, _ = load_checkpoint(checkpoint, default_device())
    images, labels = load_dataset(dataset, split, n=n, seed=seed)
    parts: dict[str, list[torch.Tensor]] = {"mean": [], "predicted": []}
    scores: dict[str, list[torch.Tensor]] = {}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for start in range(0, len(images), BATCH_SIZE):
            report(progress, start / len(images), f"{dataset}: {start}/{len(images)} inputs")
            summary = summarize(
                predictive_samples(model, images[start : start + BATCH_SIZE], samples)
            )
            parts["mean"].append(summary.mean)
            parts["predicted"].append(summary.predicted)
            for name, values in summary.scores().items():
                scores.setdefault(name, []).append(values.float())
    report(progress, 1.0, f"{dataset}: {len(images)} inputs")
    return DatasetEvaluation(
        dataset=dataset,
        samples=samples,
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
    samples: int = 100,
    n: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DatasetEvaluation:
    """Per-input results of ``checkpoint`` (registry name or ``.pt`` path) on ``dataset``
    (``n`` inputs drawn with ``seed`` by :func:`core.data.load_dataset`, all when None), each
    from ``samples`` passes. Cached on disk; raises :class:`core.data.DatasetUnavailable` or
    :class:`core.checkpoints.CheckpointError` when inputs are missing."""
    path = resolve_checkpoint(checkpoint)
    file = cache_file(path, dataset, split=split, samples=samples, n=n, seed=seed)
    if file.is_file():
        try:
            return DatasetEvaluation(**torch.load(file, weights_only=True))
        except Exception:  # corrupt or from an incompatible version: compute it again
            pass
    result = _compute(path, dataset, split, samples, n, seed, progress)
    atomic_write(file, lambda f: torch.save(result.to_dict(), f))
    return result


def is_cached(checkpoint: str | Path, dataset: str, **kwargs) -> bool:
    """Whether :func:`evaluate_dataset` with the same arguments would load without computing."""
    return cache_file(checkpoint, dataset, **kwargs).is_file()


def rejection_thresholds(
    checkpoint: str | Path, *, samples: int = 100, progress: ProgressFn | None = None
) -> dict[str, dict[str, float]]:
    """Per score, ``{"p90", "p99"}`` on the full MNIST test set (see
    :func:`core.uncertainty.verdict`). Computed once per checkpoint file, then cached."""
    evaluation = evaluate_dataset(checkpoint, IN_DISTRIBUTION, samples=samples, progress=progress)
    return {name: rejection_limits(values) for name, values in evaluation.scores.items()}
