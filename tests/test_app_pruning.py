"""Headless tests of the pruning page with small throwaway checkpoints (fast to evaluate)."""

from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

import core.checkpoints
from app import ui
from core.checkpoints import REGISTRY, checkpoint_path, save_checkpoint
from core.device import default_device
from core.models import ModelConfig, build_model
from core.pruning_curve import PAPER_ERRORS

PAGE = "../pages/pruning.py"


@pytest.fixture
def checkpoint_dir(tmp_path, monkeypatch):
    """Small 784-16-10 checkpoints under the registered names, and an empty on-disk cache."""
    from core.data import DatasetUnavailable, load_dataset

    try:
        load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    monkeypatch.setattr(core.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def save_small(name: str, seed: int = 0) -> None:
    torch.manual_seed(seed)
    config = ModelConfig.from_dict({**REGISTRY[name].model.to_dict(), "hidden": [16]})
    save_checkpoint(name, build_model(config), {"note": "untrained, for tests"})


def run_page(percent: int | None = None, method: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    if percent is not None:
        at.session_state["pruning_percent"] = percent
    if method is not None:
        at.session_state["pruning_method"] = method
    at.run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("percent", [0, 95])
def test_page_renders_error_size_curves_table_and_densities(checkpoint_dir, percent):
    for name in ("bbb_mixture", "bbb_gaussian", "mlp", "dropout_mlp"):
        save_small(name)
    at = run_page(percent)
    shown = metrics(at)
    kept = 784 * 16 + 16 * 10 - round(percent / 100 * (784 * 16 + 16 * 10))
    assert shown[f"Weights kept, of {784 * 16 + 16 * 10:,}"] == f"{kept:,}"
    assert f"Test error, {percent}% removed" in shown and "Test error, unpruned" in shown
    if percent == 0:
        assert shown["Test error, 0% removed"] == shown["Test error, unpruned"]
    assert at.selectbox(key="pruning_model").value == "bbb_mixture"
    assert at.selectbox(key="pruning_model").options == [
        "BBB (Gaussian prior)",
        "BBB (scale-mixture prior)",
    ]
    table = at.table[0].value
    assert list(table["Proportion removed"]) == ["0%", "50%", "75%", "95%", "98%"]
    assert list(table["Test error (paper, 2×1200, SNR)"]) == [f"{e:.2f}%" for e in PAPER_ERRORS]
    assert len(list((checkpoint_dir / "cache" / "pruning").glob("*.json"))) == 3
    assert "Why SNR pruning works" in " ".join(c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 3


def test_slider_and_method_change_the_pruned_model_only(checkpoint_dir):
    save_small("bbb_mixture")
    at = run_page(50, "random")
    assert "Test error, 50% removed" in metrics(at)
    path = checkpoint_path("bbb_mixture")
    shared = ui._load(str(path), path.stat().st_mtime_ns, str(default_device()))
    stored = torch.load(path, weights_only=True)["state_dict"]
    assert all(torch.equal(stored[k], v.cpu()) for k, v in shared.state_dict().items())
    at.slider(key="pruning_percent").set_value(99).run()
    assert not at.exception, at.exception
    assert metrics(at)["Weights kept, of 12,704"] == f"{12704 - round(0.99 * 12704):,}"


def test_compare_adds_mlp_and_dropout_curves(checkpoint_dir):
    for name in ("bbb_mixture", "mlp"):
        save_small(name)
    at = run_page()
    at.checkbox(key="pruning_compare").check().run()
    assert not at.exception, at.exception
    columns = list(at.table[0].value.columns)
    assert "Test error, MLP, magnitude |w|" in columns and "Test error, MLP, random" in columns


def test_without_bbb_checkpoint_the_page_says_how_to_train_one(checkpoint_dir):
    save_small("mlp")
    at = run_page()
    assert "python -m core train bbb_mixture" in at.warning[0].value


def test_page_runs_inside_the_app(checkpoint_dir):
    save_small("bbb_mixture")
    at = AppTest.from_file("../app/main.py", default_timeout=120).run()
    at.switch_page("../pages/pruning.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Pruning and weights"
    at.slider(key="pruning_percent").set_value(95).run()
    assert not at.exception, at.exception
    assert "Test error, 95% removed" in metrics(at)
