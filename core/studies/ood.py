"""Out-of-distribution detection: MNIST test inputs against another dataset's, per score.

Each uncertainty score of :data:`core.evaluation.uncertainty.SCORES` is used as a detector
(higher = more likely OOD) and rated by AUROC, AUPR and FPR at 95 % TPR
(:func:`core.evaluation.metrics.ood_metrics`). Evaluations come from the disk cache
(:func:`core.studies.evaluations.evaluate_dataset`); the MNIST side uses the same subset size
``n_inputs`` as the OOD side. For ROC plots use :func:`core.evaluation.metrics.roc_curve` on the
two evaluations' ``scores``. :func:`held_out_choice` chooses a score on a validation half of the
inputs and rates it on the disjoint test half (the Home page's comparison).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from core.engine.device import default_device
from core.evaluation.metrics import auroc, ood_metrics
from core.evaluation.uncertainty import PredictiveSummary, rejection_limits, seeded_summary
from core.progress import ProgressFn, report, share
from core.storage.checkpoints import checkpoint_dataset, shared_model
from core.studies.evaluations import IN_DISTRIBUTION, DatasetEvaluation, evaluate_dataset

CONFIDENT_PROB = 0.9  # a mean probability at least this high counts as a confident answer
PAGE_INPUTS = 2000
"""Inputs of each dataset the OOD page rates the models on by default."""
PAGE_SAMPLES = 50
"""Monte-Carlo passes per input of the OOD page's dataset-level numbers by default."""


def ood_datasets() -> list[str]:
    """List the datasets other than MNIST whose files are available now.

    Returns:
        Their names, in catalogue order.
    """
    from core.data import list_datasets

    return [
        info.name
        for info in list_datasets()
        if info.name != IN_DISTRIBUTION and info.availability()[0]
    ]


def digit_labelled(dataset: str, in_distribution: str = IN_DISTRIBUTION) -> bool:
    """Tell whether a dataset is labelled with the task's classes (e.g. rotated MNIST).

    Only then does the accuracy of a model of that task on it mean something.

    Args:
        dataset: The dataset's name.
        in_distribution: The task the model was trained on (MNIST by default, whose classes
            are digits; Fashion-MNIST's are clothes).

    Returns:
        True when ``dataset`` has the same class names as the task.
    """
    from core.data import dataset_info

    info = dataset_info(dataset)
    return info.has_labels and info.class_names == dataset_info(in_distribution).class_names


@dataclass(frozen=True)
class OodResult:
    """One checkpoint against one OOD dataset.

    Attributes:
        checkpoint: The checkpoint's name (file stem).
        dataset: The OOD dataset's name.
        n_samples: Stochastic passes per input.
        num_in: Number of MNIST test inputs.
        num_out: Number of OOD inputs.
        ood_accuracy: Accuracy on the OOD inputs where they are labelled with digits
            (:func:`digit_labelled`), None otherwise.
        metrics: Score name → ``{"auroc", "aupr", "fpr95"}``.
    """

    checkpoint: str
    dataset: str
    n_samples: int
    num_in: int
    num_out: int
    ood_accuracy: float | None
    metrics: dict[str, dict[str, float]]


def compare(inside: DatasetEvaluation, outside: DatasetEvaluation) -> dict[str, dict[str, float]]:
    """Rate each score at detecting ``outside`` among ``inside``.

    Args:
        inside: The evaluation on MNIST (in-distribution).
        outside: The evaluation on the OOD dataset.

    Returns:
        Score name → ``{"auroc", "aupr", "fpr95"}``.
    """
    return {name: ood_metrics(inside.scores[name], outside.scores[name]) for name in inside.scores}


def best_score(metrics: dict[str, dict[str, float]]) -> str:
    """Pick the score with the highest AUROC.

    Args:
        metrics: A result of :func:`compare`.

    Returns:
        The score's name.
    """
    return max(metrics, key=lambda s: metrics[s]["auroc"])


