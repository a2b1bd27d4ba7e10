"""Calibration, temperature scaling, rejection and dataset shift: closed forms, loops, Monte Carlo,
the validation split, the cached study on small untrained checkpoints, and the CLI."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace

import pytest
import torch

import core.storage.checkpoints
from core.catalogue import REGISTRY
from core.cli import calibration as calibration_cli
from core.data import DatasetUnavailable, load_dataset
from core.engine.interface import ModelConfig
from core.evaluation.calibration import (
    calibration_metrics,
    coverage_curve,
    ece_by_chance,
    ece_noise_floor,
    fit_temperature,
    max_calibration_error,
    operating_point,
    rejection_auc,
    reliability_of,
    scaling_effect,
    tempered,
    tempered_nll,
)
from core.evaluation.metrics import nll, reliability
from core.evaluation.shift import (
    SHIFTS,
    add_noise,
    blur,
    gaussian_kernel,
    reduce_contrast,
    rotate_by,
    shift_images,
)
from core.evaluation.uncertainty import SCORES
from core.methods import build_model, params_for
from core.storage.checkpoints import checkpoint_dataset, save_checkpoint
from core.studies import calibration as calibration_study
from core.studies.calibration import rejection as rejection_study
from core.studies.calibration import shift as shift_study
from core.studies.calibration import temperature as temperature_study
from core.studies.calibration import validation as validation_study
from core.studies.evaluations import IN_DISTRIBUTION, evaluate_dataset

# --- synthetic predictors --------------------------------------------------------------------


def synthetic(n: int, overconfidence: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` ten-class predictions whose top probability c ~ U(0.1, 1) is right with probability
    ``c · (1 − overconfidence)`` (0 = perfectly calibrated), the rest spread evenly."""
    g = torch.Generator().manual_seed(seed)
    confidence = 0.1 + 0.9 * torch.rand(n, generator=g, dtype=torch.float64)
    predicted = torch.randint(0, 10, (n,), generator=g)
    probs = ((1 - confidence) / 9)[:, None].expand(n, 10).clone()
    probs[torch.arange(n), predicted] = confidence
    right = torch.rand(n, generator=g, dtype=torch.float64) < confidence * (1 - overconfidence)
    other = (predicted + torch.randint(1, 10, (n,), generator=g)) % 10
    return probs, torch.where(right, predicted, other)


def test_ece_of_a_calibrated_predictor_is_near_zero_and_of_an_overconfident_one_is_not():
    calibrated = calibration_metrics(*synthetic(40_000, 0.0))
    assert calibrated["ece"] < 0.01
    over = calibration_metrics(*synthetic(40_000, 0.3))
    # E[c] − E[0.7 c] = 0.3 · 0.55 for c ~ U(0.1, 1)
    assert over["ece"] == pytest.approx(0.3 * 0.55, abs=0.01)
    assert over["mce"] >= over["ece"] and calibrated["mce"] >= calibrated["ece"]
    assert set(over) == {"accuracy", "ece", "mce", "nll", "brier"}


def test_mce_is_the_largest_gap_of_a_non_empty_bin():
    bins = reliability([0.05, 0.5, 0.52, 0.95], [1, 0, 1, 1], bins=10)
    gaps = (bins.accuracy - bins.confidence).abs()[bins.count > 0]
    assert max_calibration_error(bins) == pytest.approx(max(gaps.tolist()))
    assert max_calibration_error(bins) == pytest.approx(0.95)  # the 0.05 bin, right


def test_tempered_is_the_softmax_of_scaled_logits_and_keeps_the_answers():
    logits = torch.randn(50, 10, dtype=torch.float64) * 3
    probs = logits.softmax(-1)
    for t in (0.5, 1.0, 2.0, 7.0):
        assert torch.allclose(tempered(probs, t), (logits / t).softmax(-1), atol=1e-12)
        assert torch.equal(tempered(probs, t).argmax(-1), probs.argmax(-1))
    labels = torch.randint(0, 10, (50,))
    assert tempered_nll(probs, labels, 2.0) == pytest.approx(nll(tempered(probs, 2.0), labels))
    with pytest.raises(ValueError):
        tempered(probs, 0.0)


