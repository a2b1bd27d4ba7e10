"""MC dropout (Gal & Ghahramani 2016): the backbone MLP with dropout kept on at prediction.

Dropout follows each hidden layer and, with convolutions, the convolutional features, so the
passes of MC dropout share those features.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from core.engine.interface import ModelConfig, flat
from core.engine.mlp import MLP
from core.methods.dropout.masks import bit_dropout

HEAD_ELEMENTS = 1 << 21
"""Activations (passes × images × features) in one chunk of the MC passes through the dense
layers of a CNN: 8 MB of float32, which stays in a CPU's cache (the 100 passes of 2,000 images
through Gal et al.'s head took 5.2 s on one thread in chunks of 5 images, 9.7 s in chunks of
81)."""


class DropoutMLP(MLP):
    """MLP with MC dropout after each hidden layer, active at training and prediction.

    Attributes:
        stochastic: True: each pass draws fresh dropout masks.
        dropout_p: Dropout probability, from ``config.params["dropout"]``.
    """

    stochastic = True

    def __init__(self, config: ModelConfig) -> None:
        """Build the layers of ``config.sizes`` with the dropout probabilities of ``params``.

        Args:
            config: Architecture and dropout probability of the network.
        """
        super().__init__(config)
        self.dropout_p = config.params["dropout"]
        self.conv_dropout_p = config.params["conv_dropout"]

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes with fresh masks per pass and input.

        With convolutions the features (:meth:`features`, before any dropout) are computed
        once and shared by the passes: the same distribution as ``n_samples`` calls of
        :meth:`forward` at the cost of one pass through the convolutions. Their passes through
        the dense layers draw masks by :func:`~core.methods.dropout.masks.bit_dropout`, a few images
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
