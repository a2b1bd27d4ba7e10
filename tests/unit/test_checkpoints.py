"""Checkpoint registry: round trip, atomic saves, clear errors, CLI schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from core.catalogue import MIXTURE_PRIOR, REGISTRY, list_checkpoints
from core.methods import ModelConfig, build_model
from core.paths import REPO_ROOT
from core.storage import checkpoints
from core.storage.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from core.storage.metadata import partial_note

TINY = ModelConfig(kind="bbb", hidden=(8,), params=MIXTURE_PRIOR)


def _saved(tmp_path, config=TINY):
    model = build_model(config)
    return model, save_checkpoint("tiny", model, {"test_error": 0.5}, directory=tmp_path)


def test_round_trip_restores_weights_config_and_metadata(tmp_path):
    model, path = _saved(tmp_path)
    loaded, meta = load_checkpoint(path)
    assert loaded.config == model.config
    for (k, v), (k2, v2) in zip(
        model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert k == k2 and torch.equal(v, v2)
    assert meta["test_error"] == 0.5 and meta["model_config"]["hidden"] == [8]
    assert not any(p.requires_grad for p in loaded.parameters())


def test_interrupted_save_leaves_old_file_intact(tmp_path, monkeypatch):
    _, path = _saved(tmp_path)
    before = path.read_bytes()

    def crash(obj, f):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(checkpoints.torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint("tiny", build_model(TINY), {}, directory=tmp_path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    load_checkpoint(path)


@pytest.mark.parametrize(
    ("metadata", "note"),
    [
        ({"complete": True, "epochs": 3, "epochs_planned": 3}, ""),
        ({"complete": False, "epochs": 1, "epochs_planned": 15}, "partial: 1 of 15 epochs"),
        ({"complete": False}, "partial: training did not finish"),
        ({"epochs": 1, "training": {"epochs": 15}}, "partial: 1 of 15 epochs"),  # old, killed
        ({"epochs": 15, "training": {"epochs": 15}}, ""),  # old, finished
        ({"name": "old", "model_config": {}}, ""),  # old, nothing recorded
        ({}, "partial: no metadata"),  # weights saved, metadata not
    ],
)
def test_partial_note_reads_new_and_old_metadata(metadata, note):
    assert partial_note(metadata) == note


def test_a_save_cut_between_its_two_files_never_looks_finished(tmp_path, monkeypatch):
    model = build_model(TINY)
    finished = {"epochs": 3, "epochs_planned": 3}
    path = save_checkpoint("tiny", model, finished, directory=tmp_path)
    real_write = checkpoints.atomic_write

    def killed_before(suffix):
        def write(target, content):
            if target.suffix == suffix:
                raise KeyboardInterrupt("killed")
            real_write(target, content)

        return write

    def note():
        return partial_note(checkpoints.read_metadata(path))

    monkeypatch.setattr(checkpoints, "atomic_write", killed_before(".pt"))
    with pytest.raises(KeyboardInterrupt):  # a new run's first save, over a finished model
        save_checkpoint("tiny", model, {"epochs": 1, "epochs_planned": 3}, tmp_path, complete=False)
    assert note() == "partial: 1 of 3 epochs"
    monkeypatch.setattr(checkpoints, "atomic_write", killed_before(".json"))
    with pytest.raises(KeyboardInterrupt):  # its final save
        save_checkpoint("tiny", model, finished, directory=tmp_path)
    assert note() == "partial: 1 of 3 epochs"


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_file_gives_clear_error_naming_it(tmp_path, damage):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else os.urandom(len(data)))
    with pytest.raises(CheckpointError, match="tiny.pt.*corrupt or truncated"):
        load_checkpoint(path)


def test_mismatched_file_and_missing_file_give_clear_errors(tmp_path):
    _, path = _saved(tmp_path)
    payload = torch.load(path, weights_only=True)
    payload["model_config"]["hidden"] = [9]
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="tiny.pt: the weights do not match"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="nothere.pt: checkpoint file not found"):
        load_checkpoint(tmp_path / "nothere.pt")


def test_registry_lists_every_named_config(tmp_path):
    infos = list_checkpoints(tmp_path)
    assert {i.spec.name for i in infos} == set(REGISTRY)
    assert all(not i.available and "not found" in i.reason for i in infos)
    assert {"bbb_gaussian", "bbb_mixture", "bbb_lrt", "mlp", "dropout_mlp"} <= set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_shipped_checkpoint_is_small_and_loads(name):
    info = next(i for i in list_checkpoints() if i.spec.name == name)
    if not info.available:
        pytest.skip(f"{name} not trained yet")
    assert info.path.stat().st_size <= 10_000_000  # the design card's 10 MB per file
    model, meta = load_checkpoint(name)
    assert model.config == info.spec.model
    assert meta["epochs"] >= 1 or "posterior" in meta  # trained, or fitted post hoc
    assert meta.get("train_subset") == info.spec.train_subset  # the images its spec names


def test_registered_models_hold_out_the_calibration_split_and_train_without_it():
    from core.jobs.training import spec_request
    from core.studies.calibration.validation import VALIDATION_SIZE

    held_out = [spec for spec in REGISTRY.values() if spec.train_subset is not None]
    assert held_out  # the shipped models leave the temperature-scaling images out
    for spec in held_out:
        assert spec.train_subset == 60_000 - VALIDATION_SIZE, spec.name
        assert spec_request(spec).n_train == spec.train_subset
        assert spec_request(spec, n_train=100).n_train == 100


@pytest.mark.parametrize(("split", "images"), [("test", 10_000), ("validation", 5_000)])
def test_cli_evaluate_json_schema(split, images):
    if not (REPO_ROOT / "checkpoints" / "mlp.pt").is_file():
        pytest.skip("mlp checkpoint not trained yet")
    command = ["evaluate", "--checkpoint", "mlp", "--samples", "2", "--split", split, "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "core", *command],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out)
    assert {f"{split}_error", "nll", "n_samples"} <= set(result)
    assert result["n_samples"] == 2 and 0 <= result[f"{split}_error"] < 0.05
    assert result["num_examples"] == images and result["split"] == split


PROVENANCE = ("date", "device", "versions", "train_seconds", "epochs", "train_subset", "dataset")
"""What every shipped file records of how it was made."""


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_shipped_file_records_the_catalogues_recipe_and_its_provenance(name):
    from dataclasses import asdict, fields

    from core.storage.checkpoints import checkpoint_path, read_metadata
    from core.training import TrainConfig

    spec = REGISTRY[name]
    meta = read_metadata(checkpoint_path(name))
    assert meta["complete"] is True
    assert all(meta.get(key) is not None for key in PROVENANCE), meta.keys()
    assert (meta["dataset"], meta["train_subset"]) == (spec.dataset, spec.train_subset)
    assert meta["epochs"] == spec.training.epochs
    recipe = json.loads(json.dumps({"model_config": asdict(spec.model)}))["model_config"]
    assert {k: meta["model_config"].get(k) for k in recipe} == recipe
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    training = json.loads(json.dumps(asdict(spec.training)))
    for key, value in training.items():  # a setting added after the file was trained: default
        assert meta["training"].get(key, defaults[key]) == value, key


def test_shipped_models_have_one_title_each():
    titles = [spec.title for spec in REGISTRY.values()]
    assert len(set(titles)) == len(titles)
