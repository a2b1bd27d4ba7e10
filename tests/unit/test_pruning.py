"""Pruning: exact ratios with ties, σ = 0 for removed weights, untouched inputs, storage size,
and SNR pruning of the shipped BBB model."""

from __future__ import annotations

import math

import pytest
import torch

from core.engine.sampler import predictive_samples
from core.evaluation.pruning import (
    METHODS,
    cutoff,
    density,
    kept_masks,
    num_weights,
    prune,
    removal_mask,
    remove_weights,
    snr_db,
    storage_size,
    weight_scores,
    weight_values,
)
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import CheckpointError, load_checkpoint

SMALL = {"hidden": (7, 5), "in_features": 11, "num_classes": 3}  # 77 + 35 + 15 = 127 weights


def small(kind: str = "bbb", seed: int = 0):
    torch.manual_seed(seed)
    model = build_model(ModelConfig(kind=kind, **SMALL)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def removed_count(model) -> int:
    """Number of weights removed from ``model`` (present weights counted by its storage size)."""
    size = storage_size(model)
    return size.total_weights - size.kept_weights


def small_mnist_bbb(seed: int):
    """An untrained 784-8-10 BBB network (cheap to evaluate on MNIST)."""
    torch.manual_seed(seed)
    return build_model(ModelConfig(kind="bbb", hidden=(8,)))


def test_removal_mask_is_exact_and_breaks_ties_by_index():
    scores = torch.tensor([2.0, 1.0, 1.0, 0.0, 1.0, 1.0, 3.0])
    assert removal_mask(scores, 3 / 7).nonzero().flatten().tolist() == [1, 2, 3]
    assert removal_mask(scores, 0.0).sum() == 0 and removal_mask(scores, 1.0).all()
    ties = torch.ones(1000)
    for fraction in (0.0, 0.001, 0.25, 0.5, 0.755, 0.98, 0.999, 1.0):
        removed = removal_mask(ties, fraction)
        k = round(fraction * 1000)
        assert removed.sum() == k and removed[:k].all()
        assert torch.equal(removed, removal_mask(ties, fraction))


def test_removal_mask_matches_a_stable_sort():
    scores = torch.randint(0, 5, (500,)).float()  # many ties
    for fraction in (0.1, 0.37, 0.9):
        k = round(fraction * 500)
        expected = torch.zeros(500, dtype=torch.bool)
        expected[torch.argsort(scores, stable=True)[:k]] = True
        assert torch.equal(removal_mask(scores, fraction), expected)


def test_removal_mask_rejects_fractions_outside_0_1():
    with pytest.raises(ValueError):
        removal_mask(torch.ones(3), 1.5)
    with pytest.raises(ValueError, match="shape"):
        remove_weights(small(), torch.zeros(5, dtype=torch.bool))


@pytest.mark.parametrize("kind", ["bbb", "mlp", "dropout"])
@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.5, 0.95, 0.99, 1.0])
def test_exact_fraction_over_all_layers(kind, fraction):
    model = small(kind)
    n = num_weights(model)
    for method in METHODS if kind == "bbb" else ("magnitude", "random"):
        pruned = prune(model, fraction, method)
        assert removed_count(pruned) == round(fraction * n)


def test_identical_scores_in_a_layer_are_pruned_in_index_order():
    model = small()
    for layer in model.layers:
        layer.weight_mu.fill_(0.1)
        layer.weight_rho.fill_(-3.0)
    pruned = prune(model, 0.5, "snr")
    removed = ~torch.cat([m.flatten() for m in kept_masks(pruned)])
    k = round(0.5 * num_weights(model))
    assert removed.sum() == k and removed[:k].all()


def test_snr_pruning_removes_the_lowest_signal_to_noise_weights():
    model = small()
    scores = weight_scores(model, "snr")
    pruned = prune(model, 0.6, "snr")
    removed = ~torch.cat([m.flatten() for m in kept_masks(pruned)])
    assert scores[removed].max() <= scores[~removed].min()
    assert scores[removed].max() == cutoff(scores, 0.6)
    assert cutoff(scores, 0.0) is None


def test_magnitude_pruning_ignores_sigma_and_works_for_mlps():
    bbb = small()
    bbb.layers[0].weight_rho[0, 0] = 5.0  # huge σ does not matter for |μ|
    mu = torch.cat([layer.weight_mu.flatten() for layer in bbb.layers]).abs()
    assert torch.equal(weight_scores(bbb, "magnitude"), mu)
    mlp = small("mlp")
    pruned = prune(mlp, 0.5, "magnitude")
    w = torch.cat([layer.weight.flatten() for layer in mlp.layers]).abs()
    kept = torch.cat([m.flatten() for m in kept_masks(pruned)])
    assert w[~kept].max() <= w[kept].min()


def test_random_pruning_is_reproducible_by_seed():
    model = small("mlp")
    same = [prune(model, 0.5, "random", seed=3).state_dict() for _ in range(2)]
    other = prune(model, 0.5, "random", seed=4).state_dict()
    key = "layers.0.weight"
    assert torch.equal(same[0][key], same[1][key]) and not torch.equal(same[0][key], other[key])


def test_snr_needs_a_bayesian_model():
    with pytest.raises(ValueError, match="Bayesian"):
        prune(small("mlp"), 0.5, "snr")
    with pytest.raises(ValueError, match="method"):
        prune(small(), 0.5, "largest")


