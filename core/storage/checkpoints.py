"""Checkpoint registry: named model configurations and their trained weights.

Shipped checkpoints live in ``checkpoints/`` (tracked by git); models trained by users
(``python -m core train``, later the Train page) go to the writable data folder's
:func:`~core.storage.paths.user_model_dir`, so an interrupted run never touches a shipped file.
Replacing a shipped file is a separate step, :func:`promote`, after training finished.

Each checkpoint ``NAME`` is two files written atomically (temp file in the same folder, fsync,
``os.replace``), so a crash never leaves a half-written model:

* ``NAME.pt``: ``{"format": 1, "model_config": dict, "state_dict": tensors}``, loaded with
  ``torch.load(weights_only=True)``;
* ``NAME.json``: metadata (model and training config, epochs, test error, NLL, training time,
  device, library versions, date) for humans and for listings without loading weights.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from core.engine.models import Model, ModelConfig, build_model
from core.engine.train import TrainConfig
from core.storage.atomic import atomic_write, remove_stale_temporaries
from core.storage.paths import CHECKPOINT_DIR, user_model_dir

FORMAT_VERSION = 1
GAUSSIAN_PRIOR = {"kind": "gaussian", "sigma": 1.0}
MIXTURE_PRIOR = {"kind": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": 0.0024787521766663585}


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, truncated or does not match its configuration; the
    message names the file, what is wrong and what to do, in one line."""


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
    """A registered checkpoint and whether its weights file is present and loads.

    ``reason`` says what is wrong and what to do when it is not available."""

    spec: CheckpointSpec
    path: Path
    available: bool
    reason: str
    metadata: dict


def checkpoint_path(name: str, directory: Path | None = None) -> Path:
    """``directory/NAME.pt`` (default: the shipped ``checkpoints/`` folder)."""
    return (directory or CHECKPOINT_DIR) / f"{name}.pt"


def resolve_checkpoint(checkpoint: str | Path) -> Path:
    """The ``.pt`` file of a registry name (in ``checkpoints/``) or the path itself."""
    path = Path(checkpoint)
    return path if path.suffix == ".pt" else checkpoint_path(str(checkpoint))


@lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int, inode: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def content_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, memoised per (path, size, modification time, inode): an atomic
    rewrite is a new inode, even within one tick of the file-system clock."""
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _restore_hint(path: Path) -> str:
    name = path.stem
    if path.parent.resolve() == CHECKPOINT_DIR.resolve() and name in REGISTRY:
        return (
            f"restore it with `git checkout checkpoints/{name}.pt checkpoints/{name}.json` "
            f"or re-train it with `python -m core train {name}`"
        )
    return "re-train it or delete it"


def _one_line(exc: Exception, limit: int = 160) -> str:
    """An exception's message folded onto one line and shortened for a one-line report."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _not_found(path: Path) -> str:
    return f"{path}: checkpoint file not found; train it with `python -m core train {path.stem}`"


def _copy(source: Path, target: Path) -> None:
    with source.open("rb") as src:
        atomic_write(target, lambda f: shutil.copyfileobj(src, f))


def save_checkpoint(name: str, model: Model, metadata: dict, directory: Path | None = None) -> Path:
    """Atomically write ``NAME.pt`` and ``NAME.json`` in ``directory`` (default: the shipped
    folder; training passes :func:`~core.storage.paths.user_model_dir`); returns the ``.pt``."""
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
    """The JSON beside a ``.pt`` checkpoint ({} when absent). Raises :class:`CheckpointError`
    when it exists but is not a JSON object."""
    file = path.with_suffix(".json")
    try:
        meta = json.loads(file.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CheckpointError(
            f"{file}: the metadata is not valid JSON ({exc}); {_restore_hint(path)}"
        ) from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{file}: the metadata is not a JSON object; {_restore_hint(path)}")
    return meta


def load_checkpoint(
    name_or_path: str | Path, device: torch.device | str = "cpu"
) -> tuple[Model, dict]:
    """Build the model stored in a checkpoint (by registry name or path) and its metadata.

    The model is in eval mode with gradients off. Raises :class:`CheckpointError` (one line:
    the file, what is wrong, what to do) when it is missing, corrupt, truncated, its tensors do
    not fit its configuration, or its metadata is malformed."""
    path = resolve_checkpoint(name_or_path)
    if not path.is_file():
        raise CheckpointError(_not_found(path))
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt or truncated archives
        reason = _one_line(exc)
        raise CheckpointError(
            f"{path}: the file is corrupt or truncated ({reason}); {_restore_hint(path)}"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: not a format-{FORMAT_VERSION} checkpoint; {_restore_hint(path)}"
        )
    try:
        model = build_model(ModelConfig.from_dict(payload["model_config"]))
        model.load_state_dict(payload["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        reason = _one_line(exc)
        raise CheckpointError(
            f"{path}: the weights do not match the model configuration ({reason}); "
            f"{_restore_hint(path)}"
        ) from exc
    model.to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, read_metadata(path)


@lru_cache(maxsize=256)
def _health(path: str, size: int, mtime_ns: int, json_mtime_ns: int) -> str:
    """ "" when the checkpoint at ``path`` loads, else the one-line reason (memoised per file
    version, so listing is cheap after the first time)."""
    try:
        load_checkpoint(Path(path))
    except CheckpointError as exc:
        return str(exc)
    return ""


def checkpoint_problem(path: Path) -> str:
    """ "" when the checkpoint file at ``path`` loads; otherwise what is wrong and what to do."""
    try:
        stat = path.stat()
    except OSError:
        return _not_found(path)
    json_file = path.with_suffix(".json")
    json_mtime = json_file.stat().st_mtime_ns if json_file.is_file() else 0
    return _health(str(path), stat.st_size, stat.st_mtime_ns, json_mtime)


def list_checkpoints(directory: Path | None = None) -> list[CheckpointInfo]:
    """Every registered checkpoint, with whether its weights file is present and loads (each
    file is loaded once per version to check it)."""
    infos = []
    folder = directory or CHECKPOINT_DIR
    remove_stale_temporaries(folder)
    for spec in REGISTRY.values():
        path = checkpoint_path(spec.name, directory)
        problem = checkpoint_problem(path)
        metadata = {} if problem else read_metadata(path)
        infos.append(CheckpointInfo(spec, path, not problem, problem, metadata))
    return infos


def promote(name: str, source_dir: Path | None = None) -> Path:
    """Replace the shipped ``checkpoints/NAME.pt`` (and ``.json``) with the user-trained one in
    ``source_dir`` (default :func:`~core.storage.paths.user_model_dir`), after checking that
    it loads. Each file is copied atomically, so the previous shipped file stays in place until
    the new one is complete. Returns the shipped path."""
    if name not in REGISTRY:
        raise CheckpointError(f"{name}: not a registered checkpoint ({', '.join(REGISTRY)})")
    source = checkpoint_path(name, source_dir or user_model_dir())
    load_checkpoint(source)  # raises a one-line CheckpointError if it does not load
    target = checkpoint_path(name)
    _copy(source, target)
    if source.with_suffix(".json").is_file():
        _copy(source.with_suffix(".json"), target.with_suffix(".json"))
    return target
