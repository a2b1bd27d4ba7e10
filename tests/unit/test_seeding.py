"""Seeded randomness leaves the caller's random state as it was."""

from __future__ import annotations

import torch

from core.engine.seeding import seeded
from core.evaluation.uncertainty import seeded_summary
from core.methods import ModelConfig, build_model


def test_seeded_blocks_repeat_and_the_outer_stream_is_untouched():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with seeded(7):
        first = torch.randn(5)
    with seeded(7, cuda=False):
        again = torch.randn(5)
    with seeded(8):
        other = torch.randn(5)
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert torch.equal(torch.rand(3), expected)  # as if the blocks had not run
    state = torch.get_rng_state()
    with seeded(7):
        torch.manual_seed(0)  # even a block that seeds again is undone
    assert torch.equal(torch.get_rng_state(), state)


def test_a_seeded_summary_is_the_same_every_time_and_differs_by_seed():
    model = build_model(ModelConfig(kind="dropout", hidden=(16,)), seed=0).eval()
    x = torch.rand(4, 1, 28, 28)
    a, b = seeded_summary(model, x, 8), seeded_summary(model, x, 8)
    assert torch.equal(a.mean, b.mean)
    assert not torch.equal(a.mean, seeded_summary(model, x, 8, seed=1).mean)
