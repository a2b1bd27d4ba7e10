"""Before and after: does the network now read the class's handwriting, and did it forget MNIST?

The class's drawings are split into drawings to learn from and drawings kept aside
(:func:`split_drawings`: by time, the first half and the second, or at random with a seed).
:func:`before_after` adapts a model on the first part (:func:`core.adapt.run.adapt`) and scores
the model before and after (:func:`scores`) on the kept-aside drawings (accuracy, NLL, ECE and
the "I don't know" rate) and on a fixed, seeded subset of the MNIST test set (the error:
forgetting), and lists the kept-aside drawings whose answer changed. :func:`learning_curve`
repeats it for the first 10, 20, 50 and all drawings learned from. :func:`ask_first` replays
active learning on the class's own drawings: the drawings BALD would ask the class to label
first against random picks, and what the network learns from each ten.

The "I don't know" rule is the Draw page's (:func:`core.evaluation.uncertainty.judge`) with the
limits of each model measured on the same MNIST subset, before and after alike.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from core.active.acquisition import acquire
from core.adapt.base import check_drawings
from core.adapt.run import Adapted, Recipe, adapt
from core.classroom.report import assemble_report, predict
from core.data import load_dataset
from core.evaluation.uncertainty import DEFAULT_SCORE, rejection_limits, seeded_summary
from core.methods import Model
from core.progress import ProgressFn, report, share
from core.storage.checkpoints import load_checkpoint

SPLITS = {"time": "First half learned, second half kept aside", "random": "At random"}
"""How the drawings are split → its title."""
CURVE_SIZES = (10, 20, 50)
"""Drawings learned from for the curve (then all of them)."""
MNIST_SUBSET = 1000
"""MNIST test digits of the forgetting check (a seeded subset: fast, the same every time)."""
ASK_COUNT = 10
"""Drawings the network asks about first in the replay."""


def split_drawings(n: int, how: str = "time", seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the drawings to learn from and of those kept aside, half and half.

    Args:
        n: Number of drawings, oldest first.
        how: ``"time"``: the older half is learned (the kept-aside drawings come later, as
            new drawings would); ``"random"``: a seeded random half.
        seed: Seed of the random split.

    Returns:
        ``(learn, kept)``: int64 positions, ``n // 2`` and ``n - n // 2`` of them, each in
        increasing order.

    Raises:
        ValueError: For an unknown ``how``.
    """
    if how not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {how!r}")
    order = torch.arange(n)
    if how == "random":
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    half = n // 2
    return order[:half].sort().values, order[half:].sort().values


