"""The fused BBB paths of issue 19 give the same estimator as the autograd reference.

Same noise → same weights, complexity cost and gradients (to float rounding) as
``BayesLinear``'s autograd path; the fused complexity costs match the closed form and the Monte
Carlo estimate; shipped checkpoints load unchanged; a short training run ends where the
sequential estimator ends.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.func import vmap

from core.engine.fused import (
    FusedSampler,
    SampleKL,
    SigmaKL,
    _Constants,
    fast_softplus,
    softplus,
    sum_log_bounded,
)
from core.engine.interface import flat
from core.engine.objective import minibatch_objective
from core.engine.priors import GaussianPrior, ScaleMixturePrior
from core.methods import ModelConfig, build_model
from core.methods.bbb.model import BayesMLP
from core.paths import REPO_ROOT
from core.storage.checkpoints import load_checkpoint
from core.training import TrainConfig, train

MIXTURE = {"prior": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": math.exp(-6)}
PRIORS = [
    {"prior": "gaussian", "prior_sigma": 1.0},
    {"prior": "gaussian", "prior_sigma": 0.3},
    MIXTURE,
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_softplus_matches_torch_to_a_few_ulp(dtype):
    rho = torch.cat([torch.linspace(-80, 100, 200_001), torch.tensor([0.0, -30.0, 1e4])])
    rho = rho.to(dtype)
    sigma, sig = softplus(rho)
    reference = F.softplus(rho, threshold=1e9 if dtype == torch.float64 else 20)
    reference = torch.where(rho > 50, rho, reference)  # log1p(e^ρ) = ρ in float there
    assert (sigma - reference).abs().div(reference).max() < 8 * torch.finfo(dtype).eps
    assert torch.allclose(sig, torch.sigmoid(rho), rtol=4 * torch.finfo(dtype).eps, atol=0)
    r = rho[::1000].clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(fast_softplus(r).sum(), r)
    assert torch.allclose(grad, torch.sigmoid(r.detach()), rtol=1e-5)


@pytest.mark.parametrize("in_dim", [0, 1])
def test_fast_softplus_under_vmap_matches_a_loop_in_value_and_gradient(in_dim):
    """vmap over a stack of ρ (its own batching rule), nested once more as the bandit's
    runs × the model's passes do: the values and ∂/∂ρ of a weighted sum equal a loop's."""
    torch.manual_seed(0)
    rho = (torch.randn(3, 4, 5) * 3).requires_grad_(True)
    weights = torch.randn(3, 4, 5)
    moved = rho.movedim(0, in_dim)

    def weighted(r, w):
        return (fast_softplus(r) * w).sum()

    batched = vmap(vmap(weighted), in_dims=(in_dim, 0))(moved, weights)
    looped = torch.stack([weighted(rho[i, j], weights[i, j]) for i in range(3) for j in range(4)])
    assert torch.allclose(batched.flatten(), looped, rtol=1e-6)
    (grad,) = torch.autograd.grad(batched.sum(), rho)
    expected = torch.sigmoid(rho.detach()) * weights
    assert torch.allclose(grad, expected, rtol=1e-6, atol=1e-7)


def _reference_sample_kl(mu, rho, eps, prior):
    """The autograd path of BayesLinear: w = μ + softplus(ρ)·ε and the prior's kl."""
    sigma = F.softplus(rho)
    w = mu + sigma * eps
    return w, (prior.kl(mu, sigma) if prior.analytic_kl else prior.kl(mu, sigma, w))


