"""The method units: settings, the sample-set and SWAG predictives, and each procedure's run."""

from __future__ import annotations

import math

import pytest
import torch
from torch.func import functional_call

from core.engine.interface import ModelConfig
from core.jobs.training import make_request
from core.methods import METHODS, build_model, method, params_for
from core.methods.base import TRAIN_FIELDS, prior_config
from core.methods.cyclical import CyclicalProcedure
from core.methods.sgld import LangevinProcedure
from core.methods.swag import SWAGProcedure
from core.methods.swag.moments import SWAG
from core.storage.checkpoints import load_checkpoint, save_checkpoint
from core.training import TrainConfig, train

SMALL = {"hidden": (6,), "in_features": 4, "num_classes": 3}


def toy_data(n: int = 96, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Three separable classes in 4 dimensions."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    x = torch.randn(n, 4, generator=g) * 0.3 + torch.eye(4)[y] * 2
    return x, y


@pytest.mark.parametrize("kind", list(METHODS))
def test_every_method_builds_a_request_from_its_defaults(kind):
    unit = method(kind)
    request = make_request("m", kind, epochs=1)
    assert request.model.kind == kind
    for setting in unit.settings:
        assert setting.check(setting.default) == setting.default
        assert setting.help and setting.label


def test_settings_are_checked_with_a_one_line_message():
    with pytest.raises(ValueError, match="members must be in"):
        make_request("m", "sgld", members=100)
    with pytest.raises(ValueError, match="prior must be one of"):
        make_request("m", "sgld", prior="laplace")
    with pytest.raises(ValueError, match="unknown settings: cyles"):
        make_request("m", "sgmcmc_cyclic", cyles=3)


def test_a_prior_is_assembled_from_its_family_and_scales():
    request = make_request("m", "sgmcmc_cyclic", prior="mixture", pi=0.25, sigma2=math.exp(-7))
    assert prior_config(request.model.params) == {
        "kind": "mixture",
        "pi": 0.25,
        "sigma1": 1.0,
        "sigma2": pytest.approx(math.exp(-7)),
    }
    assert build_model(make_request("m", "bbb", impl="vmap_lrt").model).lrt is True
    assert build_model(make_request("m", "bbb", impl="vmap").model).lrt is False
    ensemble = make_request("m", "ensemble")
    steps = method("ensemble").procedure(ensemble.training, 1, 1, ensemble.model.params)
    assert steps.objective_options()["impl"] == "members"


def test_weight_samples_predict_from_each_stored_sample_vmapped_as_looped():
    model = build_model(ModelConfig(kind="sgld", **SMALL, params={"members": 3}))
    x = torch.randn(5, 4)
    draws = []
    for _ in range(3):
        with torch.no_grad():
            for p in model.parameters():
                p.normal_()
        model.add_sample()
        draws.append({n: p.detach().half().float() for n, p in model.named_parameters()})
    model.eval()
    logits = model.sample_logits(x, 6)
    template = build_model(ModelConfig(kind="mlp", **SMALL))
    for s in range(6):
        expected = functional_call(template, draws[s % 3], (x,))
        torch.testing.assert_close(logits[s], expected, atol=1e-5, rtol=1e-5)
    assert model.train().sample_logits(x, 2).shape == (2, 5, 3)  # training: the network itself


def test_swag_network_draws_follow_its_gaussian():
    model = build_model(
        ModelConfig(kind="swag", hidden=(2,), in_features=2, num_classes=2, params={"rank": 3})
    )
    dim = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(0)
    moments = SWAG(dim, rank=3)
    for _ in range(12):
        moments.collect(torch.randn(dim, generator=g, dtype=torch.float64) * 0.5 + 1.0)
    model.set_posterior(moments.mean, moments.variance, moments.deviations, moments.n)
    model.eval()
    torch.manual_seed(1)
    params = model._draws(40_000)
    theta = torch.cat([params[n].reshape(40_000, -1) for n, _ in model.named_parameters()], 1)
    # float16 storage of σ and D: compare with the moments as stored
    std = moments.variance.sqrt().half().double()
    dev = moments.deviations.T[-3:].half().double()
    cov = 0.5 * (torch.diag(std**2) + dev.T @ dev / 2)
    torch.testing.assert_close(theta.double().mean(0), moments.mean, atol=0.02, rtol=0)
    torch.testing.assert_close(theta.double().T.cov(), cov, atol=0.02, rtol=0)


def _run(kind: str, epochs: int = 4, **training) -> tuple[torch.nn.Module, object]:
    params = params_for(kind, {"members": 4, "rank": 3, **training})
    model = build_model(ModelConfig(kind=kind, **SMALL, params=params))
    shared = {k: v for k, v in training.items() if k in TRAIN_FIELDS}
    config = TrainConfig(epochs=epochs, batch_size=16, n_eval_samples=4, **shared)
    data = toy_data()
    result = train(
        model,
        config,
        data,
        toy_data(48, 1),
        device=torch.device("cpu"),
        procedure=method(kind).procedure,
    )
    return model.eval(), result


@pytest.mark.parametrize(("kind", "lr"), [("sgld", 0.1), ("sgmcmc_cyclic", 0.3), ("swag", 0.1)])
def test_each_sampler_trains_collects_and_classifies(kind, lr):
    model, _ = _run(kind, epochs=20, lr=lr, temperature=0.1, cycles=2)
    assert int(model.n_collected) == (4 if kind != "swag" else 6)
    x, y = toy_data(48, 1)
    probs = model.sample_logits(x, 8).softmax(-1).mean(0)
    assert (probs.argmax(-1) == y).float().mean() > 0.9
    passes = model.sample_logits(x, 2)
    assert not torch.allclose(passes[0], passes[1])  # a set of networks, not one


def test_sgld_keeps_samples_evenly_after_the_burn_in():
    model = build_model(ModelConfig(kind="sgld", **SMALL, params={"members": 4, "burn_in": 0.5}))
    procedure = LangevinProcedure(TrainConfig(), 100, 40, model.config.params)
    procedure.network(model)
    assert procedure.kept == {25, 30, 35, 40}


def test_cyclical_samples_at_the_end_of_every_cycle_in_its_sampling_stage():
    params = {"members": 8, "cycles": 4, "exploration": 0.5}
    model = build_model(ModelConfig(kind="sgmcmc_cyclic", **SMALL, params=params))
    procedure = CyclicalProcedure(TrainConfig(), 100, 40, model.config.params)
    procedure.network(model)
    schedule = procedure.schedule
    assert sorted(procedure.kept) == [8, 10, 18, 20, 28, 30, 38, 40]
    assert all(schedule.sampling(k) for k in procedure.kept)
    assert all(schedule.end_of_cycle(k) for k in (10, 20, 30, 40))


def test_swag_collects_twice_its_rank_after_the_burn_in():
    model = build_model(ModelConfig(kind="swag", **SMALL, params={"rank": 2, "burn_in": 0.5}))
    procedure = SWAGProcedure(TrainConfig(), 100, 40, model.config.params)
    procedure.network(model)
    assert procedure.kept == {25, 30, 35, 40}


@pytest.mark.parametrize("kind", ["sgld", "sgmcmc_cyclic", "swag"])
def test_a_trained_sampler_survives_its_checkpoint(kind, tmp_path):
    model, _ = _run(kind, epochs=2, lr=0.05)
    path = save_checkpoint("m", model, {}, tmp_path)
    loaded, _ = load_checkpoint(path)
    x = toy_data(8, 2)[0]
    if kind != "swag":  # stored samples: the same networks
        torch.testing.assert_close(loaded.sample_logits(x, 4), model.sample_logits(x, 4))
    torch.manual_seed(3)
    a = loaded.sample_logits(x, 4)
    torch.manual_seed(3)
    torch.testing.assert_close(a, model.sample_logits(x, 4), atol=1e-4, rtol=1e-4)
