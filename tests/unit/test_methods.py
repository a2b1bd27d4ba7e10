"""The inference methods beyond BBB and MC dropout: deep ensembles, the α-divergence energy,
last-layer Laplace. Each estimator is checked against a loop or a closed form."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from core.engine.interface import ModelConfig
from core.engine.mlp import MLP
from core.engine.objective import alpha_energy, minibatch_objective
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import entropy
from core.methods import build_model, check_config, method
from core.methods.ensemble.model import DeepEnsemble
from core.methods.laplace.model import (
    LastLayerLaplace,
    fit_laplace,
    full_ggn,
    last_layer_statistics,
    log_marglik,
)
from core.storage.checkpoints import load_checkpoint, save_checkpoint
from core.training import TrainConfig, train

SMALL_ENSEMBLE = ModelConfig(kind="ensemble", hidden=(8,), params={"members": 3})


def toy_digits(n: int = 256, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random images whose label is the brightest of ten pixel bands (learnable, tiny)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, 28, 28, generator=g)
    y = x.view(n, -1)[:, :780].view(n, 10, 78).mean(-1).argmax(-1)
    return x, y


# --- deep ensembles ---------------------------------------------------------------------------


def test_ensemble_members_start_like_separate_mlps_and_differ():
    torch.manual_seed(0)
    ensemble = DeepEnsemble(SMALL_ENSEMBLE)
    torch.manual_seed(0)
    separate = [MLP(SMALL_ENSEMBLE) for _ in range(3)]
    x = torch.rand(5, 1, 28, 28)
    for i, mlp in enumerate(separate):
        assert torch.allclose(ensemble.member(i)(x), mlp(x))
    logits = ensemble.member_logits(x)
    assert not torch.allclose(logits[0], logits[1], atol=1e-3)


def test_vmapped_ensemble_training_equals_separate_trainings():
    x, y = toy_digits()
    config = TrainConfig(epochs=2, batch_size=64, lr=3e-3, n_eval_samples=3)
    torch.manual_seed(1)
    ensemble = DeepEnsemble(SMALL_ENSEMBLE)
    members = [ensemble.member(i).requires_grad_(True) for i in range(3)]
    cpu, procedure = torch.device("cpu"), method("ensemble").procedure
    train(ensemble, config, (x, y), (x[:32], y[:32]), device=cpu, procedure=procedure)
    single = TrainConfig(epochs=2, batch_size=64, lr=3e-3, n_eval_samples=1)
    for i, mlp in enumerate(members):
        train(mlp, single, (x, y), (x[:32], y[:32]), device=torch.device("cpu"))
        trained = ensemble.member(i)
        for (name, a), b in zip(
            mlp.state_dict().items(), trained.state_dict().values(), strict=True
        ):
            assert torch.allclose(a, b, atol=1e-5), (i, name)


def test_adversarial_training_gives_each_member_its_own_fgsm_examples():
    x, y = toy_digits(128)
    config = TrainConfig(epochs=1, batch_size=64, lr=3e-3)
    adversarial = {"adversarial_eps": 0.05}
    torch.manual_seed(10)
    ensemble = DeepEnsemble(replace(SMALL_ENSEMBLE, params={"members": 3, **adversarial}))
    singles = []
    for i in range(3):
        one = ModelConfig(kind="ensemble", hidden=(8,), params={"members": 1, **adversarial})
        single = DeepEnsemble(one)
        single.load_state_dict({k: v[i : i + 1].clone() for k, v in ensemble.state_dict().items()})
        singles.append(single)
    cpu, procedure = torch.device("cpu"), method("ensemble").procedure
    train(ensemble, config, (x, y), (x[:16], y[:16]), device=cpu, procedure=procedure)
    for i, single in enumerate(singles):
        train(single, config, (x, y), (x[:16], y[:16]), device=cpu, procedure=procedure)
        for key, value in single.state_dict().items():
            assert torch.allclose(value[0], ensemble.state_dict()[key][i], atol=1e-5), (i, key)
    clean = minibatch_objective(ensemble, x, y, impl="members")
    attacked = minibatch_objective(ensemble, x, y, impl="members", adversarial_eps=0.05)
    assert attacked.loss > 2 * clean.loss  # clean NLL plus a larger NLL on FGSM examples
    assert torch.equal(attacked.nll, clean.nll)
    with pytest.raises(ValueError, match="ensembles"):
        minibatch_objective(
            build_model(ModelConfig(kind="mlp", hidden=(8,))),
            x,
            y,
            impl="vmap",
            adversarial_eps=0.1,
        )


def test_ensemble_predictive_is_the_mean_of_members_and_passes_cycle():
    torch.manual_seed(2)
    ensemble = DeepEnsemble(SMALL_ENSEMBLE).eval().requires_grad_(False)
    x = torch.rand(4, 1, 28, 28)
    probs = predictive_samples(ensemble, x, 3)
    members = torch.stack([ensemble.member(i)(x).softmax(-1) for i in range(3)])
    assert torch.allclose(probs, members, atol=1e-6)
    seven = predictive_samples(ensemble, x, 7)
    assert torch.allclose(seven[3:6], members, atol=1e-6) and torch.allclose(seven[6], members[0])


def test_ensemble_checkpoint_round_trip(tmp_path):
    torch.manual_seed(3)
    ensemble = DeepEnsemble(SMALL_ENSEMBLE)
    path = save_checkpoint("tiny_ensemble", ensemble, {}, directory=tmp_path)
    loaded, _ = load_checkpoint(path)
    x = torch.rand(2, 1, 28, 28)
    assert torch.allclose(loaded.member_logits(x), ensemble.member_logits(x))


# --- α-divergence energy ----------------------------------------------------------------------


def test_alpha_energy_matches_its_formula_and_limits():
    torch.manual_seed(4)
    nll = torch.rand(6, 9) * 3  # (K, B)
    mean = nll.mean(0).sum()
    for alpha in (0.3, 1.0, 2.0):
        looped = sum(
            -math.log(sum(math.exp(-alpha * nll[k, n].item()) for k in range(6)) / 6) / alpha
            for n in range(9)
        )
        assert alpha_energy(nll, alpha).item() == pytest.approx(looped, rel=1e-5)
        assert alpha_energy(nll, alpha) <= mean + 1e-5  # Jensen: below the average NLL
    assert alpha_energy(nll.double(), 1e-7).item() == pytest.approx(mean.item(), rel=1e-5)
    assert alpha_energy(nll, 0.0) == mean
    assert alpha_energy(nll[:1], 0.7).item() == pytest.approx(nll[0].sum().item(), rel=1e-6)


def test_alpha_one_is_the_nll_of_the_predictive_mean():
    torch.manual_seed(5)
    logits = torch.randn(5, 7, 10)
    y = torch.randint(0, 10, (7,))
    nll = torch.stack([F.cross_entropy(logit, y, reduction="none") for logit in logits])
    mean_prob = logits.softmax(-1).mean(0).gather(1, y[:, None]).squeeze(1)
    assert alpha_energy(nll, 1.0).item() == pytest.approx(-mean_prob.log().sum().item(), rel=1e-5)


def test_dropout_objective_with_one_sample_is_the_same_for_every_alpha():
    model = build_model(ModelConfig(kind="dropout", hidden=(16,)))
    x, y = toy_digits(32)
    losses = []
    for alpha in (0.0, 0.5, 1.0):
        with torch.random.fork_rng():
            torch.manual_seed(6)  # the same dropout masks
            terms = minibatch_objective(model, x, y, n_samples=1, impl="vmap", alpha=alpha)
        losses.append(terms.loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-6)
    assert losses[2] == pytest.approx(losses[0], rel=1e-6)
    with pytest.raises(ValueError, match="vmapped"):
        minibatch_objective(model, x, y, n_samples=2, impl="sequential", alpha=0.5)


# --- last-layer Laplace -----------------------------------------------------------------------


def logistic_regression(structure: str) -> tuple[LastLayerLaplace, torch.Tensor, torch.Tensor]:
    torch.manual_seed(7)
    config = ModelConfig(
        kind="laplace", hidden=(), in_features=3, num_classes=2, params={"structure": structure}
    )
    model = LastLayerLaplace(config)
    x = torch.randn(60, 3)
    y = (x[:, 0] + 0.5 * torch.randn(60) > 0).long()
    return model, x, y


def test_full_laplace_covariance_is_the_inverse_hessian():
    model, x, y = logistic_regression("full")
    delta = 0.7
    fit_laplace(model, x, y, prior_precision=delta)
    theta0 = model.theta_map().detach().double()
    xd = torch.cat([x.double(), torch.ones(60, 1, dtype=torch.float64)], 1)

    def neg_log_posterior(theta: torch.Tensor) -> torch.Tensor:
        logits = xd @ theta.view_as(theta0).T
        return F.cross_entropy(logits, y, reduction="sum") + 0.5 * delta * (theta**2).sum()

    hessian = torch.autograd.functional.hessian(neg_log_posterior, theta0.flatten())
    expected = torch.linalg.inv(hessian)
    assert torch.allclose(model.covariance().double(), expected, rtol=1e-3, atol=1e-5)


def test_kron_laplace_covariance_and_draws():
    model, x, y = logistic_regression("kron")
    delta = 0.3
    fit_laplace(model, x, y, prior_precision=delta)
    xd = torch.cat([x.double(), torch.ones(60, 1, dtype=torch.float64)], 1)
    p = (xd @ model.theta_map().detach().double().T).softmax(-1)
    a = xd.T @ xd / 60
    g = (torch.diag(p.sum(0)) - p.T @ p) / 60
    precision = 60 * torch.kron(g, a) + delta * torch.eye(8, dtype=torch.float64)
    covariance = model.covariance().double()
    assert torch.allclose(covariance, torch.linalg.inv(precision), rtol=1e-3, atol=1e-5)
    torch.manual_seed(8)
    draws = torch.stack([model.draw_theta().flatten() for _ in range(20000)]).double()
    assert torch.allclose(draws.T.cov(), covariance, atol=0.05 * covariance.diag().max())


def test_prior_precision_by_marginal_likelihood_is_optimal_on_the_grid():
    model, x, y = logistic_regression("full")
    info = fit_laplace(model, x, y)
    _, _, nll = last_layer_statistics(model, x, y)
    theta = model.theta_map().detach().double()
    eigs = torch.linalg.eigvalsh(full_ggn(model, x)).clamp_min(0)
    for factor in (0.5, 2.0):
        delta = info["prior_precision"] * factor
        other = log_marglik(nll, float((theta**2).sum()), theta.numel(), eigs, delta)
        assert other < info["log_marglik"]


def test_laplace_uncertainty_rises_away_from_the_data():
    torch.manual_seed(9)
    centres = torch.tensor([[2.0, 0.0], [-2.0, 0.0]])
    y = torch.arange(200) % 2
    x = centres[y] + 0.4 * torch.randn(200, 2)
    config = check_config(ModelConfig(kind="laplace", hidden=(16,), in_features=2, num_classes=2))
    mlp = MLP(ModelConfig(kind="mlp", hidden=(16,), in_features=2, num_classes=2))
    config_train = TrainConfig(epochs=60, batch_size=50, lr=1e-2)
    train(mlp, config_train, (x, y), (x, y), device=torch.device("cpu"))
    model = LastLayerLaplace(config)
    model.load_state_dict(mlp.state_dict(), strict=False)
    fit_laplace(model, x, y)
    model.eval().requires_grad_(False)
    near = x[:50]
    far = torch.tensor([[0.0, 15.0], [0.0, -15.0], [15.0, 15.0], [-15.0, -15.0]])
    near_h = entropy(predictive_samples(model, near, 200).mean(0)).mean()
    far_h = entropy(predictive_samples(model, far, 200).mean(0)).mean()
    map_far_h = entropy(mlp(far).softmax(-1)).mean()
    assert far_h > near_h and far_h > map_far_h
    assert torch.allclose(
        model.probit_probs(near).argmax(-1), mlp(near).argmax(-1)
    )  # the probit predictive keeps the MAP's decisions on the data


# --- the shipped checkpoints meet their targets -----------------------------------------------


def shipped(name: str):
    from core.data import DatasetUnavailable, load_dataset
    from core.storage.checkpoints import CheckpointError

    try:
        model, _ = load_checkpoint(name)
        x, y = load_dataset("mnist", "test")
    except (CheckpointError, DatasetUnavailable) as exc:
        pytest.skip(str(exc))
    return model, x, y


def test_shipped_ensemble_meets_its_target():
    from core.evaluation.metrics import evaluate_model

    model, x, y = shipped("ensemble")
    metrics = evaluate_model(model, x, y, n_samples=model.members)  # the exact ensemble mean
    # 1.35 % when trained on all 60,000 images; 0.1 point more allowed for the 5,000 held out
    assert metrics["test_error"] <= 0.0145


def test_shipped_laplace_keeps_the_mlp_decisions_and_improves_its_nll():
    from core.evaluation.metrics import calibration

    laplace, x, y = shipped("laplace")
    mlp, _, _ = shipped("mlp")
    probit = laplace.probit_probs(x)
    map_probs = mlp(x).softmax(-1)
    assert (probit.argmax(-1) == map_probs.argmax(-1)).float().mean() > 0.999
    assert calibration(probit, y)["nll"] < calibration(map_probs, y)["nll"] - 0.005


def test_shipped_alpha_dropout_meets_its_target():
    from core.evaluation.metrics import evaluate_model

    model, x, y = shipped("dropout_alpha")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        assert evaluate_model(model, x, y, n_samples=20)["test_error"] <= 0.017


@pytest.mark.parametrize("name", ["sgld", "sgmcmc_cyclic", "swag"])
def test_shipped_samplers_are_as_accurate_as_the_mlp_and_better_calibrated(name):
    from core.evaluation.metrics import evaluate_model

    model, x, y = shipped(name)
    mlp, _, _ = shipped("mlp")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        metrics = evaluate_model(model, x, y, n_samples=16)  # 8 stored samples twice each
    baseline = evaluate_model(mlp, x, y, n_samples=1)
    assert metrics["test_error"] <= baseline["test_error"] + 0.0005, (metrics, baseline)
    assert metrics["nll"] < baseline["nll"] - 0.005, (metrics, baseline)