def split_halves(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``n`` inputs into a validation half and a disjoint test half, at random but seeded.

    Args:
        n: Number of inputs (at least 2).
        seed: Seed of the random order; the same seed gives the same halves.

    Returns:
        int64 indices ``(n // 2,)`` of the validation half and ``(n - n // 2,)`` of the test
        half, each sorted; together they are every index once.
    """
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[: n // 2].sort().values, order[n // 2 :].sort().values


@dataclass(frozen=True)
class HeldOutChoice:
    """A score chosen on the validation half of the inputs and rated on the test half.

    Attributes:
        score: The score with the highest AUROC on the validation half (on a tie, the first
            in the order of the scores given).
        validation_auroc: Score name → its AUROC on the validation half (what chose).
        test_auroc: The chosen score's AUROC on the test half (what is reported).
        num_validation: Inputs in the validation half, ``(in-distribution, OOD)``.
        num_test: Inputs in the test half, ``(in-distribution, OOD)``.
    """

    score: str
    validation_auroc: dict[str, float]
    test_auroc: float
    num_validation: tuple[int, int]
    num_test: tuple[int, int]


def held_out_choice(
    inside: dict[str, torch.Tensor], outside: dict[str, torch.Tensor], seed: int
) -> HeldOutChoice:
    """Choose the best OOD score on half of the inputs and rate it on the other half.

    Both sides are split by :func:`split_halves`; the choice reads only the two validation
    halves, the reported AUROC only the two test halves, so the number is not the maximum of
    several AUROCs measured on the same inputs.

    Args:
        inside: Score name → ``(N_in,)`` scores of the in-distribution inputs.
        outside: Score name → ``(N_out,)`` scores of the OOD inputs (the same names).
        seed: Seed of the split.

    Returns:
        The chosen score, every score's validation AUROC and the chosen one's test AUROC.
    """
    in_validation, in_test = split_halves(len(next(iter(inside.values()))), seed)
    out_validation, out_test = split_halves(len(next(iter(outside.values()))), seed)
    validation = {
        name: auroc(values[in_validation], outside[name][out_validation])
        for name, values in inside.items()
    }
    score = max(validation, key=validation.__getitem__)
    return HeldOutChoice(
        score=score,
        validation_auroc=validation,
        test_auroc=auroc(inside[score][in_test], outside[score][out_test]),
        num_validation=(len(in_validation), len(out_validation)),
        num_test=(len(in_test), len(out_test)),
    )


def ood_result(
    checkpoint: str | Path,
    ood_dataset: str,
    *,
    n_samples: int = 100,
    n_inputs: int | None = None,
    progress: ProgressFn | None = None,
) -> OodResult:
    """Rate a checkpoint at detecting an OOD dataset among its own task's test inputs.

    The in-distribution inputs are the test set of the task the checkpoint was trained on
    (:func:`~core.storage.checkpoints.checkpoint_dataset`: MNIST or Fashion-MNIST).

    Args:
        checkpoint: Registry name or ``.pt`` path.
        ood_dataset: The OOD dataset's name.
        n_samples: Stochastic passes per input.
        n_inputs: Inputs of each dataset; None for all.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The detection metrics per score and the OOD-label accuracy.
    """
    task = checkpoint_dataset(checkpoint)
    inside, outside = (
        evaluate_dataset(
            checkpoint,
            dataset,
            n_samples=n_samples,
            n_inputs=n_inputs,
            progress=share(progress, i, 2),
        )
        for i, dataset in enumerate((task, ood_dataset))
    )
    return OodResult(
        checkpoint=Path(checkpoint).stem,
        dataset=ood_dataset,
        n_samples=n_samples,
        num_in=len(inside),
        num_out=len(outside),
        ood_accuracy=outside.accuracy if digit_labelled(ood_dataset, task) else None,
        metrics=compare(inside, outside),
    )


def ood_table(
    checkpoints: list[str],
    datasets: list[str],
    *,
    n_samples: int = 100,
    n_inputs: int | None = None,
    progress: ProgressFn | None = None,
) -> list[OodResult]:
    """Compute :func:`ood_result` of every checkpoint against every dataset.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        datasets: OOD dataset names.
        n_samples: Stochastic passes per input.
        n_inputs: Inputs of each dataset; None for all.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        One result per (checkpoint, dataset), checkpoint-major.
    """
    pairs = [(c, d) for c in checkpoints for d in datasets]
    results = [
        ood_result(
            c, d, n_samples=n_samples, n_inputs=n_inputs, progress=share(progress, i, len(pairs))
        )
        for i, (c, d) in enumerate(pairs)
    ]
    report(progress, 1.0, "done")
    return results


@dataclass(frozen=True)
class OodBehaviour:
    """How one model treats the OOD inputs, by one score (fractions of the OOD inputs).

    Attributes:
        calm: Score no higher than the model's 90th percentile on MNIST (it would answer
            "confident").
        confident: Mean probability ≥ :data:`CONFIDENT_PROB` for some class.
        confident_mistakes: Confident and wrong (only for digit-labelled sets, else None).
        common_class: The class most often given confidently (None when none is).
        constant_score: The score is the same for every input, so it cannot tell them apart.
    """

    calm: float
    confident: float
    confident_mistakes: float | None
    common_class: int | None
    constant_score: bool


def ood_behaviour(
    inside: DatasetEvaluation, outside: DatasetEvaluation, score: str
) -> OodBehaviour:
    """Describe how one model treats the OOD inputs, by one score.

    Args:
        inside: The model's evaluation on MNIST.
        outside: The model's evaluation on the OOD dataset.
        score: A :data:`core.evaluation.uncertainty.SCORES` name.

    Returns:
        The fractions of :class:`OodBehaviour`.
    """
    p90 = rejection_limits(inside.scores[score])["p90"]
    sure = outside.mean.max(-1).values >= CONFIDENT_PROB
    mistakes = None
    if outside.labels is not None and digit_labelled(outside.dataset, inside.dataset):
        mistakes = (sure & ~outside.correct).float().mean().item()
    common = None
    if sure.any():
        common = int(torch.bincount(outside.predicted[sure], minlength=10).argmax())
    values = torch.cat([inside.scores[score], outside.scores[score]])
    return OodBehaviour(
        calm=(outside.scores[score] <= p90).float().mean().item(),
        confident=sure.float().mean().item(),
        confident_mistakes=mistakes,
        common_class=common,
        constant_score=bool((values == values[0]).all()),
    )


def surest_inputs(evaluation: DatasetEvaluation, score: str, count: int) -> torch.Tensor:
    """Find the inputs the model is surest about: the lowest ``score``.

    Ties are broken by the highest mean probability.

    Args:
        evaluation: A per-input evaluation.
        score: A :data:`core.evaluation.uncertainty.SCORES` name.
        count: Number of inputs wanted.

    Returns:
        int64 indices ``(count,)`` (fewer if there are fewer inputs), surest first.
    """
    order = torch.argsort(evaluation.scores["max_prob"], stable=True)
    return order[torch.argsort(evaluation.scores[score][order], stable=True)][:count]


def sample_summary(
    checkpoint: str | Path, dataset: str, seed: int, n_inputs: int, n_samples: int
) -> PredictiveSummary:
    """A checkpoint's seeded ``n_samples``-pass answers on a few random test inputs.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        dataset: The dataset the inputs come from.
        seed: Seed of the inputs (:func:`core.data.load_dataset`); the noise is seed 0.
        n_inputs: Number of inputs.
        n_samples: Monte-Carlo passes.

    Returns:
        The summary of the passes on the ``n_inputs`` inputs, in their order.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If the dataset is missing.
    """
    from core.data import load_dataset

    device = default_device()
    model = shared_model(checkpoint, device)
    images, _ = load_dataset(dataset, "test", n_inputs=n_inputs, seed=seed)
    return seeded_summary(model, images.to(device), n_samples)
