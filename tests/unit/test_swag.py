"""SWAG: exact running moments, the stated sampling covariance, and noisy gradient descent.

Noisy gradient descent on the quadratic ½θᵀAθ − bᵀθ, θₜ₊₁ = θₜ − η(Aθₜ − b + ξₜ) with
ξₜ ~ N(0, C), is the AR(1) process θₜ₊₁ = Bθₜ + ηb − ηξₜ, B = I − ηA. Its stationary mean is
A⁻¹b and its stationary covariance solves the discrete Lyapunov equation Σ = BΣBᵀ + η²C, solved
exactly as vec Σ = (I − B⊗B)⁻¹ vec(η²C). SWAG collects every c-th iterate: an AR(1) sequence
with lag covariances Γ(s) = (Bᶜ)ˢ Σ, which give the Monte-Carlo standard errors
(tests/support/gaussian_util.py).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core.methods.swag.moments import SWAG, load_flat
from tests.support.gaussian_util import max_z, moment_se

Z_MAX = 4.0


def test_running_moments_and_deviations_are_exact():
    gen = torch.Generator().manual_seed(0)
    thetas = torch.randn(7, 4, generator=gen, dtype=torch.float64) * 3 + 5
    swag = SWAG(4, rank=3)
    for theta in thetas:
        swag.collect(theta)
    assert swag.n == 7
    torch.testing.assert_close(swag.mean, thetas.mean(0))
    torch.testing.assert_close(swag.variance, thetas.var(0, unbiased=False))
    running_means = thetas.cumsum(0) / torch.arange(1, 8, dtype=torch.float64)[:, None]
    torch.testing.assert_close(swag.deviations, (thetas - running_means)[-3:].T)
    d = swag.deviations
    torch.testing.assert_close(swag.covariance(), 0.5 * (torch.diag(swag.variance) + d @ d.T / 2))


def test_samples_have_the_stated_mean_and_covariance():
    gen = torch.Generator().manual_seed(1)
    swag = SWAG(3, rank=4)
    for theta in torch.randn(6, 3, generator=gen, dtype=torch.float64) @ torch.tensor(
        [[1.0, 0.5, 0.0], [0.0, 1.0, -0.7], [0.0, 0.0, 0.4]], dtype=torch.float64
    ):
        swag.collect(theta)
    draws = swag.sample(20000, torch.Generator().manual_seed(2))
    assert draws.shape == (20000, 3) and draws.dtype == torch.float64
    assert max_z(draws, swag.mean, swag.covariance()) < Z_MAX
    assert max_z(draws, swag.mean, 2 * swag.covariance()) > Z_MAX
    again = swag.sample(20000, torch.Generator().manual_seed(2))
    torch.testing.assert_close(draws, again)


def test_module_parameters_round_trip():
    module = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    swag = SWAG.for_module(module, rank=2)
    flat = torch.cat([p.detach().flatten() for p in module.parameters()])
    swag.collect(module)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(1.0)
    swag.collect(module)
    torch.testing.assert_close(swag.mean, (flat + 0.5).double())
    load_flat(module, swag.mean)
    assert next(module.parameters()).dtype == torch.float32
    torch.testing.assert_close(
        torch.cat([p.detach().flatten() for p in module.parameters()]), flat + 0.5
    )
    with pytest.raises(ValueError):
        swag.collect(torch.zeros(3))
    with pytest.raises(ValueError):
        load_flat(module, torch.zeros(3))


def test_too_few_iterates_to_sample():
    swag = SWAG(2)
    swag.collect(torch.zeros(2))
    with pytest.raises(RuntimeError):
        swag.sample(1)
    with pytest.raises(ValueError):
        SWAG(2, rank=1)


def test_swag_of_noisy_gradient_descent_matches_the_stationary_distribution():
    f64 = dict(dtype=torch.float64)
    a = torch.tensor([[1.5, 0.4, 0.0], [0.4, 1.2, -0.3], [0.0, -0.3, 1.0]], **f64)
    b = torch.tensor([1.0, -2.0, 0.5], **f64)
    c_root = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [-0.2, 0.3, 0.6]], **f64)
    eta, every, collected, rank, burn_in = 0.2, 5, 4000, 1000, 200
    step = torch.eye(3, **f64) - eta * a
    lyapunov = torch.eye(9, **f64) - torch.kron(step, step)
    cov = torch.linalg.solve(lyapunov, (eta**2 * c_root @ c_root.T).flatten()).reshape(3, 3)
    torch.testing.assert_close(cov, step @ cov @ step.T + eta**2 * c_root @ c_root.T)
    mean = torch.linalg.solve(a, b)

    steps = burn_in + every * collected
    noise = torch.randn(steps, 3, generator=torch.Generator().manual_seed(3), **f64) @ c_root.T
    swag = SWAG(3, rank=rank)
    iterates = []
    theta = torch.zeros(3, **f64)
    for t in range(1, steps + 1):
        theta = theta - eta * (a @ theta - b + noise[t - 1])
        if t > burn_in and (t - burn_in) % every == 0:
            swag.collect(theta)
            iterates.append(theta)
    iterates = torch.stack(iterates)
    assert swag.n == collected

    thinned_step = torch.linalg.matrix_power(step, every)
    lag_covs = [torch.linalg.matrix_power(thinned_step, s) @ cov for s in range(1, 40)]
    se_mean, se_cov = moment_se(collected, cov, lag_covs)
    # SWAG's mean and diagonal are the iterates' mean and (1/n) variance.
    torch.testing.assert_close(swag.mean, iterates.mean(0))
    assert ((swag.mean - mean) / se_mean).abs().max() < Z_MAX
    assert ((swag.variance - cov.diagonal()) / se_cov.diagonal()).abs().max() < Z_MAX
    # The low-rank part estimates the whole Σ from the last K deviations ...
    d = swag.deviations
    assert d.shape == (3, rank)
    low_rank = d @ d.T / (rank - 1)
    se_low_rank = moment_se(rank, cov, lag_covs)[1]
    assert ((low_rank - cov) / se_low_rank).abs().max() < Z_MAX
    # ... with the power to see a factor 2 in the iterates' covariance.
    assert ((low_rank - 2 * cov) / se_low_rank).abs().max() > Z_MAX
    # So SWAG's own covariance has Σ's diagonal and half its off-diagonal entries.
    half = 0.5 * (torch.diag(cov.diagonal()) + cov)
    se_half = 0.5 * (torch.diag(se_cov.diagonal()) + se_low_rank)
    assert ((swag.covariance() - half) / se_half).abs().max() < Z_MAX
