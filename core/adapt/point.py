"""Point estimates adapt by fine-tuning: the baseline, with an optional pull to the old weights.

A plain MLP, MC dropout and every member of a deep ensemble keep training on the class's
drawings from their trained weights θ₀ (all layers). With ``pull`` = λ > 0 the objective gains
λ/2 ‖θ − θ₀‖²: a Gaussian prior N(θ₀, 1/λ) centred on the old weights, the same for every
weight (the second baseline: it knows where the network was, not how sure MNIST made it of
each weight). The default λ = 100 is σ = 0.1, about the median posterior σ of the shipped
Bayes-by-Backprop network's hidden layers, chosen before any adaptation was measured.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from core.adapt.base import Adapter, Objective, StudyArm
from core.methods.base import Setting

PULL = Setting(
    "pull",
    "Pull to the old weights λ",
    "0: plain fine-tuning. Above 0, every weight is pulled back towards its MNIST value by a "
    "spring of strength λ, the same for every weight.",
    0.0,
    options=(0.0, 1.0, 10.0, 100.0, 1000.0),
)
DEFAULT_PULL = 100.0
"""The pull of the second baseline: σ = 0.1 (see the module docstring)."""


def objective(model: nn.Module, options: dict) -> Objective:
    """The drawings' NLL (every training pass: an ensemble's members each) plus the pull.

    Args:
        model: A fresh copy of the trained network.
        options: ``{"pull"}``: λ (0 for plain fine-tuning).

    Returns:
        The objective; its ``anchor`` is the old weights by name (None for λ = 0).
    """
    pull = float(options["pull"])
    params = dict(model.named_parameters())
    old = {name: p.detach().clone() for name, p in params.items()} if pull > 0 else None

    def nll(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        passes, _ = model.training_passes(x, 1)  # (P, N, C): P = 1, or an ensemble's members
        target = y.repeat(passes.shape[0])
        return F.cross_entropy(passes.reshape(-1, passes.shape[-1]), target, reduction="sum")

    def penalty() -> torch.Tensor:
        if old is None:
            return torch.zeros(())
        return 0.5 * pull * sum(((params[n] - old[n]) ** 2).sum() for n in old)

    return Objective(list(params.values()), nll, penalty, anchor=old)


def adapter(kind: str, network: str, title: str) -> Adapter:
    """The fine-tuning adapter of a point-estimate kind.

    Args:
        kind: The kind's value.
        network: What is fine-tuned, in words (e.g. ``"every member"``).
        title: The kind's name in the stored study's rows (e.g. ``"Ensemble"``).

    Returns:
        The adapter, with the ``pull`` option, measured in the study fine-tuned (``kind``) and
        pulled by :data:`DEFAULT_PULL` (``kind_pull``).
    """
    return Adapter(
        kind,
        f"Plain fine-tuning: {network} keeps training on the class's drawings from its MNIST "
        "weights; with a pull, each weight is also drawn back towards its old value.",
        objective,
        settings=(PULL,),
        study=(
            StudyArm("", f"{title}, fine-tuned", {"pull": 0.0}),
            StudyArm("_pull", f"{title}, pulled (λ = {DEFAULT_PULL:g})", {"pull": DEFAULT_PULL}),
        ),
    )
