"""Point-estimate MLP and MC dropout (Gal & Ghahramani 2016): the same ReLU network.

The second keeps dropout after each hidden layer on at prediction time. Both may start with a
few convolutions (``ModelConfig.conv``, laid out as ``ModelConfig.conv_layout``), the small CNN
that active learning on images needs (Gal et al. 2017); dropout then also follows the
convolutional features, so the passes of MC dropout share those features.

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

from core.engine.dropout import bit_dropout
from core.engine.interface import CONV_LAYOUTS, ModelConfig, MonteCarloModule, flat

Dropout = Callable[[torch.Tensor, float], torch.Tensor]
"""How a layer's units are dropped: ``(activations, drop probability) → activations``."""

HEAD_ELEMENTS = 1 << 21
"""Activations (passes × images × features) in one chunk of the MC passes through the dense
layers of a CNN: 8 MB of float32, which stays in a CPU's cache (the 100 passes of 2,000 images
through Gal et al.'s head took 5.2 s on one thread in chunks of 5 images, 9.7 s in chunks of
81)."""


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


class DropoutMLP(MLP):
    """MLP with MC dropout after each hidden layer, active at training and prediction.

    Attributes:
        stochastic: True: each pass draws fresh dropout masks.
        dropout_p: Dropout probability, from ``config.dropout``.
    """

    stochastic = True

    def __init__(self, config: ModelConfig) -> None:
        """Build the layers of ``config.sizes`` with dropout probability ``config.dropout``.

        Args:
            config: Architecture and dropout probability of the network.
        """
        super().__init__(config)
        self.dropout_p = config.dropout
        self.conv_dropout_p = config.dropout if config.conv_dropout is None else config.conv_dropout

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes with fresh masks per pass and input.

        With convolutions the features (:meth:`features`, before any dropout) are computed
        once and shared by the passes: the same distribution as ``n_samples`` calls of
        :meth:`forward` at the cost of one pass through the convolutions. Their passes through
        the dense layers draw masks by :func:`~core.engine.dropout.bit_dropout`, a few images
        at a time (:data:`HEAD_ELEMENTS`).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of Monte-Carlo passes.
            lrt: Unused (no weight posterior).

        Returns:
            Logits ``(n_samples, B, C)``.
        """
        if not self.convs:
            return super().sample_logits(x, n_samples, lrt)
        h = self.features(x)
        images = max(1, HEAD_ELEMENTS // (n_samples * h.shape[-1]))
        passes = [self.head(f.expand(n_samples, *f.shape), bit_dropout) for f in h.split(images)]
        return torch.cat(passes, dim=1)

    def scaled_logits(self, x: torch.Tensor) -> torch.Tensor:
        """One deterministic pass with dropout switched off (weight scaling).

        Training drops units and scales the kept ones by 1 / (1 − p), so the network without
        dropout has the expected activations of each layer's input: the usual deterministic
        prediction of a dropout network (Srivastava et al. 2014), not the MC predictive mean.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        return self.head(self.features(x), dropout=None)

    def sample_functions(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """Passes with one mask per hidden unit and pass, shared by all inputs.

        Dense layers only: with convolutions the passes of :meth:`sample_logits` (masks per
        input).

        Args:
            x: Inputs ``(B, in_features)``.
            n_samples: Passes P.

        Returns:
            Outputs ``(P, B, C)``.
        """
        if self.convs:
            return super().sample_functions(x, n_samples)
        h = flat(x).expand(n_samples, *flat(x).shape)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
                keep = torch.rand(n_samples, 1, h.shape[-1], device=h.device) >= self.dropout_p
                h = h * keep / (1 - self.dropout_p)
        return h
