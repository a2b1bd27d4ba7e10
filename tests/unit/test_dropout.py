"""Dropout from random bits (the masks of MC dropout's passes through a CNN's dense layers)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from core.engine.interface import ModelConfig
from core.methods import build_model
from core.methods.dropout.masks import LEVELS, bit_dropout, quantised


@pytest.mark.parametrize("p", [0.25, 0.5, 0.1, 0.0])
def test_units_are_dropped_at_the_rate_asked_and_kept_ones_scaled(p):
    torch.manual_seed(0)
    h = torch.rand(400, 1001) + 0.5  # odd size: the last 64-bit draw is cut
    out = bit_dropout(h, p)
    kept = out != 0
    n = h.numel()
    drop = quantised(p)
    assert abs(drop - p) <= 0.5 / LEVELS
    # the drop rate within 5 binomial standard deviations
    assert abs((~kept).double().mean().item() - drop) <= 5 * (drop * (1 - drop) / n) ** 0.5 + 1e-12
    assert torch.allclose(out[kept], h[kept] / (1 - drop))
    # each unit's expectation stays h: the mean of the ratio out / h is 1
    ratio = (out / h).double().mean().item()
    assert abs(ratio - 1) <= 5 * (drop / (1 - drop) / n) ** 0.5 + 1e-12


def test_the_four_units_of_one_draw_are_independent():
    """Units cut from one 64-bit draw (positions 4k … 4k + 3) must not drop together more or less
    often than independent units: every pair's joint drop rate is p²."""
    torch.manual_seed(1)
    p = 0.25
    dropped = bit_dropout(torch.ones(250_000, 4), p) == 0  # one row = one draw
    n = dropped.shape[0]
    for i in range(4):
        assert abs(dropped[:, i].double().mean().item() - p) < 5 * (p * (1 - p) / n) ** 0.5
        for j in range(i + 1, 4):
            both = (dropped[:, i] & dropped[:, j]).double().mean().item()
            assert abs(both - p * p) < 5 * (p * p * (1 - p * p) / n) ** 0.5


def test_masks_follow_the_seed_and_differ_between_calls():
    h = torch.ones(3, 1000)
    torch.manual_seed(7)
    first, second = bit_dropout(h, 0.5), bit_dropout(h, 0.5)
    torch.manual_seed(7)
    assert torch.equal(bit_dropout(h, 0.5), first)
    assert not torch.equal(first, second)
    assert not torch.equal(first[0], first[1])


def test_broadcast_inputs_get_masks_of_their_own():
    h = torch.rand(1, 2000).expand(50, 2000)  # one row seen by 50 passes, no copy
    out = bit_dropout(h, 0.5)
    assert out.shape == (50, 2000)
    assert len({tuple(row.nonzero().flatten().tolist()) for row in out}) == 50


@pytest.mark.parametrize("p", [0.25, 0.5, 0.1])
def test_a_unit_is_kept_exactly_when_its_16_bit_integer_reaches_the_threshold(p):
    """The rule of the docstring, bit for bit: the same draw cut into int16s, compared with the
    threshold into a bool mask, the kept units scaled after masking (stored studies' masks)."""
    h = torch.rand(2, 1, 1001).expand(2, 3, 1001)  # broadcast, and an odd size per row
    torch.manual_seed(3)
    out = bit_dropout(h, p)
    torch.manual_seed(3)
    words = torch.empty((h.numel() + 3) // 4, dtype=torch.int64)
    words.random_(-(1 << 63), (1 << 63) - 1)
    units = words.view(torch.int16)[: h.numel()].view(h.shape)
    drop = quantised(p)
    keep = units >= round(drop * LEVELS) - LEVELS // 2
    assert torch.equal(out, h.mul(keep).mul_(1.0 / (1.0 - drop)))


@pytest.mark.parametrize("p", [-0.1, 1.0])
def test_a_probability_outside_its_range_is_refused(p):
    with pytest.raises(ValueError, match="drop probability"):
        bit_dropout(torch.ones(4), p)


@pytest.mark.parametrize("layout", ["strided", "pooled"])
def test_the_cnns_features_are_the_plain_convolutions_relu_and_pooling(layout):
    """Channels-last activations and pooling before the last ReLU change nothing but layout: the
    features equal the textbook order (convolution, ReLU, …, pooling) in the default layout."""
    config = ModelConfig(kind="dropout", conv=(4, 8), conv_layout=layout, hidden=(16,))
    model = build_model(config, seed=0)
    x = torch.rand(6, 1, 28, 28)
    h = x
    for conv in model.convs:
        weight = conv.weight.contiguous()
        h = F.relu(F.conv2d(h, weight, conv.bias, conv.stride, conv.padding))
    if model.layout.pool > 1:
        h = F.max_pool2d(h, model.layout.pool)
    with torch.no_grad():
        features = model.features(x)
    assert features.shape == (6, config.sizes[0])
    assert torch.allclose(features, h.flatten(1), atol=1e-6)
