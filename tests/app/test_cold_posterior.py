"""Cold posteriors: the shipped SGLD at T = 1 and at T = 0.001, the temperature study, the floor
on the spread of a sampler's samples (:mod:`core.studies.cold_posterior`) and the Calibration
page's section that shows them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

import app.cold_posterior as cold_panel
from app.ui import MODELS_KEY
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.methods import build_model
from core.storage.checkpoints import checkpoint_path, read_metadata
from core.studies.cold_posterior import (
    CAVEAT,
    CLAIM,
    RECIPE,
    SPREAD_FLOOR,
    TEMPERATURES,
    ColdSettings,
    SpreadSettings,
    at_temperature,
    is_sampler,
    point_entry,
    rotated_spread,
    sample_spread,
    samples_differ,
    shipped_at,
    spread_entry,
    stored_cold_posterior,
)
from core.studies.comparison import load_comparison, row_title

PAGE = "../../pages/calibration.py"
SAMPLERS = [name for name, spec in REGISTRY.items() if is_sampler(spec)]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    """An empty cache: what the lab ships is read, anything else would be computed into it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BNN_CACHE_DIR", str(cache))
    return cache


def computed(cache: Path) -> list[str]:
    """The files a test computed into the cache."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())


def test_the_samplers_are_sgld_at_both_temperatures_and_the_cyclical_one():
    assert {"sgld", "sgld_t1", "sgmcmc_cyclic"} <= set(SAMPLERS)
    assert shipped_at() == {1.0: "sgld_t1", 0.001: "sgld"}
    sgld, posterior = REGISTRY["sgld"], REGISTRY["sgld_t1"]
    assert posterior.model == at_temperature(sgld.model, 1.0)
    assert posterior.training == sgld.training
    assert posterior.train_subset == sgld.train_subset


@pytest.mark.parametrize("name", SAMPLERS)
def test_a_sampler_calls_its_networks_posterior_samples_only_when_they_differ(name, empty_cache):
    """The catalogue's title and description are what the pages and ``core list`` show: a
    sampler whose samples are below the floor must say they barely differ, and not call them
    posterior samples."""
    assert spread_entry(name).shipped.is_file(), f"{name}: ship its spread (ship_results.py)"
    spread = sample_spread(name)
    assert computed(empty_cache) == []  # read from what ships, never computed
    spec = REGISTRY[name]
    text = f"{spec.title} {spec.description}"
    if spread < SPREAD_FLOOR:
        assert CAVEAT in text, f"{name}: MI {spread:.4f} < {SPREAD_FLOOR}, but: {text}"
        assert CLAIM not in text.lower(), f"{name}: MI {spread:.4f}, called {CLAIM}s: {text}"
    else:
        assert CAVEAT not in text, f"{name}: MI {spread:.4f} ≥ {SPREAD_FLOOR}, but: {text}"


def test_the_home_pages_comparison_shows_the_caveat_with_the_cold_samplers_numbers():
    rows = load_comparison()["rows"]
    for row in rows:
        if row["checkpoint"] in SAMPLERS and not samples_differ(row["checkpoint"]):
            assert CAVEAT in row_title(row), row_title(row)
    assert "sgld" in [row["checkpoint"] for row in rows]


def test_the_floor_parts_the_cold_sgld_from_the_posterior_and_the_cyclical_sampler(empty_cache):
    spreads = {name: sample_spread(name) for name in ("sgld", "sgld_t1", "sgmcmc_cyclic")}
    assert spreads["sgld"] < SPREAD_FLOOR
    assert min(spreads["sgld_t1"], spreads["sgmcmc_cyclic"]) > 2 * SPREAD_FLOOR
    assert not samples_differ("sgld") and samples_differ("sgld_t1")
    assert samples_differ("sgmcmc_cyclic")


def test_identical_samples_have_no_spread_and_different_ones_do():
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    recipe = REGISTRY["sgld"].model
    config = replace(recipe, hidden=(16,), params=recipe.params | {"members": 4})
    torch.manual_seed(0)
    model = build_model(config)
    for _ in range(4):
        model.add_sample()  # four copies of one network
    settings = SpreadSettings(n_inputs=50, n_samples=4)
    assert rotated_spread(model.eval(), settings) == pytest.approx(0.0, abs=1e-6)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))
    model.add_sample()  # one of the four replaced by another network
    assert rotated_spread(model, settings) > 1e-3


def test_the_stored_study_has_every_temperature_and_shows_the_cold_posterior_effect(
    empty_cache,
):
    study = stored_cold_posterior()
    assert study is not None, "ship the study: scripts/ship_results.py"
    assert [p.temperature for p in study.points] == list(TEMPERATURES)
    for temperature, name in shipped_at().items():
        point = study.at(temperature)
        assert point.checkpoint == name
        assert point.epochs == REGISTRY[name].training.epochs
        assert point.mutual_information == pytest.approx(sample_spread(name))  # one measure
        # the exact mean of the 8 samples, beside the 100-pass error the checkpoint records
        recorded = read_metadata(checkpoint_path(name))["test_error"]
        assert point.test_error == pytest.approx(recorded, abs=0.001)
    assert all(p.checkpoint == "" for p in study.points if p.temperature not in shipped_at())
    spreads = [p.mutual_information for p in study.points]
    assert spreads == sorted(spreads, reverse=True)  # colder, the samples differ less
    assert spreads[0] > SPREAD_FLOOR > spreads[-1]
    assert computed(empty_cache) == []


def test_a_trained_point_is_keyed_by_its_recipe_and_a_shipped_one_by_its_file(monkeypatch):
    trained = point_entry(0.1).path
    assert point_entry(0.1, ColdSettings(epochs=20)).path != trained
    shipped = point_entry(1.0).path
    assert point_entry(1.0, ColdSettings(epochs=20)).path == shipped  # its file says how
    spec = REGISTRY[RECIPE]
    other = replace(spec, training=replace(spec.training, lr=0.4))
    monkeypatch.setitem(REGISTRY, RECIPE, other)
    assert point_entry(0.1).path != trained


# --- the Calibration page's section ---------------------------------------------------------


def run_page(**state) -> AppTest:
    """The Calibration page for the MLP alone (its default view ships), cold section included."""
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(PAGE, default_timeout=600)
    for key, value in {MODELS_KEY: ["mlp"], **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def cold_charts(at: AppTest) -> list[dict]:
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return [s for s in specs if s["layout"]["title"]["text"].endswith("against T")]


def test_the_section_shows_the_four_numbers_against_the_temperature(empty_cache):
    study = stored_cold_posterior()
    if study is None:
        pytest.skip("no stored temperature study")
    at = run_page()
    assert "Cold posteriors: SGLD's temperature" in [h.value for h in at.header]
    slider = at.select_slider(key="cal_temperature")
    assert slider.value == 1.0 and list(slider.options) == [f"{t:g}" for t in TEMPERATURES]
    metrics = {m.label: m.value for m in at.metric}
    hot = study.at(1.0)
    assert metrics["Test error"] == hot.formatted("test_error")
    assert metrics["Spread of the samples (MI, nats)"] == hot.formatted("mutual_information")
    assert "the samples differ" in at.success[0].value
    charts = cold_charts(at)
    assert len(charts) == 4
    spread = charts[-1]
    assert spread["layout"]["xaxis"]["type"] == "log"
    assert spread["data"][0]["y"] == pytest.approx([p.mutual_information for p in study.points])
    assert spread["data"][-1]["y"] == [SPREAD_FLOOR, SPREAD_FLOOR]  # the floor, dashed
    assert "Wenzel et al. (2020)" in " ".join(m.value for m in at.markdown)

    slider.set_value(0.001).run()
    assert not at.exception, at.exception
    assert any("barely differ" in w.value for w in at.warning)
    assert computed(empty_cache) == []  # the page read the stored study


def test_without_a_stored_study_the_section_says_so_and_computes_nothing(empty_cache, monkeypatch):
    monkeypatch.setattr(cold_panel, "stored_cold_posterior", lambda: None)
    at = run_page()
    assert any("has not been measured" in i.value for i in at.info)
    assert cold_charts(at) == []
    assert computed(empty_cache) == []


def test_the_draw_page_says_under_the_cold_sgld_that_its_samples_barely_differ(empty_cache):
    from harness.drawing import canvas_state

    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file("../../app/main.py", default_timeout=300)
    at.session_state[MODELS_KEY] = ["sgld", "sgld_t1"]
    at.run()
    at.switch_page("../pages/draw.py").run()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    assert not at.exception, at.exception
    caveats = [c.value for c in at.caption if CAVEAT in c.value]
    assert len(caveats) == 1 and f"{sample_spread('sgld'):.4f} nats" in caveats[0]
