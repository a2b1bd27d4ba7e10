"""Papers' bandit experiments as presets (:mod:`core.bandits.protocols`): every setting a preset
fixes has a stated source, and reaches the reward networks and their online training."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest

from core.bandits.native import NativeGroup
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.settings import ModelSettings
from core.engine.priors import ScaleMixturePrior
from core.methods.base import prior_config
from harness.browser import REPO_ROOT

BLUNDELL = PROTOCOLS["blundell2015"]


@pytest.mark.parametrize("protocol", PROTOCOLS.values(), ids=list(PROTOCOLS))
def test_every_setting_a_protocol_changes_has_its_source(protocol):
    changed = {
        key
        for key, value in dataclasses.asdict(protocol.config).items()
        if key != "model" and value != getattr(RunConfig(), key)
    } | {
        f"model.{key}"
        for key, value in protocol.config.model.to_dict().items()
        if value != ModelSettings().to_dict().get(key)
    }
    assert changed <= set(protocol.sources)
    listed = protocol.settings()
    assert [key for key, _, _ in listed] == list(protocol.sources)
    assert all(source for _, _, source in listed)


def test_blundells_settings_reach_the_networks_and_64_updates_per_step():
    config = dataclasses.replace(BLUNDELL.config, steps=3, seeds=1)
    run = BanditRun(config)
    groups = {g.family: g for g, _ in run.groups}
    assert set(groups) == {"bbb", "mlp"}
    assert all(isinstance(g, NativeGroup) for g in groups.values())  # the compiled kernel
    bbb = groups["bbb"]
    assert bbb.config.hidden == (100, 100) and bbb.kernel.hidden == (100, 100)
    assert prior_config(bbb.config.params) == {
        "kind": "mixture",
        "pi": 0.5,
        "sigma1": 1.0,
        "sigma2": math.exp(-6),
    }
    assert bbb.config.params["impl"] != "vmap_lrt"  # weight sampling, no local reparameterisation
    assert bbb.bayesian and not groups["mlp"].bayesian
    assert isinstance(bbb._prior, ScaleMixturePrior)
    template = bbb._training.model  # the method's model the page's snapshots go through
    assert all(isinstance(layer.prior, ScaleMixturePrior) for layer in template.layers)
    assert bbb.buffer.capacity == 4096 and bbb.settings.batch_size == 64
    assert bbb.settings.noise_sigma * run.env.reward_scale == pytest.approx(1.0)
    jobs = []
    run_jobs = type(bbb.kernel).run
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            type(bbb.kernel), "run", lambda self, js, t=1: jobs.extend(js) or run_jobs(self, js, t)
        )
        run.advance()
    assert [(job.U, job.B, job.cap) for job in jobs] == [(64, 64, 4096)] * 6  # 2 families × 3
    assert [job.hyper[0] for job in jobs] == pytest.approx([1e-3] * 6)  # Adam's learning rate
    assert [job.hyper[4] for job in jobs] == pytest.approx([1 / 0.2**2] * 6)  # 1/σ² (likelihood)
    assert sorted(bool(job.bayes) for job in jobs) == [False] * 3 + [True] * 3  # one call a step
    assert bbb.steps == groups["mlp"].steps == 3 * 64  # 64 minibatch steps per interaction
    assert bbb.pending is None and groups["mlp"].pending is None


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


def test_agents_runs_some_of_a_protocols_agents_and_refuses_others(monkeypatch, capsys):
    from core.cli import bandit as bandit_cli

    ran = []
    monkeypatch.setattr(bandit_cli, "run_bandit", lambda config, **o: ran.append(config) or 1 / 0)
    parser = bandit_cli.argparse.ArgumentParser()
    bandit_cli.register(parser.add_subparsers())
    args = parser.parse_args(["bandit", "--protocol", "blundell2015", "--agents", "random"])
    assert args.func(args) == 2 and not ran
    assert "choose from bbb,greedy,eps1,eps5" in capsys.readouterr().err
    args = parser.parse_args(["bandit", "--protocol", "blundell2015", "--agents", "bbb"])
    with pytest.raises(ZeroDivisionError):
        args.func(args)
    assert ran[0] == dataclasses.replace(BLUNDELL.config, agents=("bbb",))


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
        BLUNDELL.config, model=BLUNDELL.config.model.replace(prior="gaussian")
    )
    assert options["device"] == "cpu" and options["compile"] is False


def test_an_ablation_is_named_and_titled_by_its_protocol_and_what_it_changes():
    from app.bandit_words import run_title
    from core.bandits.protocols import protocol_ablation
    from core.bandits.store import reference_name

    assert protocol_ablation(BLUNDELL.config) == ("blundell2015", {})
    assert reference_name(BLUNDELL.config) == "mushroom-50000-blundell2015.json"
    model = BLUNDELL.config.model.replace(prior="gaussian", kl_beta=0.1)
    ablation = dataclasses.replace(BLUNDELL.config, model=model)
    assert protocol_ablation(ablation) == ("blundell2015", {"prior": "gaussian", "kl_beta": 0.1})
    assert reference_name(ablation) == "mushroom-50000-blundell2015-priorgaussian-kl_beta0.1.json"
    result = {
        "settings": ablation.to_dict(),
        "env": {"title": "Mushroom"},
        "steps_done": 50_000,
    }
    assert run_title(result).endswith(
        "§5.3 and Figure 5 with a Gaussian prior, the complexity cost × 0.1"
    )
    only_bbb = dataclasses.replace(ablation, agents=("bbb",))
    assert protocol_ablation(only_bbb) == (
        "blundell2015",
        {"agents": ["bbb"], "prior": "gaussian", "kl_beta": 0.1},
    )
    assert reference_name(only_bbb) == (
        "mushroom-50000-blundell2015-agentsbbb-priorgaussian-kl_beta0.1.json"
    )
    result["settings"] = only_bbb.to_dict()
    assert run_title(result).endswith(
        "with a Gaussian prior, the complexity cost × 0.1 (BBB Thompson only)"
    )
    narrower = dataclasses.replace(
        only_bbb, model=BLUNDELL.config.model.replace(prior_sigma1=0.13533528)
    )
    assert (
        reference_name(narrower)
        == "mushroom-50000-blundell2015-agentsbbb-prior_sigma10.135335.json"
    )
    result["settings"] = narrower.to_dict()
    assert run_title(result).endswith(
        "with a prior whose wide part has σ1 = e⁻² ≈ 0.135 (BBB Thompson only)"
    )
    reweighted = dataclasses.replace(
        only_bbb, model=BLUNDELL.config.model.replace(kl_schedule="geometric")
    )
    result["settings"] = reweighted.to_dict()
    assert run_title(result).endswith(
        "with most of each step's complexity cost in its first updates (Blundell et al.'s "
        "re-weighting) (BBB Thompson only)"
    )
    raw = dataclasses.replace(  # the same likelihood, in reward units, on undivided rewards
        only_bbb,
        model=BLUNDELL.config.model.replace(reward_scale=1.0, noise_sigma=1.0),
    )
    assert reference_name(raw) == (
        "mushroom-50000-blundell2015-agentsbbb-noise_sigma1-reward_scale1.json"
    )
    result["settings"] = raw.to_dict()
    assert run_title(result).endswith(
        "with the rewards as they are, a likelihood σ of 1 reward unit (BBB Thompson only)"
    )
    assert protocol_ablation(dataclasses.replace(BLUNDELL.config, agents=("random",))) is None
    other = dataclasses.replace(BLUNDELL.config, seeds=2)  # not the protocol's runs
    assert protocol_ablation(other) is None
    assert reference_name(other).startswith("mushroom-50000-updates_per_step64")


@pytest.mark.parametrize(
    ("agents", "sets", "name", "title"),
    [
        (
            ("bbb",),
            {"thompson_draws": 2},
            "mushroom-50000-blundell2015-agentsbbb-thompson_draws2.json",
            "with each decision averaging 2 posterior draws (BBB Thompson only)",
        ),
        (
            BLUNDELL.config.agents,
            {"standardise_rewards": True, "noise_sigma": 1.0},
            "mushroom-50000-blundell2015-noise_sigma1-standardise_rewardsTrue.json",
            "with the rewards standardised (their mean subtracted, divided by their spread), "
            "a likelihood σ of 12.3 reward units",
        ),
    ],
    ids=["two-draws", "standardised"],
)
def test_the_two_last_ablations_are_named_and_titled_for_students(agents, sets, name, title):
    from app.bandit_words import run_title
    from core.bandits.store import load_references, reference_name

    model = BLUNDELL.config.model.replace(**sets)
    config = dataclasses.replace(BLUNDELL.config, agents=agents, model=model)
    assert reference_name(config) == name
    result = {"settings": config.to_dict(), "env": {"title": "Mushroom"}, "steps_done": 50_000}
    assert run_title(result).endswith("§5.3 and Figure 5 " + title)
    stored = load_references()[name]  # stored for the page, as far as it ran
    assert RunConfig.from_dict(stored["settings"]) == config
    assert set(stored["agents"]) == set(agents) and stored["steps_done"] >= 250


def test_the_page_says_why_bbb_lost_the_protocol_and_points_to_the_run_where_it_won():
    from app.bandit_words import bbb_verdict
    from core.bandits.store import beside_protocol, load_references

    stored = load_references()
    protocol = bbb_verdict(stored["mushroom-50000-blundell2015.json"])
    assert "did not beat" in protocol and "With 64 updates per step" in protocol
    assert "one update per step for every agent" in protocol
    one_update = stored["mushroom-50000-blundell2015-updates_per_step1.json"]
    assert all(
        one_update["agents"]["bbb"]["mean"] < agent["mean"]
        for name, agent in one_update["agents"].items()
        if name != "bbb"
    )
    verdict = bbb_verdict(one_update)
    assert "did not beat" not in verdict and verdict.count("beat") == 1
    sgd = stored["mushroom-50000-blundell2015-lr1e-06-optimizersgd.json"]
    assert sgd["settings"]["model"]["optimizer"] == "sgd"
    verdict = bbb_verdict(sgd)  # its σ stayed at the start: the page must not say it widened
    assert "hardly moved" in verdict and "widens" not in verdict
    assert "widens" in protocol and "hardly moved" not in protocol
    wide = "mushroom-50000-blundell2015-agentsbbb-noise_sigma4.json"  # σ of 20 reward units
    verdict = bbb_verdict(beside_protocol(stored[wide], stored))
    assert "hardly learned which mushrooms to eat" in verdict and "widens" not in verdict
    assert "hardly learned" not in protocol


def test_the_stated_bandit_numbers_read_the_stored_curves_at_a_step():
    from core.stated.registry import value

    protocol = "mushroom-50000-blundell2015.json"
    assert value(f"bandit_regret_at {protocol} greedy 10000") == "2,781"  # the docs' table
    assert value(f"bandit_regret_at {protocol} bbb 50000") == value(f"bandit_regret {protocol} bbb")
    with pytest.raises(ValueError, match="no point at step 10001"):
        value(f"bandit_regret_at {protocol} bbb 10001")
    assert value(f"bandit_steps {protocol}") == "50,000"
    assert value(f"bandit_per_step {protocol} bbb") == "0.69"  # 34,708 / 50,000
    assert value(f"bandit_per_step_last {protocol} bbb") == "0.518"  # the docs' table
    assert value(f"bandit_sigma {protocol}") == "0.266"  # BBB's σ at 50,000 in the docs
    ablation = "mushroom-50000-blundell2015-agentsbbb-lr0.0001.json"
    assert value(f"bandit_protocol_at {ablation} eps1") == "16,044"
    assert value(f"bandit_protocol_sigma_at {ablation}") == "0.266"
    with pytest.raises(ValueError, match="no ablation"):
        value("bandit_protocol_at mushroom-50000.json greedy")
