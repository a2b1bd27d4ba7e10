"""Headless tests of the app shell: home page, sidebar, page list, broken checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
from app.main import PAGES
from core.catalogue import REGISTRY
from core.evaluation.uncertainty import SCORES
from core.methods import build_model
from core.storage.checkpoints import save_checkpoint
from core.studies.comparison import load_comparison, row_title, times_note

MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")


@pytest.fixture
def checkpoint_dir(tmp_path, monkeypatch):
    """An empty checkpoint folder in place of checkpoints/."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    return tmp_path


def save_untrained(name: str) -> None:
    save_checkpoint(
        name,
        build_model(REGISTRY[name].model),
        {"note": "untrained, for tests", "dataset": REGISTRY[name].dataset},
    )


def run_app() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def test_home_explains_and_links_every_page(checkpoint_dir):
    at = run_app()
    assert at.title[0].value == "Bayesian neural network lab"
    text = " ".join(m.value for m in at.markdown)
    assert "Bayesian neural network" in text and "distribution" in text
    assert [link.label for link in at.get("page_link")] == [p.title for p in PAGES[1:]]
    assert all(p.path.is_file() for p in PAGES)
    rows = load_comparison()["rows"]
    table = at.table[0].value
    assert list(table.index) == [row_title(row) for row in rows]  # the registered titles now
    assert table.loc[row_title(rows[0]), "test error (%)"] == f"{100 * rows[0]['test_error']:.2f}"
    assert "None" not in table.to_string() and "nan" not in table.to_string()


def test_home_says_each_ood_score_was_chosen_on_images_the_table_does_not_show(checkpoint_dir):
    at = run_app()
    caption = " ".join(c.value for c in at.caption)
    assert "chosen on the first half" in caption and "never saw" in caption
    result = load_comparison()
    scores = at.table[1].value  # in the expander: the score behind each OOD cell
    assert list(scores.index) == [row["title"] for row in result["rows"]]
    mlp = next(row for row in result["rows"] if row["checkpoint"] == "mlp")
    assert scores.loc["MLP", "notMNIST"] == SCORES[mlp["ood_score"]["notmnist"]].title
    assert times_note(result) in caption  # times kept from an earlier run say where from


def test_sidebar_defaults_to_bbb_mlp_and_dropout(checkpoint_dir):
    for name in ("bbb_gaussian", "bbb_mixture", "mlp", "dropout_mlp"):
        save_untrained(name)
    at = run_app()
    models = at.sidebar.multiselect[0]
    assert models.value == ["bbb_mixture", "mlp", "dropout_mlp"]
    assert "bbb_lrt" not in models.options  # not trained here: listed, not selectable
    reasons = " ".join(t.value for t in at.sidebar.text)
    assert "bbb_lrt.pt: checkpoint file not found" in reasons
    assert "python -m core train bbb_lrt" in reasons
    assert "Device: " in at.sidebar.caption[-1].value
    assert at.sidebar.number_input[0].value == 100


def test_sidebar_choices_persist_across_pages(checkpoint_dir):
    save_untrained("mlp")
    save_untrained("dropout_mlp")
    at = run_app()
    at.sidebar.multiselect[0].set_value(["dropout_mlp"])
    at.sidebar.number_input[0].set_value(7)
    at.run()
    at.switch_page("../pages/draw.py").run()
    assert not at.exception, at.exception
    assert at.sidebar.multiselect[0].value == ["dropout_mlp"]
    assert at.sidebar.number_input[0].value == 7
    assert at.session_state["sidebar_samples"] == 7


def test_no_checkpoints_leaves_app_usable(checkpoint_dir):
    at = run_app()
    assert at.sidebar.multiselect[0].options == []
    at.switch_page("../pages/draw.py").run()
    assert not at.exception, at.exception
    assert not at.error


def test_corrupt_checkpoint_is_named_and_the_rest_works(checkpoint_dir):
    save_untrained("mlp")
    save_untrained("dropout_mlp")
    (checkpoint_dir / "dropout_mlp.pt").write_bytes(b"not a checkpoint")
    at = run_app()
    at.switch_page("../pages/draw.py").run()
    assert not at.exception, at.exception
    assert at.sidebar.multiselect[0].options == ["MLP"]  # the broken file is not offered
    reasons = [t.value for t in at.sidebar.text if "corrupt or truncated" in t.value]
    assert len(reasons) == 1 and "dropout_mlp.pt" in reasons[0]
    assert not at.error and at.title[0].value == "Draw a digit"
