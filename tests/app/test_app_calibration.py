"""Headless tests of the Calibration page with small untrained checkpoints of every registered
model, and a real-browser smoke test of the page served on its own."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
import core.studies.evaluations
from app.ui import MODELS_KEY, SAMPLES_KEY
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.engine.interface import ModelConfig
from core.evaluation.shift import SHIFTS
from core.evaluation.uncertainty import SCORES
from core.methods import build_model, params_for
from core.storage.checkpoints import save_checkpoint
from core.studies.calibration import rejection as rejection_study
from core.studies.calibration import shift as shift_study
from core.studies.calibration import temperature as temperature_study
from harness.browser import chromium_page, require_chromium, serve_app, wait_for_script

PAGE = "../../pages/calibration.py"
ROOT = Path(__file__).resolve().parents[2]
EVERY = list(REGISTRY)  # every registered model, those added later included


def task(name: str) -> str:
    return getattr(REGISTRY[name], "dataset", "mnist")


DIGITS = [name for name in EVERY if task(name) == "mnist"]  # shown first: MNIST is the default
OTHER_TASKS = sorted({task(name) for name in EVERY} - {"mnist"})
TITLES = [REGISTRY[name].title for name in DIGITS]
SMALL = {SAMPLES_KEY: 4, "cal_shift_inputs": 100, "cal_shift_samples": 5}
SHIFT_CHARTS = 4  # accuracy, ECE, entropy, rejected against severity


def small_checkpoints(folder: Path, names: list[str]) -> None:
    """784-16-10 untrained checkpoints under the registered ``names``."""
    for i, name in enumerate(names):
        torch.manual_seed(i)
        spec = REGISTRY[name].model  # BBB starts from σ = 0.05, the rest as shipped
        params = {**spec.params, **params_for(spec.kind, {"init_sigma": 0.05})}
        config = {**spec.to_dict(), "hidden": [16], "params": params}
        save_checkpoint(
            name,
            build_model(ModelConfig.from_dict(config)),
            {"note": "for tests", "dataset": REGISTRY[name].dataset},
            folder,
        )


@pytest.fixture(scope="module")
def small_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """Checkpoints of every registered model and a cache shared by this module's tests (keys
    hash the checkpoint bytes, so sharing is safe); skips without MNIST."""
    try:
        for dataset in ("mnist", *OTHER_TASKS):
            load_dataset(dataset, "test", n_inputs=1)
            load_dataset(dataset, "train", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"a task's data is unavailable: {exc}")
    root = tmp_path_factory.mktemp("calibration")
    small_checkpoints(root / "checkpoints", EVERY)
    return root / "checkpoints", root / "cache"


@pytest.fixture
def small_models(small_dirs, monkeypatch) -> tuple[Path, Path]:
    checkpoints, cache = small_dirs
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", checkpoints)
    monkeypatch.setenv("BNN_CACHE_DIR", str(cache))
    return small_dirs


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=600)
    for key, value in {**SMALL, MODELS_KEY: EVERY, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_every_model_shows_diagrams_tables_curves_and_samples(small_models):
    at = run_page()
    assert at.title[0].value == 'Calibration, "I don\'t know" and dataset shift'
    assert ("cal_task" in [box.key for box in at.selectbox]) == bool(OTHER_TASKS)
    figures = charts(at)
    assert len(figures) == len(DIGITS) + 1 + SHIFT_CHARTS
    results = {
        name: rejection_study.calibration_result(name, n_samples=SMALL[SAMPLES_KEY])
        for name in DIGITS
    }
    for figure, name in zip(figures, DIGITS, strict=False):  # one reliability diagram each
        title = figure["layout"]["title"]["text"]
        assert title == f"{REGISTRY[name].title}: ECE {results[name].metrics['ece']:.4f}"
    metrics, aucs, shifted = (t.value for t in at.table)
    assert list(metrics.index) == TITLES and list(aucs.index) == TITLES
    assert list(shifted.index) == TITLES
    for name, title in zip(DIGITS, TITLES, strict=True):
        r = results[name]
        assert r.dataset == "mnist"
        assert metrics.loc[title, "ECE"] == f"{r.metrics['ece']:.4f}"
        assert metrics.loc[title, "ECE after T"] == f"{r.tempered['ece']:.4f}"
        assert metrics.loc[title, "ECE by chance (95 %)"] == f"{r.metrics['ece_floor']:.4f}"
        assert metrics.loc[title, "ECE by chance (mean)"] == f"{r.metrics['ece_chance']:.4f}"
        assert r.metrics["ece_chance"] < r.metrics["ece_floor"]
        assert metrics.loc[title, "p of the ECE"] in (
            f"{r.metrics['ece_p_value']:.3f}",
            "< 0.001",
        )
        assert (
            metrics.loc[title, "Scaling's effect on the ECE"]
            == {
                "helps": "helps",
                "harms": "harms",
                "none": "no measurable change",
            }[r.scaling.effect]
        )
        assert metrics.loc[title, "T"].startswith(f"{r.fit.temperature:.3f}")
        for key, score in SCORES.items():
            assert aucs.loc[title, score.title] == f"{r.rejection[key]['auc']:.4f}"
        point = r.rejection["predictive_entropy"]
        assert f"{title} answers {point['coverage']:.1%} with {point['accuracy']:.2%}" in (
            captions(at)
        )
    curves = figures[len(DIGITS)]["data"]
    assert len([c for c in curves if c["mode"] == "lines"]) == len(DIGITS)
    assert len(at.get("image")) == 1  # the shifted digits
    answers = at.text[-1].value.splitlines()
    assert [line.split(":")[0] for line in answers] == TITLES
    for other in OTHER_TASKS:  # models of another task are rated on their own test set
        at.selectbox(key="cal_task").set_value(other).run()
        assert not at.exception, at.exception
        names = [name for name in EVERY if task(name) == other]
        assert list(at.table[0].value.index) == [REGISTRY[name].title for name in names]
        for name in names:
            assert (
                rejection_study.calibration_result(name, n_samples=SMALL[SAMPLES_KEY]).dataset
                == other
            )


def test_temperature_toggle_redraws_the_diagrams_after_scaling(small_models):
    at = run_page()
    before = [f["layout"]["title"]["text"] for f in charts(at)[: len(DIGITS)]]
    at.toggle(key="cal_tempered").set_value(True).run()
    assert not at.exception, at.exception
    after = [f["layout"]["title"]["text"] for f in charts(at)[: len(DIGITS)]]
    for name, title in zip(DIGITS, after, strict=True):
        r = rejection_study.calibration_result(name, n_samples=SMALL[SAMPLES_KEY])
        assert title.endswith(f"ECE {r.tempered['ece']:.4f}, T = {r.fit.temperature:.2f}")
    assert before != after


def test_severity_slider_and_shift_choice_read_the_cached_grid(small_models):
    at = run_page(**{MODELS_KEY: ["mlp", "bbb_gaussian"]})
    settings = shift_study.ShiftSettings(n_inputs=100, n_samples=5)
    for shift in SHIFTS:
        at.selectbox(key="cal_shift").set_value(shift).run()
        assert not at.exception, (shift, at.exception)
        grid = SHIFTS[shift].severities
        assert shift_study.shift_jobs(["mlp", "bbb_gaussian"], [shift], settings) == []
        for severity in (grid[0], grid[-1]):
            at.select_slider(key=f"cal_severity_{shift}").set_value(severity).run()
            assert not at.exception, at.exception
            table = at.table[-1].value
            header = {  # the severity with its unit, never a bare number
                "rotation": f"{severity:g}°",
                "noise": f"noise σ = {severity:g}",
                "blur": f"blur σ = {severity:g} px",
                "contrast": f"{severity:.0%} of the contrast removed",
            }[shift]
            assert table.index.name == f"At {header}"
            level = shift_study.shift_curve("mlp", shift, settings, severities=(severity,))[0]
            assert table.loc[REGISTRY["mlp"].title, "Accuracy"] == f"{level.accuracy:.1%}"
            shapes = charts(at)[-1]["layout"]["shapes"]
            assert shapes[0]["x0"] == severity


def test_second_visit_reads_everything_from_the_disk_cache(small_models, monkeypatch):
    first = run_page()
    st.cache_data.clear()
    st.cache_resource.clear()

    def fail(*args, **kwargs):
        raise AssertionError("computed again on a cached visit")

    monkeypatch.setattr(temperature_study, "predictive", fail)
    monkeypatch.setattr(shift_study, "predictive", fail)
    monkeypatch.setattr(core.studies.evaluations, "_compute", fail)
    second = run_page()
    assert [t.value.to_dict() for t in second.table] == [t.value.to_dict() for t in first.table]
    assert not second.get("progress")


def test_models_trained_on_the_validation_split_are_named_in_a_warning(small_models, monkeypatch):
    monkeypatch.setattr(temperature_study, "SEEN_RATIO", 1e9)  # every model counts as trained on it
    st.cache_resource.clear()  # results kept in memory by earlier tests
    at = run_page(**{MODELS_KEY: ["mlp"]})
    text = at.warning[0].value
    assert "trained on the validation images" in text and REGISTRY["mlp"].title in text
    assert "python -m core" not in text and "on the other 55,000 images" in text
    st.cache_resource.clear()  # leave no result judged under the patched ratio


def test_the_headline_counts_what_scaling_did_from_the_tables_tests(small_models, monkeypatch):
    real = rejection_study.calibration_result
    rigs = {  # per model: scaling's effect and the ECE's p-value
        "mlp": ("helps", 0.0002),
        "bbb_gaussian": ("harms", 0.2),
        "dropout_mlp": ("none", 0.01),
    }

    def rigged(name, **kwargs):
        r = real(name, **kwargs)
        effect, p = rigs[name]
        return replace(
            r,
            metrics={**r.metrics, "ece_p_value": p},
            scaling=replace(r.scaling, effect=effect),
        )

    monkeypatch.setattr(rejection_study, "calibration_result", rigged)
    st.cache_resource.clear()
    at = run_page(**{MODELS_KEY: ["mlp", "bbb_gaussian", "dropout_mlp"]})
    headline = next(i.value for i in at.info if "Temperature scaling" in i.value)
    mlp, gaussian, dropout = (REGISTRY[n].title for n in ("mlp", "bbb_gaussian", "dropout_mlp"))
    assert "2 of these 3 models are measurably miscalibrated** (" in headline
    assert f"lowers the ECE of 1** ({mlp})" in headline
    assert f"raises it for 1** ({gaussian})" in headline
    assert f"change for 1** ({dropout})" in headline
    assert "not the ECE" in headline
    st.cache_resource.clear()  # leave no rigged result in memory


def test_no_model_selected_is_a_warning_not_an_error(small_models):
    at = run_page(**{MODELS_KEY: []})
    assert "Choose at least one trained model" in at.warning[0].value
    assert not at.get("plotly_chart")


def test_missing_mnist_is_reported_in_words(tmp_path, monkeypatch):
    small_checkpoints(tmp_path / "checkpoints", ["mlp"])
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("BNN_DATA_PATH", str(tmp_path / "nowhere"))
    at = run_page(**{MODELS_KEY: ["mlp"]})
    assert at.error[0].value == "The test data or a checkpoint is unavailable."
    assert "mnist" in at.text[0].value.lower()


@pytest.mark.browser
@require_chromium()
def test_page_in_a_real_browser(tmp_path):
    """The page served on its own (default models, untrained 784-16-10 checkpoints): it renders
    its charts, the severity slider answers the keyboard, and in presenter mode every text of
    every chart is at least 16 px and dark (Streamlit's chart theme draws axes small and grey)."""
    small_checkpoints(tmp_path / "checkpoints", ["bbb_mixture", "mlp", "dropout_mlp"])
    env = {
        "BNN_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with serve_app("pages/calibration.py", env=env) as url, chromium_page() as page:
        page.goto(url)
        page.get_by_text("At 60°", exact=True).wait_for(timeout=300_000)
        wait_for_script(page)
        assert page.locator("[data-testid='stPlotlyChart']").count() == 3 + 1 + SHIFT_CHARTS
        slider = page.get_by_role("slider")
        slider.focus()
        slider.press("ArrowRight")
        page.get_by_text("At 75°", exact=True).wait_for()
        wait_for_script(page)
        page.goto(f"{url}/?present=1")
        page.get_by_text("At 60°", exact=True).wait_for(timeout=300_000)
        wait_for_script(page)
        kinds = ["xtick", "ytick", "g-xtitle", "g-ytitle", "legendtext"]
        page.wait_for_function(  # plotly draws its text after the script's run has finished
            f"kinds => {{ const seen = new Set(({CHART_TEXTS_JS})().map(t => t.kind)); "
            "return kinds.every(k => seen.has(k)); }",
            arg=kinds,
            timeout=120_000,
        )
        texts = page.evaluate(CHART_TEXTS_JS)
    assert {t["kind"] for t in texts} >= {"xtick", "ytick", "g-xtitle", "g-ytitle", "legendtext"}
    small_or_light = [t for t in texts if t["px"] < 16 or max(t["rgb"]) > 80]
    assert not small_or_light, small_or_light[:5]


CHART_TEXTS_JS = """() => Array.from(document.querySelectorAll(
    "[data-testid='stPlotlyChart'] :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .legendtext, "
    + ".annotation-text, .gtitle, .cbaxis text)"
  )).flatMap(el => {
    const text = el.matches('g') ? el.querySelector('text') : el;
    if (!text || !text.textContent.trim()) return [];
    const style = getComputedStyle(text);
    return [{
      kind: el.classList[0], text: text.textContent, px: parseFloat(style.fontSize),
      rgb: (style.fill.match(/\\d+/g) || [255, 255, 255]).slice(0, 3).map(Number),
    }];
  })"""
"""Every text of the page's charts: its kind (its element's first class), size and colour."""
