"""Headless tests of the Active learning page: stored curves, and a short live run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.active.study import RESULT_FILE, STORED

PAGE = "../../pages/active.py"
CURVES = {
    "settings": {
        "hidden": [256],
        "train_steps": 200,
        "n_samples": 20,
        "candidates": 1000,
        "test_size": 5000,
        "seeds": 3,
    },
    "curves": {
        name: {
            "labels": [20, 30, 40],
            "mean": mean,
            "std": [0.01, 0.01, 0.01],
            "labels_to_85": None,
            "labels_to_90": None,
            "labels_to_95": None,
            "area": sum(mean) / 3,
        }
        for name, mean in (
            ("bald", [0.5, 0.6, 0.7]),
            ("entropy", [0.5, 0.6, 0.65]),
            ("random", [0.5, 0.55, 0.6]),
        )
    },
}


def test_page_shows_the_papers_experiment_beside_gals_table(tmp_path, monkeypatch, mnist_small):
    def run(to_90, to_95):
        labels = list(range(20, to_95 + 1, 10))
        accuracy = [0.5 + 0.4 * (n >= to_90) + 0.05 * (n >= to_95) for n in labels]
        return {
            "labels_to_85": to_90,
            "labels_to_90": to_90,
            "labels_to_95": to_95,
            "labels": labels,
            "accuracy": accuracy,
        }

    per_seed = {"bald": [run(140, 330), run(160, 400)], "random": [run(300, 880), run(260, 900)]}
    stored = {
        "settings": {"seeds": 2},
        "curves": {
            name: {"labels": [20, 30], "mean": [0.5, 0.5], "std": [0.0, 0.0], "per_seed": runs}
            for name, runs in per_seed.items()
        },
    }
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    STORED.save("active_learning-gal2017.json", stored)
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    assert "The paper's experiment" in [h.value for h in at.subheader]
    rows = at.table[0].value
    assert list(rows["acquisition"]) == ["BALD (mutual information)"] * 2 + ["Random"] * 2
    assert list(rows["labels here, per repetition"]) == [
        "140, 160",
        "330, 400",
        "300, 260",
        "880, 900",
    ]
    assert list(rows["Gal et al."]) == ["145", "335", "255", "835"]
    assert list(rows["here / paper"])[0] == "1.03×"
    assert any("2 of the paper's 3 repetitions" in c.value for c in at.caption)
    assert len(at.table) == 1  # no study trained another way stored

    ablation = {**stored, "settings": {"seeds": 2, "stop_at": 0.9, "init": "torch"}}
    name = "active_learning-gal2017-minibatch_loss_sum-init_torch.json"
    STORED.save(name, ablation)
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    lines = [m.value for m in at.markdown if m.value.startswith("From ")]
    assert lines == ["From PyTorch's first weights:"]  # only the tables stored
    rows = at.table[1].value  # stopped at 10 % error: no 5 % rows
    assert list(rows["test error"]) == ["10 %", "10 %"]
    assert list(rows["labels here, per repetition"]) == ["140, 160", "300, 260"]

    later = {**stored, "settings": {"seeds": 2, "init": "glorot"}}
    name = "active_learning-gal2017-minibatch_loss_sum-init_glorot.json"
    STORED.save(name, later)
    summed = {**stored, "settings": {"seeds": 2, "minibatch_loss": "sum"}}
    name = "active_learning-gal2017-minibatch_loss_sum.json"
    STORED.save(name, summed)
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    assert any("adds them up" in m.value for m in at.markdown)
    lines = [m.value for m in at.markdown if m.value.startswith("From ")]
    assert lines == [
        "From Keras 0.3's first weights, as above:",
        "From the first weights of later Keras versions:",
        "From PyTorch's first weights:",
    ]
    assert [len(t.value) for t in at.table] == [4, 4, 4, 2]  # the preset's, then summed losses'
    # from Keras 0.3's, later Keras' and PyTorch's first weights


def test_page_shows_the_stored_curves_and_a_table(tmp_path, monkeypatch, mnist_small):
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    STORED.save(RESULT_FILE, CURVES)
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Active learning"
    rows = at.table[0].value
    assert list(rows["acquisition"]) == ["BALD (mutual information)", "Max entropy", "Random"]
    assert list(rows["paper, labels to 90 % (CNN)"]) == ["145", "165", "255"]


SHORT = {"budget": 40, "candidates": 100, "train_steps": 10, "test_size": 200, "n_samples": 4}
"""A live run of three rounds that takes a few seconds."""


@pytest.fixture
def short_live_runs(monkeypatch) -> dict:
    """The page's live runs with :data:`SHORT` settings; change the dict yielded to change the
    next run's."""
    from core.active import loop

    original, sizes = loop.live_config, dict(SHORT)
    monkeypatch.setattr(
        loop, "live_config", lambda kind, **fields: original(kind, **{**fields, **sizes})
    )
    return sizes


