"""Headless tests of the adversarial page with small throwaway checkpoints (fast to attack)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
from app import ui
from core.catalogue import REGISTRY
from core.engine.device import default_device
from core.methods import ModelConfig, build_model, params_for
from core.storage.checkpoints import checkpoint_path, save_checkpoint, shared_model
from core.studies.robustness import CurveSettings, is_cached

PAGE = "../../pages/adversarial.py"
NAMES = ("bbb_gaussian", "mlp", "dropout_mlp")


@pytest.fixture
def checkpoint_dir(tmp_path, monkeypatch, mnist_small):
    """Small 784-16-10 checkpoints under the registered names, and an empty on-disk cache;
    skips without MNIST (``mnist_small``)."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    for seed, name in enumerate(NAMES):
        torch.manual_seed(seed)
        spec = REGISTRY[name].model  # BBB starts from σ = 0.05, the rest as shipped
        params = {**spec.params, **params_for(spec.kind, {"init_sigma": 0.05})}
        config = {**spec.to_dict(), "hidden": [16], "params": params}
        save_checkpoint(
            name,
            build_model(ModelConfig.from_dict(config)),
            {"note": "for tests", "dataset": REGISTRY[name].dataset},
        )
    return tmp_path


def run_page(**state) -> AppTest:
    """The page on its own, with a 200-image subset unless ``state`` says otherwise."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in {"adv_size": 200, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def chart(at: AppTest, index: int) -> dict:
    """The plotly figure (data and layout) of the page's ``index``-th chart."""
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def test_page_renders_examples_curves_and_targeted_attack_at_several_eps(checkpoint_dir):
    at = run_page()
    assert at.title[0].value == "Adversarial examples"
    assert len(at.get("plotly_chart")) == 5  # accuracy, AUROC, entropy, MI, trajectory
    for eps in (0.0, 0.05, 0.3):
        at.slider(key="adv_eps").set_value(eps).run()
        assert not at.exception, at.exception
        assert at.subheader[0].value == f"Perturbed digits at ε = {eps:.2f}"
        table = at.dataframe[0].value
        assert list(table["true class"]) == [str(c) for c in range(10)]
        assert set(table.columns) == {"true class", *(ui.model_title(n) for n in NAMES)}
        accuracy = chart(at, 0)  # one line per model, named by title; ε marked
        assert accuracy["layout"]["title"]["text"] == "Accuracy on FGSM examples"
        assert [t["name"] for t in accuracy["data"]] == [ui.model_title(n) for n in NAMES]
        assert accuracy["layout"]["shapes"][0]["x0"] == eps
    assert "Accuracy at ε = 0.2 (white-box, naive, k = 1, 200 test images)" in captions(at)
    assert "gradient noise" in captions(at)
    settings = CurveSettings(n_inputs=200)
    assert all(is_cached(name, settings) for name in NAMES)


def test_eot_and_transfer_modes_compute_their_own_curves(checkpoint_dir):
    at = run_page()
    at.radio(key="adv_grad").set_value("EOT (k passes)").run()
    assert not at.exception, at.exception
    assert "EOT, k = 20" in captions(at) and "With naive (k = 1) gradients:" in captions(at)
    assert is_cached("bbb_gaussian", CurveSettings(n_inputs=200, n_attack_samples=20))
    # the deterministic MLP's gradient does not depend on k: its naive curve is reused
    assert not is_cached("mlp", CurveSettings(n_inputs=200, n_attack_samples=20))
    at.radio(key="adv_mode").set_value("Transfer from the MLP").run()
    assert not at.exception, at.exception
    assert "transferred from the MLP" in captions(at)
    assert is_cached("dropout_mlp", CurveSettings(n_inputs=200), source="mlp")


def test_targeted_attack_raises_the_target_probability(checkpoint_dir):
    at = run_page(adv_target=5, adv_steps=20, adv_step=0.02)
    metric = at.metric[0]
    assert metric.label == "p(target 5) after 20 iterations"
    assert float(metric.delta.split()[0]) > 0


def test_attacks_leave_the_shared_models_unchanged(checkpoint_dir):
    at = run_page(adv_grad="EOT (k passes)")
    at.slider(key="adv_eps").set_value(0.2).run()
    for name in NAMES:
        path = checkpoint_path(name)
        shared = shared_model(path, default_device())
        stored = torch.load(path, weights_only=True)["state_dict"]
        assert all(torch.equal(stored[k], v.cpu()) for k, v in shared.state_dict().items())
        assert all(p.grad is None and not p.requires_grad for p in shared.parameters())


def test_page_runs_inside_the_app(checkpoint_dir):
    at = AppTest.from_file("../../app/main.py", default_timeout=120)
    at.session_state["adv_size"] = 200
    at.run()
    at.switch_page("../pages/adversarial.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Adversarial examples"
    at.slider(key="adv_eps").set_value(0.15).run()
    assert not at.exception, at.exception


def test_each_task_is_attacked_on_its_own_test_set(checkpoint_dir):
    from core.data import DatasetUnavailable, load_dataset
    from core.storage.checkpoints import load_checkpoint
    from core.studies.robustness import cached_curve, robustness_curve

    try:
        images, labels = load_dataset("fashion_mnist", "test", n_inputs=200, seed=0)
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    for seed, name in enumerate(("fashion_bbb_mixture", "fashion_mlp")):
        torch.manual_seed(seed)
        spec = REGISTRY[name].model  # BBB starts from σ = 0.05, the rest as shipped
        params = {**spec.params, **params_for(spec.kind, {"init_sigma": 0.05})}
        config = {**spec.to_dict(), "hidden": [16], "params": params}
        save_checkpoint(
            name,
            build_model(ModelConfig.from_dict(config)),
            {"note": "for tests", "dataset": REGISTRY[name].dataset},
        )
    at = run_page(**{ui.MODELS_KEY: ["bbb_gaussian", "fashion_bbb_mixture", "fashion_mlp"]})
    task = at.radio(key="adv_task")
    assert task.value == "mnist" and task.options == ["MNIST", "Fashion-MNIST"]
    task.set_value("fashion_mnist").run()
    assert not at.exception, at.exception
    assert "Left out (another task): BBB (Gaussian prior)" in [t.value for t in at.text]
    assert at.get("image")[0].proto.imgs[0].caption == "Clean Fashion-MNIST test images"
    at.radio(key="adv_mode").set_value("Transfer from the MLP").run()  # crafted on fashion_mlp
    assert not at.exception, at.exception
    settings = CurveSettings(n_inputs=200, n_eval_samples=20)
    model = load_checkpoint("fashion_bbb_mixture", default_device())[0]
    expected = robustness_curve(model, images, labels, settings)
    got = cached_curve("fashion_bbb_mixture", settings)
    # The page's run and this one may sum in another order (threads, earlier tests' buffers):
    # equal to float32 rounding, while another test set would differ by far more.
    for field in dataclasses.fields(expected):
        assert getattr(got, field.name) == pytest.approx(
            getattr(expected, field.name), rel=1e-4, abs=1e-6
        ), field.name
