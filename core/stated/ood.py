"""Stated values of the Out-of-distribution explorer, at the page's defaults.

:data:`~core.studies.ood.PAGE_INPUTS` inputs per set, :data:`~core.studies.ood.PAGE_SAMPLES`
passes, seeded.
"""

from __future__ import annotations

from core.stated.registry import stated
from core.storage.checkpoints import checkpoint_dataset
from core.studies.evaluations import evaluate_dataset
from core.studies.ood import PAGE_INPUTS, PAGE_SAMPLES, ood_behaviour, ood_result


@stated("ood_auroc")
def ood_auroc(dataset: str, checkpoint: str, score: str) -> str:
    """A model's AUROC at telling its task's test inputs from ``dataset``'s by ``score``.

    As the page's AUROC table shows it, e.g. ``ood_auroc notmnist mlp predictive_entropy``.
    """
    result = ood_result(checkpoint, dataset, n_samples=PAGE_SAMPLES, n_inputs=PAGE_INPUTS)
    return f"{result.metrics[score]['auroc']:.3f}"


@stated("ood_confident")
def ood_confident(dataset: str, checkpoint: str) -> str:
    """The share of ``dataset``'s inputs a model gives a confident answer (the page's info box)."""
    inside, outside = (
        evaluate_dataset(checkpoint, d, n_samples=PAGE_SAMPLES, n_inputs=PAGE_INPUTS)
        for d in (checkpoint_dataset(checkpoint), dataset)
    )
    return f"{ood_behaviour(inside, outside, 'max_prob').confident:.0%}"


@stated("ood_mean_score")
def ood_mean_score(dataset: str, checkpoint: str, score: str) -> str:
    """A score's mean over a set's inputs (nats for the entropies and the mutual information).

    e.g. ``ood_mean_score notmnist bbb_gaussian mutual_information`` → ``1.36``; to two
    significant digits, the page's inputs and passes.
    """
    evaluation = evaluate_dataset(checkpoint, dataset, n_samples=PAGE_SAMPLES, n_inputs=PAGE_INPUTS)
    return f"{float(f'{evaluation.scores[score].mean().item():.2g}'):g}"