def mnist_subset(n: int = MNIST_SUBSET, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed MNIST test digits of the forgetting check.

    Args:
        n: How many.
        seed: Seed of the subset.

    Returns:
        Images ``(n, 1, 28, 28)`` and labels ``(n,)``.

    Raises:
        DatasetUnavailable: If MNIST is missing.
    """
    return load_dataset("mnist", "test", n_inputs=n, seed=seed)


@dataclass(frozen=True)
class Scores:
    """One model's numbers on the kept-aside drawings and on MNIST.

    Attributes:
        accuracy: Fraction of kept-aside drawings read right.
        nll: Mean negative log-likelihood on them (nats).
        ece: Expected calibration error on them.
        dont_know: Fraction of them it says "I don't know" to.
        mnist_error: Error on the MNIST subset.
        predicted: int64 ``(K,)`` its answer on each kept-aside drawing.
    """

    accuracy: float
    nll: float
    ece: float
    dont_know: float
    mnist_error: float
    predicted: torch.Tensor

    def row(self) -> dict[str, float]:
        """The numbers by name (without the answers)."""
        return {
            "accuracy": self.accuracy,
            "nll": self.nll,
            "ece": self.ece,
            "dont_know": self.dont_know,
            "mnist_error": self.mnist_error,
        }


@torch.no_grad()
def scores(
    model: Model,
    kept: tuple[torch.Tensor, torch.Tensor],
    mnist: tuple[torch.Tensor, torch.Tensor],
    n_samples: int,
    seed: int = 0,
) -> Scores:
    """Score a model on the kept-aside drawings and the MNIST subset.

    Args:
        model: The network.
        kept: Kept-aside images ``(K, 1, 28, 28)`` and labels ``(K,)``, K ≥ 1.
        mnist: MNIST images and labels (the "I don't know" limits come from them too).
        n_samples: Monte-Carlo passes per image.
        seed: Seed of the Monte-Carlo noise.

    Returns:
        The scores.
    """
    on_mnist = seeded_summary(model, mnist[0], n_samples, seed)
    mnist_error = float((on_mnist.predicted != mnist[1]).float().mean())
    limits = {DEFAULT_SCORE: rejection_limits(on_mnist.scores()[DEFAULT_SCORE])}
    result = assemble_report(
        "", predict(model, kept[0], n_samples, seed), kept[1], n_samples, limits
    )
    return Scores(
        accuracy=result.accuracy,
        nll=result.metrics["nll"],
        ece=result.metrics["ece"],
        dont_know=len(result.dont_know) / len(result),
        mnist_error=mnist_error,
        predicted=result.predicted,
    )


Pair = tuple[torch.Tensor, torch.Tensor]
"""Images ``(N, 1, 28, 28)`` in [0, 1] and their int64 labels ``(N,)``."""


@dataclass(frozen=True)
class Trial:
    """What a model learns from and is scored on, before and after.

    Attributes:
        learn: The drawings to learn from, in the order they are taken.
        kept: The drawings kept aside (K ≥ 1 to compare).
        mnist: The MNIST subset (:func:`mnist_subset`): the forgetting check.
        n_samples: Monte-Carlo passes of every score (and of BALD).
    """

    learn: Pair
    kept: Pair
    mnist: Pair
    n_samples: int = 20

    def scores(self, model: Model, seed: int) -> Scores:
        """``model``'s :func:`scores` on the kept-aside drawings and MNIST, seeded."""
        return scores(model, self.kept, self.mnist, self.n_samples, seed)


@dataclass(frozen=True)
class BeforeAfter:
    """A model before and after learning from the class's drawings.

    Attributes:
        checkpoint: The model it started from.
        before: Its scores as trained.
        after: The adapted model's scores.
        changed: Kept-aside positions whose answer changed, as
            ``(position, digit meant, answer before, answer after)``.
        adapted: The adapted model (and where it was saved).
        learned: Number of drawings learned from.
    """

    checkpoint: str
    before: Scores
    after: Scores
    changed: list[tuple[int, int, int, int]]
    adapted: Adapted
    learned: int


def before_after(
    checkpoint: str | Path,
    trial: Trial,
    recipe: Recipe | None = None,
    *,
    name: str | None = None,
    owner: str = "",
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> BeforeAfter | None:
    """Adapt a model on ``trial.learn`` and compare it before and after on the kept and MNIST.

    Args:
        checkpoint: The trained model (only read).
        trial: The drawings to learn from, those kept aside (K ≥ 1), the MNIST subset and the
            scores' passes.
        recipe: How it adapts (its seed seeds the scores' noise too); None for the defaults.
        name: Save the adapted model as ``user:NAME``; None: do not save.
        owner: Who owns the saved model.
        progress: Gets the fraction done.
        cancel: Setting it stops the adaptation; nothing is saved.

    Returns:
        The comparison, or None when cancelled.

    Raises:
        ValueError: As :func:`~core.adapt.run.adapt` (too few drawings to learn from, one
            digit only, a kind that cannot adapt), or without kept-aside drawings.
    """
    recipe = recipe or Recipe()
    learn, kept = trial.learn, trial.kept
    check_drawings(*learn)
    if len(kept[1]) == 0:
        raise ValueError("no drawings are kept aside to test on")
    shipped, _ = load_checkpoint(checkpoint)
    before = trial.scores(shipped, recipe.seed)
    report(progress, 0.1, "scored before")
    adapted = adapt(
        checkpoint,
        *learn,
        recipe,
        name=name,
        owner=owner,
        progress=lambda f, m: report(progress, 0.1 + 0.8 * f, m),
        cancel=cancel,
    )
    if adapted is None:
        return None
    after = trial.scores(adapted.model, recipe.seed)
    report(progress, 1.0, "scored after")
    moved = (before.predicted != after.predicted).nonzero().flatten().tolist()
    changed = [
        (i, int(kept[1][i]), int(before.predicted[i]), int(after.predicted[i])) for i in moved
    ]
    return BeforeAfter(str(checkpoint), before, after, changed, adapted, len(learn[1]))


def curve_sizes(n: int) -> list[int]:
    """How many drawings each point of the curve learns from.

    Args:
        n: Drawings there are to learn from.

    Returns:
        10, 20 and 50 where below ``n``, then ``n``.
    """
    return [k for k in CURVE_SIZES if k < n] + [n]


def learning_curve(
    checkpoint: str | Path,
    trial: Trial,
    recipe: Recipe | None = None,
    *,
    before: Scores | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> list[dict] | None:
    """Kept-aside accuracy and MNIST error after learning from the first 10, 20, 50, all drawings.

    A point whose drawings are all one digit is left out (nothing to learn from).

    Args:
        checkpoint: The trained model.
        trial: The drawings to learn from (in the order they are taken), those kept aside, the
            MNIST subset and the scores' passes.
        recipe: How each point adapts (its seed seeds the scores too); None for the defaults.
        before: The model's scores as trained, if already computed (same trial and seed); None
            computes them.
        progress: Gets the fraction done.
        cancel: Stops between and within points.

    Returns:
        Rows ``{"drawings", "accuracy", "mnist_error"}`` (the first for 0 drawings: the
        model as trained), or None when cancelled.
    """
    recipe = recipe or Recipe()
    start = before or trial.scores(load_checkpoint(checkpoint)[0], recipe.seed)
    rows = [{"drawings": 0, "accuracy": start.accuracy, "mnist_error": start.mnist_error}]
    sizes = curve_sizes(len(trial.learn[1]))
    for i, k in enumerate(sizes):
        x, y = trial.learn[0][:k], trial.learn[1][:k]
        if len(y.unique()) < 2:
            continue
        adapted = adapt(
            checkpoint,
            x,
            y,
            recipe,
            cancel=cancel,
            progress=share(progress, i, len(sizes), f"{k} drawings"),
        )
        if adapted is None:
            return None
        after = trial.scores(adapted.model, recipe.seed)
        rows.append({"drawings": k, "accuracy": after.accuracy, "mnist_error": after.mnist_error})
    report(progress, 1.0, "done")
    return rows


@dataclass(frozen=True)
class Asked:
    """Which drawings one way of picking asks the class to label first, and what that teaches.

    Attributes:
        how: ``"bald"`` or ``"random"``.
        positions: int64 ``(count,)`` positions among the drawings to learn from.
        scores: Their acquisition scores (BALD's mutual information in nats; random numbers).
        accuracy: Kept-aside accuracy after learning from them alone (None when they are all
            one digit).
    """

    how: str
    positions: torch.Tensor
    scores: torch.Tensor
    accuracy: float | None


def ask_first(
    checkpoint: str | Path, trial: Trial, recipe: Recipe | None = None, count: int = ASK_COUNT
) -> list[Asked]:
    """Replay active learning on the class's drawings: BALD's first picks against random ones.

    The labels are known, so this is a replay: the network scores the drawings to learn from
    by BALD (the mutual information between its answer and its weights: where its sampled
    networks disagree) and asks about the ``count`` highest; random picking takes ``count``
    at random. Each set is then learned from alone, and the kept-aside accuracy says which
    taught more. A network without weight uncertainty (a plain MLP) has BALD 0 everywhere and
    asks about the first drawings.

    Args:
        checkpoint: The trained model.
        trial: The drawings to pick from, those kept aside, the MNIST subset (for the scores)
            and the passes of BALD and of the scores.
        recipe: How each set adapts (its seed seeds the passes and the random picks too); None
            for the defaults.
        count: Drawings picked.

    Returns:
        BALD's picks, then random picking's.
    """
    recipe = recipe or Recipe()
    learn = trial.learn
    shipped, _ = load_checkpoint(checkpoint)
    summary = seeded_summary(shipped, learn[0], trial.n_samples, recipe.seed)
    generator = torch.Generator().manual_seed(recipe.seed)
    result = []
    for how in ("bald", "random"):
        positions, values = acquire(summary, how, count, generator)
        x, y = learn[0][positions], learn[1][positions]
        accuracy = None
        if len(y.unique()) >= 2 and len(y) >= 3:
            adapted = adapt(checkpoint, x, y, recipe)
            accuracy = trial.scores(adapted.model, recipe.seed).accuracy
        result.append(Asked(how, positions, values.float(), accuracy))
    return result
