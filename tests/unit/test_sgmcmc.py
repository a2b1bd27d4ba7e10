"""SGLD, pSGLD and cyclical SG-MCMC against the exact posterior of Bayesian linear regression.

The model is y = Xw + noise, noise ~ N(0, σ²) known, prior w ~ N(0, σp² I): the posterior is
N(μ, Σ) with Σ = (XᵀX/σ² + I/σp²)⁻¹ and μ = Σ Xᵀy/σ². Many independent chains run at once (the
parameter is ``(chains, d)``, one row per chain; the loss is the sum of the chains' mean NLLs, so
each row gets its own chain's gradient), with full-batch gradients. After burn-in, snapshots
several relaxation times apart are treated as independent draws; the step size is small enough
that SGLD's discretisation bias (a relative ελ/4 in the variance along a precision eigenvalue λ)
is far below the Monte-Carlo tolerance.

Every moment is compared with a z-score against its Monte-Carlo standard error
(tests/support/gaussian_util.py: mean √(Σᵢᵢ/n), covariance entry √((ΣᵢᵢΣⱼⱼ + Σᵢⱼ²)/n)), at |z| < 4
for each of the d + d(d+1)/2 moments. The same samples must give |z| > 4 against 2Σ and Σ/2: a noise
variance off by a factor 2 (ε instead of ε/2 in the drift, 2ε in the noise, a missing √) fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from core.engine.priors import GaussianPrior
from core.methods.sgld.sampler import SGLD, CyclicalSchedule, SampleCollector
from tests.support.gaussian_util import max_z

Z_MAX = 4.0
CHAINS = 2000
SNAPSHOTS = 4


@dataclass(frozen=True)
class Regression:
    """A Bayesian linear regression problem and its exact posterior N(mean, cov)."""

    x: torch.Tensor  # (N, d)
    y: torch.Tensor  # (N,)
    noise_sigma: float
    prior: GaussianPrior
    mean: torch.Tensor  # (d,)
    cov: torch.Tensor  # (d, d)

    @property
    def eigenvalues(self) -> torch.Tensor:
        """Posterior precision eigenvalues, ascending."""
        return torch.linalg.eigvalsh(torch.linalg.inv(self.cov))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread is several times faster on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def regression() -> Regression:
    gen = torch.Generator().manual_seed(0)
    n, noise_sigma, prior = 40, 0.5, GaussianPrior(sigma=1.0)
    # Correlated features: the posterior has sizeable off-diagonal covariances.
    mixing = torch.tensor([[1.0, 0.0, 0.0], [0.4, 1.0, 0.0], [-0.2, 0.3, 1.0]], dtype=torch.float64)
    x = torch.randn(n, 3, generator=gen, dtype=torch.float64) @ mixing
    y = x @ torch.tensor([1.0, -0.5, 0.3], dtype=torch.float64)
    y = y + noise_sigma * torch.randn(n, generator=gen, dtype=torch.float64)
    precision = x.T @ x / noise_sigma**2 + torch.eye(3, dtype=torch.float64) / prior.sigma**2
    cov = torch.linalg.inv(precision)
    return Regression(x, y, noise_sigma, prior, cov @ x.T @ y / noise_sigma**2, cov)


class Chains(nn.Module):
    """``chains`` independent copies of the regression weights, one per row."""

    def __init__(self, chains: int, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(chains, d, dtype=torch.float64))

    def mean_nll(self, problem: Regression) -> torch.Tensor:
        """Σ over chains of each chain's full-batch mean NLL (constants dropped), from the
        sufficient statistics: mean ‖y − Xw‖² = (wᵀXᵀXw − 2wᵀXᵀy + yᵀy)/N."""
        w, x, y = self.weight, problem.x, problem.y
        squares = ((w @ (x.T @ x)) * w).sum(1) - 2 * w @ (x.T @ y) + y @ y  # (chains,)
        return squares.sum() / (2 * len(y) * problem.noise_sigma**2)


def sample_chains(
    problem: Regression,
    model: Chains,
    optimizer: SGLD,
    steps: int,
    keep: Callable[[int], bool],
    prepare: Callable[[int], object] | None = None,
) -> torch.Tensor:
    """Take steps k = 1..``steps`` (calling ``prepare(k)`` first) and keep the chains' weights
    after every step with ``keep(k)``.

    Returns:
        The kept weights of all chains, ``(kept steps · chains, d)``.
    """
    collector = SampleCollector()
    for k in range(1, steps + 1):
        if prepare is not None:
            prepare(k)
        optimizer.zero_grad()
        model.mean_nll(problem).backward()
        optimizer.step()
        if keep(k):
            collector.add(model)
    return collector.stacked(torch.float64)["weight"].flatten(0, 1)


def thinned(burn_in: int, thin: int) -> Callable[[int], bool]:
    """Keep step k when k ≥ ``burn_in`` and k − ``burn_in`` is a multiple of ``thin``."""
    return lambda k: k >= burn_in and (k - burn_in) % thin == 0


def assert_posterior(samples: torch.Tensor, problem: Regression, scale: float = 1.0) -> None:
    """``samples`` match N(mean, scale·cov) and not N(mean, 2·scale·cov) or N(mean, scale·cov/2)."""
    cov = scale * problem.cov
    assert max_z(samples, problem.mean, cov) < Z_MAX
    for wrong in (2 * cov, cov / 2):  # the test has the power to see a factor 2
        assert max_z(samples, problem.mean, wrong) > Z_MAX


def sgld_setup(problem: Regression, seed: int, **options) -> tuple[Chains, SGLD, int]:
    """CHAINS chains from 0 and an SGLD sampler with ε·λ_max = 0.04 (variance bias ≤ 1 %).

    Returns:
        The chains, the sampler and the relaxation time 2/(ε·λ_min) in steps (the slowest
        mode's mean shrinks by e in that many steps, its variance twice as fast).
    """
    lam = problem.eigenvalues
    lr = 0.04 / lam[-1].item()
    model = Chains(CHAINS, problem.x.shape[1])
    gen = torch.Generator().manual_seed(seed)
    optimizer = SGLD(
        model.parameters(), lr, len(problem.y), prior=problem.prior, generator=gen, **options
    )
    return model, optimizer, round(2 / (lr * lam[0].item()))


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sgld_recovers_the_exact_tempered_posterior(regression, temperature):
    model, optimizer, relax = sgld_setup(regression, 1, temperature=temperature)
    burn_in, thin = 10 * relax, 5 * relax
    steps = burn_in + (SNAPSHOTS - 1) * thin
    samples = sample_chains(regression, model, optimizer, steps, thinned(burn_in, thin))
    assert samples.shape == (SNAPSHOTS * CHAINS, 3)
    assert_posterior(samples, regression, scale=temperature)


def test_psgld_with_a_frozen_preconditioner_recovers_the_exact_posterior(regression):
    """pSGLD adapts G for 500 steps, then G is frozen (``alpha = 1``) and the chain is exact."""
    model, optimizer, _ = sgld_setup(regression, 2, precondition=True)
    optimizer.param_groups[0]["lr"] /= 2  # G ≈ 3 here
    with torch.no_grad():  # V adapts to the stationary gradients, not to a transient
        model.weight.copy_(regression.mean)
    adapt, burn_in, thin = 500, 2800, 1100

    def freeze(k: int) -> None:
        if k == adapt + 1:
            optimizer.param_groups[0]["alpha"] = 1.0

    steps = burn_in + (SNAPSHOTS - 1) * thin
    samples = sample_chains(regression, model, optimizer, steps, thinned(burn_in, thin), freeze)
    # Each chain is Langevin dynamics on the precision G^½ P G^½ with step ε: check the
    # discretisation bias (ε·λ/4 of a variance) is small and burn-in and thinning are long.
    root_g = (1 / (optimizer.state[model.weight]["square_avg"].sqrt() + 1e-5)).sqrt()
    lam = torch.linalg.eigvalsh(
        root_g[:, :, None] * torch.linalg.inv(regression.cov) * root_g[:, None, :]
    )
    lr = optimizer.param_groups[0]["lr"]
    relax = 2 / (lr * lam[:, 0].min().item())
    assert (lr * lam[:, -1]).max() < 0.1 and burn_in - adapt > 5 * relax and thin > 2.5 * relax
    assert_posterior(samples, regression)


def test_cyclical_sgld_end_of_cycle_samples_recover_the_exact_posterior(regression):
    """Exploration (SGD) returns every chain to the mode; the sampling stage rebuilds the
    posterior spread; the sample at each cycle's end (ε → 0) is an exact posterior draw."""
    model, optimizer, _ = sgld_setup(regression, 3)
    lr0 = 0.1 / regression.eigenvalues[-1].item()
    schedule = CyclicalSchedule(lr0, total_steps=3 * 2000, cycles=3, exploration=0.3)
    sampled = []

    def prepare(k: int) -> None:
        sampled.append(schedule.apply(optimizer, k))

    samples = sample_chains(
        regression, model, optimizer, schedule.total_steps, schedule.end_of_cycle, prepare
    )
    assert samples.shape == (3 * CHAINS, 3)
    assert sum(sampled) == 3 * 1400
    assert_posterior(samples, regression)


def test_cyclical_schedule_values_cycles_and_stages():
    schedule = CyclicalSchedule(lr0=0.2, total_steps=10, cycles=3, exploration=0.5)
    assert schedule.cycle_length == 4 and schedule.n_cycles == 3
    assert [schedule.cycle(k) for k in range(1, 11)] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    starts = [1, 5, 9]
    assert all(schedule.lr(k) == 0.2 for k in starts)
    # r = 0, 1/4, 1/2, 3/4: ε = 0.1 (cos(πr) + 1).
    expected = [0.2, 0.1 * (1 + math.sqrt(0.5)), 0.1, 0.1 * (1 - math.sqrt(0.5))]
    assert [schedule.lr(k) for k in range(1, 5)] == pytest.approx(expected, abs=1e-15)
    assert [schedule.sampling(k) for k in range(1, 11)] == [False, False, True, True] * 2 + [
        False,
        False,
    ]
    assert [k for k in range(1, 11) if schedule.end_of_cycle(k)] == [4, 8, 10]
    # Fewer cycles than asked when L does not divide K: ⌈10/6⌉ = 2 steps a cycle, 5 cycles.
    assert CyclicalSchedule(1.0, 10, 6).n_cycles == 5
    assert [CyclicalSchedule(1.0, 4, 1, exploration=0.0).sampling(k) for k in (1, 4)] == [
        True,
        True,
    ]
    with pytest.raises(ValueError):
        schedule.lr(11)
    for bad in [dict(cycles=11), dict(cycles=0), dict(exploration=1.5), dict(lr0=0.0)]:
        with pytest.raises(ValueError):
            CyclicalSchedule(**{**dict(lr0=0.2, total_steps=10, cycles=3), **bad})


def test_schedule_apply_sets_step_size_and_noise():
    model = Chains(2, 3)
    optimizer = SGLD(model.parameters(), 1.0, 10)
    schedule = CyclicalSchedule(lr0=0.2, total_steps=10, cycles=3, exploration=0.5)
    assert schedule.apply(optimizer, 2) is False
    assert optimizer.param_groups[0]["lr"] == schedule.lr(2)
    assert optimizer.param_groups[0]["noise"] is False
    assert schedule.apply(optimizer, 3) is True and optimizer.param_groups[0]["noise"] is True


def test_noise_free_step_is_gradient_descent_on_the_potential():
    model = Chains(1, 3)
    prior = GaussianPrior(sigma=2.0)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.5, -1.0, 2.0]]))
    before = model.weight.detach().clone()
    optimizer = SGLD(model.parameters(), 0.1, num_data=7, prior=prior, noise=False)
    (model.weight**2).sum().backward()  # mean NLL gradient 2θ
    optimizer.step()
    grad_u = 7 * 2 * before + before / prior.sigma**2
    torch.testing.assert_close(model.weight.detach(), before - 0.05 * grad_u)


def test_collector_stores_copies_and_half_precision():
    model = nn.Linear(3, 2).double()
    model.register_buffer("count", torch.tensor(3))
    full, half = SampleCollector(), SampleCollector(half=True)
    for _ in range(2):
        full.add(model)
        half.add(model)
        with torch.no_grad():
            model.weight.add_(1.0)
    assert len(full) == len(half) == 2
    assert half.samples[0]["weight"].dtype == torch.float16
    assert half.samples[0]["count"].dtype == torch.int64
    stacked, stacked_half = full.stacked(torch.float64), half.stacked()
    assert stacked["weight"].shape == (2, 2, 3)
    torch.testing.assert_close(
        stacked["weight"][1] - stacked["weight"][0], torch.ones(2, 3).double()
    )
    torch.testing.assert_close(
        stacked_half["weight"], stacked["weight"].float(), rtol=1e-3, atol=1e-3
    )
    with pytest.raises(ValueError):
        SampleCollector().stacked()
