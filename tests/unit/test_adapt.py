"""Adapting a trained model to the class's drawings (core.adapt): each kind's prior is what it
learned, no drawings change nothing, bad input is one line, a cancelled run saves nothing, and
plain fine-tuning forgets MNIST where the Bayesian prior does not."""

from __future__ import annotations

import hashlib
import threading

import pytest
import torch
from torch.distributions import Normal, kl_divergence

from core.adapt import ADAPTERS, CannotAdapt, Recipe, adapt, adapt_model
from core.adapt.laplace import QuadraticPrior, absorb
from core.data.synthetic import canvas_digits
from core.engine.interface import ModelConfig
from core.evaluation.metrics import seeded_error
from core.methods import build_model, check_config
from core.methods.laplace.model import fit_laplace, full_ggn
from core.paths import user_model_dir
from core.storage.checkpoints import load_checkpoint, resolve_checkpoint


def drawings(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 28, 28, generator=g), torch.arange(n) % 10


def objective_of(checkpoint: str, options: dict | None = None):
    model, _ = load_checkpoint(checkpoint)
    unit = ADAPTERS[model.config.kind]
    return model, unit.objective(model, unit.options(options))


def test_bbb_prior_is_the_shipped_posterior_and_the_kl_is_to_it():
    shipped, _ = load_checkpoint("bbb_gaussian")
    model, objective = objective_of("bbb_gaussian")
    prior = objective.anchor
    for layer, kept in zip(shipped.layers, prior.layers, strict=True):
        assert torch.equal(kept["weight_mu"], layer.weight_mu)
        assert torch.equal(kept["weight_sigma"], torch.nn.functional.softplus(layer.weight_rho))
        assert torch.equal(kept["bias_mu"], layer.bias_mu)
        assert torch.equal(kept["bias_sigma"], torch.nn.functional.softplus(layer.bias_rho))
    assert objective.penalty().item() == 0.0  # q is its own prior before the first step
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # move q away from the prior
        for layer in model.layers:
            for p in layer.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=g))
    expected = sum(
        kl_divergence(
            Normal(q.double(), s.double()), Normal(getattr(old, m).double(), so.double())
        ).sum()
        for layer, old in zip(model.layers, shipped.layers, strict=True)
        for q, s, m, so in (
            (layer.weight_mu, layer.weight_sigma, "weight_mu", old.weight_sigma),
            (layer.bias_mu, layer.bias_sigma, "bias_mu", old.bias_sigma),
        )
    )
    assert objective.penalty().item() == pytest.approx(expected.item(), rel=1e-4)
    # not the KL to the configured N(0, 1) prior the network was trained with
    _, to_standard = model.forward_with_kl(torch.zeros(1, 784), lrt=True)
    assert abs(to_standard.item() - expected.item()) > 1.0


