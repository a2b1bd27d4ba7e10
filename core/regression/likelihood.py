"""Gaussian likelihoods of the regression networks: fixed, learned or input-dependent noise.

* ``"fixed"``: y ~ N(f(x), σ²) with a known σ (a setting);
* ``"learned"``: the same with one σ learned from the data (homoscedastic; a point estimate for
  the gradient-trained methods, a sampled parameter for HMC);
* ``"heteroscedastic"``: the network has two outputs, the mean f(x) and the log-variance
  s(x) = log σ²(x) (Kendall & Gal 2017), so the noise may differ along x.

Everything is in log-variances: the NLL of one point is ½·(log 2π + s + (y − f)²·e^(−s)) nats.
"""

from __future__ import annotations

import math

import torch

NOISE_MODELS = ("fixed", "learned", "heteroscedastic")
LOG_2PI = math.log(2 * math.pi)


def check_noise_model(noise_model: str) -> None:
    """Reject an unknown noise model.

    Args:
        noise_model: The name to check.

    Raises:
        ValueError: If ``noise_model`` is not in :data:`NOISE_MODELS`.
    """
    if noise_model not in NOISE_MODELS:
        raise ValueError(f"noise_model must be one of {NOISE_MODELS}, got {noise_model!r}")


def output_width(noise_model: str) -> int:
    """Number of network outputs for a noise model.

    Args:
        noise_model: One of :data:`NOISE_MODELS`.

    Returns:
        2 (mean and log-variance) for ``"heteroscedastic"``, else 1.

    Raises:
        ValueError: If ``noise_model`` is unknown.
    """
    check_noise_model(noise_model)
    return 2 if noise_model == "heteroscedastic" else 1


def mean_and_log_var(
    out: torch.Tensor, noise_model: str, log_noise: torch.Tensor | float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split network outputs into the predicted mean and log-variance.

    Args:
        out: Network outputs ``(..., B, 1)``, or ``(..., B, 2)`` for ``"heteroscedastic"``.
        noise_model: One of :data:`NOISE_MODELS`.
        log_noise: log σ of the homoscedastic models, broadcastable to ``(..., B)`` (e.g. a
            scalar, or ``(M, 1)`` for M ensemble members); ignored for ``"heteroscedastic"``.

    Returns:
        ``(mean, log_var)``, each ``(..., B)``.
    """
    if noise_model == "heteroscedastic":
        return out[..., 0], out[..., 1]
    mean = out[..., 0]
    log_var = torch.as_tensor(2 * log_noise, dtype=mean.dtype, device=mean.device)
    return mean, log_var.expand_as(mean)


def gaussian_nll(y: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Elementwise −log N(y; mean, exp(log_var)).

    Args:
        y: Targets, broadcastable to ``mean``.
        mean: Predicted means.
        log_var: Predicted log-variances, shaped like ``mean``.

    Returns:
        NLLs in nats, shaped like ``mean``.
    """
    return 0.5 * (LOG_2PI + log_var + (y - mean) ** 2 * torch.exp(-log_var))
