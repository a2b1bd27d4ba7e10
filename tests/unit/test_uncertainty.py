"""Per-input summaries, uncertainty scores, the rejection rule and the sampler's two modes."""

from __future__ import annotations

import math

import pytest
import torch

from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import (
    CONFIDENT,
    REJECT,
    SCORES,
    UNSURE,
    judge,
    reasons,
    rejection_limits,
    summarize,
    verdict,
)
from core.methods import ModelConfig, build_model


def one_hot_samples(classes: list[int], c: int = 10) -> torch.Tensor:
    """(n, 1, C) probabilities: sample s puts all mass on classes[s]."""
    return torch.nn.functional.one_hot(torch.tensor(classes), c).float()[:, None, :]


def test_uniform_prediction_has_entropy_ln10_and_no_mutual_information():
    s = summarize(torch.full((7, 3, 10), 0.1))
    assert torch.allclose(s.entropy, torch.full((3,), math.log(10)))
    assert torch.allclose(s.expected_entropy, torch.full((3,), math.log(10)))
    assert (s.mutual_information == 0).all()


def test_agreeing_samples_have_zero_mutual_information_exactly():
    probs = torch.randn(50, 200, 10).softmax(-1)[:1].expand(50, -1, -1)
    s = summarize(probs)
    assert (s.mutual_information == 0).all() and (s.top_std == 0).all()
    assert (s.variation_ratio == 0).all()


def test_disagreeing_samples_mutual_information_and_votes():
    s = summarize(one_hot_samples([3, 3, 3, 8]))
    assert s.predicted.item() == 3
    assert s.class_counts[0, 3] == 3 and s.class_counts[0, 8] == 1 and s.class_counts.sum() == 4
    expected_h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert s.entropy.item() == pytest.approx(expected_h, rel=1e-5)
    assert s.expected_entropy.item() == 0.0
    assert s.mutual_information.item() == pytest.approx(expected_h, rel=1e-5)
    assert s.variation_ratio.item() == pytest.approx(0.25)
    assert s.top_scores[:, 0].tolist() == [1.0, 1.0, 1.0, 0.0]
    assert s.top_std.item() == pytest.approx(math.sqrt(0.75 * 0.25))


def test_scores_shapes_and_max_prob():
    s = summarize(torch.randn(20, 6, 10).softmax(-1))
    scores = s.scores()
    assert set(scores) == set(SCORES) and all(v.shape == (6,) for v in scores.values())
    assert torch.allclose(scores["max_prob"], 1 - s.mean.max(-1).values)
    assert torch.allclose(s.mean.sum(-1), torch.ones(6))


def test_rejection_rule_and_sentences():
    values = torch.arange(1000).double()
    limits = rejection_limits(values)
    assert limits["p90"] == pytest.approx(899.1) and limits["p99"] == pytest.approx(989.01)
    assert judge(torch.tensor([5.0, 950.0, 995.0]), limits) == [CONFIDENT, UNSURE, REJECT]
    summary = summarize(torch.cat([one_hot_samples([3] * 4), one_hot_samples([8, 8, 8, 2])], 1))
    thresholds = {"variation_ratio": {"p90": 0.1, "p99": 0.5}}
    assert verdict(summary, thresholds, "variation_ratio") == [
        "3, confident",
        "probably 8, but unsure",
    ]
    why = reasons(summary, thresholds, "variation_ratio")
    assert why[0].startswith("confident: as certain as 90 % of real test digits")
    assert why[1] == (
        "unsure: more uncertain than 90 % of real test digits (variation ratio 0.250, "
        "their 90 % limit 0.100)"
    )
    thresholds = {"variation_ratio": {"p90": 0.0, "p99": 0.2}}
    assert verdict(summary, thresholds, "variation_ratio")[1] == "I don't know"
    assert reasons(summary, thresholds, "variation_ratio")[1].startswith(
        "more uncertain than 99 % of real test digits (variation ratio 0.250, their 99 % limit"
    )


def test_lrt_and_weight_sampling_predictives_agree_in_distribution():
    """Local reparameterisation is exact per input: each class's softmax has the same mean and
    std under both modes (difference within 5 Monte-Carlo standard errors)."""
    torch.manual_seed(0)
    config = ModelConfig(
        kind="bbb", in_features=20, hidden=(16,), num_classes=4, params={"init_sigma": 0.3}
    )
    model = build_model(config)
    x = 2 * torch.rand(3, 20)
    n = 4000
    lrt, weights = (predictive_samples(model, x, n, lrt=mode) for mode in (True, False))
    assert lrt.std(0).min() > 0.02  # the outputs really vary
    mean_se = ((lrt.var(0) + weights.var(0)) / n).sqrt()
    assert ((lrt.mean(0) - weights.mean(0)).abs() < 5 * mean_se).all()

    def std_se(p):  # standard error of a sample std: sqrt((m4 - σ⁴) / n) / (2σ)
        c = p - p.mean(0)
        var = (c**2).mean(0)
        return (((c**4).mean(0) - var**2) / n).sqrt() / (2 * var.sqrt())

    std_diff = (lrt.std(0) - weights.std(0)).abs()
    assert (std_diff < 5 * (std_se(lrt) ** 2 + std_se(weights) ** 2).sqrt()).all()


def test_bench_predictive_reports_times_and_goals():
    from core.studies.predictive_speed import GOALS, bench_predictive

    model = build_model(ModelConfig(kind="bbb", hidden=(16,)))
    seen = []
    result = bench_predictive(
        model,
        torch.rand(30, 1, 28, 28),
        n_samples=5,
        repeats=3,
        warmup=1,
        progress=lambda f, m: seen.append(f),
    )
    assert result["num_images"] == 30 and result["single_image_ms"] > 0 and result["test_set_s"] > 0
    assert set(result["goals"]) == set(GOALS) and seen[-1] == 1.0
