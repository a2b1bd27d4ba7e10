"""Bayes by Backprop (Blundell et al. 2015): an MLP of mean-field Gaussian ``BayesLinear``
layers."""

from __future__ import annotations

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from core.engine.interface import ModelConfig, flat
from core.engine.layers import BayesLinear, LayerNoise
from core.engine.priors import prior_from_dict


class BayesMLP(nn.Module):
    """MLP of :class:`~core.engine.layers.BayesLinear` layers with ReLU (default 784-400-400-10)."""

    stochastic = True
    weight_posterior = True

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        prior = prior_from_dict(config.prior)
        self.layers = nn.ModuleList(
            BayesLinear(a, b, prior, init_sigma=config.init_sigma)
            for a, b in pairwise(config.sizes)
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
        h, kl = flat(x), None
        for i, layer in enumerate(self.layers):
            h, layer_kl = layer(h, None if noise is None else noise[i], lrt=lrt, with_kl=with_kl)
            if with_kl:
                kl = layer_kl if kl is None else kl + layer_kl
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h, kl

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_kl(x, with_kl=False)[0]

    def draw_noise(self, n_samples: int, batch_size: int, lrt: bool) -> list[LayerNoise]:
        """Standard-normal noise for ``n_samples`` passes: per layer, tensors with a leading
        ``n_samples`` dim (``weight``/``bias`` shaped like the parameters; ``out`` ``(B, out)``)."""
        noise = []
        for layer in self.layers:
            mu = layer.weight_mu
            n = {
                "weight": torch.randn(n_samples, *mu.shape, device=mu.device),
                "bias": torch.randn(n_samples, layer.out_features, device=mu.device),
            }
            if lrt:
                n["out"] = torch.randn(n_samples, batch_size, layer.out_features, device=mu.device)
            noise.append(n)
        return noise
