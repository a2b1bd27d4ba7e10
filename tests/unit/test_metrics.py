"""OOD-detection, calibration and rejection metrics against known cases and brute force."""

from __future__ import annotations

import math

import pytest
import torch

from core.evaluation.metrics import (
    auroc,
    average_precision,
    brier,
    calibration,
    fpr_at_tpr,
    nll,
    reliability,
    roc_curve,
)


def brute_auroc(a: torch.Tensor, b: torch.Tensor) -> float:
    """P(b > a) + ½ P(b = a) over all pairs."""
    diff = b[None, :] - a[:, None]
    return ((diff > 0).double() + 0.5 * (diff == 0).double()).mean().item()


def test_auroc_perfect_separation_and_reversed():
    assert auroc([0.1, 0.2, 0.3], [0.5, 0.9]) == 1.0
    assert auroc([0.5, 0.9], [0.1, 0.2, 0.3]) == 0.0


def test_auroc_identical_distributions_is_half():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4000, generator=g), torch.randn(4000, generator=g)
    assert auroc(a, b) == pytest.approx(0.5, abs=0.02)
    assert auroc(torch.zeros(10), torch.zeros(7)) == 0.5  # all tied


def test_auroc_matches_brute_force_with_ties():
    g = torch.Generator().manual_seed(1)
    a = torch.randint(0, 8, (300,), generator=g).double()
    b = torch.randint(2, 10, (200,), generator=g).double()
    assert auroc(a, b) == pytest.approx(brute_auroc(a, b), abs=1e-12)


def test_roc_curve_endpoints_and_area():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(500, generator=g), torch.randn(300, generator=g) + 1
    c = roc_curve(a, b)
    assert (c.fpr[0], c.tpr[0], c.fpr[-1], c.tpr[-1]) == (0, 0, 1, 1)
    assert (torch.diff(c.fpr) >= 0).all() and (torch.diff(c.tpr) >= 0).all()
    trapezoid = torch.trapezoid(c.tpr, c.fpr).item()
    assert trapezoid == pytest.approx(auroc(a, b), abs=1e-9)


def test_fpr95_known_case():
    ood = torch.arange(1, 21).double()
    ind = torch.tensor([0.5, 1.5, 2.5, 10.5])
    # 95 % TPR = 19 of 20 OOD flagged: threshold 2 also flags 2.5 and 10.5 (2 of 4);
    # 100 % TPR: threshold 1 also flags 1.5.
    assert fpr_at_tpr(ind, ood, 0.95) == 0.5
    assert fpr_at_tpr(ind, ood, 1.0) == 0.75
    assert fpr_at_tpr([0.0], [1.0]) == 0.0


def test_average_precision_known_values():
    assert average_precision([0.1, 0.2], [0.8, 0.9]) == 1.0
    # ranked: ood(0.9), in(0.8), ood(0.7) → AP = ½·1 + ½·(2/3)
    assert average_precision([0.8], [0.9, 0.7]) == pytest.approx(0.5 + 1 / 3)
    g = torch.Generator().manual_seed(3)
    chance = average_precision(torch.rand(5000, generator=g), torch.rand(1000, generator=g))
    assert chance == pytest.approx(1 / 6, abs=0.02)


def synthetic_predictions(overconfident: bool, n: int = 20000):
    """Confidences uniform in [0.5, 1]; correct with probability = confidence (calibrated),
    or reported as 0.99 while right only with the true rate (over-confident)."""
    g = torch.Generator().manual_seed(4)
    true_conf = 0.5 + 0.5 * torch.rand(n, generator=g)
    correct = torch.rand(n, generator=g) < true_conf
    shown = torch.full_like(true_conf, 0.99) if overconfident else true_conf
    return shown, correct


def test_ece_calibrated_near_zero_overconfident_large():
    assert reliability(*synthetic_predictions(False)).ece < 0.02
    assert reliability(*synthetic_predictions(True)).ece == pytest.approx(0.99 - 0.75, abs=0.02)


def test_reliability_bins():
    r = reliability([0.05, 0.5, 0.52, 1.0], [1, 0, 1, 1], bins=10)
    assert r.count.tolist() == [1, 0, 0, 0, 1, 1, 0, 0, 0, 1]
    assert r.accuracy[5] == 1.0 and r.confidence[5] == pytest.approx(0.52)
    assert math.isnan(r.accuracy[1]) and r.edges[-1] == 1.0


def test_nll_brier_and_calibration():
    probs = torch.tensor([[0.9, 0.1], [0.4, 0.6]])
    labels = torch.tensor([0, 0])
    assert nll(probs, labels) == pytest.approx(-(math.log(0.9) + math.log(0.4)) / 2)
    assert brier(probs, labels) == pytest.approx((0.02 + 0.72) / 2)
    assert brier(torch.eye(3), torch.arange(3)) == 0.0
    cal = calibration(probs, labels)
    assert cal["accuracy"] == 0.5 and set(cal) == {"accuracy", "ece", "nll", "brier"}


def test_evaluate_model_reports_calibration():
    from core.evaluation.metrics import evaluate_model
    from core.methods import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="dropout", hidden=(16,)))
    x, y = torch.rand(50, 1, 28, 28), torch.randint(0, 10, (50,))
    metrics = evaluate_model(model, x, y, n_samples=5)
    assert {"test_error", "nll", "ece", "brier", "n_samples", "num_examples"} <= set(metrics)
    assert 0 <= metrics["ece"] <= 1 and 0 <= metrics["test_error"] <= 1
