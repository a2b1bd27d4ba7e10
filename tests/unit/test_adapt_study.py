"""The before/after study of adapting to the class's drawings (core.adapt.study): the split,
the scores, the answers that changed, the curve and the BALD replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core.adapt.bench import ROWS, TITLES, save_study, study_table
from core.adapt.live import LiveAdaptation, Plan, State, start
from core.adapt.registry import ADAPTERS
from core.adapt.run import Recipe
from core.adapt.study import (
    Trial,
    ask_first,
    before_after,
    curve_sizes,
    learning_curve,
    scores,
    split_drawings,
)
from core.catalogue import REGISTRY, first_shipped
from core.data.synthetic import canvas_digits
from core.jobs.owners import Visitor
from core.paths import user_model_dir
from core.stated.adapt import adapt_study
from core.storage.checkpoints import load_checkpoint

STORED = Path(__file__).resolve().parents[2] / "checkpoints/results/adaptation/adapt-canvas.json"


def test_time_split_learns_the_older_half():
    learn, kept = split_drawings(7, "time")
    assert learn.tolist() == [0, 1, 2] and kept.tolist() == [3, 4, 5, 6]


def test_random_split_is_seeded_and_a_partition():
    learn, kept = split_drawings(20, "random", seed=3)
    again, _ = split_drawings(20, "random", seed=3)
    other, _ = split_drawings(20, "random", seed=4)
    assert torch.equal(learn, again) and not torch.equal(learn, other)
    assert sorted(learn.tolist() + kept.tolist()) == list(range(20))
    with pytest.raises(ValueError, match="split must be one of"):
        split_drawings(4, "alphabetical")


def test_curve_sizes():
    assert curve_sizes(8) == [8]
    assert curve_sizes(30) == [10, 20, 30]
    assert curve_sizes(50) == [10, 20, 50]


@pytest.fixture(scope="module")
def sets(mnist_small):
    (train_x, train_y), (test_x, test_y) = mnist_small
    shifted = canvas_digits(train_x[:80], seed=1)
    learn, kept = split_drawings(80, "time")
    return (
        (shifted[learn], train_y[:80][learn]),
        (shifted[kept], train_y[:80][kept]),
        (test_x[:300], test_y[:300]),
    )


def test_scores_agree_with_a_direct_count(sets):
    _, kept, mnist = sets
    model, _ = load_checkpoint("mlp")
    result = scores(model, kept, mnist, n_samples=1)
    with torch.no_grad():
        direct = model(kept[0]).argmax(-1)
        mnist_direct = model(mnist[0]).argmax(-1)
    assert torch.equal(result.predicted, direct)
    assert result.accuracy == pytest.approx(float((direct == kept[1]).float().mean()))
    assert result.mnist_error == pytest.approx(float((mnist_direct != mnist[1]).float().mean()))
    assert 0.0 <= result.dont_know <= 1.0 and result.nll > 0


def test_before_after_lists_exactly_the_changed_answers(sets):
    learn, kept, mnist = sets
    result = before_after("mlp", Trial(learn, kept, mnist, 1), Recipe(steps=40))
    assert result.learned == 40
    changed = (result.before.predicted != result.after.predicted).nonzero().flatten().tolist()
    assert [c[0] for c in result.changed] == changed
    for position, meant, old, new in result.changed:
        assert meant == int(kept[1][position]) and old != new
    assert result.after.accuracy > result.before.accuracy  # it learned the handwriting
    with pytest.raises(ValueError, match="kept aside"):
        before_after("mlp", Trial(learn, (kept[0][:0], kept[1][:0]), mnist))


def test_the_curve_starts_with_the_model_as_trained(sets):
    learn, kept, mnist = sets
    rows = learning_curve(
        "mlp", Trial(learn, kept, mnist, 1), Recipe(steps=5, options={"pull": 100.0})
    )
    assert [r["drawings"] for r in rows] == [0, 10, 20, 40]
    before = scores(load_checkpoint("mlp")[0], kept, mnist, 1)
    assert rows[0]["accuracy"] == before.accuracy


def test_bald_asks_where_the_sampled_networks_disagree(sets):
    learn, kept, mnist = sets
    bald, random = ask_first("dropout_mlp", Trial(learn, kept, mnist, 10), Recipe(steps=5), count=5)
    assert bald.how == "bald" and random.how == "random"
    assert len(bald.positions) == 5 and len(set(bald.positions.tolist())) == 5
    assert bald.scores.tolist() == sorted(bald.scores.tolist(), reverse=True)
    assert not torch.equal(bald.positions.sort().values, random.positions.sort().values)


def test_canvas_digits_are_thicker_moved_and_seeded():
    image = torch.zeros(1, 1, 28, 28)
    image[0, 0, 8:20, 14] = 1.0  # a thin "1"
    once, again = canvas_digits(image, seed=5), canvas_digits(image, seed=5)
    assert torch.equal(once, again) and not torch.equal(once, canvas_digits(image, seed=6))
    assert (once > 0.5).sum() > 2 * (image > 0.5).sum()  # thicker strokes
    assert once.shape == image.shape and 0.0 <= once.min() and once.max() <= 1.0


def study(seconds: float = 2.5) -> dict:
    sizes = {
        str(n): {
            "accuracy": a,
            "ece": 0.1,
            "nll": 1.0,
            "dont_know": 0.0,
            "mnist_error": 0.05,
            "seconds": seconds,
        }
        for n, a in ((20, 0.5), (50, 0.6), (200, 0.75))
    }
    before = {"accuracy": 0.4, "ece": 0.2, "nll": 2.0, "dont_know": 0.1, "mnist_error": 0.02}
    return {
        "settings": {
            "sizes": [20, 50, 200],
            "kept_aside": 500,
            "mnist_subset": 1000,
            "n_samples": 20,
            "seed": 0,
            "repeats": 3,
            "steps": 100,
        },
        "machine": {"threads": 1},
        "rows": [
            {
                "method": "mlp",
                "title": TITLES["mlp"],
                "checkpoint": "mlp",
                "options": {"pull": 0.0},
                "before": before,
                "sizes": sizes,
            }
        ],
    }


def test_the_study_table_and_its_stated_cells(tmp_path, monkeypatch):
    table = study_table(study())
    row = table[TITLES["mlp"]]
    assert row["kept-aside accuracy (%), as trained"] == "40.0"
    assert [row[f"after {n}"] for n in (20, 50, 200)] == ["50.0", "60.0", "75.0"]
    assert row["MNIST error (%), as trained"] == "2.0" and row["MNIST error after 200"] == "5.0"
    assert row["seconds (200)"] == "2.5"
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    save_study(study(seconds=7.31))
    assert adapt_study("mlp", "seconds") == "7.3"
    assert adapt_study("mlp", "200") == "75.0" and adapt_study("mlp", "ece_before") == "0.200"
    with pytest.raises(ValueError, match="column is one of"):
        adapt_study("mlp", "speed")


def test_the_study_rows_are_the_adapters_arms_as_stored():
    stored = json.loads(STORED.read_text())["rows"]
    assert {r["method"]: (r["title"], r["checkpoint"], r["options"]) for r in stored} == {
        name: (row.title, row.checkpoint, row.options) for name, row in ROWS.items()
    }
    for name, row in ROWS.items():
        kind = REGISTRY[row.checkpoint].model.kind
        assert ADAPTERS[kind].can_adapt and name.startswith(kind)
        assert row.checkpoint == first_shipped(kind)
    assert first_shipped("bbb") == "bbb_gaussian" and first_shipped("bbb", "fashion_mnist")
    assert first_shipped("no_such_kind") is None


def live_plan(**changes) -> Plan:
    g = torch.Generator().manual_seed(0)
    fields = {
        "checkpoints": ("mlp",),
        "images": torch.rand(12, 1, 28, 28, generator=g),
        "labels": torch.arange(12) % 4,
        "steps": 2,
        "n_samples": 1,
        "curve": True,
        "ask": False,
        "prefix": "ours",
    }
    return Plan(**(fields | changes))


def test_a_live_run_saves_its_models_only_when_done(mnist_small):
    run = start(Visitor("t", teacher=True), live_plan())
    assert run.join(300)
    snap = run.snapshot()
    assert snap.state is State.DONE, snap.error
    assert snap.saved == ("user:ours-mlp",) and len(snap.results) == 1
    assert [r["drawings"] for r in snap.curves["mlp"]] == [0, 6]
    assert snap.curves["mlp"][0]["accuracy"] == snap.results[0].before.accuracy
    cancelled = LiveAdaptation(live_plan(prefix="gone"))
    cancelled.cancel()
    cancelled.start().join(300)
    assert cancelled.snapshot().state is State.CANCELLED
    assert sorted(p.name for p in user_model_dir().glob("*.pt")) == ["ours-mlp.pt"]


def test_a_live_run_refuses_before_starting():
    with pytest.raises(PermissionError):
        start(Visitor("s"), live_plan())
    with pytest.raises(ValueError, match="every drawing is a 3"):
        start(Visitor("t", teacher=True), live_plan(labels=torch.full((12,), 3)))
    with pytest.raises(ValueError, match="swag cannot learn"):
        start(Visitor("t", teacher=True), live_plan(checkpoints=("swag",)))
