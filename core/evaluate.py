"""Test-set evaluation of a model's Monte-Carlo predictive (error, NLL, calibration)."""

from __future__ import annotations

import torch

from core.metrics import calibration
from core.predictive import predictive_samples


@torch.no_grad()
def evaluate_model(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, samples: int) -> dict:
    """Metrics of the predictive mean of ``samples`` passes on images ``x`` and labels ``y``.

    Returns ``test_error`` (fraction), ``nll`` (mean nats per example), ``ece`` (expected
    calibration error, 15 bins), ``brier`` (multi-class Brier score), ``samples`` and
    ``num_examples`` (see :func:`core.metrics.calibration`)."""
    probs, y = predictive_samples(model, x, samples).mean(0).cpu(), y.cpu()
    metrics = calibration(probs, y)
    return {
        "test_error": (probs.argmax(-1) != y).double().mean().item(),
        "nll": metrics["nll"],
        "ece": metrics["ece"],
        "brier": metrics["brier"],
        "samples": samples,
        "num_examples": len(y),
    }
