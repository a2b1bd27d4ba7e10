"""The checkpoint file format: named models' weights and metadata, saved and loaded safely.

Shipped checkpoints live in ``checkpoints/`` (tracked by git; what each name means is the
catalogue, :mod:`core.catalogue`); models trained by users (``python -m core train``, the
Train page) go to the writable data folder's :func:`~core.paths.user_model_dir`, so an
interrupted run never touches a shipped file. Replacing a shipped file is a separate step,
:func:`core.catalogue.promote`, after training finished.

Models are named by their registry name (a shipped file, ``checkpoints/NAME.pt``) or by
``user:NAME`` (:func:`user_key`, the file ``<user-model folder>/NAME.pt``); every function that
takes a checkpoint (:func:`resolve_checkpoint`, :func:`load_checkpoint`, the disk cache, the
studies) accepts both, and a ``.pt`` path. :mod:`core.storage.user_models` lists, renames and
deletes the user folder's models. Each
model's task (the dataset it was trained on, e.g. ``"fashion_mnist"``) is in its metadata and
read by :func:`checkpoint_dataset`.

Each checkpoint ``NAME`` is two files written atomically (temp file in the same folder, fsync,
``os.replace``), so a crash never leaves a half-written model:

* ``NAME.pt``: ``{"format": 1, "model_config": dict, "state_dict": tensors}``, loaded with
  ``torch.load(weights_only=True)``;
* ``NAME.json``: metadata (model and training config, epochs, test error, NLL, training time,
  device, library versions, date) for humans and for listings without loading weights.

A model saved while it trains (``python -m core train NAME`` saves after every epoch, so it can
resume) is marked ``"complete": false`` with ``"epochs_planned"``; only the save after the last
epoch marks it ``"complete": true``. :func:`~core.storage.metadata.partial_note` tells a partial
model, listings and titles show it, and :func:`core.catalogue.promote` refuses it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from core.atomic import atomic_write
from core.methods import Model, ModelConfig, build_model, check_config
from core.paths import CHECKPOINT_DIR, user_model_dir
from core.storage.metadata import migrate
from core.training import TrainConfig

FORMAT_VERSION = 1
USER_PREFIX = "user:"
"""Prefix of the names of user-trained models: ``user:NAME`` is ``<user folder>/NAME.pt``."""
TASK_DATASETS = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST"}
"""Datasets a model can be trained on (with a train split) → their titles."""
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
"""A user model's name: letters, digits, ``_`` and ``-`` (safe as a file name and in titles)."""


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, truncated or does not match its configuration.

    The message names the file, what is wrong and what to do, in one line.
    """


@dataclass(frozen=True)
class CheckpointSpec:
    """What a registered name means: a title, a description and how it is trained.

    Attributes:
        name: The registry name, also the file stem ``NAME.pt``.
        title: Short human-readable name.
        description: One or two sentences on the method and its settings.
        model: The architecture.
        training: The optimisation settings; ``training.epochs = 0`` means no training
            steps, only the end of the method's procedure (e.g. Laplace's post-hoc fit).
        base: The registered checkpoint whose weights it starts from (a post-hoc method such
            as Laplace fits on top of a trained network), or None.
        dataset: The task it is trained and evaluated on, a key of
            :data:`TASK_DATASETS` (``"mnist"`` or ``"fashion_mnist"``).
        train_subset: Training images it learns from, the first ones of the task's seeded
            order (``load_dataset(..., n_inputs=train_subset)``); None for all of them.
    """

    name: str
    title: str
    description: str
    model: ModelConfig
    training: TrainConfig = field(default_factory=TrainConfig)
    base: str | None = None
    dataset: str = "mnist"
    train_subset: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", check_config(self.model))


@dataclass(frozen=True)
class CheckpointInfo:
    """A registered checkpoint and whether its weights file is present and loads.

    Attributes:
        spec: What the registered name means.
        path: The ``.pt`` file.
        available: Whether the file is present and loads.
        reason: What is wrong and what to do when it is not available ("" when it is).
        metadata: The JSON metadata ({} when not available or absent).
    """

    spec: CheckpointSpec
    path: Path
    available: bool
    reason: str
    metadata: dict


def checkpoint_path(name: str, directory: Path | None = None) -> Path:
    """The ``.pt`` file of a checkpoint name, ``directory/NAME.pt``.

    Args:
        name: The checkpoint name (file stem).
        directory: The folder; None for the shipped ``checkpoints/`` folder.

    Returns:
        The path (which may not exist).
    """
    return (directory or CHECKPOINT_DIR) / f"{name}.pt"


def user_key(name: str) -> str:
    """The name under which pages and studies address a user-trained model.

    Args:
        name: The file stem in the user-model folder.

    Returns:
        ``user:NAME``.
    """
    return USER_PREFIX + name


def is_user_key(name: str | Path) -> bool:
    """Tell whether a checkpoint name addresses a user-trained model (``user:NAME``).

    Args:
        name: A checkpoint name or path.

    Returns:
        True for ``user:NAME``.
    """
    return isinstance(name, str) and name.startswith(USER_PREFIX)


def resolve_checkpoint(checkpoint: str | Path) -> Path:
    """The ``.pt`` file of a registry name (in ``checkpoints/``), a user key or a path.

    Args:
        checkpoint: A registry name, ``user:NAME`` (in
            :func:`~core.paths.user_model_dir`), or a path ending in ``.pt``.

    Returns:
        The path (which may not exist).
    """
    if is_user_key(checkpoint):
        return checkpoint_path(str(checkpoint)[len(USER_PREFIX) :], user_model_dir())
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
    """SHA-256 of a file's bytes, memoised per (path, size, modification time, inode).

    The inode is part of the key because an atomic rewrite is a new inode, even within one tick
    of the file-system clock.

    Args:
        path: The file.

    Returns:
        The hex digest.
    """
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def is_shipped(checkpoint: str | Path) -> bool:
    """Tell whether a checkpoint is one the lab ships (in ``checkpoints/``).

    Args:
        checkpoint: A registry name, ``user:NAME`` or a ``.pt`` path.

    Returns:
        True when its file lies in the shipped folder; False for a user-trained model or a file
        elsewhere.
    """
    return resolve_checkpoint(checkpoint).parent.resolve() == CHECKPOINT_DIR.resolve()


def _restore_hint(path: Path) -> str:
    name = path.stem
    if is_shipped(path):
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


def copy_atomically(source: Path, target: Path) -> None:
    """Copy a file so that ``target`` is either the old file or the whole new one."""
    with source.open("rb") as src:
        atomic_write(target, lambda f: shutil.copyfileobj(src, f))


def save_checkpoint(
    name: str,
    model: Model,
    metadata: dict,
    directory: Path | None = None,
    *,
    complete: bool = True,
) -> Path:
    """Atomically write ``NAME.pt`` and ``NAME.json`` in ``directory``.

    The metadata records ``"complete"``. A partial model's metadata is written before its
    weights and a finished model's after them, so a save interrupted between the two files
    never makes a partial model look finished.

    Args:
        name: The checkpoint name (file stem).
        model: The model; its configuration and state dict (on the CPU) are saved.
        metadata: Extra JSON fields for ``NAME.json`` (besides the name and model config).
        directory: The folder; None for the shipped folder (training passes
            :func:`~core.paths.user_model_dir`).
        complete: Whether training finished; False for a save in the middle of training
            (the caller adds ``"epochs_planned"`` to ``metadata``).

    Returns:
        The ``.pt`` path.
    """
    path = checkpoint_path(name, directory)
    config = model.config.to_dict()
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    payload = {"format": FORMAT_VERSION, "model_config": config, "state_dict": state}
    meta = {"name": name, "model_config": config, **metadata, "complete": complete}
    text = json.dumps(meta, indent=2, sort_keys=True).encode()
    writes = [
        lambda: atomic_write(path, lambda f: torch.save(payload, f)),
        lambda: atomic_write(path.with_suffix(".json"), lambda f: f.write(text)),
    ]
    for write in writes if complete else reversed(writes):
        write()
    return path


def read_metadata(path: Path) -> dict:
    """The JSON metadata beside a ``.pt`` checkpoint, its configurations in today's form.

    Args:
        path: The ``.pt`` file.

    Returns:
        The metadata (its ``model_config`` and ``training`` through :func:`migrate`), or {}
        when the JSON file is absent.

    Raises:
        CheckpointError: If the JSON file exists but is not a JSON object, or its model is no
            lab model.
    """
    return _migrated(path, _stored_json(path))


def _stored_json(path: Path) -> dict:
    """The JSON metadata beside a ``.pt`` checkpoint as it was written ({} when absent).

    Raises:
        CheckpointError: If the JSON file exists but is not a JSON object.
    """
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


def _migrated(path: Path, stored: dict) -> dict:
    """Stored metadata with its configurations through :func:`migrate`."""
    if not isinstance(stored.get("model_config"), dict):
        return stored
    try:
        model, training = migrate(stored["model_config"], stored.get("training"))
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{path.with_suffix('.json')}: the model configuration is not a lab model's "
            f"({_one_line(exc)}); {_restore_hint(path)}"
        ) from exc
    return stored | {"model_config": model, "training": training}


def load_checkpoint(
    name_or_path: str | Path, device: torch.device | str = "cpu"
) -> tuple[Model, dict]:
    """Build the model stored in a checkpoint and read its metadata.

    Args:
        name_or_path: A registry name (in ``checkpoints/``) or a ``.pt`` path.
        device: Where to put the model.

    Returns:
        ``(model, metadata)``: the model in eval mode with gradients off, and the JSON metadata
        ({} when absent).

    Raises:
        CheckpointError: One line (the file, what is wrong, what to do) if the file is missing,
            corrupt or truncated, its tensors do not fit its configuration, or its metadata is
            malformed.
    """
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
    stored_meta = _stored_json(path)
    meta = _migrated(path, stored_meta)
    try:
        stored, _ = migrate(payload["model_config"], stored_meta.get("training"))
        model = build_model(ModelConfig.from_dict(stored))
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
    return model, meta


def shared_model(name_or_path: str | Path, device: torch.device | str = "cpu") -> Model:
    """The checkpoint's model, loaded once per process and file version.

    For callers that only read the model (predictions, attacks, pruned copies): every caller
    gets the same object, so never modify it; :func:`load_checkpoint` gives a fresh one.

    Args:
        name_or_path: A registry name (in ``checkpoints/``) or a ``.pt`` path.
        device: Where to put the model.

    Returns:
        The model in eval mode with gradients off.

    Raises:
        CheckpointError: As :func:`load_checkpoint`.
    """
    path = resolve_checkpoint(name_or_path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise CheckpointError(_not_found(path)) from exc
    return _shared_model(str(path), stat.st_size, stat.st_mtime_ns, str(device))


@lru_cache(maxsize=32)
def _shared_model(path: str, size: int, mtime_ns: int, device: str) -> Model:
    return load_checkpoint(path, device)[0]


@lru_cache(maxsize=256)
def _health(path: str, size: int, mtime_ns: int, json_mtime_ns: int) -> str:
    """The one-line reason why the checkpoint at ``path`` does not load ("" if it loads).

    Memoised per file version, so listing is cheap after the first time.
    """
    try:
        load_checkpoint(Path(path))
    except CheckpointError as exc:
        return str(exc)
    return ""


def checkpoint_problem(path: Path) -> str:
    """What is wrong with a checkpoint file and what to do, in one line.

    Args:
        path: The ``.pt`` file.

    Returns:
        "" when the file loads; otherwise the reason.
    """
    try:
        stat = path.stat()
    except OSError:
        return _not_found(path)
    json_file = path.with_suffix(".json")
    json_mtime = json_file.stat().st_mtime_ns if json_file.is_file() else 0
    return _health(str(path), stat.st_size, stat.st_mtime_ns, json_mtime)


# --- a model's task ------------------------------------------------------------------------


def task_title(dataset: str) -> str:
    """The title of a task dataset.

    Args:
        dataset: A dataset name, e.g. ``"fashion_mnist"``.

    Returns:
        Its title from :data:`TASK_DATASETS`, or the name itself.
    """
    return TASK_DATASETS.get(dataset, dataset)


@lru_cache(maxsize=512)
def _stored_metadata(path: str, json_mtime_ns: int) -> dict:
    """The metadata of ``path`` ({} when it does not read), memoised per version; read only."""
    try:
        return read_metadata(Path(path))
    except CheckpointError:
        return {}


def cached_metadata(path: Path) -> dict:
    """The metadata beside ``path``, read once per version ({} when absent or malformed)."""
    try:
        json_mtime = path.with_suffix(".json").stat().st_mtime_ns
    except OSError:
        return {}
    return _stored_metadata(str(path), json_mtime)


def checkpoint_dataset(checkpoint: str | Path) -> str:
    """The dataset a model was trained on, the task it is evaluated on.

    Read from the checkpoint's metadata (``"dataset"``); models saved before datasets were
    recorded (the shipped MNIST models among them) are MNIST models.

    Args:
        checkpoint: A registry name, ``user:NAME`` or a ``.pt`` path.

    Returns:
        The dataset's name, e.g. ``"mnist"`` or ``"fashion_mnist"``.
    """
    path = resolve_checkpoint(checkpoint)
    stored = cached_metadata(path).get("dataset")
    if isinstance(stored, str) and stored:
        return stored
    return "mnist"