def test_fit_temperature_recovers_the_temperature_of_the_labels_and_lowers_the_nll():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(20_000, 10, generator=g, dtype=torch.float64) * 4
    true_t = 2.5  # labels drawn from softmax(logits / 2.5): the raw softmax is over-confident
    labels = torch.multinomial((logits / true_t).softmax(-1), 1, generator=g).squeeze(1)
    probs = logits.softmax(-1)
    t, at_bound = fit_temperature(probs, labels)
    assert not at_bound
    assert t == pytest.approx(true_t, rel=0.05)
    grid = torch.linspace(0.5, 6, 1101).tolist()  # a loop over T finds the same minimum
    best = min(grid, key=lambda s: tempered_nll(probs, labels, s))
    assert t == pytest.approx(best, abs=0.01)
    assert tempered_nll(probs, labels, t) < tempered_nll(probs, labels, 1.0)
    assert tempered_nll(probs, labels, t) <= min(tempered_nll(probs, labels, s) for s in grid)


def test_chance_ece_is_the_binomials_at_one_confidence_mean_quantile_and_tail():
    # every input at confidence 0.9, one bin: a draw's ECE is |k / n − 0.9|, k ~ Binomial(n, 0.9)
    n, c = 400, 0.9
    probs = torch.tensor([[c, 1 - c]], dtype=torch.float64).expand(n, -1)
    k = torch.arange(n + 1, dtype=torch.float64)
    pmf = torch.distributions.Binomial(n, torch.tensor(c, dtype=torch.float64)).log_prob(k).exp()
    gaps, order = (k / n - c).abs().sort()
    exact = gaps[torch.searchsorted(pmf[order].cumsum(0), torch.tensor(0.95, dtype=torch.float64))]
    mean = (pmf * (k / n - c).abs()).sum().item()
    observed = 0.04
    tail = pmf[(k / n - c).abs() >= observed - 1e-12].sum().item()
    chance = ece_by_chance(probs, observed, n_draws=20_000)
    assert chance.quantile95 == pytest.approx(exact.item(), abs=1 / n)
    assert chance.expected == pytest.approx(mean, rel=0.03)
    assert chance.p_value == pytest.approx(tail, abs=0.01)
    assert ece_noise_floor(probs, n_draws=4000, level=0.5) < exact.item() / 1.5


def test_a_calibrated_models_ece_is_within_the_floor_and_an_overconfident_ones_is_not():
    g = torch.Generator().manual_seed(3)
    probs = torch.softmax(3.0 * torch.randn(5000, 10, generator=g, dtype=torch.float64), -1)
    labels = torch.multinomial(probs, 1, generator=g).squeeze(1)  # calibrated by construction
    ece = calibration_metrics(probs, labels)["ece"]
    assert ece <= ece_noise_floor(probs)
    assert ece_by_chance(probs, ece).p_value > 0.05
    sharp = tempered(probs, 0.8)  # the same answers, over-confident
    sharp_ece = calibration_metrics(sharp, labels)["ece"]
    assert sharp_ece > 2 * ece_noise_floor(sharp)
    assert ece_by_chance(sharp, sharp_ece).p_value < 0.001


def test_scaling_effect_says_helps_harms_or_no_measurable_change():
    g = torch.Generator().manual_seed(4)
    probs = torch.softmax(3.0 * torch.randn(5000, 10, generator=g, dtype=torch.float64), -1)
    labels = torch.multinomial(probs, 1, generator=g).squeeze(1)  # calibrated by construction
    sharp = tempered(probs, 0.7)
    harms = scaling_effect(probs, sharp, labels, n_boot=500)
    assert harms.effect == "harms" and 0 < harms.low <= harms.high
    helps = scaling_effect(sharp, probs, labels, n_boot=500)
    assert helps.effect == "helps" and helps.low <= helps.high < 0
    assert helps.change == pytest.approx(-harms.change)
    same = scaling_effect(probs, tempered(probs, 1.01), labels, n_boot=500)
    assert same.effect == "none" and same.low < 0 < same.high


