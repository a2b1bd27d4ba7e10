"""The validation split of a task's training set, and the seeded predictions rated on it.

The split is the last :data:`VALIDATION_SIZE` images of the seeded permutation that
``python -m core train NAME --train-subset 55000`` trains on the first 55,000 of
(:func:`split_indices`), never the test set.
"""

from __future__ import annotations

from pathlib import Path

import torch

from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.uncertainty import summarize
from core.progress import ProgressFn, report
from core.storage.checkpoints import checkpoint_dataset, read_metadata, resolve_checkpoint
from core.studies.evaluations import (
    BATCH_SIZE,
    IN_DISTRIBUTION,
)

VALIDATION_SIZE = 5000
SPLIT_SEED = 0  # the seed of core.data.load_dataset's subsets, so --train-subset leaves it out
NOISE_SEED = 0  # Monte-Carlo noise of the validation predictions


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
