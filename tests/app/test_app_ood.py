"""Headless tests of the OOD explorer page with small untrained checkpoints (fast to evaluate)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
from app.ui import SAMPLES_KEY
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, list_datasets, load_dataset
from core.engine.interface import ModelConfig
from core.evaluation.uncertainty import SCORES
from core.methods import build_model
from core.storage.checkpoints import save_checkpoint
from core.studies.evaluations import IN_DISTRIBUTION, evaluate_dataset
from core.studies.ood import best_score, compare, digit_labelled, ood_behaviour
from tests.support.checkpoint_util import small_checkpoint_dirs, use_checkpoints

PAGE = "../../pages/ood.py"
MODELS = ("bbb_mixture", "mlp", "dropout_mlp")
TITLES = [REGISTRY[name].title for name in MODELS]
SMALL = {"ood_subset": 30, "ood_samples": 10, SAMPLES_KEY: 8}  # inputs, passes, sidebar passes
VIEWS = 2 * len(MODELS)  # per model: votes and softmax spread of the picked input
CHARTS = VIEWS + len(MODELS) + 1  # + score histogram per model, ROC


@pytest.fixture(scope="module")
def small_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """784-16-10 checkpoints under the registered names, and an evaluation cache shared by the
    tests of this module (keys hash the checkpoint bytes, so sharing is safe)."""
    return small_checkpoint_dirs(tmp_path_factory, MODELS, "ood")


@pytest.fixture
def small_models(small_dirs, monkeypatch) -> None:
    use_checkpoints(monkeypatch, small_dirs)


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in {**SMALL, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def ood_infos(available: bool) -> list:
    return [i for i in list_datasets() if i.name != "mnist" and i.availability()[0] == available]


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def chart_specs(at: AppTest) -> list[str]:
    return [chart.proto.spec for chart in at.get("plotly_chart")]


def assert_tables_have_a_row_per_model(at: AppTest) -> None:
    tables = [t.value for t in at.table]
    assert len(tables) == 2  # AUROC, FPR at 95 % TPR
    for table in tables:
        assert list(table.index) == TITLES
        assert list(table.columns) == [s.title for s in SCORES.values()]
        assert table.map(lambda v: 0 <= float(v) <= 1).all().all()


def assert_caption_states_the_core_numbers(at: AppTest, score: str) -> None:
    """The caption's percentages and best detectors are :func:`ood_behaviour`'s and
    :func:`best_score`'s on the evaluations the page shows."""
    text = at.info[0].value
    dataset = at.selectbox(key="ood_dataset").value
    settings = {"n_samples": SMALL["ood_samples"], "n_inputs": SMALL["ood_subset"]}
    for name, title in zip(MODELS, TITLES, strict=True):
        inside, outside = (
            evaluate_dataset(name, d, **settings) for d in (IN_DISTRIBUTION, dataset)
        )
        behaviour = ood_behaviour(inside, outside, score)
        assert f"{title}**: {behaviour.calm:.0%} of the" in text
        if behaviour.confident_mistakes is None:
            assert f"{behaviour.confident:.0%} get a mean probability" in text
        else:
            assert f"{behaviour.confident_mistakes:.0%} are confident mistakes" in text
        metrics = compare(inside, outside)
        best = best_score(metrics)
        auroc = metrics[best]["auroc"]
        assert f"{title}: {SCORES[best].title.lower()}, AUROC {auroc:.3f}" in text


