"""Test helper: small untrained checkpoints under the registered names."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from core.engine.interface import ModelConfig
from core.engine.models import build_model
from core.storage.checkpoints import REGISTRY, save_checkpoint


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
        save_checkpoint(name, build_model(config), {"note": "untrained, for tests"})
