"""The compiled tiny-network kernel (core/bandits/kernel/tiny.py) against the PyTorch path.

Given the same initial networks, minibatches and weight noise, U updates of the kernel must
reach the parameters that the methods' own models (``MLP``; ``BayesMLP`` with ``lrt=False``,
Gaussian and scale-mixture priors) reach with autograd and ``torch.optim.Adam`` in float64;
decisions must equal the models' outputs; padding must stay zero; the result must not depend on
the thread count; and the bandit's native group must start from the PyTorch group's networks.
"""

from __future__ import annotations

import dataclasses
import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from core.bandits.kernel.tiny import Hyper, NativeUnavailable, TinyNetworks
from core.bandits.native import NativeGroup, group_class
from core.bandits.neural import NeuralGroup, kl_factors
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.settings import ModelSettings
from core.engine.priors import GaussianPrior, ScaleMixturePrior, prior_from_dict
from core.methods import ModelConfig, build_model, params_for
from core.methods.base import prior_settings

CONTEXT, ACTIONS, HIDDEN = 7, 2, (5, 20)  # padded to 16 and 32 units: padding is exercised
PRIORS = {
    "gaussian": {"kind": "gaussian", "sigma": 0.7},
    "mixture": {"kind": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": math.exp(-6)},
}


def _kernel() -> TinyNetworks:
    try:
        return TinyNetworks(CONTEXT + ACTIONS, ACTIONS, HIDDEN)
    except NativeUnavailable as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no compiled kernels here: {exc}")


def _models(kind: str, prior: dict, k: int) -> list[torch.nn.Module]:
    values = {**prior_settings(prior), "init_sigma": 0.05, "impl": "vmap"}
    config = ModelConfig(
        kind=kind,
        hidden=HIDDEN,
        in_features=CONTEXT + ACTIONS,
        num_classes=1,
        params=params_for(kind, values),
    )
    return [build_model(config, seed=s).double() for s in range(k)]


def _names(bayesian: bool, half: str) -> list[tuple[str, str]]:
    if not bayesian:
        return [(f"layers.{i}.weight", f"layers.{i}.bias") for i in range(3)]
    return [(f"layers.{i}.weight_{half}", f"layers.{i}.bias_{half}") for i in range(3)]


def _packed(kernel: TinyNetworks, params: list[dict], bayesian: bool) -> torch.Tensor:
    """The kernel's ``(K, S)`` vectors of the models' parameters."""
    halves = []
    for half in ("mu", "rho") if bayesian else ("",):
        layers = [
            (torch.stack([p[w] for p in params]), torch.stack([p[b] for p in params]))
            for w, b in _names(bayesian, half)
        ]
        halves.append(kernel.pack(layers))
    return torch.cat(halves, 1).contiguous()


def _data(k: int, capacity: int, generator: torch.Generator):
    """K rings of contexts with zeros and non-binary values, actions and rewards."""
    values = torch.randn(k, capacity, CONTEXT, generator=generator)
    contexts = values * (torch.rand(k, capacity, CONTEXT, generator=generator) < 0.4)
    actions = torch.randint(ACTIONS, (k, capacity), generator=generator)
    rewards = torch.randn(k, capacity, generator=generator)
    return contexts, actions, rewards


def _ring(kernel: TinyNetworks, contexts, actions, rewards, stride: int = 8):
    k, capacity, width = contexts.shape
    inputs, count, most = kernel.compact(contexts.reshape(-1, width), stride)
    assert most <= stride
    return inputs.view(k, capacity, stride, 2), count.view(k, capacity), actions, rewards


class _Pass(torch.nn.Module):
    """One weight-sampling pass of a BayesMLP on given noise, for ``functional_call``."""

    def __init__(self, model: torch.nn.Module, noise: list[dict]) -> None:
        super().__init__()
        self.model, self.noise = model, noise

    def forward(self, x: torch.Tensor):
        return self.model.forward_with_kl(x, noise=self.noise, lrt=False)


def _layer_noise(kernel: TinyNetworks, key: int) -> list[dict]:
    """The kernel's noise of one stream in the models' per-layer shapes."""
    layers = kernel.unpack(kernel.noise(key)[None])
    return [{"weight": w[0].double(), "bias": b[0].double()} for w, b in layers]


def _reference(kernel, kind, models, data, positions, hyper, seed):
    """U updates of the PyTorch path: autograd through the lab's models, torch.optim's step."""
    contexts, actions, rewards = data
    params = [
        {n: p.detach().clone().requires_grad_() for n, p in m.named_parameters()} for m in models
    ]
    optimizers = [
        torch.optim.SGD(list(p.values()), lr=hyper.lr)
        if hyper.optimizer == "sgd"
        else torch.optim.Adam(list(p.values()), lr=hyper.lr, betas=hyper.betas, eps=hyper.eps)
        for p in params
    ]
    factors = kl_factors(positions.shape[0], hyper.kl_schedule)
    for u in range(positions.shape[0]):
        for k, (model, p, optimizer) in enumerate(zip(models, params, optimizers, strict=True)):
            pos = positions[u, k]
            x = torch.cat([contexts[k, pos], F.one_hot(actions[k, pos], ACTIONS)], -1).double()
            if kind == "bbb":
                noise = _layer_noise(kernel, kernel.key(seed, k, u))
                prefixed = {f"model.{n}": v for n, v in p.items()}
                out, kl = functional_call(_Pass(model, noise), prefixed, (x,))
            else:
                out, kl = functional_call(model, p, (x,)), 0.0
            nll = ((out[:, 0] - rewards[k, pos].double()) ** 2).sum() / (2 * hyper.noise_sigma**2)
            optimizer.zero_grad()
            (nll + hyper.kl_weight * float(factors[u]) * kl).backward()
            optimizer.step()
    return [{n: v.detach().float() for n, v in p.items()} for p in params]


CASES = [("mlp", "gaussian"), ("bbb", "gaussian"), ("bbb", "mixture")]
ADAM = {"lr": 1e-3}
GRADIENT = {"lr": 1.0, "optimizer": "sgd"}  # one plain step of rate 1 is −g
SGD = {"lr": 1e-2, "optimizer": "sgd"}


def _run_both(kind: str, prior: str, updates: int, optimizer: dict, schedule: str = "uniform"):
    """The kernel's and the reference's parameters after ``updates`` steps, and the start."""
    kernel = _kernel()
    k, capacity, batch, seed = 3, 50, 16, 1234
    generator = torch.Generator().manual_seed(0)
    data = _data(k, capacity, generator)
    positions = torch.randint(capacity, (updates, k, batch), generator=generator)
    bayesian = kind == "bbb"
    hyper = Hyper(
        noise_sigma=0.5,
        kl_weight=0.3 if bayesian else 0.0,
        kl_schedule=schedule,
        prior=prior_from_dict(PRIORS[prior]),
        **optimizer,
    )
    models = _models(kind, PRIORS[prior], k)
    start = _packed(
        kernel, [{n: p.detach().float() for n, p in m.named_parameters()} for m in models], bayesian
    )
    theta = start.clone()
    moments = (torch.zeros_like(theta), torch.zeros_like(theta))
    kernel.update(theta, moments, 0, _ring(kernel, *data), positions, hyper, seed, bayesian)
    reference = _reference(kernel, kind, models, data, positions, hyper, seed)
    mask = kernel.mask.repeat(2 if bayesian else 1).bool()
    assert not theta[:, ~mask].any() and not moments[0][:, ~mask].any()  # padding stays 0
    if hyper.optimizer == "sgd":
        assert not moments[0].any() and not moments[1].any()  # SGD keeps no moments
    return theta, _packed(kernel, reference, bayesian), start


@pytest.mark.parametrize("kind, prior", CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_the_gradients_are_those_of_autograd_through_the_methods_models(kind, prior):
    theta, expected, start = _run_both(kind, prior, 1, GRADIENT)
    step, expected_step = theta - start, expected - start
    assert expected_step.abs().max() > 1e-2
    scale = float(expected_step.abs().max())
    torch.testing.assert_close(step, expected_step, rtol=1e-4, atol=1e-6 * scale)


@pytest.mark.parametrize("kind, prior", CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_updates_match_autograd_and_adam_on_the_methods_models(kind, prior):
    theta, expected, start = _run_both(kind, prior, 4, ADAM)
    assert (expected - start).abs().max() > 3e-3  # 4 steps of lr 1e-3 did move the networks
    torch.testing.assert_close(theta, expected, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("kind, prior", CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_plain_gradient_steps_match_autograd_and_torch_sgd(kind, prior):
    theta, expected, start = _run_both(kind, prior, 4, SGD)
    adam, _, _ = _run_both(kind, prior, 4, ADAM)
    assert (expected - start).abs().max() > 3e-3  # the steps moved the networks
    assert (theta - adam).abs().max() > 1e-3  # and not as Adam's steps do
    scale = float((expected - start).abs().max())  # the mixture's ρ steps reach ~10 (float32)
    torch.testing.assert_close(theta, expected, rtol=1e-4, atol=5e-5 * scale)


@pytest.mark.parametrize("prior", ["gaussian", "mixture"])
def test_blundells_geometric_complexity_cost_schedule_matches_autograd(prior):
    theta, expected, start = _run_both("bbb", prior, 4, SGD, schedule="blundell")
    constant, _, _ = _run_both("bbb", prior, 4, SGD)
    assert (theta - constant).abs().max() > 1e-3  # the schedule changed the updates
    scale = float((expected - start).abs().max())
    torch.testing.assert_close(theta, expected, rtol=1e-4, atol=5e-5 * scale)


def test_a_step_is_the_same_for_any_thread_count():
    kernel = _kernel()
    k, capacity = 5, 40
    generator = torch.Generator().manual_seed(1)
    ring = _ring(kernel, *_data(k, capacity, generator))
    positions = torch.randint(capacity, (3, k, 8), generator=generator)
    models = _models("bbb", PRIORS["mixture"], k)
    params = [{n: p.detach().float() for n, p in m.named_parameters()} for m in models]
    hyper = Hyper(lr=1e-2, noise_sigma=1.0, kl_weight=0.2, prior=ScaleMixturePrior())
    results = []
    for threads in (1, 2, 3):
        theta = _packed(kernel, params, True)
        moments = (torch.zeros_like(theta), torch.zeros_like(theta))
        kernel.update(theta, moments, 7, ring, positions, hyper, 99, True, threads=threads)
        results.append((theta, *moments))
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other, strict=True))


@pytest.mark.parametrize("kind", ["mlp", "bbb"])
def test_decisions_are_the_models_outputs_on_one_draw_for_all_actions(kind):
    kernel = _kernel()
    k, seed = 4, 77
    bayesian = kind == "bbb"
    models = _models(kind, PRIORS["gaussian"], k)
    params = [{n: p.detach().float() for n, p in m.named_parameters()} for m in models]
    contexts = _data(k, 1, torch.Generator().manual_seed(2))[0][:, 0]
    values = kernel.values(_packed(kernel, params, bayesian), contexts, seed, bayesian)
    x = torch.cat(
        [contexts[:, None].expand(k, ACTIONS, CONTEXT), torch.eye(ACTIONS).expand(k, -1, -1)], -1
    ).double()
    for j, model in enumerate(models):
        if bayesian:
            noise = _layer_noise(kernel, kernel.key(seed, j, 65535))
            expected = model.forward_with_kl(x[j], noise=noise, lrt=False, with_kl=False)[0]
        else:
            expected = model(x[j])
        torch.testing.assert_close(values[j].double(), expected[:, 0], rtol=1e-5, atol=1e-5)


def test_compacted_contexts_keep_their_non_zero_columns_and_say_when_a_row_overflows():
    kernel = _kernel()
    contexts = torch.tensor([[0.0, 2.5, 0, 0, -1, 0, 3], [0] * 7, [1.0] * 7])
    inputs, count, most = kernel.compact(contexts, 4)
    assert count.tolist() == [3, 0, 4] and most == 7  # the last row overflows: 7 > 4
    assert inputs[0, :3, 0].tolist() == [1, 4, 6]
    assert inputs[0, :3, 1].view(torch.float32).tolist() == [2.5, -1.0, 3.0]
    assert inputs[2, :, 0].tolist() == [0, 1, 2, 3]


def test_the_noise_is_standard_normal_and_keyed_by_seed_network_and_update():
    kernel = _kernel()
    draws = torch.stack([kernel.noise(kernel.key(5, k, u)) for k in range(4) for u in range(8)])
    flat = draws.flatten().double()
    n = flat.numel()
    assert abs(flat.mean()) < 5 / math.sqrt(n) and abs(flat.var() - 1) < 5 * math.sqrt(2 / n)
    keys = {kernel.key(5, k, u) for k in range(4) for u in range(8)} | {kernel.key(6, 0, 0)}
    assert len(keys) == 33
    assert torch.equal(kernel.noise(kernel.key(5, 1, 2)), draws[1 * 8 + 2])


def test_the_native_group_starts_from_the_pytorch_groups_networks():
    _kernel()
    settings = ModelSettings().replace(
        hidden=(12, 9), lrt=False, engine="native", updates_per_step=2
    )
    config = RunConfig(env="mushroom", agents=("bbb", "greedy"), steps=5, seeds=2, model=settings)
    run = BanditRun(config)
    torch_run = BanditRun(dataclasses.replace(config, model=settings.replace(engine="torch")))
    for (native, _), (reference, _) in zip(run.groups, torch_run.groups, strict=True):
        assert isinstance(native, NativeGroup) and type(reference) is NeuralGroup
        for name, value in reference.params.items():
            assert torch.equal(native.params[name], value.detach()), name
        assert native.bayesian == (native.family == "bbb")
    run.advance()
    bbb = next(g for g, _ in run.groups if g.family == "bbb")
    assert bbb.steps == 5 * 2
    assert bbb.stride == 24  # room for the mushroom's 22 one-hot attributes, widened from 8
    pairs, count = bbb.inputs
    dense = bbb.buffer.contexts[:, :5]
    assert torch.equal(count[:, :5], (dense != 0).sum(-1).int())
    assert bool((pairs[:, :5, :22, 1].view(torch.float32) == 1.0).all())
    sigma = bbb.weight_sigma()
    assert sigma.shape == (2,) and bool((sigma > 0).all())
    snapshot = run.snapshot("bbb")
    assert len(snapshot["decisions"]) == 5


def test_the_optimizer_setting_trains_both_engines_networks_alike():
    _kernel()
    trained = {}
    for optimizer, lr in (("sgd", 1e-2), ("adam", 1e-2)):
        settings = ModelSettings().replace(
            hidden=(12, 9), lrt=False, engine="native", updates_per_step=2,
            optimizer=optimizer, lr=lr,
        )  # fmt: skip
        config = RunConfig(env="mushroom", agents=("greedy",), steps=6, seeds=2, model=settings)
        native, reference = (
            BanditRun(dataclasses.replace(config, model=settings.replace(engine=e)))
            for e in ("native", "torch")
        )
        native.advance(), reference.advance()
        (ours, _), (theirs, _) = native.groups[0], reference.groups[0]
        kind = torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam
        assert type(theirs.procedure.optimizers[0]) is kind
        for name, value in theirs.params.items():
            torch.testing.assert_close(ours.params[name], value.detach(), atol=1e-6, rtol=1e-5)
        trained[optimizer] = ours.params["layers.0.weight"]
    assert (trained["sgd"] - trained["adam"]).abs().max() > 1e-3


def test_the_engine_setting_picks_the_group_and_refuses_what_the_kernel_cannot_train():
    native = ModelSettings().replace(lrt=False, engine="native")
    assert group_class("bbb", native) is NativeGroup
    assert group_class("mlp", native) is NativeGroup
    assert group_class("dropout", native) is NeuralGroup  # other families stay on PyTorch
    assert group_class("bbb", ModelSettings()) is NeuralGroup
    with pytest.raises(ValueError, match="lrt=False"):
        ModelSettings(engine="native")
    with pytest.raises(ValueError, match="two hidden"):
        ModelSettings().replace(engine="native", lrt=False, hidden=(10,))
    with pytest.raises(ValueError, match="engine must be"):
        ModelSettings(engine="jax")
    with pytest.raises(ValueError, match="optimizer must be"):
        ModelSettings(optimizer="rmsprop")
    assert isinstance(prior_from_dict(PRIORS["gaussian"]), GaussianPrior)
