"""A training step replayed from a CUDA graph is the eager step: same losses, same weights.

For every estimator of BBB (both priors) and every kind that trains by steps (plain MLP, MC
dropout, α-dropout, the vmapped ensemble), 20 steps on one seed, eager and from a graph (3 eager
warm-up steps, the capture, 16 replays) give the same loss at every step and the same weights
after them; and :func:`~core.training.train` over two epochs with a partial last batch,
Blundell's KL schedule and a learning-rate decay gives the same history and weights with graphs
on and off. Runs where CUDA is present (skipped elsewhere, so in CI); the lent GPU's output is
kept in the lab notebook (``notebook/gpu/``).
"""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from core.engine.objective import minibatch_objective
from core.methods import ModelConfig, build_model, params_for
from core.training import TrainConfig, TrainStep, make_optimizer, train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CUDA = torch.device("cuda")
MIXTURE = {"prior": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": math.exp(-6)}
CASES = {
    # name: (model configuration, objective options)
    "bbb sequential S=3": ({"kind": "bbb"}, {"impl": "sequential", "n_samples": 3}),
    "bbb vmap S=3": ({"kind": "bbb"}, {"impl": "vmap", "n_samples": 3}),
    "bbb vmap_lrt S=10": ({"kind": "bbb"}, {"impl": "vmap_lrt", "n_samples": 10}),
    "bbb fused S=1": ({"kind": "bbb"}, {"impl": "fused", "n_samples": 1}),
    "bbb fused S=2": ({"kind": "bbb"}, {"impl": "fused", "n_samples": 2}),
    "bbb mixture sequential S=2": (
        {"kind": "bbb", **MIXTURE},
        {"impl": "sequential", "n_samples": 2},
    ),
    "bbb mixture vmap S=3": ({"kind": "bbb", **MIXTURE}, {"impl": "vmap", "n_samples": 3}),
    "bbb mixture fused S=1": ({"kind": "bbb", **MIXTURE}, {"impl": "fused"}),
    "bbb mixture vmap_lrt S=10": (
        {"kind": "bbb", **MIXTURE},
        {"impl": "vmap_lrt", "n_samples": 10},
    ),
    "mlp": ({"kind": "mlp"}, {"impl": "vmap"}),
    "mc dropout": ({"kind": "dropout"}, {"impl": "vmap"}),
    "alpha dropout S=4": ({"kind": "dropout"}, {"impl": "vmap", "n_samples": 4, "alpha": 0.5}),
    "ensemble": ({"kind": "ensemble", "members": 3}, {"impl": "members"}),
}
STEPS = 20
BATCH = 128


def _batches(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(n, BATCH, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (n, BATCH), generator=generator)
    return x.to(CUDA), y.to(CUDA)


def _run(model_options: dict, options: dict, graphs: bool):
    kind, params = model_options["kind"], {k: v for k, v in model_options.items() if k != "kind"}
    model = build_model(ModelConfig(kind=kind, hidden=(400, 400), params=params), seed=0).to(CUDA)
    optimizer = make_optimizer(model, 1e-3)

    def objective(x, y, weight):
        return minibatch_objective(model, x, y, weight=weight, **options)

    step = TrainStep(
        objective,
        partial(optimizer.zero_grad),
        optimizer.step,
        batch_size=BATCH,
        graphs=graphs,
    )
    x, y = _batches(STEPS)
    torch.manual_seed(5)
    losses = [step(x[i], y[i], 1.0 / 469).clone() for i in range(STEPS)]
    torch.cuda.synchronize()
    assert step.graphed is graphs
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    return torch.stack(losses).double().cpu(), weights.double().cpu()


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("case", list(CASES))
def test_graph_and_eager_steps_agree(case):
    model_options, options = CASES[case]
    graph_losses, graph_weights = _run(model_options, options, graphs=True)
    eager_losses, eager_weights = _run(model_options, options, graphs=False)
    loss_error = (
        ((graph_losses[:, 0] - eager_losses[:, 0]).abs() / eager_losses[:, 0].abs()).max().item()
    )
    weight_error = _relative(graph_weights, eager_weights)
    print(
        f"{case:28s} {STEPS} steps: max relative loss difference {loss_error:.1e}, "
        f"weights {weight_error:.1e}"
    )
    assert torch.isfinite(graph_losses).all()
    assert loss_error <= 1e-5
    assert weight_error <= 1e-5


@pytest.mark.parametrize("kind", ["bbb", "dropout"])
def test_train_with_and_without_graphs_agrees(kind, monkeypatch):
    """Two epochs of 1,000 images at batch 64 (15 full batches and one of 40 per epoch)."""
    generator = torch.Generator().manual_seed(2)
    x = torch.rand(1000, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (1000,), generator=generator)
    config = TrainConfig(epochs=2, batch_size=64, lr_decay=0.5, n_eval_samples=2)
    params = params_for(kind, {"impl": "fused", "kl_schedule": "blundell"})
    runs = {}
    for graphs in ("1", "0"):
        monkeypatch.setenv("BNN_CUDA_GRAPHS", graphs)
        model = build_model(ModelConfig(kind=kind, hidden=(100,), params=params), seed=0)
        result = train(model, config, (x, y), (x[:200], y[:200]), device=CUDA)
        assert result.cuda_graphs is (graphs == "1")
        weights = torch.cat([p.detach().flatten() for p in model.parameters()]).double().cpu()
        runs[graphs] = (result.history, weights)
    (graph_history, graph_weights), (eager_history, eager_weights) = runs["1"], runs["0"]
    for g, e in zip(graph_history, eager_history, strict=True):
        for key in ("elbo_loss", "nll", "kl", "train_error"):
            assert getattr(g, key) == pytest.approx(getattr(e, key), rel=1e-5, abs=1e-7), key
    error = _relative(graph_weights, eager_weights)
    print(f"train() {kind}, 2 epochs with a partial batch: weights differ by {error:.1e}")
    assert error <= 1e-5
