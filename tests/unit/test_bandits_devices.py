"""Bandit agents on a GPU: a step's updates replayed from a CUDA graph are the eager updates.

Blundell et al.'s protocol takes 64 minibatch updates per step; on a GPU
:class:`~core.bandits.updates.StepUpdates` replays them from one CUDA graph. With the same seeds,
runs of the paper's BBB (scale-mixture prior, local reparameterisation) and greedy agents give
the same actions, regret and weights with graphs on and off; a run compiled with
``torch.compile`` (inductor told to draw its noise as eager torch does) follows the eager run to
float tolerance; and a run continued from a saved state on the GPU ends as the uninterrupted
one. The GPU tests run where CUDA is present (skipped elsewhere, so in CI); the compiled run is
checked on the CPU everywhere.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from core.bandits.neural import NeuralGroup
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")

STEPS = 10  # 3 eager warm-up steps, the capture, 6 replays


def _config(hidden=(100, 100), updates=4):
    model = dataclasses.replace(  # PyTorch's models: the compiled kernel is the CPU's
        PROTOCOLS["blundell2015"].config.model,
        hidden=hidden,
        updates_per_step=updates,
        engine="torch",
    )
    return dataclasses.replace(
        PROTOCOLS["blundell2015"].config,
        agents=("bbb", "greedy", "eps5"),
        steps=STEPS,
        seeds=2,
        model=model,
    )


def _networks(run: BanditRun) -> list[NeuralGroup]:
    return [group for group, _ in run.groups if isinstance(group, NeuralGroup)]


def _weights(run: BanditRun) -> list[torch.Tensor]:
    return [p.detach().cpu() for group in _networks(run) for p in group.params.values()]


@needs_cuda
def test_graph_and_eager_bandit_steps_agree(monkeypatch):
    config = _config()
    graphed = BanditRun(config, device="cuda")
    graphed.advance()
    assert all(group.updates.graphed for group in _networks(graphed))
    monkeypatch.setenv("BNN_CUDA_GRAPHS", "0")
    eager = BanditRun(config, device="cuda")
    eager.advance()
    assert not any(group.updates.graphed for group in _networks(eager))
    assert torch.equal(graphed.actions, eager.actions)
    assert torch.equal(graphed.regret, eager.regret)
    for a, b in zip(_weights(graphed), _weights(eager), strict=True):
        assert torch.equal(a, b)
    sigma = graphed.result()["agents"]["bbb"]["sigma"]
    assert all(0.0 < s < 1.0 for seed in sigma for s in seed)


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU"))],
)
def test_a_compiled_run_follows_the_eager_one(device, monkeypatch):
    import torch._inductor.config as inductor

    monkeypatch.setattr(inductor, "fallback_random", True)  # eager torch's random draws
    config = _config(hidden=(32, 32), updates=2)
    compiled = BanditRun(config, device=device, compile=True)
    compiled.advance()
    eager = BanditRun(config, device=device)
    eager.advance()
    differ = [t for t in range(STEPS) if not torch.equal(compiled.actions[t], eager.actions[t])]
    assert not differ, f"actions differ from step {differ[0]}"
    for a, b in zip(_weights(compiled), _weights(eager), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@needs_cuda
def test_a_gpu_run_resumes_from_its_saved_state():
    config = dataclasses.replace(_config(), steps=2 * STEPS)
    whole = BanditRun(config, device="cuda")
    whole.advance()
    first = BanditRun(config, device="cuda")
    first.advance(STEPS)
    state = first.state_dict()
    assert all(
        t.device.type == "cpu" for g in state["groups"] for t in g["net"].values()
    )  # a state saved on the GPU loads anywhere
    resumed = BanditRun(config, device="cuda")
    resumed.load_state_dict(state)
    resumed.advance()
    assert torch.equal(resumed.regret, whole.regret)
    for a, b in zip(_weights(resumed), _weights(whole), strict=True):
        assert torch.equal(a, b)


@needs_cuda
def test_settings_reach_the_gpu_networks():
    run = BanditRun(_config(), device="cuda")
    for group in _networks(run):
        assert all(p.is_cuda for p in group.params.values())
        assert group.buffer.contexts.is_cuda and group.stream is not None
