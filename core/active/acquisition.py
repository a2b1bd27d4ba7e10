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

Acquisition = Callable[[PredictiveSummary | None, int, torch.Generator], torch.Tensor]

ACQUISITIONS: dict[str, Acquisition] = {
    "bald": lambda s, n, g: s.mutual_information,
    "entropy": lambda s, n, g: s.entropy,
    "variation_ratio": lambda s, n, g: s.variation_ratio,
    "mean_std": lambda s, n, g: s.std.mean(-1),
    "random": lambda s, n, g: torch.rand(n, generator=g),
}
"""Name → ``score(summary, n, generator) -> (n,)`` for ``n`` candidate inputs; higher scores
are acquired first. ``summary`` is None for the functions of :data:`MODEL_FREE`."""

MODEL_FREE = frozenset({"random"})
"""Functions that ignore the model: no Monte-Carlo passes are computed for them."""

TITLES = {
    "bald": "BALD (mutual information)",
    "entropy": "Max entropy",
    "variation_ratio": "Variation ratio",
    "mean_std": "Mean std",
    "random": "Random",
}


def acquire(
    summary: PredictiveSummary | None,
    name: str,
    count: int,
    generator: torch.Generator,
    n_inputs: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions and scores of the ``count`` highest-scoring pool inputs.

    Ties are broken by position, so the choice is reproducible.

    Args:
        summary: Summary of the predictive on the candidate pool inputs (``N`` of them); None
            for a function of :data:`MODEL_FREE`.
        name: A key of :data:`ACQUISITIONS`.
        count: How many to pick (at most ``N``).
        generator: Seeded generator (used by ``random``).
        n_inputs: ``N`` when ``summary`` is None.

    Returns:
        ``(count,)`` int64 positions into the candidates, distinct, and their ``(count,)``
        scores.

    Raises:
        ValueError: If ``name`` is unknown, or needs a summary it was not given.
    """
    if name not in ACQUISITIONS:
        raise ValueError(f"acquisition must be one of {sorted(ACQUISITIONS)}, got {name!r}")
    if summary is None and (name not in MODEL_FREE or n_inputs is None):
        raise ValueError(f"acquisition {name!r} needs the predictive summary of its inputs")
    n = len(summary) if summary is not None else n_inputs
    scores = ACQUISITIONS[name](summary, n, generator).double()
    order = torch.argsort(-scores, stable=True)[: min(count, n)]
    return order, scores[order]
