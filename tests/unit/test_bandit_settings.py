"""The bandit's reward-model settings: each method's parameters, spoken of by flat names.

Every stored bandit run (the reference runs, the shipped live run, the lab notebook's
ablations) was written with the flat settings of before; each must load and keep the cache key
and the file name it was stored under.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from core.bandits.runner import RunConfig
from core.bandits.settings import REWARD_MODELS, ModelSettings
from core.bandits.store import REFERENCES, reference_name, run_cache
from core.cli.bandit import model_settings
from core.methods import METHODS
from core.paths import CHECKPOINT_DIR

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((CHECKPOINT_DIR / "results" / "bandits").glob("*.json"))
NOTEBOOK = sorted((ROOT / "notebook" / "bandits").rglob("*.json"))
FIRST_DEFAULTS = {
    "hidden": [100, 100],
    "buffer_size": 4096,
    "batch_size": 64,
    "updates_per_step": 1,
    "lr": 0.001,
    "optimizer": "adam",
    "noise_sigma": 1.0,
    "reward_scale": None,
    "standardise_rewards": False,
    "thompson_draws": 1,
    "prior": "gaussian",
    "prior_sigma": 1.0,
    "prior_pi": 0.5,
    "prior_sigma1": 1.0,
    "prior_sigma2": 0.0024787521766663585,
    "init_sigma": 0.02,
    "kl_beta": 1.0,
    "kl_data": "buffer",
    "kl_schedule": "constant",
    "lrt": True,
    "engine": "torch",
    "dropout": 0.2,
    "members": 5,
    "sgld_lr": 0.01,
    "linear_lambda": 0.25,
    "linear_a0": 6.0,
    "linear_b0": 6.0,
}
"""The default settings as the flat ModelSettings of before stored them."""


def as_first_written(settings: dict) -> dict:
    """A stored run's settings as the code of before completed them (missing ones defaulted)."""
    return settings | {"model": FIRST_DEFAULTS | settings["model"]}


def test_the_defaults_are_written_as_before():
    assert ModelSettings().to_dict() == FIRST_DEFAULTS
    assert list(ModelSettings().to_dict()) == list(FIRST_DEFAULTS)  # file names follow it


@pytest.mark.parametrize("name", sorted(REFERENCES.load_all()))
def test_every_reference_run_keeps_its_settings_and_its_file_name(name):
    settings = REFERENCES.load_all()[name]["settings"]
    config = RunConfig.from_dict(settings)
    assert config.to_dict() == as_first_written(settings)
    assert reference_name(config) == name


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_live_runs_keep_their_cache_key(path):
    settings = json.loads(path.read_text())["settings"]
    config = RunConfig.from_dict(settings)
    assert config.to_dict() == as_first_written(settings)
    assert run_cache(config).path.name == path.name


@pytest.mark.parametrize("path", NOTEBOOK, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_notebook_ablation_loads_with_the_settings_its_name_says(path):
    settings = json.loads(path.read_text())["settings"]
    model = RunConfig.from_dict(settings).to_dict()["model"]
    assert model == FIRST_DEFAULTS | settings["model"]
    named = re.findall(r"-([a-z][a-z0-9_]*)_(\d[\d.]*(?:e-?\d+)?|[a-z]+)(?=-|$)", path.stem)
    for key, value in named:  # e.g. -prior_sigma1_0.13533528 or -lr_1e-4, as --set named it
        if key in model:
            assert str(model[key]).lower() == value or model[key] == pytest.approx(float(value))


def test_a_flat_name_sets_the_parameter_of_every_method_that_has_it():
    settings = model_settings(
        ["prior=mixture", "prior_sigma1=0.37", "members=3", "sgld_lr=0.02", "lrt=false"]
        + ["kl_schedule=geometric", "kl_beta=0.5", "dropout=0.3", "init_sigma=0.05"]
    )
    bbb, sgld = settings.params["bbb"], settings.params["sgld"]
    assert bbb["prior"] == sgld["prior"] == "mixture"
    assert bbb["sigma1"] == sgld["sigma1"] == 0.37
    assert settings.params["ensemble"]["members"] == sgld["members"] == 3
    assert (bbb["impl"], bbb["kl_schedule"], bbb["beta"]) == ("vmap", "blundell", 0.5)
    assert (bbb["init_sigma"], settings.params["dropout"]["dropout"]) == (0.05, 0.3)
    assert settings.training("sgld")["lr"] == 0.02 and settings.training("bbb")["lr"] == 1e-3
    assert "lr" not in settings.network_params("sgld")
    flat = settings.to_dict()
    assert (flat["prior_sigma1"], flat["lrt"], flat["kl_schedule"]) == (0.37, False, "geometric")
    assert "params" not in flat
    assert ModelSettings.from_dict(flat) == settings


def test_parameters_the_flat_names_do_not_say_are_stored_by_method_and_read_back():
    settings = ModelSettings(params={"bbb": {"n_samples": 2}, "sgld": {"prior_sigma": 0.3}})
    stored = json.loads(json.dumps(settings.to_dict()))
    assert stored["params"] == {"bbb": {"n_samples": 2}, "sgld": {"prior_sigma": 0.3}}
    assert stored["prior_sigma"] == 1.0  # BBB's, the first method with a prior
    assert ModelSettings.from_dict(stored) == settings
    wider = settings.replace(prior_sigma=2.0)  # a flat name sets every method's parameter
    assert wider.params["bbb"]["prior_sigma"] == wider.params["sgld"]["prior_sigma"] == 2.0
    assert wider.params["bbb"]["n_samples"] == 2
    with pytest.raises(ValueError, match="no reward model"):
        ModelSettings(params={"nonexistent": {}})
    with pytest.raises(ValueError, match="has no setting"):
        ModelSettings(params={"bbb": {"dropout": 0.5}})


def test_no_field_repeats_a_methods_setting_and_every_reward_model_has_its_parameters():
    settings = {s.name for m in METHODS.values() for s in m.parameters}
    assert {f.name for f in fields(ModelSettings)} & settings == set()
    assert set(ModelSettings().params) == set(REWARD_MODELS)
    for kind in REWARD_MODELS:
        assert set(METHODS[kind].params()) <= set(ModelSettings().params[kind])
