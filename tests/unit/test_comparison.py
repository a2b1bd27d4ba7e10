"""The comparison's OOD columns: each method's score is chosen on data the table never reports."""

from __future__ import annotations

import pytest
import torch

from core.studies.comparison import (
    OOD_INPUTS,
    OOD_SAMPLES,
    OOD_SETS,
    OOD_SPLIT_SEED,
    KeptTimes,
    comparison,
    load_comparison,
    score_table,
    stored_times,
    times_note,
)
from core.studies.evaluations import IN_DISTRIBUTION
from core.studies.ood import held_out_choice, split_halves


def test_split_halves_are_disjoint_seeded_and_cover_every_input():
    validation, test = split_halves(2001, seed=3)
    assert len(validation) == 1000 and len(test) == 1001
    assert set(validation.tolist()).isdisjoint(test.tolist())
    assert sorted(validation.tolist() + test.tolist()) == list(range(2001))
    again, _ = split_halves(2001, seed=3)
    assert torch.equal(validation, again)
    other, _ = split_halves(2001, seed=4)
    assert not torch.equal(validation, other)
    assert validation.tolist() != list(range(1000))  # shuffled, not the first half


def _scores_good_on(part: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """In- and out-of-distribution scores that separate the sets perfectly on ``part`` only
    (reversed on the other inputs)."""
    inside, outside = torch.ones(n), torch.zeros(n)
    inside[part], outside[part] = 0.0, 1.0
    return inside, outside


def test_the_reported_auroc_is_the_chosen_scores_on_the_test_half_not_the_maximum():
    n = 200
    validation, test = split_halves(n, OOD_SPLIT_SEED)
    lucky_in, lucky_out = _scores_good_on(validation, n)  # best on validation, wrong on test
    steady_in = torch.linspace(0.0, 1.0, n)  # the same fair signal on both halves
    steady_out = steady_in + 0.5
    late_in, late_out = _scores_good_on(test, n)  # perfect on exactly the reported inputs
    choice = held_out_choice(
        {"lucky": lucky_in, "steady": steady_in, "late": late_in},
        {"lucky": lucky_out, "steady": steady_out, "late": late_out},
        OOD_SPLIT_SEED,
    )
    assert choice.score == "lucky"
    assert choice.validation_auroc["lucky"] == 1.0 == max(choice.validation_auroc.values())
    assert choice.validation_auroc["late"] == 0.0
    assert choice.test_auroc == 0.0  # the chosen score on the test half, however bad
    # on the test half "late" would score 1.0: picking the best there would have reported that
    assert (choice.num_validation, choice.num_test) == ((100, 100), (100, 100))


def test_the_choice_reads_only_the_validation_half():
    n = 100
    validation, test = split_halves(n, OOD_SPLIT_SEED)
    inside = {"a": torch.rand(n, generator=torch.Generator().manual_seed(1)), "b": torch.zeros(n)}
    outside = {"a": torch.rand(n, generator=torch.Generator().manual_seed(2)), "b": torch.ones(n)}
    before = held_out_choice(inside, outside, OOD_SPLIT_SEED)
    for scores in (inside, outside):  # scramble every test-half value
        for values in scores.values():
            values[test] = torch.rand(len(test), generator=torch.Generator().manual_seed(3))
    after = held_out_choice(inside, outside, OOD_SPLIT_SEED)
    assert (after.score, after.validation_auroc) == (before.score, before.validation_auroc)
    assert before.score == "b" and before.test_auroc == 1.0 != after.test_auroc


def test_the_stored_comparison_records_a_choice_made_on_the_validation_half():
    result = load_comparison()
    assert result is not None, "the lab ships a stored comparison"
    settings = result["settings"]
    assert settings["ood_split_seed"] == OOD_SPLIT_SEED
    assert settings["ood_validation_inputs"] + settings["ood_test_inputs"] == OOD_INPUTS
    for row in result["rows"]:
        assert set(row["ood_auroc"]) == set(row["ood_score"]) == set(row["ood_validation_auroc"])
        for dataset, validation in row["ood_validation_auroc"].items():
            best = max(validation, key=validation.__getitem__)
            assert row["ood_score"][dataset] == best, (row["checkpoint"], dataset)
    titles = score_table(result)
    assert list(titles) == [row["title"] for row in result["rows"]]
    assert titles["MLP"]["Fashion"] != "Mutual information"  # one network: no disagreement


def test_the_stored_mlp_row_is_what_the_held_out_choice_gives(tmp_path, monkeypatch):
    """Recomputes the MLP's evaluations (a few seconds) and its OOD columns from them."""
    from core.data import DatasetUnavailable
    from core.storage.checkpoints import CheckpointError
    from core.studies.evaluations import evaluate_dataset

    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path))
    row = next(r for r in load_comparison()["rows"] if r["checkpoint"] == "mlp")
    try:
        inside, *oods = (
            evaluate_dataset("mlp", d, n_samples=OOD_SAMPLES, n_inputs=OOD_INPUTS)
            for d in (IN_DISTRIBUTION, *(d for d in OOD_SETS if d in row["ood_auroc"]))
        )
    except (DatasetUnavailable, CheckpointError) as exc:
        pytest.skip(f"the MLP or a dataset is unavailable: {exc}")
    for outside in oods:
        choice = held_out_choice(inside.scores, outside.scores, OOD_SPLIT_SEED)
        assert row["ood_score"][outside.dataset] == choice.score
        assert row["ood_auroc"][outside.dataset] == pytest.approx(choice.test_auroc, abs=1e-6)
        assert row["ood_validation_auroc"][outside.dataset] == pytest.approx(
            choice.validation_auroc, abs=1e-6
        )


def test_kept_times_name_their_own_device_and_date():
    rows = [{"checkpoint": "mlp", "predict_ms": 0.3}]
    fresh = {"rows": rows, "device": "cpu (1 thread)", "date": "2026-12-05T01:00:00+00:00"}
    assert stored_times(fresh) == KeptTimes({"mlp": 0.3}, fresh["device"], fresh["date"])
    assert times_note(fresh) == ""
    kept = {**fresh, "times": {"device": "cpu (2 threads)", "date": "2026-11-27T00:25:30+00:00"}}
    assert stored_times(kept).device == "cpu (2 threads)"
    assert times_note(kept) == "; the milliseconds per image on cpu (2 threads), 2026-11-27"
    with pytest.raises(ValueError, match="bbb_mixture"):  # before anything is computed
        comparison(["mlp", "bbb_mixture"], (), kept=stored_times(kept))
