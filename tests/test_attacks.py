"""Attacks (issue 7): FGSM bounds and effect, targeted iterative FGSM, EOT gradients, and that
attacks leave the shared read-only models untouched. Tiny models on synthetic digits: fast."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from core.attacks import fgsm, input_gradient, predictive_log_probs, targeted_fgsm
from core.checkpoints import load_checkpoint, save_checkpoint
from core.models import ModelConfig, build_model
from core.train import TrainConfig, train

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
        model = build_model(ModelConfig(kind=kind, hidden=(32,), init_sigma=0.05))
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
    adv = fgsm(models[kind], x, y, eps, samples=10)
    assert adv.min() >= 0 and adv.max() <= 1
    assert (adv - x).abs().max() <= eps + 1e-6
    assert nll(models[kind], adv, y) > nll(models[kind], x, y)


@pytest.mark.parametrize("kind", KINDS)
def test_targeted_attack_increases_target_probability(models, batch, kind):
    x, y = batch
    target = (y + 1) % 10
    result = targeted_fgsm(models[kind], x, target, step=0.02, steps=10, eps=0.15, samples=5)
    assert result.probs.shape == (11, len(x), 10)
    p_target = result.probs[:, torch.arange(len(x)), target].mean(-1)
    assert p_target[-1] > p_target[0] + 0.05
    assert (result.adversarial - x).abs().max() <= 0.15 + 1e-6
    assert result.adversarial.min() >= 0 and result.adversarial.max() <= 1


def test_eot_gradient_differs_from_naive_and_is_less_noisy(models, batch):
    model, (x, y) = models["bbb"], batch
    assert min(layer.weight_sigma.min().item() for layer in model.layers) > 0
    torch.manual_seed(0)
    reference = input_gradient(model, x, y, samples=2000)
    naive, eot = input_gradient(model, x, y, samples=1), input_gradient(model, x, y, samples=64)
    assert not torch.allclose(naive, eot)
    assert (eot - reference).norm() < 0.5 * (naive - reference).norm()


def test_eot_gradient_of_deterministic_model_does_not_depend_on_k(models, batch):
    x, y = batch
    one, many = (input_gradient(models["mlp"], x, y, samples=k) for k in (1, 8))
    torch.testing.assert_close(one, many)


@pytest.mark.parametrize("kind", KINDS)
def test_attacks_leave_the_cached_model_unchanged(models, batch, kind):
    model, (x, y) = models[kind], batch
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fgsm(model, x, y, 0.1, samples=4)
    targeted_fgsm(model, x[:4], 3, steps=3, samples=4)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(not p.requires_grad and p.grad is None for p in model.parameters())