def test_fit_temperature_on_predictions_that_are_all_right_runs_to_the_lower_bound():
    logits = torch.randn(500, 10, dtype=torch.float64)
    t, at_bound = fit_temperature(logits.softmax(-1), logits.argmax(-1), bounds=(0.1, 10))
    assert at_bound and t == pytest.approx(0.1, rel=1e-3)
    with pytest.raises(ValueError):
        fit_temperature(logits.softmax(-1), logits.argmax(-1), bounds=(1.0, 0.5))


# --- rejection -------------------------------------------------------------------------------


def test_coverage_curve_ends_at_the_plain_accuracy_and_rises_as_coverage_falls():
    probs, labels = synthetic(20_000, 0.0, seed=3)
    correct = probs.argmax(-1) == labels
    score = 1 - probs.max(-1).values  # a sensible score: calibrated confidence
    coverage, accuracy = coverage_curve(score, correct)
    assert coverage[-1] == 1.0
    assert accuracy[-1].item() == pytest.approx(correct.double().mean().item())
    half = len(coverage) // 2
    assert accuracy[half] > accuracy[-1] + 0.1
    assert accuracy[len(coverage) // 10] > accuracy[half]
    assert rejection_auc(score, correct) > correct.double().mean().item()


def in_score_order(scores, correct) -> tuple[torch.Tensor, torch.Tensor]:
    """Reject the highest scores first, ties in the inputs' order: the curve without tie care."""
    hits = torch.as_tensor(correct).double()[torch.argsort(torch.as_tensor(scores), stable=True)]
    kept = torch.arange(1, len(hits) + 1, dtype=torch.float64)
    return kept / len(hits), hits.cumsum(0) / kept


def test_coverage_curve_rejects_the_most_uncertain_first():
    coverage, accuracy = coverage_curve([0.9, 0.1, 0.5, 0.2], [False, True, False, True])
    assert coverage.tolist() == [0.25, 0.5, 0.75, 1.0]
    assert accuracy.tolist() == [1.0, 1.0, 2 / 3, 0.5]


def test_coverage_curve_without_ties_is_the_plain_order():
    g = torch.Generator().manual_seed(0)
    scores = torch.rand(500, generator=g, dtype=torch.float64)
    correct = torch.rand(500, generator=g) < 0.8
    ours, theirs = coverage_curve(scores, correct), in_score_order(scores, correct)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.allclose(a, b, atol=1e-12)


def test_coverage_curve_with_ties_is_the_mean_over_random_tie_breaks():
    scores = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    correct = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0, 0]).bool()
    g = torch.Generator().manual_seed(0)
    total = torch.zeros(len(scores), dtype=torch.float64)
    draws = 20_000
    for _ in range(draws):  # break ties at random, then reject in order
        jitter = torch.rand(len(scores), generator=g) * 0.5
        total += in_score_order(scores + jitter, correct)[1]
    assert torch.allclose(coverage_curve(scores, correct)[1], total / draws, atol=0.01)
    flat = coverage_curve(torch.zeros(9), correct)[1]  # one score for all: no information
    assert torch.allclose(flat, torch.full((9,), 4 / 9, dtype=torch.float64))


def test_rejection_auc_of_the_oracle_matches_its_closed_form():
    n, wrong = 1000, 50
    correct = torch.ones(n, dtype=torch.bool)
    correct[:wrong] = False
    oracle = (~correct).double()  # every mistake most uncertain
    right = n - wrong
    expected = (right + right * sum(1 / k for k in range(right + 1, n + 1))) / n
    assert rejection_auc(oracle, correct) == pytest.approx(expected, abs=1e-12)
    # a score unrelated to the mistakes: about the plain accuracy, in expectation
    g = torch.Generator().manual_seed(0)
    aucs = [rejection_auc(torch.rand(n, generator=g), correct) for _ in range(200)]
    assert sum(aucs) / len(aucs) == pytest.approx(right / n, abs=0.005)


