"""What a method declares to adapt a trained model to new labelled drawings.

An :class:`Adapter` says how one model kind learns from a few new drawings, starting from a
trained model: which tensors move and what they are pulled towards (an
:class:`Objective`: the summed negative log-likelihood of the drawings plus a penalty in nats),
and what is updated after the last step (:attr:`Objective.finish`). A kind that cannot adapt
honestly has no objective and a :attr:`Adapter.reason` in a student's words.

The optimisation is the same for every kind (:func:`core.adapt.run.adapt_model`): full-batch
Adam on the objective for ``steps`` steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from core.methods.base import Setting

MIN_DRAWINGS = 3
"""Fewest drawings a class must have sent before a model may learn from them."""


class CannotAdapt(ValueError):
    """The model's kind has no honest way to learn from a few new drawings (one line)."""


@dataclass
class Objective:
    """What one adaptation optimises.

    Attributes:
        params: The tensors that move (leaves with ``requires_grad``).
        nll: ``nll(x, y)``: the summed negative log-likelihood of images ``(N, 1, 28, 28)``
            with labels ``(N,)`` (nats; an average over the kind's Monte-Carlo passes).
        penalty: ``penalty()``: what keeps the model near what it knew, in nats (0 for plain
            fine-tuning).
        finish: ``finish(x, y)``: called once after the last step (e.g. Laplace's posterior
            precision gains the new drawings' curvature); returns metadata to keep.
        anchor: What the penalty pulls towards, as the kind keeps it (BBB: the prior, the
            trained posterior; Laplace: θ* and its precision; point estimates: the old
            weights), for tests and pages; None for plain fine-tuning.
    """

    params: list[nn.Parameter]
    nll: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    penalty: Callable[[], torch.Tensor]
    finish: Callable[[torch.Tensor, torch.Tensor], dict] = field(default=lambda x, y: {})
    anchor: Any = None

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The negative log-likelihood of ``x`` plus the penalty (nats); 0 + penalty for N = 0."""
        if len(x) == 0:
            return self.penalty()
        return self.nll(x, y) + self.penalty()


@dataclass(frozen=True)
class StudyArm:
    """One way a kind is measured in the stored adaptation study (:mod:`core.adapt.bench`).

    Attributes:
        suffix: What the row's name adds to the kind (``""``: the kind itself; ``"_pull"``).
        title: The row's title on the page, e.g. ``"MLP, fine-tuned"``.
        options: The adaptation options it runs with (the kind's defaults for the others).
    """

    suffix: str
    title: str
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Adapter:
    """How one model kind learns from new drawings.

    Attributes:
        kind: The kind of the method it adapts (a key of :data:`core.methods.METHODS`).
        summary: What adapting does, in a student's words (one or two sentences).
        objective: ``objective(model, options)`` builds the :class:`Objective` on ``model``
            (which it may modify: the caller passes a fresh copy); None when the kind cannot
            adapt.
        settings: The kind's own options (besides the steps and learning rate every kind has).
        reason: Why the kind cannot adapt ("" when it can).
        study: How the stored adaptation study measures the kind, one row each (none: it is
            not measured).
    """

    kind: str
    summary: str
    objective: Callable[[nn.Module, dict], Objective] | None
    settings: tuple[Setting, ...] = ()
    reason: str = ""
    study: tuple[StudyArm, ...] = ()

    @property
    def can_adapt(self) -> bool:
        """Whether the kind has an objective."""
        return self.objective is not None

    def own(self, given: dict) -> dict:
        """The values of ``given`` that are this kind's options (the others are other kinds').

        Args:
            given: Values by setting name, for any kinds.

        Returns:
            Those of :attr:`settings`, unchecked.
        """
        return {s.name: given[s.name] for s in self.settings if s.name in given}

    def options(self, given: dict | None = None) -> dict:
        """The kind's options: ``given`` checked, the others at their defaults.

        Args:
            given: Values by setting name (None: all defaults).

        Returns:
            Setting name → value.

        Raises:
            ValueError: For an unknown setting or a bad value, in one line.
        """
        given = dict(given or {})
        names = {s.name for s in self.settings}
        unknown = set(given) - names
        if unknown:
            raise ValueError(f"{self.kind} has no adaptation option {', '.join(sorted(unknown))}")
        return {s.name: s.check(given.get(s.name, s.default)) for s in self.settings}


COMMON_SETTINGS = (
    Setting(
        "steps",
        "Steps",
        "How many times the network looks at all the drawings and changes a little.",
        100,
        low=0,
        high=2000,
    ),
    Setting(
        "lr",
        "Learning rate",
        "How big each change is (Adam's step size).",
        1e-3,
        options=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
    ),
)
"""What every kind's adaptation takes: full-batch Adam steps and their learning rate."""


def check_drawings(images: torch.Tensor, labels: torch.Tensor) -> None:
    """Refuse drawings no model should learn from, in one line.

    Args:
        images: float ``(N, 1, 28, 28)`` in [0, 1].
        labels: int ``(N,)`` digits 0–9.

    Raises:
        ValueError: If the shapes disagree, there are fewer than :data:`MIN_DRAWINGS`, or all
            are of one digit (a network taught one answer learns to give it always).
    """
    if images.dim() != 4 or images.shape[1:] != (1, 28, 28):
        raise ValueError(f"drawings must be (N, 1, 28, 28) images, got {tuple(images.shape)}")
    if labels.dim() != 1 or len(labels) != len(images):
        raise ValueError(
            f"need one label per drawing: {len(images)} drawings, {len(labels)} labels"
        )
    if len(images) < MIN_DRAWINGS:
        raise ValueError(
            f"the class has sent {len(images)} drawing(s): a network learns from at least "
            f"{MIN_DRAWINGS}"
        )
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError("labels must be digits 0 to 9")
    digits = labels.unique()
    if len(digits) < 2:
        raise ValueError(
            f"every drawing is a {int(digits[0])}: a network taught one digit learns to answer "
            "it always; send drawings of at least two digits"
        )
