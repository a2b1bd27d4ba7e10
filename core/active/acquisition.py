"""Acquisition functions: which unlabelled pool inputs to label next.

Each scores a Monte-Carlo predictive summary of the pool (higher = acquire first):

* ``bald``: mutual information between the prediction and the weights (Houlsby et al. 2011):
  the networks disagree — labelling it tells the model the most about its weights;
* ``entropy``: predictive entropy, total uncertainty;
* ``variation_ratio``: share of sampled networks not voting for the modal class;
* ``mean_std``: the class probabilities' standard deviation over samples, averaged over classes
  (the seed's "largest predictive spread" criterion);
* ``random``: uniform scores from a seeded generator (the baseline).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.evaluation.uncertainty import PredictiveSummary

Acquisition = Callable[[PredictiveSummary, torch.Generator], torch.Tensor]

ACQUISITIONS: dict[str, Acquisition] = {
    "bald": lambda s, g: s.mutual_information,
    "entropy": lambda s, g: s.entropy,
    "variation_ratio": lambda s, g: s.variation_ratio,
    "mean_std": lambda s, g: s.std.mean(-1),
    "random": lambda s, g: torch.rand(len(s), generator=g),
}
"""Name → ``score(summary, generator) -> (N,)``; higher scores are acquired first."""

TITLES = {
    "bald": "BALD (mutual information)",
    "entropy": "Max entropy",
    "variation_ratio": "Variation ratio",
    "mean_std": "Mean std",
    "random": "Random",
}


def acquire(
    summary: PredictiveSummary, name: str, count: int, generator: torch.Generator
) -> torch.Tensor:
    """Positions of the ``count`` highest-scoring pool inputs.

    Ties are broken by position, so the choice is reproducible.

    Args:
        summary: Summary of the predictive on the candidate pool inputs (``N`` of them).
        name: A key of :data:`ACQUISITIONS`.
        count: How many to pick (at most ``N``).
        generator: Seeded generator (used by ``random``).

    Returns:
        ``(count,)`` int64 positions into the summarised inputs, distinct.

    Raises:
        ValueError: If ``name`` is unknown.
    """
    if name not in ACQUISITIONS:
        raise ValueError(f"acquisition must be one of {sorted(ACQUISITIONS)}, got {name!r}")
    scores = ACQUISITIONS[name](summary, generator).double()
    order = torch.argsort(-scores, stable=True)
    return order[: min(count, len(order))]