def test_operating_point_keeps_what_the_rule_answers():
    scores = torch.arange(100, dtype=torch.float64)
    correct = scores < 95
    point = operating_point(scores, correct, 97.5)
    assert point["coverage"] == pytest.approx(0.98)
    assert point["accuracy"] == pytest.approx(95 / 98)
    assert math.isnan(operating_point(scores, correct, -1.0)["accuracy"])


# --- shifts ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(0))


def test_rotation_turns_counter_clockwise_and_zero_is_the_identity(images):
    assert torch.equal(rotate_by(images, 0), images)
    assert torch.allclose(rotate_by(images, 360), images, atol=1e-5)
    for k, degrees in ((1, 90.0), (2, 180.0), (-1, -90.0), (3, 270.0)):
        assert torch.allclose(rotate_by(images, degrees), torch.rot90(images, k, (2, 3)), atol=1e-5)
    one = torch.zeros(1, 1, 28, 28)
    one[0, 0, 2, 20] = 1.0  # upper right: a quarter turn counter-clockwise puts it upper left
    assert torch.nonzero(rotate_by(one, 90)[0, 0] > 0.5).tolist() == [[7, 2]]


def test_rotation_by_one_angle_per_image_matches_each_images_own_turn(images):
    angles = torch.tensor([0.0, 90.0, 180.0, -37.0])
    turned = rotate_by(images, angles)
    assert torch.allclose(turned[0], images[0], atol=1e-5)
    assert torch.allclose(
        turned[1:3],
        torch.stack([torch.rot90(images[1], 1, (1, 2)), torch.rot90(images[2], 2, (1, 2))]),
        atol=1e-5,
    )
    assert torch.allclose(turned[3:], rotate_by(images[3:], -37.0), atol=1e-6)


def test_noise_has_the_requested_spread_and_the_same_pattern_at_every_level():
    grey = torch.full((8, 1, 28, 28), 0.5)
    noisy = add_noise(grey, 0.05, seed=3)
    assert (noisy - grey).std().item() == pytest.approx(0.05, rel=0.05)
    assert torch.allclose((add_noise(grey, 0.1, seed=3) - grey), 2 * (noisy - grey), atol=1e-6)
    assert torch.equal(add_noise(grey, 0.0), grey)
    assert not torch.equal(add_noise(grey, 0.05, seed=4), noisy)


def test_blur_of_a_point_is_the_gaussian_kernel_and_keeps_the_ink():
    point = torch.zeros(1, 1, 28, 28)
    point[0, 0, 14, 14] = 1.0
    kernel = gaussian_kernel(1.5)
    r = len(kernel) // 2
    blurred = blur(point, 1.5)[0, 0, 14 - r : 15 + r, 14 - r : 15 + r]
    assert torch.allclose(blurred, torch.outer(kernel, kernel), atol=1e-6)
    assert kernel.sum().item() == pytest.approx(1.0)
    assert blur(point, 1.5).sum().item() == pytest.approx(1.0, abs=1e-5)
    assert torch.equal(blur(point, 0.0), point)


def test_contrast_scales_the_spread_about_the_mean(images):
    low = reduce_contrast(images, 0.7)
    assert torch.allclose(low.mean(dim=(1, 2, 3)), images.mean(dim=(1, 2, 3)), atol=1e-6)
    assert torch.allclose(low.std(dim=(1, 2, 3)), 0.3 * images.std(dim=(1, 2, 3)), atol=1e-6)
    assert torch.equal(reduce_contrast(images, 0.0), images)


