"""The Class page's evaluation drawing by drawing: the per-drawing cache against a from-scratch
evaluation, only new drawings passed to the model, the time budget, forgetting drawings that are
gone, and the report assembled from per-drawing predictions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import torch

import core.classroom.report as report_module
from core.classroom.drawings import Drawing, as_tensors, to_pixels
from core.classroom.live import CacheKey, PredictionCache, live_reports
from core.classroom.report import Predictions, assemble_report, model_report, predict
from core.engine.interface import ModelConfig
from core.evaluation.calibration import calibration_metrics
from core.evaluation.uncertainty import DEFAULT_SCORE, REJECT, SCORES, UNSURE
from core.methods import build_model

N_SAMPLES = 5
DATABASE = "sqlite:///class.sqlite"


def tiny_model(kind: str, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(kind=kind, hidden=(16,))).eval().requires_grad_(False)


def drawings(n: int, first_id: int = 1) -> list[Drawing]:
    """``n`` drawings with ids ``first_id, first_id + 1, …``, labels cycling through 0..9."""
    g = torch.Generator().manual_seed(first_id)
    created = datetime(2026, 11, 25, tzinfo=UTC)
    return [
        Drawing(i, "lab", i % 10, to_pixels(torch.rand(28, 28, generator=g)), created)
        for i in range(first_id, first_id + n)
    ]


def key(name: str = "m", code: str = "lab") -> CacheKey:
    return CacheKey(DATABASE, code, name, 1, N_SAMPLES)


@pytest.fixture
def rows_seen(monkeypatch) -> list[int]:
    """How many drawings each call of the sampler received."""
    seen: list[int] = []
    real = report_module.seeded_summary

    def counting(model, images, n_samples, *args, **kwargs):
        seen.append(len(images))
        return real(model, images, n_samples, *args, **kwargs)

    monkeypatch.setattr(report_module, "seeded_summary", counting)
    return seen


def test_a_deterministic_model_gives_the_from_scratch_predictions_incrementally(rows_seen):
    model, records = tiny_model("mlp"), drawings(150)
    cache = PredictionCache(batch=64)
    for n in (1, 70, 71, 150):  # the class grows; batches of 64 and partial ones
        covered, predictions = cache.evaluate(key(), model, records[:n])
        assert [r.id for r in covered] == [r.id for r in records[:n]]
    assert rows_seen == [1, 64, 5, 1, 64, 15]  # each drawing passed to the model once
    scratch = predict(model, as_tensors(records).images, N_SAMPLES, seed=0)
    assert torch.allclose(predictions.mean, scratch.mean, atol=1e-6)
    for name in SCORES:
        assert torch.allclose(predictions.scores[name], scratch.scores[name], atol=1e-6)


def test_a_stochastic_model_keeps_old_predictions_and_sees_only_new_drawings(rows_seen):
    model, records = tiny_model("bbb"), drawings(13)
    cache = PredictionCache()
    _, before = cache.evaluate(key(), model, records[:10])
    _, after = cache.evaluate(key(), model, records)
    assert rows_seen == [10, 3]
    assert torch.equal(after.mean[:10], before.mean)  # unchanged by the new drawings
    cache.evaluate(key(), model, records)
    assert rows_seen == [10, 3]  # nothing new: no model pass
    _, again = PredictionCache().evaluate(key(), model, records[:10])
    assert torch.equal(again.mean, before.mean)  # seeded: reproducible in a fresh cache


def test_keys_keep_models_classes_and_passes_apart_and_the_oldest_entry_goes(rows_seen):
    model, records = tiny_model("mlp"), drawings(4)
    cache = PredictionCache(max_entries=2)
    cache.evaluate(key("a"), model, records)
    cache.evaluate(key("b"), model, records)
    cache.evaluate(key("a"), model, records)  # "a" is now the most recently used
    assert rows_seen == [4, 4]
    cache.evaluate(CacheKey(DATABASE, "lab", "a", 1, N_SAMPLES + 1), model, records)
    assert len(cache) == 2 and rows_seen == [4, 4, 4]
    cache.evaluate(key("a"), model, records)  # kept
    cache.evaluate(key("b"), model, records)  # dropped: evaluated again
    assert rows_seen == [4, 4, 4, 4]


def test_drawings_that_are_gone_are_forgotten(rows_seen):
    model, records = tiny_model("dropout"), drawings(10)
    cache = PredictionCache()
    _, first = cache.evaluate(key(), model, records)
    covered, kept = cache.evaluate(key(), model, records[4:])
    assert [r.id for r in covered] == [r.id for r in records[4:]] and rows_seen == [10]
    assert torch.equal(kept.mean, first.mean[4:])
    cache.evaluate(key(), model, records[:2])  # 1 and 2 were dropped: evaluated again
    assert rows_seen == [10, 2]
    cache.evaluate(key(code="other"), model, records[:2])
    cache.forget(DATABASE, "lab")  # the class was cleared
    assert len(cache) == 1
    with pytest.raises(ValueError, match="at least one drawing"):
        cache.evaluate(key(), model, [])


def test_live_reports_spread_the_evaluation_over_refreshes_within_the_budget(rows_seen):
    models = [("mlp", 1, tiny_model("mlp")), ("bbb", 1, tiny_model("bbb", 1))]
    records = drawings(150)
    cache = PredictionCache(batch=64)
    pending = []
    for _ in range(3):
        reports = live_reports(cache, DATABASE, "lab", models, records, N_SAMPLES, budget_s=0)
        pending.append([r.pending for r in reports])
    assert pending == [[86, 86], [22, 22], [0, 0]]  # one batch per model and refresh
    assert rows_seen == [64, 64, 64, 64, 22, 22]
    full = live_reports(cache, DATABASE, "lab", models, records, N_SAMPLES)
    assert rows_seen == [64, 64, 64, 64, 22, 22]
    for live in full:
        assert live.records == records and live.pending == 0
        assert live.report.labels.tolist() == [r.label for r in records]
    reports = live_reports(PredictionCache(batch=64), DATABASE, "lab", models, records, N_SAMPLES)
    assert [r.pending for r in reports] == [0, 0]  # an unlimited budget: everything at once
    assert torch.allclose(reports[0].report.mean, full[0].report.mean, atol=1e-6)


def test_a_partial_report_covers_the_oldest_drawings():
    records = drawings(100)
    models = [("mlp", 1, tiny_model("mlp"))]
    (live,) = live_reports(PredictionCache(batch=64), DATABASE, "x", models, records, 3, None, 0)
    assert live.records == records[:64] and live.pending == 36 and len(live.report) == 64


def test_the_report_assembled_from_predictions_has_the_right_confusion_metrics_and_verdicts():
    mean = torch.tensor(
        [[0.9, 0.1] + [0.0] * 8, [0.2, 0.8] + [0.0] * 8, [0.6, 0.4] + [0.0] * 8, [0.0] * 9 + [1.0]]
    )
    entropy = torch.tensor([0.3, 0.5, 0.7, 0.0])
    scores = {name: torch.zeros(4) for name in SCORES} | {DEFAULT_SCORE: entropy}
    labels = torch.tensor([0, 0, 1, 9])  # right, wrong (0 → 1), wrong (1 → 0), right
    limits = {DEFAULT_SCORE: {"p90": 0.4, "p99": 0.6}}
    report = assemble_report("m", Predictions(mean, scores), labels, 7, limits)
    assert report.predicted.tolist() == [0, 1, 0, 9]
    expected = torch.zeros(10, 10, dtype=torch.long)
    expected[0, 0] = expected[0, 1] = expected[1, 0] = expected[9, 9] = 1
    assert torch.equal(report.confusion, expected)
    assert report.accuracy == pytest.approx(0.5)
    assert report.metrics == pytest.approx(calibration_metrics(mean, labels))
    assert int(report.reliability.count.sum()) == 4 and report.n_samples == 7
    assert report.verdicts[1:3] == [UNSURE, REJECT] and report.dont_know == [2]
    other = {"mutual_information": limits[DEFAULT_SCORE]}
    assert assemble_report("m", Predictions(mean, scores), labels, 7, other).verdicts is None
    with pytest.raises(ValueError, match="N labels"):
        assemble_report("m", Predictions(mean, scores), labels[:3], 7)


def test_model_report_is_predict_then_assemble():
    model = tiny_model("dropout", 2)
    images, labels = torch.rand(12, 1, 28, 28), torch.randint(0, 10, (12,))
    direct = model_report("d", model, images, labels, N_SAMPLES, seed=4)
    predictions = predict(model, images, N_SAMPLES, seed=4)
    assembled = assemble_report("d", predictions, labels, N_SAMPLES)
    assert torch.equal(direct.mean, assembled.mean) and direct.metrics == assembled.metrics
    joined = Predictions.cat(
        [predictions.take(torch.arange(5)), predictions.take(torch.arange(5, 12))]
    )
    assert torch.equal(joined.mean, predictions.mean)
    assert all(torch.equal(joined.scores[k], predictions.scores[k]) for k in SCORES)