def finish(at: AppTest) -> AppTest:
    """Wait for the session's live run to end, then rerun the page as its poll would."""
    assert at.session_state["active_live"].join(300)
    return at.run()


def test_a_live_run_advances_both_learners_together_and_ends_with_run_again(
    mnist_small, short_live_runs
):
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert [b.label for b in at.button] == ["Start a new run"]
    at.button(key="active_start").click().run()
    assert not at.exception, at.exception
    assert [b.label for b in at.button] == ["Stop"]  # computing in the background
    finish(at)
    assert not at.exception, at.exception
    snap = at.session_state["active_live"].snapshot()
    assert {name: [r.labels for r in rounds] for name, rounds in snap.rounds.items()} == {
        "bald": [20, 30, 40],
        "random": [20, 30, 40],
    }
    assert snap.rounds["bald"][1].picked != snap.rounds["random"][1].picked
    assert [b.label for b in at.button] == ["Run again"]
    assert not at.button[0].disabled
    (strips,) = at.get("image")  # the strips stay once the run has ended, in one element
    assert len(strips.value) == 2
    assert [c.split(" picked these after ")[1][:9] for c in strips.captions] == ["30 labels"] * 2
    assert any("Finished: 3 rounds, both at 40 labels" in p.proto.text for p in at.get("progress"))
    short_live_runs["budget"] = 1000  # 99 rounds: it cannot end before Stop is pressed
    at.button(key="active_start").click().run()
    assert [b.label for b in at.button] == ["Stop"]
    at.button(key="active_stop").click().run()
    finish(at)
    assert at.session_state["active_live"].snapshot().state == "cancelled"
    assert [b.label for b in at.button] == ["Run again"]


def test_each_function_keeps_its_colour_across_figures():
    from app.figures.active import curves_figure
    from core.active.acquisition import TITLES

    curve = {"labels": [20, 30], "mean": [0.5, 0.6], "std": [0.0, 0.0]}
    stored = curves_figure({"bald": curve, "entropy": curve, "random": curve}, TITLES, "stored")
    live = curves_figure({"bald": curve, "random": curve}, TITLES, "live")

    def colours(figure):
        return {t.name: t.line.color for t in figure.data if t.name}

    assert colours(live) == {k: v for k, v in colours(stored).items() if k in colours(live)}
    assert len(set(colours(stored).values())) == 3


def test_the_live_run_trains_the_chosen_method(mnist_small, short_live_runs):
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert "Laplace" not in " ".join(at.selectbox(key="active_kind").options)
    at.selectbox(key="active_kind").set_value("swag").run()
    assert any("SWAG" in caption.value for caption in at.caption)
    at.button(key="active_start").click().run()
    assert not at.exception, at.exception
    learners = at.session_state["active_live"].learners
    assert {learner.config.kind for learner in learners.values()} == {"swag"}
    finish(at)
    assert [
        len(rounds) for rounds in at.session_state["active_live"].snapshot().rounds.values()
    ] == [3, 3]