@pytest.mark.parametrize("shift", list(SHIFTS))
def test_every_shift_keeps_shape_and_range_and_starts_unshifted(images, shift):
    grid = SHIFTS[shift].severities
    assert grid[0] == 0 and list(grid) == sorted(grid)
    assert torch.equal(shift_images(images, shift, 0.0), images)
    for severity in grid:
        out = shift_images(images, shift, severity, seed=1)
        assert out.shape == images.shape and out.min() >= 0 and out.max() <= 1
    assert not torch.allclose(shift_images(images, shift, grid[-1], seed=1), images)
    with pytest.raises(ValueError):
        shift_images(images, shift, -1.0)
    with pytest.raises(ValueError):
        shift_images(images, "no such shift", 1.0)


# --- the validation split --------------------------------------------------------------------


def test_split_is_disjoint_complete_and_seeded():
    train, validation = validation_study.split_indices(1000, 100, seed=5)
    assert len(validation) == 100 and len(train) == 900
    assert sorted(torch.cat([train, validation]).tolist()) == list(range(1000))
    again = validation_study.split_indices(1000, 100, seed=5)
    assert torch.equal(again[1], validation)
    assert not torch.equal(validation_study.split_indices(1000, 100, seed=6)[1], validation)
    for bad in (0, 1000):
        with pytest.raises(ValueError):
            validation_study.split_indices(1000, bad)


def test_validation_split_is_what_train_subset_leaves_out(mnist_small):
    images, labels = load_dataset("mnist", "train")
    kept, _ = load_dataset(
        "mnist", "train", n_inputs=len(images) - validation_study.VALIDATION_SIZE, seed=0
    )
    train, validation = validation_study.split_indices(len(images))
    assert torch.equal(kept, images[train])  # what `core train --train-subset 55000` trains on
    val_images, val_labels = validation_study.validation_split()
    assert torch.equal(val_images, images[validation])
    assert torch.equal(val_labels, labels[validation])


# --- the cached study on small untrained checkpoints -----------------------------------------

NAMES = ("mlp", "dropout_mlp", "bbb_gaussian")
SMALL = shift_study.ShiftSettings(n_inputs=200, n_samples=4, validation_size=300)


