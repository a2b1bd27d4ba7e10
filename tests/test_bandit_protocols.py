"""Papers' bandit experiments as presets (:mod:`core.bandits.protocols`): every setting a preset
fixes has a stated source, and reaches the reward networks and their online training."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest

from core.bandits.agents import ModelSettings, NeuralGroup
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun, RunConfig
from core.engine.priors import ScaleMixturePrior
from tests.browser_util import REPO_ROOT

BLUNDELL = PROTOCOLS["blundell2015"]


@pytest.mark.parametrize("protocol", PROTOCOLS.values(), ids=list(PROTOCOLS))
def test_every_setting_a_protocol_changes_has_its_source(protocol):
    changed = {
        key
        for key, value in dataclasses.asdict(protocol.config).items()
        if key != "model" and value != getattr(RunConfig(), key)
    } | {
        f"model.{key}"
        for key, value in dataclasses.asdict(protocol.config.model).items()
        if value != getattr(ModelSettings(), key)
    }
    assert changed <= set(protocol.sources)
    listed = protocol.settings()
    assert [key for key, _, _ in listed] == list(protocol.sources)
    assert all(source for _, _, source in listed)


def test_blundells_settings_reach_the_networks_and_64_updates_per_step():
    config = dataclasses.replace(BLUNDELL.config, steps=3, seeds=1)
    run = BanditRun(config)
    group = next(g for g, _ in run.groups if isinstance(g, NeuralGroup))
    assert group.config.hidden == (100, 100)
    assert group.config.prior == {
        "kind": "mixture",
        "pi": 0.5,
        "sigma1": 1.0,
        "sigma2": math.exp(-6),
    }
    template = group._training.model  # the stateless model every run's call goes through
    assert all(isinstance(layer.prior, ScaleMixturePrior) for layer in template.layers)
    assert group.buffer.capacity == 4096 and group.settings.batch_size == 64
    assert group.settings.noise_sigma * run.env.reward_scale == pytest.approx(1.0)
    run.advance()
    optimizer = group.procedure.optimizers[0]
    steps = {int(state["step"]) for state in optimizer.state.values()}
    assert steps == {3 * 64}  # every reward network took 64 minibatch steps per interaction


def test_the_cli_lists_the_protocols_and_prints_each_setting_with_its_source():
    text = BLUNDELL.describe().splitlines()
    assert text[0] == f"{BLUNDELL.title}:"
    assert text[1:] == [
        f"  {key} = {value}  ({source})" for key, value, source in BLUNDELL.settings()
    ]
    assert any(line.startswith("  model.updates_per_step = 64  (") for line in text)
    help_text = subprocess.run(
        [sys.executable, "-m", "core", "bandit", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--protocol {blundell2015}" in help_text


def test_set_makes_an_ablation_of_a_protocol(monkeypatch):
    from core.cli import bandit as bandit_cli

    ran = []

    def run_bandit(config, **options):
        ran.append((config, options))
        return BanditRun(dataclasses.replace(config, steps=1, seeds=1)).result(), None

    monkeypatch.setattr(bandit_cli, "run_bandit", run_bandit)
    parser = bandit_cli.argparse.ArgumentParser()
    bandit_cli.register(parser.add_subparsers())
    args = parser.parse_args(
        ["bandit", "--protocol", "blundell2015", "--set", "prior=gaussian", "--device", "cpu"]
    )
    assert args.func(args) == 0
    config, options = ran[0]
    assert config == dataclasses.replace(
        BLUNDELL.config, model=dataclasses.replace(BLUNDELL.config.model, prior="gaussian")
    )
    assert options["device"] == "cpu" and options["compile"] is False