@pytest.mark.parametrize(
    "prior", [GaussianPrior(1.0), GaussianPrior(0.2), ScaleMixturePrior(), ScaleMixturePrior(0.25)]
)
def test_flat_sample_kl_equals_the_autograd_reference_on_the_same_noise(prior):
    torch.manual_seed(0)
    size = 5000
    mu = (0.1 * torch.randn(size, dtype=torch.float64)).requires_grad_(True)
    rho = (torch.randn(size, dtype=torch.float64) - 4).requires_grad_(True)
    eps = torch.randn(size, dtype=torch.float64)
    g, beta = torch.randn(size, dtype=torch.float64), 0.37
    w, kl = SampleKL.apply(eps, _Constants.of(prior), None, mu, rho)
    w_ref, kl_ref = _reference_sample_kl(mu, rho, eps, prior)
    assert torch.allclose(w, w_ref, rtol=1e-12, atol=1e-15)
    assert torch.allclose(kl, kl_ref, rtol=1e-10)
    grads = torch.autograd.grad((w * g).sum() + beta * kl, [mu, rho])
    grads_ref = torch.autograd.grad((w_ref * g).sum() + beta * kl_ref, [mu, rho])
    for a, b in zip(grads, grads_ref, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_fused_complexity_costs_match_closed_form_and_monte_carlo():
    torch.manual_seed(1)
    mu, rho = 0.2 * torch.randn(300, dtype=torch.float64), torch.randn(300, dtype=torch.float64)
    sigma = F.softplus(rho)
    # Gaussian: the closed form, whatever the noise
    prior = GaussianPrior(0.5)
    kl = SampleKL.apply(torch.randn(300, dtype=torch.float64), _Constants.of(prior), None, mu, rho)
    assert torch.allclose(kl[1], prior.kl(mu, sigma), rtol=1e-12)
    # mixture: each estimate is log q − log p at its w; their mean is the Gaussian KL when the
    # two components coincide (Monte Carlo, 4 standard errors)
    same = ScaleMixturePrior(pi=0.3, sigma1=0.7, sigma2=0.7)
    draws = torch.stack(
        [
            SampleKL.apply(
                torch.randn(300, dtype=torch.float64), _Constants.of(same), None, mu, rho
            )[1]
            for _ in range(3000)
        ]
    )
    closed = GaussianPrior(0.7).kl(mu, sigma)
    assert abs(draws.mean() - closed) < 4 * draws.std() / math.sqrt(len(draws))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sum_log_bounded_equals_the_sum_of_logs(dtype):
    torch.manual_seed(4)
    m = 0.5 + 1.5 * torch.rand(3, 1000 * 16 + 7, dtype=torch.float64)
    expected = torch.log(m).sum(-1)
    got = sum_log_bounded(m.to(dtype).clone())
    tol = 1e-12 if dtype == torch.float64 else 2e-6 * m.shape[-1] ** 0.5
    assert torch.allclose(got.double(), expected, rtol=0, atol=tol)
    assert torch.allclose(sum_log_bounded(m[0, :9].clone()), torch.log(m[0, :9]).sum())


@pytest.mark.parametrize(
    "prior", [GaussianPrior(1.0), GaussianPrior(0.2), ScaleMixturePrior(), ScaleMixturePrior(0.25)]
)
def test_sigma_kl_equals_the_autograd_reference_on_the_same_noise(prior):
    """σ² and S complexity costs (LRT) against F.softplus and the prior's kl, in float64."""
    torch.manual_seed(5)
    shapes = [(30, 20), (30,), (7, 30), (7,)]
    mus = [(0.1 * torch.randn(s, dtype=torch.float64)).requires_grad_(True) for s in shapes]
    rhos = [(torch.randn(s, dtype=torch.float64) - 4).requires_grad_(True) for s in shapes]
    n_samples, size = 3, sum(math.prod(s) for s in shapes)
    eps = None if prior.analytic_kl else torch.randn(n_samples, size, dtype=torch.float64)
    *variances, kl = SigmaKL.apply(eps, _Constants.of(prior), None, *mus, *rhos)
    sigmas = [F.softplus(r) for r in rhos]
    ref_vars = [s * s for s in sigmas]
    if prior.analytic_kl:
        ref_kl = sum(prior.kl(m, s) for m, s in zip(mus, sigmas, strict=True))
        beta = torch.tensor(0.37, dtype=torch.float64)
    else:
        flat_mu, flat_sigma = (
            torch.cat([m.reshape(-1) for m in mus]),
            torch.cat([s.reshape(-1) for s in sigmas]),
        )
        ref_kl = torch.stack([prior.kl(flat_mu, flat_sigma, flat_mu + flat_sigma * e) for e in eps])
        beta = torch.tensor([0.37, -0.2, 1.1], dtype=torch.float64)
    for a, b in zip(variances, ref_vars, strict=True):
        assert torch.allclose(a, b, rtol=1e-12)
    assert torch.allclose(kl, ref_kl, rtol=1e-10)
    gs = [torch.randn_like(v) for v in variances]
    params = [*mus, *rhos]

    def objective(vs, k):
        return sum((v * g).sum() for v, g in zip(vs, gs, strict=True)) + (beta * k).sum()

    grads = torch.autograd.grad(objective(variances, kl), params)
    grads_ref = torch.autograd.grad(objective(ref_vars, ref_kl), params)
    for a, b in zip(grads, grads_ref, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("impl", ["fused", "vmap_lrt"])
def test_fast_estimators_equal_the_reference_on_the_same_noise(prior, impl):
    """fused = sequential; vmap_lrt = the per-sample LRT formula with F.softplus and layer KLs.

    In float64, so that agreement is exact up to rounding (1e-9), not a float32 tolerance.
    """
    torch.manual_seed(3)
    model = build_model(ModelConfig(hidden=(32, 16), params={**prior, "init_sigma": 0.05})).double()
    x, y = torch.rand(8, 1, 28, 28, dtype=torch.float64), torch.randint(0, 10, (8,))
    lrt = impl == "vmap_lrt"
    noise = [{k: v.double() for k, v in n.items()} for n in model.draw_noise(3, 8, lrt=lrt)]
    fast = minibatch_objective(model, x, y, n_samples=3, weight=1e-2, impl=impl, noise=noise)
    if lrt:
        reference = torch.stack([_reference_lrt_loss(model, x, y, noise, s) for s in range(3)])
        reference = reference.mean()
    else:
        terms = minibatch_objective(
            model, x, y, n_samples=3, weight=1e-2, impl="sequential", noise=noise
        )
        reference = terms.loss
        assert torch.allclose(fast.kl, terms.kl, rtol=1e-10)
    assert torch.allclose(fast.loss, reference, rtol=1e-10)
    params = list(model.parameters())
    for a, b in zip(
        torch.autograd.grad(fast.loss, params), torch.autograd.grad(reference, params), strict=True
    ):
        assert (a - b).abs().max() <= 1e-9 * b.abs().max()


def _reference_lrt_loss(model, x, y, noise, s, weight=1e-2):
    h, kl = flat(x), 0.0
    for i, layer in enumerate(model.layers):
        n = {k: v[s] for k, v in noise[i].items()}
        ws, bs = F.softplus(layer.weight_rho), F.softplus(layer.bias_rho)
        mean = F.linear(h, layer.weight_mu, layer.bias_mu)
        out = mean + torch.sqrt(F.linear(h * h, ws * ws, bs * bs) + 1e-16) * n["out"]
        kl = kl + layer._kl(ws, bs, n)
        h = F.relu(out) if i < len(model.layers) - 1 else out
    return F.cross_entropy(h, y, reduction="sum") + weight * kl


def test_fused_estimator_falls_back_for_models_without_weight_posterior():
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    x, y = torch.rand(4, 1, 28, 28), torch.randint(0, 10, (4,))
    a = minibatch_objective(model, x, y, impl="fused")
    b = minibatch_objective(model, x, y, impl="sequential")
    assert torch.equal(a.loss, b.loss)


def test_fused_sampler_draws_fresh_noise_and_keeps_the_state_dict():
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden=(16,), params={"init_sigma": 0.1}))
    keys = list(model.state_dict())
    sampler = FusedSampler(model.layers)
    (w1, _), _ = sampler.sample()[0][0], None
    w2 = sampler.sample()[0][0][0]
    assert w1.shape == model.layers[0].weight_mu.shape and not torch.equal(w1, w2)
    model.fused_forward_with_kl(torch.rand(2, 784))
    assert list(model.state_dict()) == keys  # the sampler holds no parameters or buffers


