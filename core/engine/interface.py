"""The one model interface of the lab: configuration, kinds and the :class:`LabModel` protocol.

Every model maps images ``(B, 1, 28, 28)`` (or flat ``(B, 784)``) to class logits ``(B, C)`` and
offers:

* ``forward(x)``: one stochastic forward pass (a deterministic pass for a point estimate);
* ``forward_with_kl(x, noise=None, lrt=None, with_kl=True) -> (logits, kl)``: the same pass
  plus the complexity cost in nats (0 for models without a weight posterior), used by
  :mod:`core.engine.objective`;
* ``stochastic``: whether repeated passes differ; ``n_samples`` passes for a batch are drawn
  by :func:`core.engine.sampler.predictive_samples`;
* ``weight_posterior``: whether each weight has a posterior mean and standard deviation
  (signal-to-noise pruning applies).

A new method is one module with a class following :class:`LabModel` plus one entry in
:data:`core.engine.models.MODEL_CLASSES` (and a :class:`ModelKind` member).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

import torch


class ModelKind(StrEnum):
    """Model families; the value is what checkpoints and configs store."""

    BBB = "bbb"  # Bayes by Backprop, mean-field Gaussian posterior over weights
    MLP = "mlp"  # point estimate
    DROPOUT = "dropout"  # MC dropout


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a model; JSON-serialisable via :meth:`to_dict`.

    Attributes:
        kind: a :class:`ModelKind` value.
        hidden: hidden layer widths.
        prior: BBB only: ``{"kind": "gaussian", "sigma": s}`` or
            ``{"kind": "mixture", "pi": p, "sigma1": s1, "sigma2": s2}``.
        init_sigma: BBB only: initial posterior standard deviation of every weight.
        lrt: BBB only: use local reparameterisation for stochastic passes by default.
        dropout: dropout probability of the MC-dropout kind.
    """

    kind: str = ModelKind.BBB.value
    hidden: tuple[int, ...] = (400, 400)
    in_features: int = 784
    num_classes: int = 10
    prior: dict = field(default_factory=lambda: {"kind": "gaussian", "sigma": 1.0})
    init_sigma: float = 1e-3
    lrt: bool = False
    dropout: float = 0.5

    def __post_init__(self) -> None:
        try:
            kind = ModelKind(self.kind)
        except ValueError:
            kinds = [k.value for k in ModelKind]
            raise ValueError(f"model kind must be one of {kinds}, got {self.kind!r}") from None
        object.__setattr__(self, "kind", kind.value)
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    @property
    def sizes(self) -> list[int]:
        """Layer widths from input to output, e.g. ``[784, 400, 400, 10]``."""
        return [self.in_features, *self.hidden, self.num_classes]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        return cls(**d)


@runtime_checkable
class LabModel(Protocol):
    """What every model kind offers to the sampler, the objective, the studies and the pages."""

    config: ModelConfig
    stochastic: bool
    weight_posterior: bool
    layers: torch.nn.ModuleList

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass: logits ``(B, C)``."""
        ...

    def forward_with_kl(
        self,
        x: torch.Tensor,
        noise: list[dict[str, torch.Tensor]] | None = None,
        lrt: bool | None = None,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One pass: logits ``(B, C)`` and the complexity cost in nats (None if not asked)."""
        ...


def flat(x: torch.Tensor) -> torch.Tensor:
    """Images ``(B, 1, 28, 28)`` → ``(B, 784)``; flat input is returned as it is."""
    return x.reshape(x.shape[0], -1) if x.dim() > 2 else x
