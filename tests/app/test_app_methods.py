"""Every page renders with every registered method selected, through the shared interface.

Tiny untrained checkpoints of every registry entry (784-16-10, each of its own kind) stand in
for the shipped ones, so the evaluations each page starts are quick; MNIST is needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
from app.ui import MODELS_KEY, SAMPLES_KEY
from core.catalogue import REGISTRY
from harness.drawing import canvas_state
from tests.support.checkpoint_util import save_small_checkpoints

MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")
SMALL = {
    SAMPLES_KEY: 6,
    "ood_subset": 40,
    "ood_samples": 10,
    "adv_size": 200,
    "adv_curve_samples": 10,
}


@pytest.fixture(scope="module")
def every_method(tmp_path_factory, mnist_small):
    root = tmp_path_factory.mktemp("methods")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", root / "checkpoints")
        save_small_checkpoints(REGISTRY)
    return root


@pytest.fixture
def app(every_method, monkeypatch) -> AppTest:
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", every_method / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(every_method / "cache"))
    at = AppTest.from_file(MAIN, default_timeout=600)
    for key, value in {**SMALL, MODELS_KEY: list(REGISTRY)}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    assert at.sidebar.multiselect[0].value == list(REGISTRY)
    return at


def test_draw_shows_every_method(app):
    app.switch_page("../pages/draw.py").run()
    app.session_state["draw_canvas"] = canvas_state("1")
    app.run()
    assert not app.exception, app.exception
    digits = [spec for spec in REGISTRY.values() if spec.dataset == "mnist"]
    assert [s.value for s in app.subheader][: len(digits)] == [spec.title for spec in digits]
    assert len(app.get("plotly_chart")) == len(digits)
    assert any("members" in c.value for c in app.caption)  # the ensemble says what a pass is


@pytest.mark.parametrize(
    ("page", "title"),
    [
        ("ood.py", "Out-of-distribution explorer"),
        ("adversarial.py", "Adversarial examples"),
        ("pruning.py", "Pruning and weights"),
        ("home.py", "Bayesian neural network lab"),
    ],
)
def test_page_renders_with_every_method_selected(app, page, title):
    app.switch_page(f"../pages/{page}").run()
    assert not app.exception, app.exception
    assert app.title[0].value == title
    assert not app.error, [e.value for e in app.error]
