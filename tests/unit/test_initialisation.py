"""Initial weights: Keras' Glorot-uniform (versions 1 and 0.3) against its closed-form bound and
variance."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core.engine.initialisation import INITIALISATIONS
from core.engine.interface import ModelConfig
from core.methods import build_model


def gal_cnn() -> nn.Module:
    config = ModelConfig(
        kind="dropout",
        hidden=(128,),
        conv=(32, 32),
        conv_layout="pooled",
        params={"conv_dropout": 0.25},
    )
    return build_model(config, seed=0)


# Keras 1 counts a kernel's positions in both fans; Keras 0.3 left them out of fan_out
KERAS_FANS = {
    "glorot": lambda out, inp, positions: (inp * positions, out * positions),
    "glorot_keras03": lambda out, inp, positions: (inp * positions, out),
}


@pytest.mark.parametrize("name", sorted(KERAS_FANS))
def test_glorot_draws_each_layers_weights_from_its_uniform_and_zeroes_the_biases(name):
    network = gal_cnn()
    INITIALISATIONS[name](network, torch.Generator().manual_seed(1))
    layers = [m for m in network.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    assert len(layers) == 4
    for layer in layers:
        w = layer.weight
        positions = w[0, 0].numel() if w.dim() == 4 else 1
        fan_in, fan_out = KERAS_FANS[name](w.shape[0], w.shape[1], positions)
        bound = (6 / (fan_in + fan_out)) ** 0.5
        assert w.abs().max() <= bound and layer.bias.abs().max() == 0
        # U(-b, b) has variance b² / 3; ≥ 512 weights give a relative error below ~10 %
        assert w.var().item() == pytest.approx(bound**2 / 3, rel=0.15)


def test_keras_03_widens_only_the_convolutions_and_the_first_most():
    wide, narrow = gal_cnn(), gal_cnn()
    INITIALISATIONS["glorot_keras03"](wide, torch.Generator().manual_seed(1))
    INITIALISATIONS["glorot"](narrow, torch.Generator().manual_seed(1))
    convs = [m for m in wide.modules() if isinstance(m, nn.Conv2d)]
    first = convs[0].weight  # 32 filters of one 4 × 4 channel: ±√(6 / 48) against ±√(6 / 528)
    assert first.abs().max().item() == pytest.approx((6 / 48) ** 0.5, rel=0.02)
    ratios = [
        a.weight.abs().max().item() / b.weight.abs().max().item()
        for a, b in zip(wide.modules(), narrow.modules(), strict=True)
        if isinstance(a, (nn.Linear, nn.Conv2d))
    ]
    assert ratios[0] > 3 and 1.2 < ratios[1] < 1.6  # the two convolutions
    assert ratios[2:] == pytest.approx([1, 1], rel=0.02)  # the dense layers: the same fans


def test_initialisations_are_seeded_and_torch_keeps_the_built_network():
    a, b = gal_cnn(), gal_cnn()
    built = [p.clone() for p in a.parameters()]
    INITIALISATIONS["torch"](a, torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), built, strict=True))
    INITIALISATIONS["glorot"](a, torch.Generator().manual_seed(1))
    INITIALISATIONS["glorot"](b, torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.layers[0].weight, built[4])


@pytest.mark.parametrize("name", sorted(KERAS_FANS))
def test_glorot_refuses_a_network_without_its_layers(name):
    bbb = build_model(ModelConfig(kind="bbb", hidden=(8,)), seed=0)
    with pytest.raises(ValueError, match=f"{name} initialises nn.Linear and nn.Conv2d"):
        INITIALISATIONS[name](bbb, torch.Generator())