def test_every_available_dataset_renders_inside_the_app(small_models):
    infos = ood_infos(available=True)
    assert infos, "no OOD dataset available"
    at = AppTest.from_file("../../app/main.py", default_timeout=300).run()
    for key, value in SMALL.items():
        at.session_state[key] = value
    at.switch_page("../pages/ood.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Out-of-distribution explorer"
    box = at.selectbox(key="ood_dataset")
    assert box.options == [i.title for i in infos]
    for info in infos:
        box.set_value(info.name).run()
        assert not at.exception, (info.name, at.exception)
        assert len(at.get("plotly_chart")) == CHARTS
        assert_tables_have_a_row_per_model(at)
        digits = digit_labelled(info.name)
        assert ("its labels are the original digits" in captions(at)) == digits
        assert ("Near chance by design" in captions(at)) == (info.has_labels and not digits)
        text = at.info[0].value
        assert info.title in text and "confident mistake" in text
        assert all(f"{title}: " in text for title in TITLES)  # a sentence per model
        assert "Best detector per model" in text


def test_unavailable_datasets_are_listed_with_reasons_not_offered(
    small_models, tmp_path, monkeypatch
):
    monkeypatch.setenv("BNN_DATA_PATH", str(tmp_path / "nowhere"))
    missing = ood_infos(available=False)
    assert missing, "pointing BNN_DATA_PATH elsewhere should hide the shared datasets"
    at = run_page()
    assert at.expander[0].label == f"Unavailable datasets ({len(missing)})"
    options = at.selectbox(key="ood_dataset").options
    for info in missing:
        assert info.title not in options
        assert f"**{info.title}**: {info.availability()[1]}" in [c.value for c in at.caption]
    assert_tables_have_a_row_per_model(at)


def test_picking_a_sample_or_rerolling_updates_the_histograms(small_models):
    at = run_page()
    views = chart_specs(at)[:VIEWS]
    at.button(key="ood_pick_4").click().run()
    assert not at.exception, at.exception
    assert at.session_state["ood_pick"] == 4
    assert at.button(key="ood_pick_4").proto.type == "primary"
    assert any("#5: predicts" in m.value for m in at.markdown)
    picked = chart_specs(at)[:VIEWS]
    spreads = range(1, VIEWS, 2)  # softmax score histograms hold each network's value
    assert all(views[i] != picked[i] for i in spreads)
    at.button(key="ood_reroll").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="ood_seed").value != 0
    assert chart_specs(at)[:VIEWS] != picked


def test_score_selector_redraws_from_the_disk_cache(small_models, small_dirs):
    at = run_page()
    evaluations = small_dirs[1] / "evaluations"
    files = sorted(evaluations.iterdir())
    assert len(files) >= 2 * len(MODELS)
    before = chart_specs(at)[VIEWS:]
    at.selectbox(key="ood_score").set_value("predictive_entropy").run()
    assert not at.exception, at.exception
    assert sorted(evaluations.iterdir()) == files
    assert chart_specs(at)[VIEWS:] != before
    assert "predictive entropy" in at.info[0].value
    assert_caption_states_the_core_numbers(at, "predictive_entropy")


def test_fashion_mnist_can_be_the_in_distribution_task(small_dirs, tmp_path, monkeypatch):
    """Fashion-MNIST models against MNIST digits; the MNIST model is left out, saying why."""
    from app.ui import MODELS_KEY
    from core.data import dataset_info

    try:
        load_dataset("fashion_mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    monkeypatch.setenv("BNN_CACHE_DIR", str(small_dirs[1]))
    fashion = ("fashion_bbb_mixture", "fashion_mlp")
    for i, name in enumerate(("bbb_mixture", *fashion)):
        torch.manual_seed(i)
        config = ModelConfig.from_dict({**REGISTRY[name].model.to_dict(), "hidden": [16]})
        save_checkpoint(
            name,
            build_model(config),
            {"note": "untrained, for tests", "dataset": REGISTRY[name].dataset},
        )
    at = AppTest.from_file("../../app/main.py", default_timeout=300)
    for key, value in {**SMALL, MODELS_KEY: ["bbb_mixture", *fashion]}.items():
        at.session_state[key] = value
    at.run()
    at.switch_page("../pages/ood.py").run()
    at.radio(key="ood_task").set_value("fashion_mnist").run()
    assert not at.exception, at.exception
    box = at.selectbox(key="ood_dataset")
    assert box.value == "mnist" and "Fashion-MNIST" not in box.options
    assert at.subheader[-1].value == "Fashion-MNIST test against MNIST" or any(
        s.value == "Fashion-MNIST test against MNIST" for s in at.subheader
    )
    for table in (t.value for t in at.table):
        assert list(table.index) == [REGISTRY[n].title for n in fashion]
    assert REGISTRY["bbb_mixture"].title in [t.value for t in at.main.text]
    assert "Near chance by design" in captions(at)  # digits are not clothes classes
    settings = {"n_samples": SMALL["ood_samples"], "n_inputs": SMALL["ood_subset"]}
    inside = evaluate_dataset("fashion_mlp", "fashion_mnist", **settings)
    outside = evaluate_dataset("fashion_mlp", "mnist", **settings)
    title = REGISTRY["fashion_mlp"].title
    calm = ood_behaviour(inside, outside, "mutual_information").calm
    assert f"{title}**: {calm:.0%} of the MNIST inputs" in at.info[0].value
    assert not digit_labelled("rotated_mnist", "fashion_mnist")
    assert digit_labelled("rotated_mnist") and dataset_info("fashion_mnist").has_labels
