"""Test-set evaluation of a model's Monte-Carlo predictive (error, NLL)."""

from __future__ import annotations

import torch

from core.predictive import predictive_samples


@torch.no_grad()
def evaluate_model(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, samples: int) -> dict:
    """Metrics of the predictive mean of ``samples`` passes on images ``x`` and labels ``y``.

    Returns ``test_error`` (fraction), ``nll`` (mean nats per example) and ``samples``."""
    probs = predictive_samples(model, x, samples).mean(0).cpu()
    y = y.cpu()
    return {
        "test_error": (probs.argmax(-1) != y).float().mean().item(),
        "nll": -torch.log(probs.gather(1, y[:, None]).clamp_min(1e-12)).mean().item(),
        "samples": samples,
        "num_examples": len(y),
    }