@pytest.fixture
def small(tmp_path, monkeypatch, mnist_small):
    """784-16-10 checkpoints under registered names, an empty cache; skips without MNIST."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    for seed, name in enumerate(NAMES):
        torch.manual_seed(seed)
        spec = REGISTRY[name].model  # BBB starts from σ = 0.05, the rest as shipped
        params = {**spec.params, **params_for(spec.kind, {"init_sigma": 0.05})}
        config = {**spec.to_dict(), "hidden": [16], "params": params}
        save_checkpoint(
            name,
            build_model(ModelConfig.from_dict(config)),
            {"note": "for tests", "dataset": REGISTRY[name].dataset},
        )
    return tmp_path


def test_temperature_fit_reads_only_the_training_split(small, monkeypatch):
    import core.data

    calls = []
    real = core.data.load_dataset

    def spy(name, split="test", **kw):
        calls.append((name, split))
        return real(name, split, **kw)

    monkeypatch.setattr(core.data, "load_dataset", spy)
    fit = temperature_study.temperature_fit("mlp", n_samples=2, validation_size=300)
    assert calls == [("mnist", "train")]
    assert fit.validation_size == 300 and fit.temperature > 0
    assert fit.nll_after <= fit.nll_before + 1e-9  # the fit lowers the validation NLL
    images, labels = validation_study.validation_split(300)
    model, _ = core.storage.checkpoints.load_checkpoint("mlp")
    probs = model(images).softmax(-1)
    assert fit.nll_before == pytest.approx(nll(probs, labels), rel=1e-4)
    assert fit.nll_after == pytest.approx(tempered_nll(probs, labels, fit.temperature), rel=1e-4)
    calls.clear()
    assert (
        temperature_study.temperature_fit("mlp", n_samples=2, validation_size=300) == fit
    )  # cached
    assert calls == []


def test_recorded_training_subset_decides_whether_the_split_was_seen(small, tmp_path):
    fit = temperature_study.temperature_fit("mlp", n_samples=1, validation_size=300)
    assert fit.training_images == 60_000
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="mlp", hidden=(16,)))
    folder = tmp_path / "recorded"
    for subset, seen in ((None, True), (55_000, False), (59_700, False), (59_701, True)):
        path = save_checkpoint("subset", model, {"train_subset": subset}, folder)
        assert temperature_study.validation_seen(path, fit, test_nll=1.0)[0] is seen
    path = save_checkpoint("unrecorded", model, {}, folder)  # then the NLLs decide
    low, high = replace(fit, nll_before=0.1), replace(fit, nll_before=1.1)
    assert temperature_study.validation_seen(path, low, 1.0) == (
        True,
        "validation NLL 0.10× the test NLL",
    )
    assert temperature_study.validation_seen(path, high, 1.0)[0] is False


def test_calibration_result_agrees_with_the_test_set_evaluation(small):
    result = rejection_study.calibration_result("dropout_mlp", n_samples=3, validation_size=300)
    evaluation = evaluate_dataset("dropout_mlp", IN_DISTRIBUTION, n_samples=3)
    correct = evaluation.correct
    assert result.num_inputs == len(evaluation) == 10_000
    assert result.metrics["accuracy"] == pytest.approx(evaluation.accuracy)
    assert result.metrics["ece"] == pytest.approx(evaluation.calibration()["ece"])
    assert result.tempered["accuracy"] == result.metrics["accuracy"]  # T keeps the answers
    scaled = tempered(evaluation.mean, result.fit.temperature)
    assert result.tempered["nll"] == pytest.approx(nll(scaled, evaluation.labels))
    bins = reliability_of(scaled, evaluation.labels)
    assert torch.equal(result.reliability_tempered.count, bins.count)
    assert set(result.rejection) == set(SCORES)
    for name, row in result.rejection.items():
        assert row["auc"] == pytest.approx(rejection_auc(evaluation.scores[name], correct))
        assert 0.98 <= row["coverage"] <= 1.0  # the 99th-percentile rule answers ≥ 99 %
    assert result.validation_nll_ratio == pytest.approx(
        result.fit.nll_before / result.metrics["nll"]
    )
    seen = temperature_study.validation_seen("dropout_mlp", result.fit, result.metrics["nll"])
    assert (result.validation_seen, result.validation_evidence) == seen
    json.dumps(result.to_dict())


def test_shift_at_severity_zero_reproduces_the_unshifted_evaluation(small):
    for name in NAMES:
        levels = shift_study.shift_curve(name, "rotation", SMALL, severities=(0.0, 60.0))
        plain = evaluate_dataset(
            name, IN_DISTRIBUTION, n_samples=SMALL.n_samples, n_inputs=SMALL.n_inputs, seed=0
        )
        metrics = plain.calibration()
        assert levels[0].accuracy == pytest.approx(metrics["accuracy"], abs=1e-12)
        assert levels[0].ece == pytest.approx(metrics["ece"], abs=1e-6)
        assert levels[0].nll == pytest.approx(metrics["nll"], rel=1e-5)
        assert levels[0].mean_scores["predictive_entropy"] == pytest.approx(
            plain.scores["predictive_entropy"].double().mean().item(), rel=1e-5
        )
        assert levels[1].severity == 60.0 and levels[1].accuracy != levels[0].accuracy


def test_shift_levels_are_cached_one_per_severity(small, monkeypatch):
    first = shift_study.shift_curve("mlp", "contrast", SMALL)
    assert [level.severity for level in first] == list(SHIFTS["contrast"].severities)
    folder = small / "cache" / calibration_study.STUDY
    assert len(list(folder.glob("shift-mnist-contrast-*.json"))) == len(first)
    assert shift_study.shift_jobs(["mlp"], ["contrast"], SMALL) == []
    assert len(shift_study.shift_jobs(["mlp", "bbb_gaussian"], ["contrast", "blur"], SMALL)) == 3

    def fail(*args, **kwargs):
        raise AssertionError("recomputed a cached level")

    monkeypatch.setattr(shift_study, "predictive", fail)
    assert shift_study.shift_curve("mlp", "contrast", SMALL) == first
    for level in first:
        assert 0 <= level.rejected["max_prob"] <= 1
        assert level.temperature == first[0].temperature


def test_cli_prints_every_number_the_issue_asks_for(small, capsys):
    parser = argparse.ArgumentParser()
    calibration_cli.register(parser.add_subparsers(dest="command"))
    argv = ["calibration", "--checkpoint", "mlp", "--checkpoint", "bbb_gaussian", "--samples", "3"]
    argv += ["--shift", "rotation", "--shift-inputs", "100", "--shift-samples", "2"]
    argv += ["--validation-size", "300"]
    args = parser.parse_args([*argv, "--json"])
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [m["checkpoint"] for m in summary["models"]] == ["mlp", "bbb_gaussian"]
    for model in summary["models"]:
        for key in ("accuracy", "ece", "mce", "nll", "brier", "temperature", "ece_tempered"):
            assert isinstance(model[key], float)
        assert 0 < model["ece_floor"] < 1 and 0 < model["ece_floor_tempered"] < 1
        assert set(model["rejection"]) == set(SCORES)
        levels = model["shifts"]["rotation"]
        assert [level["severity"] for level in levels] == list(SHIFTS["rotation"].severities)
        assert all({"accuracy", "ece"} <= set(level) for level in levels)
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "Rotation (angle (degrees))" in text and "bbb_gaussian" in text
    with pytest.raises(SystemExit):
        parser.parse_args([*argv[:2], "mlp", "--samples", "0"])
    assert "--samples: '0' is not a whole number from 1" in capsys.readouterr().err


def test_each_model_is_rated_on_the_dataset_it_was_trained_on(small, tmp_path):
    assert checkpoint_dataset("mlp") == "mnist"  # shipped digit models: from the registry
    try:
        load_dataset("fashion_mnist", "train", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="mlp", hidden=(16,)))
    path = save_checkpoint("clothes", model, {"dataset": "fashion_mnist"}, tmp_path / "user")
    assert checkpoint_dataset(path) == "fashion_mnist"
    result = rejection_study.calibration_result(path, n_samples=1, validation_size=300)
    evaluation = evaluate_dataset(path, "fashion_mnist", n_samples=1)
    assert result.dataset == result.fit.dataset == "fashion_mnist"
    assert result.metrics["accuracy"] == pytest.approx(evaluation.accuracy)
    level = shift_study.shift_curve(path, "blur", SMALL, severities=(0.0,))[0]
    plain = evaluate_dataset(path, "fashion_mnist", n_samples=4, n_inputs=200, seed=0)
    assert level.accuracy == pytest.approx(plain.accuracy)


def test_missing_mnist_is_a_dataset_error(small, monkeypatch, tmp_path):
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("BNN_DATA_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(DatasetUnavailable):
        temperature_study.temperature_fit("mlp", n_samples=2, validation_size=300)


@pytest.mark.parametrize("subset", [55_000, 50_000, 60_000, None, "absent"])
def test_tuning_reads_the_validation_images_only_of_models_that_never_saw_them(small, subset):
    meta = {"dataset": "mnist"} | ({} if subset == "absent" else {"train_subset": subset})
    save_checkpoint("tuned", build_model(REGISTRY["mlp"].model), meta)
    if subset in (55_000, 50_000):
        images, labels = validation_study.held_out_validation("tuned")
        expected_images, expected_labels = validation_study.validation_split()
        assert torch.equal(images, expected_images) and torch.equal(labels, expected_labels)
        return
    with pytest.raises(ValueError, match="--train-subset 55000"):
        validation_study.held_out_validation("tuned")
