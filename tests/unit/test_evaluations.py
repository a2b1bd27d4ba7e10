"""The on-disk evaluation cache: contents, reuse without recomputing, invalidation."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

import core.data
import core.studies.evaluations as evalcache
from core.evaluation.uncertainty import SCORES
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import save_checkpoint

TINY = ModelConfig(kind="bbb", hidden=(16,), params={"init_sigma": 0.05})


def fake_dataset(name: str, split: str = "test", *, n_inputs: int | None = None, seed: int = 0):
    """40 random images; labelled unless the name ends with "noise"."""
    g = torch.Generator().manual_seed(len(name))
    images = torch.rand(40, 1, 28, 28, generator=g)
    labels = torch.randint(0, 10, (40,), generator=g)
    images, labels = images[:n_inputs], labels[:n_inputs]
    return images, None if name.endswith("noise") else labels


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny BBB checkpoint in a temporary folder, a fake dataset loader, a temporary cache,
    and a counter of computations."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.data, "load_dataset", fake_dataset, raising=False)
    computed = []
    compute = evalcache._compute

    def counting(*args, **kwargs):
        computed.append(args[1])
        return compute(*args, **kwargs)

    monkeypatch.setattr(evalcache, "_compute", counting)
    torch.manual_seed(0)
    path = save_checkpoint("tiny", build_model(TINY), {}, directory=tmp_path)
    return path, computed


def test_evaluation_contents(tiny):
    path, _ = tiny
    progress = []
    ev = evalcache.evaluate_dataset(
        path, "mnist", n_samples=8, progress=lambda f, m: progress.append(f)
    )
    assert len(ev) == 40 and ev.mean.shape == (40, 10) and ev.n_samples == 8
    assert set(ev.scores) == set(SCORES) and all(v.shape == (40,) for v in ev.scores.values())
    assert torch.equal(ev.predicted, ev.mean.argmax(1))
    assert ev.accuracy == (ev.predicted == ev.labels).float().mean().item()
    assert set(ev.calibration()) == {"accuracy", "ece", "nll", "brier"}
    assert progress[-1] == 1.0
    unlabelled = evalcache.evaluate_dataset(path, "gaussian_noise", n_samples=8, n_inputs=10)
    assert len(unlabelled) == 10 and unlabelled.labels is None and unlabelled.accuracy is None


def test_second_call_loads_identical_results_without_computing(tiny):
    path, computed = tiny
    first = evalcache.evaluate_dataset(path, "mnist", n_samples=8, n_inputs=30)
    assert evalcache.evaluation_entry(path, "mnist", n_samples=8, n_inputs=30).exists()
    second = evalcache.evaluate_dataset(path, "mnist", n_samples=8, n_inputs=30)
    assert computed == ["mnist"]
    assert torch.equal(first.mean, second.mean) and torch.equal(first.labels, second.labels)
    assert all(torch.equal(first.scores[k], second.scores[k]) for k in SCORES)
    evalcache.evaluate_dataset(
        path, "mnist", n_samples=9, n_inputs=30
    )  # other arguments: new entry
    evalcache.evaluate_dataset(path, "kmnist", n_samples=8, n_inputs=30)
    assert computed == ["mnist", "mnist", "kmnist"]


def test_seeded_recomputation_is_reproducible(tiny):
    path, computed = tiny
    first = evalcache.evaluate_dataset(path, "mnist", n_samples=8)
    evalcache.evaluation_entry(path, "mnist", n_samples=8).path.write_bytes(b"corrupt")
    again = evalcache.evaluate_dataset(path, "mnist", n_samples=8)
    assert len(computed) == 2 and torch.equal(
        first.scores["mutual_information"], again.scores["mutual_information"]
    )


def test_changed_checkpoint_invalidates(tiny, tmp_path):
    path, computed = tiny
    before = evalcache.evaluate_dataset(path, "mnist", n_samples=8)
    torch.manual_seed(1)
    save_checkpoint("tiny", build_model(TINY), {}, directory=tmp_path)  # same size, new weights
    after = evalcache.evaluate_dataset(path, "mnist", n_samples=8)
    assert len(computed) == 2 and not torch.equal(before.mean, after.mean)


def test_rejection_thresholds_from_mnist_evaluation(tiny):
    path, computed = tiny
    thresholds = evalcache.rejection_thresholds(path, n_samples=8)
    ev = evalcache.evaluate_dataset(path, "mnist", n_samples=8)
    assert computed == ["mnist"] and set(thresholds) == set(SCORES)
    for name, limits in thresholds.items():
        assert limits["p90"] <= limits["p99"] <= ev.scores[name].max().item() + 1e-6
        assert (ev.scores[name] > limits["p99"]).float().mean() <= 0.05


def test_shipped_thresholds_are_read_without_scoring_and_only_for_the_same_file(
    tiny, tmp_path, monkeypatch
):
    path, computed = tiny
    monkeypatch.setattr(evalcache, "SHIPPED_THRESHOLDS", tmp_path / "thresholds.json")
    written = evalcache.ship_thresholds([path], n_samples=8)
    computed_limits = evalcache.rejection_thresholds(path, n_samples=8)
    assert computed == ["mnist"]  # scored once, to ship
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert evalcache.rejection_thresholds(path, n_samples=8) == computed_limits
    assert computed == ["mnist"]  # read from the shipped file, not scored again
    assert json.loads(written.read_text())["version"] == evalcache.CACHE_VERSION
    evalcache.rejection_thresholds(path, n_samples=4)  # other settings: scored
    torch.manual_seed(1)
    save_checkpoint("tiny", build_model(TINY), {}, directory=path.parent)  # retrained
    evalcache.rejection_thresholds(path, n_samples=8)
    assert computed == ["mnist"] * 3


def test_every_shipped_checkpoint_has_its_shipped_thresholds():
    """Promoting a checkpoint needs ``python -m core thresholds --ship`` (a fresh clone's first
    drawing is judged at once)."""
    from core.catalogue import REGISTRY

    limits = evalcache._shipped_limits()
    for name in REGISTRY:
        path = evalcache.resolve_checkpoint(name)
        assert evalcache._threshold_key(path, 100) in limits, name


class FakeInfo:
    def __init__(self, name: str, available: bool = True):
        self.name, self.available = name, available

    def availability(self):
        return self.available, "" if self.available else "files missing"


def test_ood_cli_table_and_json(tiny, tmp_path, monkeypatch, capsys):
    import core.storage.checkpoints
    from core.cli.ood import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())

    def main(argv: list[str]) -> int:
        args = parser.parse_args(argv)
        return args.func(args)

    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    torch.manual_seed(0)
    save_checkpoint("bbb_gaussian", build_model(TINY), {}, directory=tmp_path)
    infos = [
        FakeInfo("mnist"),
        FakeInfo("rotated_mnist"),
        FakeInfo("kmnist"),
        FakeInfo("gaussian_noise"),
        FakeInfo("x", False),
    ]
    monkeypatch.setattr(core.data, "list_datasets", lambda: infos, raising=False)
    assert main(["ood", "--samples", "4", "--subset", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["checkpoint"], r["dataset"]) for r in out["results"]] == [
        ("bbb_gaussian", "rotated_mnist"),
        ("bbb_gaussian", "kmnist"),
        ("bbb_gaussian", "gaussian_noise"),
    ]
    first = out["results"][0]
    assert first["num_in"] == first["num_out"] == 20 and first["ood_accuracy"] is not None
    assert set(first["metrics"]) == set(SCORES)
    assert all(0 <= m["auroc"] <= 1 and 0 <= m["fpr95"] <= 1 for m in first["metrics"].values())
    # accuracy only where the labels are digits
    assert [r["ood_accuracy"] is None for r in out["results"]] == [False, True, True]
    assert main(["ood", "--samples", "4", "--subset", "20"]) == 0
    text = capsys.readouterr().out
    assert "bbb_gaussian" in text and "gaussian_noise" in text and "AUROC" in text
