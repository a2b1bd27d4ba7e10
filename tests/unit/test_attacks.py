"""Attacks (issue 7): FGSM bounds and effect, targeted iterative FGSM, EOT gradients, that
attacks leave the shared read-only models untouched, robustness curves and the attack command.
Tiny models on synthetic digits: fast."""

from __future__ import annotations

import argparse
import json

import pytest
import torch
import torch.nn.functional as F

import core.storage.checkpoints
from core.catalogue import REGISTRY
from core.cli import COMMANDS
from core.cli import attack as attack_command
from core.cli.attack import register
from core.evaluation.attacks import fgsm, input_gradient, predictive_log_probs, targeted_fgsm
from core.methods import ModelConfig, build_model, params_for
from core.storage.checkpoints import load_checkpoint, save_checkpoint
from core.studies.robustness import CurveSettings, RobustnessCurve, is_cached, robustness_curve
from core.training import TrainConfig, train

KINDS = ("mlp", "dropout", "bbb")


def synthetic_digits(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ten fixed binary prototypes plus pixel noise: images ``(n, 1, 28, 28)`` in [0, 1]."""
    g = torch.Generator().manual_seed(0)
    prototypes = (torch.rand(10, 1, 28, 28, generator=g) > 0.7).float()
    g.manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = (prototypes[y] + 0.3 * torch.randn(n, 1, 28, 28, generator=g)).clamp(0, 1)
    return x, y


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """Trained tiny models, saved and reloaded exactly like the app's cached checkpoints."""
    folder = tmp_path_factory.mktemp("ckpt")
    train_data, test_data = synthetic_digits(1000, 1), synthetic_digits(200, 2)
    loaded = {}
    for kind in KINDS:
        torch.manual_seed(0)
        params = params_for(kind, {"init_sigma": 0.05})
        model = build_model(ModelConfig(kind=kind, hidden=(32,), params=params))
        train(model, TrainConfig(epochs=2, batch_size=100), train_data, test_data, device="cpu")
        path = save_checkpoint(kind, model, {}, directory=folder)
        loaded[kind] = load_checkpoint(path)[0]
    return loaded


@pytest.fixture(scope="module")
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    return synthetic_digits(64, 3)


def nll(model, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return F.nll_loss(predictive_log_probs(model, x, 50), y).item()


@pytest.mark.parametrize("kind", KINDS)
def test_fgsm_zero_eps_leaves_inputs_unchanged(models, batch, kind):
    x, y = batch
    assert torch.equal(fgsm(models[kind], x, y, 0.0), x)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5])
def test_fgsm_stays_in_unit_box_and_raises_loss(models, batch, kind, eps):
    x, y = batch
    adv = fgsm(models[kind], x, y, eps, n_samples=10)
    assert adv.min() >= 0 and adv.max() <= 1
    assert (adv - x).abs().max() <= eps + 1e-6
    assert nll(models[kind], adv, y) > nll(models[kind], x, y)


@pytest.mark.parametrize("kind", KINDS)
def test_targeted_attack_increases_target_probability(models, batch, kind):
    x, y = batch
    target = (y + 1) % 10
    result = targeted_fgsm(models[kind], x, target, step=0.02, steps=10, eps=0.15, n_samples=5)
    assert result.probs.shape == (11, len(x), 10)
    p_target = result.probs[:, torch.arange(len(x)), target].mean(-1)
    assert p_target[-1] > p_target[0] + 0.05
    assert (result.adversarial - x).abs().max() <= 0.15 + 1e-6
    assert result.adversarial.min() >= 0 and result.adversarial.max() <= 1


def test_eot_gradient_differs_from_naive_and_is_less_noisy(models, batch):
    model, (x, y) = models["bbb"], batch
    assert min(layer.weight_sigma.min().item() for layer in model.layers) > 0
    torch.manual_seed(0)
    reference = input_gradient(model, x, y, n_samples=2000)
    naive, eot = input_gradient(model, x, y, n_samples=1), input_gradient(model, x, y, n_samples=64)
    assert not torch.allclose(naive, eot)
    assert (eot - reference).norm() < 0.5 * (naive - reference).norm()


def test_eot_gradient_of_deterministic_model_does_not_depend_on_k(models, batch):
    x, y = batch
    one, many = (input_gradient(models["mlp"], x, y, n_samples=k) for k in (1, 8))
    torch.testing.assert_close(one, many)


@pytest.mark.parametrize("kind", KINDS)
def test_attacks_leave_the_cached_model_unchanged(models, batch, kind):
    model, (x, y) = models[kind], batch
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fgsm(model, x, y, 0.1, n_samples=4)
    targeted_fgsm(model, x[:4], 3, steps=3, n_samples=4)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(not p.requires_grad and p.grad is None for p in model.parameters())


def test_robustness_curve_falls_with_eps_and_detects_nothing_at_zero(models, batch):
    x, y = batch
    settings = CurveSettings(eps=(0.0, 0.1, 0.3), n_attack_samples=4, n_eval_samples=10)
    curve = robustness_curve(models["bbb"], x, y, settings)
    assert curve.eps == (0.0, 0.1, 0.3)
    assert curve.accuracy[0] > curve.accuracy[1] > curve.accuracy[2]
    assert curve.auroc_entropy[0] == curve.auroc_mutual_information[0] == 0.5
    assert curve.auroc_entropy[2] > 0.5
    assert RobustnessCurve.from_dict(curve.to_dict()) == curve
    again = robustness_curve(models["bbb"], x, y, settings)
    assert again == curve  # seeded
    transfer = robustness_curve(models["bbb"], x, y, settings, source=models["mlp"])
    assert transfer.accuracy[0] == curve.accuracy[0] and transfer != curve


def run_attack(argv: list[str]) -> int:
    """``python -m core attack ...`` through this command's own parser."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_attack_command_prints_naive_eot_and_transfer_rows(tmp_path, monkeypatch, capsys):
    from core.data import DatasetUnavailable, load_dataset

    try:
        load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("bbb_gaussian", "mlp"):
        config = {**REGISTRY[name].model.to_dict(), "hidden": [16]}
        save_checkpoint(name, build_model(ModelConfig.from_dict(config)), {})
    argv = ["attack", "--images", "100", "--eps", "0", "0.1", "--k", "4", "--json"]
    assert attack_command in COMMANDS
    assert run_attack(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [(r["checkpoint"], r["attack"]) for r in out["results"]]
    assert rows == [
        ("bbb_gaussian", "naive"),
        ("bbb_gaussian", "EOT k=4"),
        ("bbb_gaussian", "transfer from MLP"),
        ("mlp", "naive"),
    ]
    assert all(len(r["accuracy"]) == 2 for r in out["results"])
    assert is_cached("mlp", CurveSettings((0.0, 0.1), 100, 1, 20))
    assert run_attack(argv[:-1]) == 0
    assert "EOT k=4" in capsys.readouterr().out
