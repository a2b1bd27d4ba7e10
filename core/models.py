"""The three model families, sharing one interface.

Every model maps images ``(B, 1, 28, 28)`` (or flat ``(B, 784)``) to class logits ``(B, C)``:

* ``forward(x)``: one stochastic forward pass (a deterministic pass for :class:`MLP`);
* ``forward_with_kl(x, noise=None, lrt=None) -> (logits, kl)``: the same pass plus the
  complexity cost in nats (0 for non-Bayesian models), used by :mod:`core.objective`;
* ``stochastic``: whether repeated passes differ. ``n`` stochastic passes for a batch are
  drawn by :func:`core.predictive.predictive_samples`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from core.layers import BayesLinear, LayerNoise
from core.priors import prior_from_dict

MODEL_KINDS = ("bbb", "mlp", "dropout")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a model; JSON-serialisable via :meth:`to_dict`.

    kind: ``"bbb"`` (Bayes by Backprop), ``"mlp"`` or ``"dropout"`` (MC dropout).
    prior: ``{"kind": "gaussian", "sigma": s}`` or
    ``{"kind": "mixture", "pi": p, "sigma1": s1, "sigma2": s2}``.
    lrt: BBB only, use local reparameterisation for stochastic passes by default.
    """

    kind: str = "bbb"
    hidden: tuple[int, ...] = (400, 400)
    in_features: int = 784
    num_classes: int = 10
    prior: dict = field(default_factory=lambda: {"kind": "gaussian", "sigma": 1.0})
    init_sigma: float = 1e-3
    lrt: bool = False
    dropout: float = 0.5

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model kind must be one of {MODEL_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        return cls(**d)


def _flat(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(x.shape[0], -1) if x.dim() > 2 else x


class BayesMLP(nn.Module):
    """MLP of :class:`~core.layers.BayesLinear` layers with ReLU (default 784-400-400-10)."""

    stochastic = True

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        prior = prior_from_dict(config.prior)
        sizes = [config.in_features, *config.hidden, config.num_classes]
        self.layers = nn.ModuleList(
            BayesLinear(a, b, prior, init_sigma=config.init_sigma) for a, b in pairwise(sizes)
        )

    def forward_with_kl(
        self,
        x: torch.Tensor,
        noise: list[LayerNoise] | None = None,
        lrt: bool | None = None,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One stochastic pass: ``(B, C)`` logits and the total complexity cost (nats)."""
        lrt = self.config.lrt if lrt is None else lrt
        h, kl = _flat(x), None
        for i, layer in enumerate(self.layers):
            h, layer_kl = layer(h, None if noise is None else noise[i], lrt=lrt, with_kl=with_kl)
            if with_kl:
                kl = layer_kl if kl is None else kl + layer_kl
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h, kl

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_kl(x, with_kl=False)[0]

    def draw_noise(self, samples: int, batch_size: int, lrt: bool) -> list[LayerNoise]:
        """Standard-normal noise for ``samples`` passes: per layer, tensors with a leading
        ``samples`` dim (``weight``/``bias`` shaped like the parameters; ``out`` ``(B, out)``)."""
        noise = []
        for layer in self.layers:
            mu = layer.weight_mu
            n = {
                "weight": torch.randn(samples, *mu.shape, device=mu.device),
                "bias": torch.randn(samples, layer.out_features, device=mu.device),
            }
            if lrt:
                n["out"] = torch.randn(samples, batch_size, layer.out_features, device=mu.device)
            noise.append(n)
        return noise


class MLP(nn.Module):
    """Plain ReLU MLP; with ``dropout > 0`` (:class:`DropoutMLP`) dropout stays on at
    prediction time (MC dropout, Gal & Ghahramani 2016)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        sizes = [config.in_features, *config.hidden, config.num_classes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(sizes))
        self.p = config.dropout if config.kind == "dropout" else 0.0
        self.stochastic = self.p > 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _flat(x)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
                if self.p > 0:
                    h = F.dropout(h, self.p, training=True)
        return h

    def forward_with_kl(self, x, noise=None, lrt=None, with_kl: bool = True):
        """Same signature as :meth:`BayesMLP.forward_with_kl`; the complexity cost is 0."""
        logits = self.forward(x)
        return logits, (logits.new_zeros(()) if with_kl else None)


class DropoutMLP(MLP):
    """MLP with MC dropout after each hidden layer, active at training and prediction."""


Model = BayesMLP | MLP


def build_model(config: ModelConfig) -> Model:
    """Fresh, randomly initialised model for ``config``."""
    if config.kind == "bbb":
        return BayesMLP(config)
    return DropoutMLP(config) if config.kind == "dropout" else MLP(config)
