"""The one disk cache: entries keyed by content, and load-or-compute."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pytest
import torch

from core.storage.cache import cache_entry


@dataclass
class Result:
    value: float


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_load_or_compute_computes_once_then_reads(cache):
    calls = []

    def compute():
        calls.append(1)
        return Result(len(calls) * 1.5)

    entry = cache_entry("study", 1, settings={"a": 1})
    first = entry.load_or_compute(compute, decode=lambda d: Result(**d), encode=asdict)
    again = cache_entry("study", 1, settings={"a": 1}).load_or_compute(
        compute, decode=lambda d: Result(**d), encode=asdict
    )
    assert first == again == Result(1.5) and len(calls) == 1
    other = cache_entry("study", 1, settings={"a": 2})  # other settings, other entry
    assert other.load_or_compute(compute, decode=lambda d: Result(**d), encode=asdict).value == 3.0
    assert cache_entry("study", 2, settings={"a": 1}).path != entry.path  # a new version


def test_another_layout_or_a_corrupt_file_is_computed_again(cache):
    entry = cache_entry("study", 1)
    entry.save({"old_field": 1})  # another version's layout
    assert entry.read(lambda d: Result(**d)) is None
    assert entry.load_or_compute(lambda: Result(2.0), decode=lambda d: Result(**d), encode=asdict)
    assert entry.read(lambda d: Result(**d)) == Result(2.0)
    entry.path.write_bytes(b"{truncated")
    assert entry.load() is None
    assert entry.load_or_compute(lambda: Result(3.0), decode=lambda d: Result(**d), encode=asdict)
    tensors = cache_entry("tensors", 1, format="pt")
    value = tensors.load_or_compute(lambda: {"x": torch.arange(3)})
    assert torch.equal(cache_entry("tensors", 1, format="pt").load()["x"], value["x"])


def test_a_shipped_result_is_read_when_the_cache_lacks_it_and_never_written(
    cache, tmp_path_factory, monkeypatch
):
    import core.storage.cache as cache_module

    shipped = tmp_path_factory.mktemp("shipped")
    monkeypatch.setattr(cache_module, "SHIPPED_DIR", shipped)
    entry = cache_entry("study", 1, settings={"a": 1}, format="pt")
    assert not entry.exists() and entry.load() is None
    (shipped / "study").mkdir()
    torch.save({"x": torch.arange(3)}, shipped / "study" / entry.path.name)
    assert entry.exists() and not entry.path.exists()
    calls = []
    value = entry.load_or_compute(lambda: calls.append(1) or {"x": torch.zeros(3)})
    assert calls == [] and torch.equal(value["x"], torch.arange(3))  # read, not computed
    entry.save({"x": torch.ones(3)})  # a computed result goes to the cache, which wins
    assert torch.equal(entry.load()["x"], torch.ones(3))
    assert torch.equal(torch.load(entry.shipped, weights_only=True)["x"], torch.arange(3))
    entry.path.write_bytes(b"corrupt")  # an unreadable cache file falls back to the shipped one
    assert torch.equal(entry.load()["x"], torch.arange(3))
