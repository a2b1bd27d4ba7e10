"""Test helper: small untrained checkpoints under the registered names."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
import torch

import core.storage.checkpoints
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.engine.interface import ModelConfig
from core.methods import build_model
from core.storage.checkpoints import save_checkpoint


def save_small_checkpoints(names: Iterable[str], hidden: int = 16) -> None:
    """Save untrained 784-``hidden``-10 versions of registered models into ``CHECKPOINT_DIR``.

    The i-th name's weights are drawn with seed i, so the models differ but are reproducible.

    Args:
        names: Registered checkpoint names (each keeps its kind, prior, dropout…).
        hidden: The one hidden layer's width.
    """
    for i, name in enumerate(names):
        torch.manual_seed(i)
        config = ModelConfig.from_dict({**REGISTRY[name].model.to_dict(), "hidden": [hidden]})
        save_checkpoint(
            name,
            collect_random(build_model(config)),
            {"note": "untrained, for tests", "dataset": REGISTRY[name].dataset},
        )


def collect_random(model: torch.nn.Module) -> torch.nn.Module:
    """A model that predicts from collected weights, given random ones (others unchanged)."""
    params = list(model.parameters())
    flat = torch.nn.utils.parameters_to_vector(params).detach()
    if hasattr(model, "add_sample"):  # stored samples: the weights, jittered
        for _ in range(model.config.params["members"]):
            torch.nn.utils.vector_to_parameters(flat + 0.05 * torch.randn_like(flat), params)
            model.add_sample()
    if hasattr(model, "set_posterior"):  # SWAG: a Gaussian around the weights
        deviations = 0.05 * torch.randn(len(flat), model.config.params["rank"])
        model.set_posterior(
            flat, torch.full_like(flat, 0.05**2), deviations, model.config.params["rank"]
        )
    return model


def small_checkpoint_dirs(tmp_path_factory, names: Iterable[str], label: str) -> tuple[Path, Path]:
    """A module's folder of small checkpoints (:func:`save_small_checkpoints`) and its cache.

    Skips the test when MNIST is missing (the pages need its test set).

    Args:
        tmp_path_factory: pytest's factory.
        names: Registered checkpoint names.
        label: Prefix of the temporary folder.

    Returns:
        ``(checkpoint folder, cache folder)``; use them with :func:`use_checkpoints`.
    """
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    root = tmp_path_factory.mktemp(label)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", root / "checkpoints")
        save_small_checkpoints(names)
    return root / "checkpoints", root / "cache"


def use_checkpoints(monkeypatch, dirs: tuple[Path, Path]) -> None:
    """Make the app read its checkpoints and cache from ``dirs`` for one test."""
    checkpoints, cache = dirs
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", checkpoints)
    monkeypatch.setenv("BNN_CACHE_DIR", str(cache))
