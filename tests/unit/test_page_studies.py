"""The core calls behind the pages: each equals the computation it replaced (same seeds), and
the pages' one in-memory helper (``app.ui.kept``) computes once per arguments and checkpoint
file version."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import core.storage.checkpoints
from app import ui
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, class_examples, load_dataset
from core.engine.seeding import seeded
from core.evaluation import pruning
from core.evaluation.attacks import fgsm_direction, targeted_fgsm
from core.evaluation.metrics import seeded_error
from core.evaluation.shift import shift_images
from core.evaluation.uncertainty import seeded_summary
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import load_checkpoint, save_checkpoint
from core.studies.calibration.shift import example_answers, shifted_examples
from core.studies.ood import sample_summary
from core.studies.pruning_curves import (
    QUICK_INPUTS,
    QUICK_SAMPLES,
    checkpoint_snr,
    quick_error,
    quick_point,
    weight_histogram,
)
from core.studies.robustness import TrajectorySettings, class_grid_direction, targeted_trajectory


@pytest.fixture
def bbb(tmp_path, monkeypatch, mnist_small) -> str:
    """A small untrained BBB checkpoint (784-16-10) in a temporary checkpoint folder (skips
    without MNIST)."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    config = {**REGISTRY["bbb_gaussian"].model.to_dict(), "hidden": [16]}
    save_checkpoint("bbb_gaussian", build_model(ModelConfig.from_dict(config)), {})
    return "bbb_gaussian"


def test_class_examples_are_the_first_test_image_of_each_class():
    try:
        x, y = load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    images, labels = class_examples("mnist")
    assert labels.tolist() == list(range(10))
    for c in range(10):
        assert torch.equal(images[c], x[int(torch.nonzero(y == c)[0, 0])])


def test_calibration_and_ood_answers_equal_the_direct_summaries(bbb):
    model = load_checkpoint(bbb)[0]
    shifted = shifted_examples("mnist", "rotation", 45.0)
    assert torch.equal(shifted, shift_images(class_examples("mnist")[0], "rotation", 45.0, seed=0))
    answers = example_answers(bbb, "rotation", 45.0, 7)
    direct = seeded_summary(model, shifted, 7)
    assert torch.equal(answers.predicted, direct.predicted)
    assert answers.scores.keys() == direct.scores().keys()
    for name, values in direct.scores().items():
        assert torch.allclose(answers.scores[name], values, atol=1e-6), name

    images, _ = load_dataset("fashion_mnist", "test", n_inputs=9, seed=3)
    found = sample_summary(bbb, "fashion_mnist", 3, 9, 5)
    expected = seeded_summary(model, images, 5)
    assert found.top_scores.shape == (5, 9) and found.class_counts.shape == (9, 10)
    assert torch.allclose(found.mean, expected.mean, atol=1e-6)
    assert torch.equal(found.class_counts, expected.class_counts)


def test_the_quick_pruning_numbers_equal_the_direct_ones(bbb):
    model = load_checkpoint(bbb)[0]
    x, y = load_dataset("mnist", "test")
    x, y = x[:QUICK_INPUTS], y[:QUICK_INPUTS]
    assert quick_error(bbb) == seeded_error(model, x, y, QUICK_SAMPLES)
    snr = checkpoint_snr(bbb, 50, -60.0)
    assert np.array_equal(snr.db, pruning.snr_distribution(model, 50, -60.0).db)
    point = quick_point(bbb, "snr", 0.75, 50, -60.0)
    direct = pruning.pruning_point(model, "snr", 0.75, x, y, QUICK_SAMPLES, snr)
    assert point.error == direct.error and point.size == direct.size
    assert point.threshold_db == direct.threshold_db
    total = 784 * 16 + 16 * 10
    assert point.size.total_weights == total
    assert point.size.kept_weights == total - round(0.75 * total)
    centres, density = weight_histogram(bbb, 40, (-0.3, 0.3))
    weights = pruning.weight_values(model, sample=True)
    inside = ((weights >= -0.3) & (weights <= 0.3)).double().mean().item()
    assert centres.shape == density.shape == (40,)
    assert np.isclose((density * 0.6 / 40).sum(), inside)


def test_kept_computes_once_per_arguments_and_checkpoint_version(bbb):
    calls = []

    def compute(name: str, k: int) -> list:
        calls.append((name, k))
        return [name, k]

    first = ui.kept(compute, bbb, 1, models=[bbb])
    assert ui.kept(compute, bbb, 1, models=[bbb]) is first and len(calls) == 1
    assert ui.kept(compute, bbb, 2, models=[bbb]) == [bbb, 2] and len(calls) == 2
    path = core.storage.checkpoints.resolve_checkpoint(bbb)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # retrained
    again = ui.kept(compute, bbb, 1, models=[bbb])
    assert again == first and again is not first and len(calls) == 3


def test_the_adversarial_class_grid_and_trajectory_are_cached_and_equal_the_direct_attacks(
    bbb, tmp_path
):
    """The Adversarial page's two examples as core studies: stored on disk by content, and the
    same numbers as calling the attacks directly (same seed)."""
    x, _ = load_dataset("mnist", "test")
    model = load_checkpoint(bbb)[0]

    direction = class_grid_direction(bbb, 4)
    digits, labels = class_examples("mnist")
    assert labels.tolist() == list(range(10)) and direction.shape == (10, 1, 28, 28)
    with seeded(0):
        assert torch.equal(direction, fgsm_direction(model, digits, labels, 4))
    assert torch.equal(class_grid_direction(bbb, 4), direction)  # read back

    attack = TrajectorySettings(index=7, target=3, steps=5, eps=0.1, n_attack_samples=2)
    found = targeted_trajectory(bbb, attack)
    with seeded(0):
        direct = targeted_fgsm(
            model, x[7:8], 3, step=0.01, steps=5, eps=0.1, n_samples=2, n_eval_samples=20
        )
    assert found.probs.shape == (6, 10)
    assert torch.allclose(found.probs, direct.probs[:, 0], atol=1e-6)
    assert torch.allclose(found.adversarial, direct.adversarial[0, 0])
    assert (found.adversarial - x[7, 0]).abs().max() <= 0.1 + 1e-6
    assert len(list((tmp_path / "cache" / "trajectory").iterdir())) == 1
    again = targeted_trajectory(bbb, attack)
    assert torch.equal(again.probs, found.probs)
