"""Initial weights: Keras' Glorot-uniform against its closed-form bound and variance."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core.engine.initialisation import INITIALISATIONS
from core.engine.interface import ModelConfig
from core.methods import build_model


def gal_cnn() -> nn.Module:
    config = ModelConfig(
        kind="dropout", hidden=(128,), conv=(32, 32), conv_layout="pooled", conv_dropout=0.25
    )
    return build_model(config, seed=0)


def test_glorot_draws_each_layers_weights_from_its_uniform_and_zeroes_the_biases():
    network = gal_cnn()
    INITIALISATIONS["glorot"](network, torch.Generator().manual_seed(1))
    layers = [m for m in network.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    assert len(layers) == 4
    for layer in layers:
        w = layer.weight
        receptive = w[0, 0].numel() if w.dim() == 4 else 1
        fan_in, fan_out = w.shape[1] * receptive, w.shape[0] * receptive
        bound = (6 / (fan_in + fan_out)) ** 0.5
        assert w.abs().max() <= bound and layer.bias.abs().max() == 0
        # U(-b, b) has variance b² / 3; ≥ 512 weights give a relative error below ~10 %
        assert w.var().item() == pytest.approx(bound**2 / 3, rel=0.15)


def test_initialisations_are_seeded_and_torch_keeps_the_built_network():
    a, b = gal_cnn(), gal_cnn()
    built = [p.clone() for p in a.parameters()]
    INITIALISATIONS["torch"](a, torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), built, strict=True))
    INITIALISATIONS["glorot"](a, torch.Generator().manual_seed(1))
    INITIALISATIONS["glorot"](b, torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.layers[0].weight, built[4])


def test_glorot_refuses_a_network_without_its_layers():
    bbb = build_model(ModelConfig(kind="bbb", hidden=(8,)), seed=0)
    with pytest.raises(ValueError, match="nn.Linear and nn.Conv2d"):
        INITIALISATIONS["glorot"](bbb, torch.Generator())
