"""The rotated-digit experiment: rotations are exact at right angles, 0° is the plain input."""

from __future__ import annotations

import pytest
import torch

from core.engine.interface import ModelConfig
from core.engine.sampler import predictive_samples
from core.evaluation.sweep import rotation_angles, rotation_sweep
from core.methods import build_model


def test_sweep_at_zero_degrees_is_the_plain_prediction():
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="mlp", hidden=(16,))).eval().requires_grad_(False)
    image = torch.rand(28, 28)
    sweep = rotation_sweep(model, image, rotation_angles(180, 7), n_samples=5)
    assert sweep.probs.shape == (7, 5, 10) and sweep.images.shape == (7, 28, 28)
    assert torch.allclose(sweep.mean[0], model(image[None, None]).softmax(-1)[0], atol=1e-5)
    assert torch.allclose(sweep.images[-1], torch.rot90(image, 2), atol=1e-5)
    assert torch.equal(sweep.mutual_information, torch.zeros(7))  # one network, no spread


def test_sweep_records_every_sampled_network():
    torch.manual_seed(1)
    model = build_model(ModelConfig(kind="bbb", hidden=(16,), params={"init_sigma": 0.2}))
    model.eval().requires_grad_(False)
    image = torch.rand(28, 28)
    sweep = rotation_sweep(model, image, rotation_angles(90, 4), n_samples=30)
    assert torch.allclose(sweep.mean, sweep.probs.mean(1), atol=1e-6)
    assert (sweep.mutual_information > 0).all()
    with torch.random.fork_rng():
        plain = predictive_samples(model, image[None, None], 2000).mean(0)[0]
    assert torch.allclose(sweep.mean[0], plain, atol=0.1)
    assert len(sweep.top_classes(3)) == 3
    with pytest.raises(ValueError, match="2 steps"):
        rotation_angles(90, 1)


def test_the_same_input_always_shows_the_same_sweep_and_the_callers_noise_is_kept():
    torch.manual_seed(2)
    model = build_model(ModelConfig(kind="bbb", hidden=(16,), params={"init_sigma": 0.2}))
    model.eval().requires_grad_(False)
    image, angles = torch.rand(28, 28), rotation_angles(90, 4)
    state = torch.random.get_rng_state()
    first = rotation_sweep(model, image, angles, n_samples=10)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(rotation_sweep(model, image, angles, n_samples=10).probs, first.probs)
    other = rotation_sweep(model, image, angles, n_samples=10, seed=1)
    assert not torch.equal(other.probs, first.probs)
