"""The lab's backbone: a ReLU MLP, optionally after a few convolutions, as a point estimate.

The network may start with a few convolutions (``ModelConfig.conv``, laid out as
``ModelConfig.conv_layout``), the small CNN that active learning on images needs (Gal et al.
2017). Methods build on it: MC dropout (:mod:`core.methods.dropout`) switches its dropout
layers on, the sample sets and SWAG (:mod:`core.engine.samples`) store several of its weights.

The convolutions keep their activations channels-last, the layout in which oneDNN's CPU kernels
for these small convolutions and the pooling ran fastest (a training step of Gal et al.'s CNN
took 15–25 % less time on one thread here, its test pass over 10,000 images a third less); the
features they hand to the dense layers are flattened in the usual channel, row, column order.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from core.engine.interface import CONV_LAYOUTS, ModelConfig, MonteCarloModule, flat

Dropout = Callable[[torch.Tensor, float], torch.Tensor]
"""How a layer's units are dropped: ``(activations, drop probability) → activations``."""


def train_dropout(h: torch.Tensor, p: float) -> torch.Tensor:
    """``F.dropout`` in training mode: the masks of training passes."""
    return F.dropout(h, p, training=True)


class MLP(MonteCarloModule):
    """Plain ReLU MLP of ``nn.Linear`` layers; one deterministic pass.

    Attributes:
        stochastic: False: repeated passes give the same logits.
        weight_posterior: False: point-estimate weights, no posterior σ.
        dropout_p: Dropout probability after each hidden layer (0 here: no dropout).
        conv_dropout_p: Dropout probability of the convolutional features (0 here).
        config: The architecture of the network.
        convs: The ``nn.Conv2d`` layers before the dense ones (empty for a plain MLP).
        layers: The ``nn.Linear`` layers, input to output.
    """

    stochastic = False
    weight_posterior = False
    dropout_p = 0.0
    conv_dropout_p = 0.0

    def __init__(self, config: ModelConfig) -> None:
        """Build the convolutions of ``config.conv`` and the layers of ``config.sizes``.

        Args:
            config: Architecture of the network.
        """
        super().__init__()
        self.config = config
        self.layout = CONV_LAYOUTS[config.conv_layout]
        k, stride, padding = self.layout.kernel, self.layout.stride, self.layout.padding
        self.convs = nn.ModuleList(
            nn.Conv2d(a, b, k, stride=stride, padding=padding)
            for a, b in pairwise((1, *config.conv))
        )
        self.convs.to(memory_format=torch.channels_last)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(config.sizes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass (with fresh dropout masks when ``dropout_p > 0``).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        return self.head(self.features(x))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The deterministic part: the convolutions and pooling, flattened (no dropout).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            ``(B, config.sizes[0])``; without convolutions, the flat input.
        """
        h = x
        if self.convs:
            side = self.config.image_side
            h = h.reshape(-1, 1, side, side).contiguous(memory_format=torch.channels_last)
            for conv in self.convs[:-1]:
                h = F.relu(conv(h))
            h = self.convs[-1](h)
            if self.layout.pool > 1:  # max-pooling and ReLU commute: pool the fewer values first
                h = F.max_pool2d(h, self.layout.pool)
            h = F.relu(h)
        return flat(h)

    def head(self, h: torch.Tensor, dropout: Dropout | None = train_dropout) -> torch.Tensor:
        """The dense layers on :meth:`features` (after their dropout, with convolutions).

        Args:
            h: Features ``(..., config.sizes[0])``; every leading index draws its own masks.
            dropout: How units are dropped; None to leave out every dropout layer.

        Returns:
            Logits ``(..., C)``.
        """
        if dropout is not None and self.convs and self.conv_dropout_p > 0:
            h = dropout(h, self.conv_dropout_p)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
                if dropout is not None and self.dropout_p > 0:
                    h = dropout(h, self.dropout_p)
        return h
