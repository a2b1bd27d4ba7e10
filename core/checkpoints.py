"""Checkpoint registry: named model configurations and their trained weights in ``checkpoints/``.

Each checkpoint ``NAME`` is two files written atomically (temp file in the same folder, fsync,
``os.replace``), so a crash never leaves a half-written model:

* ``NAME.pt``: ``{"format": 1, "model_config": dict, "state_dict": tensors}``, loaded with
  ``torch.load(weights_only=True)``;
* ``NAME.json``: metadata (model and training config, epochs, test error, NLL, training time,
  device, library versions, date) for humans and for listings without loading weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.atomic import atomic_write
from core.models import Model, ModelConfig, build_model
from core.paths import CHECKPOINT_DIR
from core.train import TrainConfig

FORMAT_VERSION = 1
GAUSSIAN_PRIOR = {"kind": "gaussian", "sigma": 1.0}
MIXTURE_PRIOR = {"kind": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": 0.0024787521766663585}


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, truncated or does not match its configuration."""


@dataclass(frozen=True)
class CheckpointSpec:
    """What a registered name means: a title, a description and how it is trained."""

    name: str
    title: str
    description: str
    model: ModelConfig
    training: TrainConfig = field(default_factory=TrainConfig)


REGISTRY: dict[str, CheckpointSpec] = {
    spec.name: spec
    for spec in [
        CheckpointSpec(
            "bbb_gaussian",
            "BBB (Gaussian prior)",
            "Bayes by Backprop, prior N(0, 1), KL weight β = 0.1, weight sampling.",
            ModelConfig(kind="bbb", prior=GAUSSIAN_PRIOR),
            TrainConfig(epochs=30, impl="vmap", lr_decay=0.95, beta=0.1),
        ),
        CheckpointSpec(
            "bbb_mixture",
            "BBB (scale-mixture prior)",
            "Bayes by Backprop, prior ½·N(0, 1) + ½·N(0, e^-12), KL weight β = 0.1.",
            ModelConfig(kind="bbb", prior=MIXTURE_PRIOR),
            TrainConfig(epochs=30, impl="vmap", lr_decay=0.95, beta=0.1),
        ),
        CheckpointSpec(
            "bbb_lrt",
            "BBB (local reparameterisation)",
            "Bayes by Backprop, prior N(0, 1), KL weight β = 0.1, local reparameterisation.",
            ModelConfig(kind="bbb", prior=GAUSSIAN_PRIOR, lrt=True),
            TrainConfig(epochs=30, impl="vmap_lrt", lr_decay=0.95, beta=0.1),
        ),
        CheckpointSpec(
            "mlp",
            "MLP",
            "Plain 784-400-400-10 ReLU network, point estimate.",
            ModelConfig(kind="mlp"),
            TrainConfig(epochs=15, impl="vmap", lr_decay=0.9),
        ),
        CheckpointSpec(
            "dropout_mlp",
            "MC dropout MLP",
            "784-400-400-10 ReLU network, dropout 0.5 kept on at prediction (MC dropout).",
            ModelConfig(kind="dropout", dropout=0.5),
            TrainConfig(epochs=30, impl="vmap", lr_decay=0.93),
        ),
    ]
}


@dataclass(frozen=True)
class CheckpointInfo:
    """A registered checkpoint and whether its files are present and readable."""

    spec: CheckpointSpec
    path: Path
    available: bool
    reason: str
    metadata: dict


def checkpoint_path(name: str, directory: Path | None = None) -> Path:
    return (directory or CHECKPOINT_DIR) / f"{name}.pt"


def save_checkpoint(name: str, model: Model, metadata: dict, directory: Path | None = None) -> Path:
    """Atomically write ``NAME.pt`` and ``NAME.json``; returns the ``.pt`` path."""
    path = checkpoint_path(name, directory)
    config = model.config.to_dict()
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    payload = {"format": FORMAT_VERSION, "model_config": config, "state_dict": state}
    atomic_write(path, lambda f: torch.save(payload, f))
    meta = {"name": name, "model_config": config, **metadata}
    text = json.dumps(meta, indent=2, sort_keys=True).encode()
    atomic_write(path.with_suffix(".json"), lambda f: f.write(text))
    return path


def read_metadata(path: Path) -> dict:
    """The JSON beside a ``.pt`` checkpoint ({} when absent or unreadable)."""
    try:
        return json.loads(path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return {}


def load_checkpoint(
    name_or_path: str | Path, device: torch.device | str = "cpu"
) -> tuple[Model, dict]:
    """Build the model stored in a checkpoint (by registry name or path) and its metadata.

    Raises :class:`CheckpointError` naming the file when it is missing, corrupt, truncated,
    or its tensors do not fit its configuration."""
    path = Path(name_or_path)
    if path.suffix != ".pt":
        path = checkpoint_path(str(name_or_path))
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} not found (train it: python -m core train)")
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt or truncated archives
        raise CheckpointError(f"checkpoint file {path} is corrupt or truncated: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint file {path} is not a format-{FORMAT_VERSION} checkpoint")
    try:
        model = build_model(ModelConfig.from_dict(payload["model_config"]))
        model.load_state_dict(payload["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"checkpoint file {path} does not match its model configuration: {exc}"
        ) from exc
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, read_metadata(path)


def list_checkpoints(directory: Path | None = None) -> list[CheckpointInfo]:
    """Every registered checkpoint, with whether its weights file is present."""
    infos = []
    for spec in REGISTRY.values():
        path = checkpoint_path(spec.name, directory)
        ok = path.is_file()
        reason = (
            "" if ok else f"{path.name} not found; train it with python -m core train {spec.name}"
        )
        infos.append(CheckpointInfo(spec, path, ok, reason, read_metadata(path) if ok else {}))
    return infos
