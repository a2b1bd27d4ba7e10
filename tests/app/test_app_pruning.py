"""Headless tests of the pruning page with small throwaway checkpoints (fast to evaluate).

The checkpoints and the on-disk curve cache are shared by the tests of this module, so the
curves are computed once; every test still passes on its own (it computes what is missing)."""

from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
import core.studies.pruning_curves
from core.catalogue import REGISTRY
from core.engine.device import default_device
from core.evaluation.pruning import METHODS
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import checkpoint_path, save_checkpoint, shared_model
from core.studies.pruning_curves import PAPER_ERRORS, TABLE_FRACTIONS, missing_fractions

PAGE = "../../pages/pruning.py"
WEIGHTS = 784 * 16 + 16 * 10  # of the small 784-16-10 networks


def save_small(name: str, directory, seed: int = 0) -> None:
    torch.manual_seed(seed)
    config = ModelConfig.from_dict({**REGISTRY[name].model.to_dict(), "hidden": [16]})
    save_checkpoint(
        name,
        build_model(config),
        {"note": "untrained, for tests", "dataset": REGISTRY[name].dataset},
        directory,
    )


@pytest.fixture(scope="module")
def shared_dirs(tmp_path_factory):
    """Small checkpoints under the registered names (all; the MLP alone; a corrupt BBB) and a
    cache."""
    from core.data import DatasetUnavailable, load_dataset

    try:
        load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    root = tmp_path_factory.mktemp("pruning_app")
    for name in ("bbb_mixture", "bbb_gaussian", "mlp", "dropout_mlp"):
        save_small(name, root / "all")
    save_small("mlp", root / "mlp_only")
    (root / "corrupt").mkdir()
    (root / "corrupt" / "bbb_mixture.pt").write_bytes(b"not a checkpoint")
    return root


@pytest.fixture
def checkpoints(shared_dirs, monkeypatch):
    """Use the shared small checkpoints (``checkpoints("mlp_only")``, ``checkpoints("corrupt")``
    for the other folders); curves at the table's fractions only, to compute less."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(shared_dirs / "cache"))
    monkeypatch.setenv("BNN_MODELS_DIR", str(shared_dirs / "user_models"))  # none by default
    monkeypatch.setattr(core.studies.pruning_curves, "CURVE_FRACTIONS", TABLE_FRACTIONS)

    def use(which: str = "all") -> None:
        monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", shared_dirs / which)

    use()
    return use


def run_page(percent: int | None = None, method: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
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
def test_page_renders_error_size_curves_table_and_densities(checkpoints, percent):
    at = run_page(percent)
    shown = metrics(at)
    kept = WEIGHTS - round(percent / 100 * WEIGHTS)
    assert shown[f"Weights kept, of {WEIGHTS:,}"] == f"{kept:,}"
    assert f"Test error, {percent}% removed" in shown and "Test error, unpruned" in shown
    if percent == 0:
        assert shown["Test error, 0% removed"] == shown["Test error, unpruned"]
    model = at.selectbox(key="pruning_model")
    assert model.value == "bbb_mixture"
    assert model.options == ["BBB (Gaussian prior)", "BBB (scale-mixture prior)"]
    table = at.table[0].value
    assert list(table["Proportion removed"]) == ["0%", "50%", "75%", "90%", "95%", "98%"]
    paper = [f"{e:.2f}%" for e in PAPER_ERRORS]
    assert list(table["Test error (paper, 2×1200, SNR)"]) == [*paper[:3], "–", *paper[3:]]
    assert all(missing_fractions("bbb_mixture", m) == [] for m in METHODS)  # cached on disk
    assert "Why SNR pruning works" in " ".join(c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 3


def test_slider_and_method_change_the_pruned_model_only(checkpoints):
    at = run_page(50, "random")
    assert "Test error, 50% removed" in metrics(at)
    path = checkpoint_path("bbb_mixture")
    shared = shared_model(path, default_device())
    stored = torch.load(path, weights_only=True)["state_dict"]
    assert all(torch.equal(stored[k], v.cpu()) for k, v in shared.state_dict().items())
    at.slider(key="pruning_percent").set_value(99).run()
    assert not at.exception, at.exception
    assert metrics(at)[f"Weights kept, of {WEIGHTS:,}"] == f"{WEIGHTS - round(0.99 * WEIGHTS):,}"


def test_compare_adds_mlp_and_dropout_curves(checkpoints):
    at = run_page()
    at.checkbox(key="pruning_compare").check().run()
    assert not at.exception, at.exception
    columns = list(at.table[0].value.columns)
    for title in ("MLP", "MC dropout MLP"):
        assert {f"Test error, {title}, magnitude |w|", f"Test error, {title}, random"} <= set(
            columns
        )


def test_without_bbb_checkpoint_the_page_says_how_to_train_one(checkpoints):
    checkpoints("mlp_only")
    at = run_page()
    assert "python -m core train bbb_mixture" in at.warning[0].value


def test_page_runs_inside_the_app(checkpoints):
    at = AppTest.from_file("../../app/main.py", default_timeout=300).run()
    at.switch_page("../pages/pruning.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Pruning and weights"
    at.slider(key="pruning_percent").set_value(95).run()
    assert not at.exception, at.exception
    assert "Test error, 95% removed" in metrics(at)


def test_a_corrupt_checkpoint_is_named(checkpoints):
    checkpoints("corrupt")
    at = run_page()
    assert len(at.error) == 1 and "bbb_mixture.pt" in at.error[0].value


def test_a_rewritten_checkpoint_is_evaluated_afresh(checkpoints, tmp_path, monkeypatch):
    from core.data import load_dataset
    from core.evaluation.metrics import seeded_error
    from core.storage.checkpoints import load_checkpoint

    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    x, y = load_dataset("mnist", "test")
    for seed in (1, 2):
        save_small("bbb_mixture", tmp_path, seed)
        model = load_checkpoint("bbb_mixture")[0]
        expected = seeded_error(model, x[:1000], y[:1000], 5)
        assert metrics(run_page())["Test error, unpruned"] == f"{expected:.2%}"


def test_a_user_trained_fashion_bbb_is_offered_and_evaluated_on_its_own_test_set(
    checkpoints, shared_dirs
):
    from core.data import DatasetUnavailable, load_dataset
    from core.evaluation.metrics import seeded_error
    from core.storage.checkpoints import load_checkpoint

    try:
        x, y = load_dataset("fashion_mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    folder = shared_dirs / "user_models"
    torch.manual_seed(3)
    config = ModelConfig.from_dict(
        {**REGISTRY["fashion_bbb_mixture"].model.to_dict(), "hidden": [16]}
    )
    save_checkpoint("clothes", build_model(config), {"dataset": "fashion_mnist"}, folder)
    try:
        at = AppTest.from_file(PAGE, default_timeout=300)
        at.session_state["pruning_model"] = "user:clothes"
        at.run()
        assert not at.exception, at.exception
        box = at.selectbox(key="pruning_model")
        assert "clothes (user-trained, Fashion-MNIST)" in box.options
        assert "Trained on Fashion-MNIST: evaluated on its test set." in [
            c.value for c in at.caption
        ]
        model = load_checkpoint("user:clothes")[0]
        expected = seeded_error(model, x[:1000], y[:1000], 5)
        assert metrics(at)["Test error, unpruned"] == f"{expected:.2%}"
        at.checkbox(key="pruning_compare").check().run()  # no Fashion-MNIST MLP here: no curves
        assert not at.exception, at.exception
    finally:
        for path in folder.iterdir():
            path.unlink()
