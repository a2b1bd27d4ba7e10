"""Initial weights other than PyTorch's, for networks built of ``nn.Linear`` and ``nn.Conv2d``.

PyTorch starts a layer's weights and biases uniform in ±1/√fan_in (``kaiming_uniform_`` with
a = √5), so a ReLU network's activations shrink from layer to layer. Keras, which the papers'
code used, starts the weights from Glorot & Bengio (2010)'s uniform distribution,
U(±√(6 / (fan_in + fan_out))), and the biases at zero: about twice as large for the gal2017
CNN's dense layers. :data:`INITIALISATIONS` names both.
"""

from __future__ import annotations

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


def glorot(network: nn.Module, generator: torch.Generator) -> None:
    """Keras' default: Glorot-uniform weights and zero biases in every layer of :data:`LAYERS`.

    For a convolution fan_in and fan_out count the kernel's positions too (in · k² and
    out · k²), as Keras does.

    Args:
        network: The network (changed in place).
        generator: Source of the weights.

    Raises:
        ValueError: If the network has no such layer.
    """
    layers = [m for m in network.modules() if isinstance(m, LAYERS)]
    if not layers:
        raise ValueError("glorot initialises nn.Linear and nn.Conv2d layers; the network has none")
    with torch.no_grad():
        for layer in layers:
            nn.init.xavier_uniform_(layer.weight, generator=generator)
            if layer.bias is not None:
                layer.bias.zero_()


INITIALISATIONS: dict[str, Initialisation] = {"torch": keep, "glorot": glorot}
"""Name → initialisation."""