SHIPPED = sorted(
    p for p in (REPO_ROOT / "checkpoints").rglob("*.pt") if p.with_suffix(".json").exists()
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_shipped_checkpoints_load_and_the_fast_paths_reproduce_their_passes(path: Path):
    model, _ = load_checkpoint(path)
    if not isinstance(model, BayesMLP):
        return
    torch.manual_seed(0)
    x = torch.rand(16, model.config.in_features)
    for lrt in (False, True):
        noise = [{k: v[0] for k, v in n.items()} for n in model.draw_noise(1, 16, lrt=lrt)]
        with torch.no_grad():
            old = _reference_logits(model, x, noise, lrt)
            new = (
                model.forward_with_kl(x, noise, lrt=True)[0]
                if lrt
                else model.fused_forward_with_kl(x, noise)[0]
            )
        assert torch.allclose(new, old, rtol=1e-4, atol=1e-4)


def _reference_logits(model, x, noise, lrt):
    h = x
    for i, layer in enumerate(model.layers):
        ws, bs = F.softplus(layer.weight_rho), F.softplus(layer.bias_rho)
        if lrt:
            mean = F.linear(h, layer.weight_mu, layer.bias_mu)
            var = F.linear(h * h, ws * ws, bs * bs)
            h = mean + torch.sqrt(var + 1e-16) * noise[i]["out"]
        else:
            w = layer.weight_mu + ws * noise[i]["weight"]
            h = F.linear(h, w, layer.bias_mu + bs * noise[i]["bias"])
        h = F.relu(h) if i < len(model.layers) - 1 else h
    return h


def test_short_training_run_reaches_the_same_error_as_sequential(mnist_small):
    (xtr, ytr), test = mnist_small
    errors = {}
    for impl in ("sequential", "fused"):
        torch.manual_seed(0)
        model = build_model(ModelConfig(hidden=(100,), params={"impl": impl}))
        config = TrainConfig(epochs=2, batch_size=64, lr=2e-3, n_eval_samples=5)
        result = train(model, config, (xtr, ytr), test, device=torch.device("cpu"))
        errors[impl] = result.history[-1].test_error
    assert errors["fused"] < 0.3  # chance is 0.9
    assert abs(errors["fused"] - errors["sequential"]) < 0.04, errors