def test_removed_weights_are_deterministic_zeros_and_biases_stay():
    model = small()
    pruned = prune(model, 0.7, "snr")
    for layer, kept in zip(pruned.layers, kept_masks(pruned), strict=True):
        assert torch.all(layer.weight_mu[~kept] == 0) and torch.all(layer.weight_sigma[~kept] == 0)
        assert torch.all(layer.weight_rho[~kept] == -math.inf)
    for a, b in zip(model.layers, pruned.layers, strict=True):
        assert torch.equal(a.bias_mu, b.bias_mu) and torch.equal(a.bias_rho, b.bias_rho)
    x = torch.rand(4, 1, 11)
    for lrt in (True, False):
        probs = predictive_samples(pruned, x, 6, lrt=lrt)
        assert probs.shape == (6, 4, 3) and torch.isfinite(probs).all()


def test_fully_pruned_bbb_network_is_deterministic_given_biases():
    model = small()
    for layer in model.layers:
        layer.bias_rho.fill_(-math.inf)
    probs = predictive_samples(prune(model, 1.0, "snr"), torch.rand(5, 11), 4, lrt=False)
    assert torch.allclose(probs, probs[0].expand_as(probs))


def test_pruning_leaves_the_input_model_untouched():
    model = small()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for method in METHODS:
        pruned = prune(model, 0.9, method)
        assert pruned is not model
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_storage_size_counts_csr_values_and_indices():
    model = small()
    dense = storage_size(model)
    biases = 7 + 5 + 3
    assert dense.dense_bytes == (127 + biases) * 2 * 4
    assert dense.kept_weights == dense.total_weights == 127
    pruned = storage_size(prune(model, 0.8, "snr"))
    kept = 127 - round(0.8 * 127)
    row_pointers = (7 + 1) + (5 + 1) + (3 + 1)
    assert pruned.kept_weights == kept
    assert pruned.sparse_bytes == kept * (2 * 4 + 4) + row_pointers * 4 + biases * 2 * 4
    assert pruned.dense_bytes == dense.dense_bytes and pruned.compression > 1
    assert storage_size(small("mlp")).values == 1


def test_snr_in_decibels_and_weight_density():
    assert torch.allclose(snr_db(torch.tensor([1.0, 10.0, 0.1])), torch.tensor([0.0, 10.0, -10.0]))
    model = small()
    means = weight_values(model, sample=False)
    draws = weight_values(model, sample=True, seed=1)
    assert torch.equal(means, weight_scores(model, "magnitude").mul(means.sign()))
    assert not torch.equal(means, draws)
    assert torch.equal(draws, weight_values(model, sample=True, seed=1))
    centres, dens = density(torch.rand(10_000), 10, (0.0, 1.0))
    assert len(centres) == 10 and abs(dens.sum() * 0.1 - 1.0) < 1e-6


@pytest.fixture(scope="module")
def shipped_bbb():
    try:
        return load_checkpoint("bbb_mixture")[0]
    except CheckpointError as exc:
        pytest.skip(f"shipped checkpoint bbb_mixture absent ({exc}); train it first")


@pytest.fixture(scope="module")
def mnist_test():
    from core.data import DatasetUnavailable, load_dataset

    try:
        return load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")


@pytest.mark.slow
def test_snr_pruning_90_percent_of_the_shipped_bbb_keeps_its_test_error(shipped_bbb, mnist_test):
    """The issue asks for at most +0.5 percentage points at 90 % removed; measured on the
    shipped bbb_mixture (all 10,000 test images, 5 samples): 1.52 % → 1.62 % (the 30-epoch CPU
    model it replaced: 1.64 % → 1.63 %). Asserted: at
    most +0.2 points (Monte-Carlo spread between seeds is about 0.05 points)."""
    from core.evaluation.metrics import evaluate_model

    before = {k: v.clone() for k, v in shipped_bbb.state_dict().items()}
    x, y = mnist_test
    torch.manual_seed(0)
    full = evaluate_model(shipped_bbb, x, y, n_samples=5)["test_error"]
    pruned = evaluate_model(prune(shipped_bbb, 0.9, "snr"), x, y, n_samples=5)["test_error"]
    assert pruned - full <= 0.002, (full, pruned)
    assert all(torch.equal(before[k], v) for k, v in shipped_bbb.state_dict().items())


def test_curve_points_are_cached_per_checkpoint_content(tmp_path, monkeypatch, mnist_test):
    import core.studies.pruning_curves as pc
    from core.storage.checkpoints import save_checkpoint

    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    path = save_checkpoint("tiny", small_mnist_bbb(0), {}, directory=tmp_path)
    curve = pc.cached_pruning_curve(path, "snr", fractions=(0.0, 0.5), n_samples=2)
    assert curve.fractions == (0.0, 0.5) and all(0.0 <= e <= 1.0 for e in curve.errors)
    assert pc.missing_fractions(path, "snr", (0.0, 0.5, 0.9), n_samples=2) == [0.9]

    def no_evaluation(*args):
        raise AssertionError("cached points must not be recomputed")

    monkeypatch.setattr(pc, "seeded_error", no_evaluation)
    assert (
        pc.cached_pruning_curve(path, "snr", fractions=(0.5, 0.0), n_samples=2).errors
        == (curve.errors[::-1])
    )
    save_checkpoint("tiny", small_mnist_bbb(1), {}, directory=tmp_path)  # new contents
    assert pc.missing_fractions(path, "snr", (0.0, 0.5), n_samples=2) == [0.0, 0.5]
