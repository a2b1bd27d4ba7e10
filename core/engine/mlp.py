"""Point-estimate MLP and MC dropout (Gal & Ghahramani 2016): the same ReLU network, the second
with dropout after each hidden layer kept on at prediction time."""

from __future__ import annotations

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from core.engine.interface import ModelConfig, flat


class MLP(nn.Module):
    """Plain ReLU MLP of ``nn.Linear`` layers; one deterministic pass."""

    stochastic = False
    weight_posterior = False
    dropout_p = 0.0

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(config.sizes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = flat(x)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
                if self.dropout_p > 0:
                    h = F.dropout(h, self.dropout_p, training=True)
        return h

    def forward_with_kl(self, x, noise=None, lrt=None, with_kl: bool = True):
        """Same signature as :meth:`BayesMLP.forward_with_kl`; the complexity cost is 0 (the
        weight decay of a point estimate is the optimiser's business)."""
        logits = self.forward(x)
        return logits, (logits.new_zeros(()) if with_kl else None)


class DropoutMLP(MLP):
    """MLP with MC dropout after each hidden layer, active at training and prediction."""

    stochastic = True

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.dropout_p = config.dropout
