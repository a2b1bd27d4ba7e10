"""z-scores of sample means and covariances against a known Gaussian, for the sampler tests.

For n draws of a stationary Gaussian sequence with covariance Σ and lag covariances
Γ(s) = Cov(θₜ₊ₛ, θₜ) (none for independent draws), the sample mean has variance
(Σ + Σₛ≥₁ (Γ(s) + Γ(s)ᵀ))/n and a sample covariance entry (i, j) has variance
(ΣᵢᵢΣⱼⱼ + Σᵢⱼ² + 2 Σₛ≥₁ (Γ(s)ᵢᵢΓ(s)ⱼⱼ + Γ(s)ᵢⱼΓ(s)ⱼᵢ))/n (Bartlett), to first order in 1/n.
"""

from __future__ import annotations

import torch


def moment_se(
    n: int, cov: torch.Tensor, lag_covs: list[torch.Tensor] | tuple = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """Standard errors of the sample mean ``(d,)`` and covariance ``(d, d)`` of n draws."""
    var_mean = cov.diagonal().clone()
    var_cov = cov.diagonal()[:, None] * cov.diagonal()[None, :] + cov**2
    for lag in lag_covs:
        var_mean += 2 * lag.diagonal()
        var_cov += 2 * (lag.diagonal()[:, None] * lag.diagonal()[None, :] + lag * lag.T)
    return (var_mean / n).sqrt(), (var_cov / n).sqrt()


def max_z(samples: torch.Tensor, mean: torch.Tensor, cov: torch.Tensor) -> float:
    """Largest |z| of the sample mean and covariance entries of independent draws ``samples``
    ``(n, d)`` against N(mean, cov)."""
    se_mean, se_cov = moment_se(samples.shape[0], cov)
    z_mean = (samples.mean(0) - mean) / se_mean
    z_cov = (torch.cov(samples.T) - cov) / se_cov
    return max(z_mean.abs().max().item(), z_cov.abs().max().item())
