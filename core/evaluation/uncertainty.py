"""Per-input summaries of a Monte-Carlo predictive, uncertainty scores and the "I don't know" rule.

Input: softmax probabilities ``(n_samples, B, C)`` of ``n_samples`` stochastic passes on ``B``
inputs, as returned by :func:`core.engine.sampler.predictive_samples`; below n = ``n_samples``.
Entropies are in nats (natural log).

* predictive entropy H[p̄] of the mean p̄ = (1/n) Σ_s p_s: total uncertainty;
* expected entropy E_s[H[p_s]]: the aleatoric part (each network is unsure by itself);
* mutual information H[p̄] − E_s[H[p_s]] ≥ 0: the epistemic part (the networks disagree);
* variation ratio 1 − (votes for the modal class)/n, votes being the per-sample argmax classes.

:data:`SCORES` names the scores used for OOD detection and rejection (higher = more uncertain).
The rejection rule (:func:`verdict`) compares a score with its 90th and 99th percentiles on the
MNIST test set (:func:`rejection_limits`; cached per model by
:func:`core.studies.evaluations.rejection_thresholds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded

Thresholds = Mapping[str, Mapping[str, float]]
"""Per score name, its ``{"p90": value, "p99": value}`` on the MNIST test set."""

DEFAULT_SCORE = "predictive_entropy"
CONFIDENT, UNSURE, REJECT = "confident", "unsure", "reject"


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Entropy in nats along the last (class) dim; 0·log 0 = 0.

    Args:
        p: Probabilities ``(..., C)``.

    Returns:
        Entropies ``(...)`` in nats.
    """
    return -torch.special.xlogy(p, p).sum(-1)


@dataclass(frozen=True)
class PredictiveSummary:
    """Summaries of ``n_samples`` passes on ``B`` inputs with ``C`` classes (all on the CPU).

    Attributes:
        n_samples: Number of passes n.
        mean: Mean of each class's probability over samples ``(B, C)``.
        std: Standard deviation of each class's probability over samples (no Bessel
            correction) ``(B, C)``.
        predicted: Argmax of ``mean`` ``(B,)``.
        class_counts: How many samples voted for each class (argmax per sample) ``(B, C)``.
        top_scores: The "softmax spread", each sample's probability of the predicted class
            ``(n, B)``.
        top_std: Standard deviation of ``top_scores`` over samples ``(B,)``.
        entropy: Predictive entropy ``(B,)`` in nats.
        expected_entropy: Expected entropy ``(B,)`` in nats.
        mutual_information: Mutual information ``(B,)`` in nats; exactly 0 when all passes
            agree (e.g. a deterministic MLP), not rounding noise.
        variation_ratio: Variation ratio ``(B,)`` in [0, 1 − 1/C].
    """

    n_samples: int
    mean: torch.Tensor
    std: torch.Tensor
    predicted: torch.Tensor
    class_counts: torch.Tensor
    top_scores: torch.Tensor
    top_std: torch.Tensor
    entropy: torch.Tensor
    expected_entropy: torch.Tensor
    mutual_information: torch.Tensor
    variation_ratio: torch.Tensor

    def __len__(self) -> int:
        """Number of inputs ``B``."""
        return self.predicted.shape[0]

    def scores(self) -> dict[str, torch.Tensor]:
        """Every score of :data:`SCORES`.

        Returns:
            Score name → values ``(B,)``.
        """
        return {name: score(self) for name, score in SCORES.items()}


@torch.no_grad()
def summarize(probs: torch.Tensor) -> PredictiveSummary:
    """Summaries of the softmax probabilities of ``n`` passes.

    Args:
        probs: Probabilities ``(n, B, C)``, e.g. from
            :func:`core.engine.sampler.predictive_samples`.

    Returns:
        The per-input summaries on the CPU; see :class:`PredictiveSummary`.

    Raises:
        ValueError: If ``probs`` is not three-dimensional.
    """
    if probs.dim() != 3:
        raise ValueError(f"probs must be (n, B, C), got shape {tuple(probs.shape)}")
    probs = probs.detach().float()  # summarised where it is; only (B,)-sized results move
    n, _, c = probs.shape
    mean = probs.mean(0)
    predicted = mean.argmax(-1)
    counts = torch.nn.functional.one_hot(probs.argmax(-1), c).sum(0)
    top = probs.gather(-1, predicted.expand(n, -1).unsqueeze(-1)).squeeze(-1)
    total, expected = entropy(mean), entropy(probs).mean(0)
    agree = (probs == probs[:1]).all(-1).all(0)  # (B,) all passes identical
    on_device = {
        "mean": mean,
        "std": probs.std(0, correction=0),
        "predicted": predicted,
        "class_counts": counts,
        "top_scores": top,
        "top_std": top.std(0, correction=0),
        "entropy": total,
        "expected_entropy": expected,
        "mutual_information": (total - expected).clamp_min(0.0).masked_fill(agree, 0.0),
        "variation_ratio": 1.0 - counts.max(-1).values.float() / n,
    }
    return PredictiveSummary(n_samples=n, **{k: v.cpu() for k, v in on_device.items()})


@dataclass(frozen=True)
class Score:
    """An uncertainty score of each input, ``(B,)``: higher means more uncertain.

    Attributes:
        title: Name shown in the app.
        short: Compact label for table headers.
        unit: ``"nats"`` or ``""`` (a fraction).
        description: One-phrase explanation.
        of: Computes the score ``(B,)`` from a :class:`PredictiveSummary`.
    """

    title: str
    short: str
    unit: str
    description: str
    of: Callable[[PredictiveSummary], torch.Tensor]

    def __call__(self, summary: PredictiveSummary) -> torch.Tensor:
        """The score of each input of ``summary``, ``(B,)``.

        Args:
            summary: Summaries of the passes.

        Returns:
            Scores ``(B,)``.
        """
        return self.of(summary)