def small_laplace(structure: str) -> torch.nn.Module:
    config = check_config(
        ModelConfig(
            kind="laplace",
            hidden=(6,),
            in_features=8,
            num_classes=3,
            params={"structure": structure},
        )
    )
    model = build_model(config, seed=0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(40, 8, generator=g), torch.randint(0, 3, (40,), generator=g)
    fit_laplace(model, x, y)
    return model


@pytest.mark.parametrize("structure", ["kron", "full"])
def test_laplace_penalty_is_the_posterior_precision(structure):
    model = small_laplace(structure)
    precision = torch.linalg.inv(model.covariance().double())  # the fitted posterior's Λ
    prior = QuadraticPrior.posterior_of(model)
    torch.testing.assert_close(prior.precision_matrix().double(), precision, rtol=1e-3, atol=1e-3)
    delta = torch.randn(model.theta_map().shape, generator=torch.Generator().manual_seed(2))
    value = prior.penalty(model.theta_map() + delta).double()
    expected = 0.5 * delta.double().flatten() @ precision @ delta.double().flatten()
    assert value.item() == pytest.approx(expected.item(), rel=1e-3)


def test_laplace_adapter_keeps_the_shipped_precision():
    shipped, _ = load_checkpoint("laplace")
    _, objective = objective_of("laplace")
    for name, kept in objective.anchor.factors.items():
        assert torch.equal(kept, getattr(shipped, name))
    assert torch.equal(objective.anchor.theta, shipped.theta_map())


@pytest.mark.parametrize("structure", ["kron", "full"])
def test_laplace_precision_gains_the_drawings_curvature(structure):
    model = small_laplace(structure)
    before = QuadraticPrior.posterior_of(model).precision_matrix().double()
    x = torch.randn(15, 8, generator=torch.Generator().manual_seed(3))
    ggn = full_ggn(model, x)
    absorb(model, x)
    after = QuadraticPrior.posterior_of(model).precision_matrix().double()
    if structure == "full":
        torch.testing.assert_close(after, before + ggn, rtol=1e-3, atol=1e-3)
    else:  # the GGN's diagonal in the trained posterior's Kronecker eigenbasis
        basis = torch.kron(model.eigvecs_g, model.eigvecs_a).double()
        gained = torch.diag(torch.diag(basis.T @ ggn @ basis))
        torch.testing.assert_close(after, before + basis @ gained @ basis.T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "checkpoint", ["bbb_gaussian", "mlp", "dropout_mlp", "ensemble", "laplace"]
)
def test_no_drawings_change_nothing(checkpoint):
    shipped, _ = load_checkpoint(checkpoint)
    model, _ = load_checkpoint(checkpoint)
    options = {"pull": 100.0} if checkpoint in ("mlp", "dropout_mlp") else None
    x, y = drawings(0)
    info = adapt_model(model, x, y, Recipe(steps=5, options=options))
    assert info is not None
    after = model.state_dict()
    for name, value in shipped.state_dict().items():
        assert torch.equal(after[name], value), name


def test_a_few_steps_move_the_model():
    shipped, _ = load_checkpoint("mlp")
    model, _ = load_checkpoint("mlp")
    adapt_model(model, *drawings(20), Recipe(steps=3))
    assert not torch.equal(model.layers[0].weight, shipped.layers[0].weight)


@pytest.mark.parametrize(
    ("images", "labels", "words"),
    [
        (torch.zeros(0, 1, 28, 28), torch.zeros(0, dtype=torch.long), "0 drawing"),
        (torch.rand(2, 1, 28, 28), torch.tensor([1, 2]), "at least 3"),
        (torch.rand(5, 1, 28, 28), torch.full((5,), 7), "every drawing is a 7"),
    ],
)
def test_bad_drawings_are_one_clear_line(images, labels, words):
    with pytest.raises(ValueError, match=words) as caught:
        adapt("mlp", images, labels, name="x")
    assert "\n" not in str(caught.value)
    assert not list(user_model_dir().glob("*"))


@pytest.mark.parametrize("checkpoint", ["swag", "sgld", "sgmcmc_cyclic"])
def test_kinds_without_an_honest_way_say_why(checkpoint):
    with pytest.raises(CannotAdapt, match="cannot learn from the class's drawings: .*Train page"):
        adapt(checkpoint, *drawings(10))


def test_a_model_of_another_task_is_refused():
    with pytest.raises(ValueError, match="another task"):
        adapt("fashion_mlp", *drawings(10))


def test_a_bad_option_is_one_line():
    with pytest.raises(ValueError, match="pull must be one of|pull"):
        adapt("mlp", *drawings(10), Recipe(options={"pull": "strong"}))
    with pytest.raises(ValueError, match="no adaptation option"):
        adapt("bbb_gaussian", *drawings(10), Recipe(options={"pull": 1.0}))


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_result_is_a_new_model_owned_by_who_asked_and_the_shipped_one_is_untouched():
    shipped = resolve_checkpoint("mlp")
    before = digest(shipped)
    result = adapt("mlp", *drawings(12), Recipe(steps=2), name="ours", owner="teacher-browser")
    assert result.path == user_model_dir() / "ours.pt"
    again = adapt("mlp", *drawings(12), Recipe(steps=2), name="ours")
    assert again.path.name == "ours-2.pt"
    model, meta = load_checkpoint("user:ours")
    assert meta["owner"] == "teacher-browser"
    assert meta["adapted_from"] == "mlp"
    assert meta["adaptation"]["drawings"] == 12
    assert meta["adaptation"]["per_digit"] == [2, 2] + [1] * 8
    assert torch.equal(model.layers[0].weight, result.model.layers[0].weight)
    assert digest(shipped) == before


def test_cancel_leaves_no_model():
    cancel = threading.Event()
    cancel.set()
    assert adapt("mlp", *drawings(10), name="gone", cancel=cancel) is None
    midway = threading.Event()

    def progress(fraction: float, message: str) -> None:
        if fraction > 0.3:
            midway.set()

    result = adapt(
        "bbb_gaussian",
        *drawings(10),
        Recipe(steps=20),
        name="gone",
        cancel=midway,
        progress=progress,
    )
    assert result is None
    assert not list(user_model_dir().glob("*"))


def test_plain_fine_tuning_forgets_mnist_more_than_the_bayesian_prior(mnist_small):
    """A real, seeded run: 100 canvas-style drawings; MNIST test error on 1000 other digits."""
    (train_x, train_y), (test_x, test_y) = mnist_small
    x, y = canvas_digits(train_x[:100], seed=0), train_y[:100]
    forgot = {}
    for checkpoint in ("mlp", "bbb_gaussian"):
        shipped, _ = load_checkpoint(checkpoint)
        result = adapt(
            checkpoint,
            x,
            y,
            Recipe(steps=60, options={"n_samples": 2} if checkpoint == "bbb_gaussian" else None),
        )
        forgot[checkpoint] = seeded_error(result.model, test_x, test_y, 10) - seeded_error(
            shipped, test_x, test_y, 10
        )
    assert forgot["mlp"] > forgot["bbb_gaussian"] + 0.03, forgot
