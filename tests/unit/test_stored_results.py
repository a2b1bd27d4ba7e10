"""The lab's stored results: one loader finds each by study and name, in one folder per study,
and every study the lab reads has its results there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.active.study import RESULT_FILE, stored_result
from core.bandits.store import load_references
from core.stated.training import stored_runs
from core.storage.results import STUDIES, StoredResults, results_dir
from core.studies.comparison import load_comparison
from core.studies.peers import load_peer_results
from core.studies.training_speed_runs import REFERENCE_FILE, load_results

ROOT = Path(__file__).resolve().parents[2]


def test_results_are_saved_atomically_and_read_back_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    runs = StoredResults("training_speed")
    assert results_dir() == tmp_path and runs.folder == tmp_path / "training_speed"
    assert runs.load("absent.json") is None and runs.load_all() == {}
    path = runs.save("b.json", {"x": [1, 2]})
    assert path == tmp_path / "training_speed" / "b.json"
    assert path.read_text() == json.dumps({"x": [1, 2]}, indent=1) + "\n"
    runs.save("a.json", {"y": 1}, indent=None)
    assert runs.path("a.json").read_text() == '{"y":1}\n'
    (runs.folder / "broken.json").write_text("{not json")
    (runs.folder / "notes.txt").write_text("not a result")
    assert runs.load("broken.json") is None
    assert runs.load_all() == {"a.json": {"y": 1}, "b.json": {"x": [1, 2]}}
    assert list(runs.load_all("b*.json")) == ["b.json"]
    assert not list(runs.folder.glob(".*.tmp"))
    assert StoredResults("comparison").load_all() == {}  # another study's folder


def test_an_unknown_study_is_refused():
    with pytest.raises(KeyError, match="no stored results named 'benchmarks'"):
        StoredResults("benchmarks")


def test_the_default_folder_sits_beside_the_shipped_page_results(monkeypatch):
    monkeypatch.delenv("BNN_RESULTS_DIR", raising=False)
    assert results_dir() == ROOT / "checkpoints" / "results"


def test_every_study_ships_its_results_and_the_readers_find_them(monkeypatch):
    """What the pages read at run time is in the repository, through the one loader."""
    monkeypatch.delenv("BNN_RESULTS_DIR", raising=False)
    for study in STUDIES:
        assert StoredResults(study).load_all(), f"nothing stored for {study}"
    assert "mushroom-50000-blundell2015.json" in load_references()
    assert stored_result(RESULT_FILE)["curves"]
    assert stored_result("active_learning-gal2017.json")["curves"]
    assert load_comparison()["rows"]
    assert REFERENCE_FILE in load_results()
    assert load_peer_results()["timings"]
    assert stored_runs()
