"""Statistical and behavioural tests of the Bayes-by-Backprop engine (issue 3)."""

from __future__ import annotations

import math
import threading

import pytest
import torch

from core.engine.layers import BayesLinear
from core.engine.objective import kl_weight, minibatch_objective
from core.engine.priors import GaussianPrior, ScaleMixturePrior, blundell_mixture_grid
from core.methods import ModelConfig, build_model, params_for
from core.methods.bbb.model import BayesMLP
from core.training import TrainConfig, train

MIXTURE = {"prior": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": math.exp(-6)}


def test_gaussian_kl_closed_form_matches_monte_carlo():
    torch.manual_seed(0)
    prior = GaussianPrior(sigma=0.5)
    mu, sigma = torch.randn(200) * 0.3, torch.rand(200) * 0.4 + 0.05
    w = mu + sigma * torch.randn(20000, 200)
    log_q = -0.5 * math.log(2 * math.pi) - sigma.log() - (w - mu) ** 2 / (2 * sigma**2)
    mc = (log_q - prior.log_prob(w)).sum(1)
    closed = prior.kl(mu, sigma)
    assert abs(mc.mean() - closed) < 4 * mc.std() / math.sqrt(len(mc))
    assert closed > 0


def test_mixture_kl_estimate_is_unbiased_and_matches_gaussian_when_components_equal():
    torch.manual_seed(1)
    mu, sigma = torch.randn(50) * 0.2, torch.full((50,), 0.1)
    same = ScaleMixturePrior(pi=0.3, sigma1=0.7, sigma2=0.7)
    w = mu + sigma * torch.randn(4000, 50)
    estimates = torch.stack([same.kl(mu, sigma, wi) for wi in w])
    closed = GaussianPrior(0.7).kl(mu, sigma)
    assert abs(estimates.mean() - closed) < 4 * estimates.std() / math.sqrt(len(estimates))
    with pytest.raises(ValueError):
        same.kl(mu, sigma)


def test_scale_mixture_log_density_matches_direct_computation():
    w = torch.linspace(-3, 3, 101, dtype=torch.float64)
    for prior in blundell_mixture_grid():

        def normal(s):
            return torch.exp(-(w**2) / (2 * s**2)) / (s * math.sqrt(2 * math.pi))

        direct = torch.log(prior.pi * normal(prior.sigma1) + (1 - prior.pi) * normal(prior.sigma2))
        assert torch.allclose(prior.log_prob(w), direct, rtol=1e-9, atol=1e-9)
    assert len(blundell_mixture_grid()) == 27
    # far in the tail the direct formula underflows; the stable one stays finite
    assert torch.isfinite(ScaleMixturePrior().log_prob(torch.tensor([50.0]))).all()


def test_lrt_preactivation_moments_match_weight_sampling():
    torch.manual_seed(2)
    layer = BayesLinear(20, 5, GaussianPrior(), init_sigma=0.3)
    x = torch.rand(3, 20)
    n = 20000
    ws = torch.stack([layer(x, lrt=False, with_kl=False)[0] for _ in range(n // 10)])
    lrt = layer(x.expand(n // 10, 3, 20), lrt=True, with_kl=False)[0]
    exact_mean = x @ layer.weight_mu.T + layer.bias_mu
    exact_var = (x**2) @ (layer.weight_sigma**2).T + layer.bias_sigma**2
    for samples in (ws, lrt):
        se = (exact_var / len(samples)).sqrt()
        assert ((samples.mean(0) - exact_mean).abs() < 5 * se).all()
        assert torch.allclose(samples.var(0), exact_var, rtol=0.15)


@pytest.mark.parametrize("prior", [{"prior": "gaussian", "prior_sigma": 1.0}, MIXTURE])
def test_sequential_and_vmap_agree_exactly_with_same_noise(prior):
    torch.manual_seed(3)
    model = build_model(ModelConfig(hidden=(32, 16), params={**prior, "init_sigma": 0.05}))
    x, y = torch.rand(8, 1, 28, 28), torch.randint(0, 10, (8,))
    noise = model.draw_noise(4, 8, lrt=False)
    results = []
    for impl in ("sequential", "vmap"):
        terms = minibatch_objective(model, x, y, n_samples=4, weight=1e-2, impl=impl, noise=noise)
        grads = torch.autograd.grad(terms.loss, list(model.parameters()))
        results.append((terms, grads))
    (a, ga), (b, gb) = results
    assert torch.allclose(a.loss, b.loss, rtol=1e-5)
    assert torch.allclose(a.kl, b.kl, rtol=1e-5)
    for p, q in zip(ga, gb, strict=True):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "config, impl",
    [
        (ModelConfig(hidden=(32,), params={"init_sigma": 0.05}), "vmap"),
        (ModelConfig(kind="dropout", hidden=(32,), conv=(8, 8), params={"dropout": 0.5}), "vmap"),
        (ModelConfig(kind="dropout", hidden=(32,), params={"dropout": 0.5}), "vmap_lrt"),
    ],
    ids=["bbb", "dropout-cnn", "dropout-mlp"],
)
def test_one_sample_takes_the_same_draws_as_the_vmap_over_one_sample(config, impl):
    """With S = 1 the vmapped estimator skips vmap; draws, loss and gradients are unchanged."""
    model = build_model(config, seed=0)
    x, y = torch.rand(8, 1, 28, 28), torch.randint(0, 10, (8,))
    params = list(model.parameters())

    def one_sample(_):
        logits, kl = model.forward_with_kl(x, None, lrt=impl == "vmap_lrt")
        return torch.nn.functional.cross_entropy(logits, y, reduction="sum"), kl

    torch.manual_seed(5)
    nll, kl = torch.func.vmap(one_sample, randomness="different")(torch.arange(1))
    expected = nll[0] + 1e-2 * kl[0]
    expected_grads = torch.autograd.grad(expected, params)
    torch.manual_seed(5)
    terms = minibatch_objective(model, x, y, n_samples=1, weight=1e-2, impl=impl)
    grads = torch.autograd.grad(terms.loss, params)
    assert torch.allclose(terms.loss, expected, rtol=1e-6)
    for p, q in zip(grads, expected_grads, strict=True):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), ((p - q).abs().max(), q.abs().max())


def test_three_implementations_estimate_the_same_objective():
    """Loss and gradient means over many draws agree within Monte-Carlo error."""
    torch.manual_seed(4)
    model = build_model(ModelConfig(hidden=(16,), params={"init_sigma": 0.2}))
    x, y = torch.rand(16, 1, 28, 28), torch.randint(0, 10, (16,))
    draws = {}
    for impl in ("sequential", "vmap", "vmap_lrt"):
        losses, grads = [], []
        for _ in range(150):
            terms = minibatch_objective(model, x, y, n_samples=2, weight=1e-3, impl=impl)
            g = torch.autograd.grad(terms.nll, [model.layers[0].bias_mu])[0]
            losses.append(terms.loss.detach()), grads.append(g)
        draws[impl] = (torch.stack(losses), torch.stack(grads))
    ref_loss, ref_grad = draws["sequential"]
    for impl in ("vmap", "vmap_lrt"):
        loss, grad = draws[impl]
        se = math.sqrt(ref_loss.var() / len(ref_loss) + loss.var() / len(loss))
        assert abs(loss.mean() - ref_loss.mean()) < 5 * se, impl
        g_se = (ref_grad.var(0) / len(ref_grad) + grad.var(0) / len(grad)).sqrt()
        assert ((grad.mean(0) - ref_grad.mean(0)).abs() < 5 * g_se + 1e-6).float().mean() > 0.9


def test_kl_weightings_sum_to_one():
    for m in (1, 7, 469):
        for schedule in ("uniform", "blundell"):
            assert math.isclose(sum(kl_weight(i, m, schedule) for i in range(1, m + 1)), 1.0)
    assert math.isclose(kl_weight(1, 3, "blundell"), 4 / 7)
    assert math.isclose(kl_weight(3, 3, "blundell"), 1 / 7)
    with pytest.raises(ValueError):
        kl_weight(0, 3)


def test_training_cancels_cleanly():
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    cancel = threading.Event()
    cancel.set()
    data = (torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,)))
    result = train(model, TrainConfig(epochs=3), data, data, cancel=cancel)
    assert result.cancelled and result.history == []


@pytest.mark.parametrize("kind,impl", [("bbb", "vmap"), ("bbb", "vmap_lrt"), ("dropout", "vmap")])
def test_short_training_run_gets_far_below_chance(mnist_small, kind, impl):
    (xtr, ytr), test = mnist_small
    torch.manual_seed(0)
    params = params_for(kind, {"impl": impl})
    model = build_model(ModelConfig(kind=kind, hidden=(100,), params=params))
    config = TrainConfig(epochs=3, batch_size=64, lr=2e-3, n_eval_samples=5)
    result = train(model, config, (xtr, ytr), test, device=torch.device("cpu"))
    assert result.history[-1].test_error < 0.25  # chance is 0.9
    assert result.history[-1].test_error < result.history[0].test_error + 0.05
    if kind == "bbb":
        assert isinstance(model, BayesMLP) and result.history[-1].kl > 0
