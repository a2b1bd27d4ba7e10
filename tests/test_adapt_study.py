"""The before/after study of adapting to the class's drawings (core.adapt.study): the split,
the scores, the answers that changed, the curve and the BALD replay."""

from __future__ import annotations

import pytest
import torch

from core.adapt.study import (
    ask_first,
    before_after,
    curve_sizes,
    learning_curve,
    scores,
    split_drawings,
)
from core.data.synthetic import canvas_digits
from core.storage.checkpoints import load_checkpoint


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
    result = before_after("mlp", learn, kept, mnist, n_samples=1, steps=40)
    assert result.learned == 40
    changed = (result.before.predicted != result.after.predicted).nonzero().flatten().tolist()
    assert [c[0] for c in result.changed] == changed
    for position, meant, old, new in result.changed:
        assert meant == int(kept[1][position]) and old != new
    assert result.after.accuracy > result.before.accuracy  # it learned the handwriting
    with pytest.raises(ValueError, match="kept aside"):
        before_after("mlp", learn, (kept[0][:0], kept[1][:0]), mnist)


def test_the_curve_starts_with_the_model_as_trained(sets):
    learn, kept, mnist = sets
    rows = learning_curve("mlp", learn, kept, mnist, n_samples=1, options={"pull": 100.0}, steps=5)
    assert [r["drawings"] for r in rows] == [0, 10, 20, 40]
    before = scores(load_checkpoint("mlp")[0], kept, mnist, 1)
    assert rows[0]["accuracy"] == before.accuracy


def test_bald_asks_where_the_sampled_networks_disagree(sets):
    learn, kept, mnist = sets
    bald, random = ask_first("dropout_mlp", learn, kept, mnist, n_samples=10, count=5, steps=5)
    assert bald.how == "bald" and random.how == "random"
    assert len(bald.positions) == 5 and len(set(bald.positions.tolist())) == 5
    assert bald.scores.tolist() == sorted(bald.scores.tolist(), reverse=True)
    assert not torch.equal(bald.positions.sort().values, random.positions.sort().values)
