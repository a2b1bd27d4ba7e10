"""Initial weights other than PyTorch's, for networks built of ``nn.Linear`` and ``nn.Conv2d``.

PyTorch starts a layer's weights and biases uniform in ±1/√fan_in (``kaiming_uniform_`` with
a = √5), so a ReLU network's activations shrink from layer to layer. Keras, which the papers'
code used, starts the weights from Glorot & Bengio (2010)'s uniform distribution,
U(±√(6 / (fan_in + fan_out))), and the biases at zero: about twice as large for the gal2017
CNN's dense layers. Keras counted a convolution's fans two ways: from version 1 on as
PyTorch's ``xavier_uniform_`` does (in · k² and out · k²), before it (0.3, the version the
gal2017 authors' code ran on) with fan_out = out, the output channels alone — a wider first
layer (±0.35 instead of ±0.11 for 32 4 × 4 filters of one channel). :data:`INITIALISATIONS`
names all three.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

Initialisation = Callable[[nn.Module, torch.Generator], None]
"""Re-initialises a built network in place, drawing from the generator."""

LAYERS = (nn.Linear, nn.Conv2d)
"""The layers an :data:`Initialisation` re-initialises."""


def keep(network: nn.Module, generator: torch.Generator) -> None:
    """PyTorch's own initialisation: leave the network as it was built.

    Args:
        network: The network.
        generator: Unused.
    """


def _glorot_uniform(
    network: nn.Module,
    generator: torch.Generator,
    fans: Callable[[torch.Tensor], tuple[int, int]],
    name: str,
) -> None:
    """Draw every :data:`LAYERS` weight from U(±√(6 / (fan_in + fan_out))), zero the biases."""
    layers = [m for m in network.modules() if isinstance(m, LAYERS)]
    if not layers:
        raise ValueError(f"{name} initialises nn.Linear and nn.Conv2d layers; the network has none")
    with torch.no_grad():
        for layer in layers:
            bound = math.sqrt(6 / sum(fans(layer.weight)))
            nn.init.uniform_(layer.weight, -bound, bound, generator=generator)
            if layer.bias is not None:
                layer.bias.zero_()


def glorot(network: nn.Module, generator: torch.Generator) -> None:
    """Keras' default: Glorot-uniform weights and zero biases in every layer of :data:`LAYERS`.

    For a convolution fan_in and fan_out count the kernel's positions too (in · k² and
    out · k²), as Keras does from version 1 on (and ``nn.init.xavier_uniform_``).

    Args:
        network: The network (changed in place).
        generator: Source of the weights.

    Raises:
        ValueError: If the network has no such layer.
    """

    def fans(weight: torch.Tensor) -> tuple[int, int]:
        positions = weight[0, 0].numel()
        return weight.shape[1] * positions, weight.shape[0] * positions

    _glorot_uniform(network, generator, fans, "glorot")


def glorot_keras03(network: nn.Module, generator: torch.Generator) -> None:
    """Keras 0.3's default: Glorot-uniform with a convolution's fan_out its output channels.

    Keras 0.3 took a kernel of shape (out, in, k, k) to have fan_in = in · k² and
    fan_out = out (Keras 1 and :func:`glorot` count out · k²); a dense layer's fans are its
    inputs and outputs in both. Biases start at zero.

    Args:
        network: The network (changed in place).
        generator: Source of the weights.

    Raises:
        ValueError: If the network has no such layer.
    """
    _glorot_uniform(network, generator, lambda w: (w[0].numel(), w.shape[0]), "glorot_keras03")


INITIALISATIONS: dict[str, Initialisation] = {
    "torch": keep,
    "glorot": glorot,
    "glorot_keras03": glorot_keras03,
}
"""Name → initialisation."""