SCORES: dict[str, Score] = {
    "predictive_entropy": Score(
        "Predictive entropy",
        "H",
        "nats",
        "entropy of the mean prediction (total)",
        lambda s: s.entropy,
    ),
    "mutual_information": Score(
        "Mutual information",
        "MI",
        "nats",
        "predictive minus expected entropy: how much the sampled networks disagree (epistemic)",
        lambda s: s.mutual_information,
    ),
    "expected_entropy": Score(
        "Expected entropy",
        "E[H]",
        "nats",
        "mean entropy of the sampled networks' predictions (aleatoric)",
        lambda s: s.expected_entropy,
    ),
    "variation_ratio": Score(
        "Variation ratio",
        "VR",
        "",
        "fraction of sampled networks not voting for the most voted class",
        lambda s: s.variation_ratio,
    ),
    "max_prob": Score(
        "1 − max probability",
        "1-maxp",
        "",
        "one minus the largest mean class probability",
        lambda s: 1.0 - s.mean.max(-1).values,
    ),
    "softmax_std": Score(
        "Softmax spread (std)",
        "std",
        "",
        "standard deviation over samples of the predicted class's probability",
        lambda s: s.top_std,
    ),
}


def rejection_limits(values: torch.Tensor) -> dict[str, float]:
    """The 90th and 99th percentiles of one score's in-distribution values.

    Args:
        values: One score's values ``(N,)`` on the in-distribution (MNIST test) inputs.

    Returns:
        ``{"p90", "p99"}``: the percentiles.
    """
    q = torch.quantile(values.double(), torch.tensor([0.90, 0.99], dtype=torch.float64))
    return {"p90": q[0].item(), "p99": q[1].item()}


def judge(values: torch.Tensor, limits: Mapping[str, float]) -> list[str]:
    """Sort inputs into confident, unsure and reject by one score.

    Args:
        values: One score's values ``(B,)``.
        limits: ``{"p90", "p99"}`` of that score, from :func:`rejection_limits`.

    Returns:
        Per input: :data:`REJECT` above ``limits["p99"]``, :data:`UNSURE` above ``"p90"``, else
        :data:`CONFIDENT`.
    """
    return [
        REJECT if v > limits["p99"] else UNSURE if v > limits["p90"] else CONFIDENT
        for v in values.tolist()
    ]


def verdict(
    summary: PredictiveSummary, thresholds: Thresholds, score: str = DEFAULT_SCORE
) -> list[str]:
    """A plain sentence per input, by :func:`judge` on ``score`` with the model's ``thresholds``.

    Args:
        summary: Summaries of the passes on ``B`` inputs.
        thresholds: Per score name, its ``{"p90", "p99"}`` on the MNIST test set.
        score: Name of the score in :data:`SCORES`.

    Returns:
        ``B`` sentences: ``"3, confident"``, ``"probably 8, but unsure"`` or ``"I don't know"``.
    """
    sentences = {
        CONFIDENT: "{}, confident",
        UNSURE: "probably {}, but unsure",
        REJECT: "I don't know",
    }
    categories = judge(SCORES[score](summary), thresholds[score])
    return [
        sentences[c].format(k) for c, k in zip(categories, summary.predicted.tolist(), strict=True)
    ]


def reasons(
    summary: PredictiveSummary,
    thresholds: Thresholds,
    score: str = DEFAULT_SCORE,
    examples: str = "real test digits",
) -> list[str]:
    """Why :func:`verdict` said what it said, one line per input, in a student's words.

    Args:
        summary: Summaries of the passes on ``B`` inputs.
        thresholds: Per score name, its ``{"p90", "p99"}`` on the model's own test set.
        score: Name of the score in :data:`SCORES`.
        examples: What that test set holds, as the student should read it.

    Returns:
        ``B`` lines, e.g. ``"unsure: more uncertain than 90 % of real test digits (predictive
        entropy 0.024 nats, their 90 % limit 0.003)"``.
    """
    info, limits = SCORES[score], thresholds[score]
    values = SCORES[score](summary)
    unit = f" {info.unit}" if info.unit else ""
    heads = {
        CONFIDENT: (f"confident: as certain as 90 % of {examples}", "p90"),
        UNSURE: (f"unsure: more uncertain than 90 % of {examples}", "p90"),
        REJECT: (f"more uncertain than 99 % of {examples}", "p99"),
    }
    lines = []
    for value, category in zip(values.tolist(), judge(values, limits), strict=True):
        head, limit = heads[category]
        lines.append(
            f"{head} ({info.title.lower()} {value:.3f}{unit}, "
            f"their {limit[1:]} % limit {limits[limit]:.3f})"
        )
    return lines


def seeded_summary(
    model: torch.nn.Module, x: torch.Tensor, n_samples: int, seed: int = 0
) -> PredictiveSummary:
    """The summary of ``n_samples`` passes with fixed Monte-Carlo noise.

    The caller's random state is unchanged, and the same inputs always show the same numbers.

    Args:
        model: The network.
        x: Inputs ``(B, 1, 28, 28)`` or ``(B, 784)``.
        n_samples: Monte-Carlo passes.
        seed: Seed of the noise.

    Returns:
        The summary of the passes' probabilities.
    """
    with seeded(seed):
        return summarize(predictive_samples(model, x, n_samples))
