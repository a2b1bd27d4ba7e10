"""Models trained by users: their checkpoints listed, titled, named, renamed and deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.atomic import atomic_write, remove_stale_temporaries
from core.methods import ModelConfig
from core.paths import user_model_dir
from core.storage.checkpoints import (
    NAME_PATTERN,
    USER_PREFIX,
    CheckpointError,
    CheckpointInfo,
    CheckpointSpec,
    cached_metadata,
    checkpoint_dataset,
    checkpoint_path,
    checkpoint_problem,
    read_metadata,
    resolve_checkpoint,
    task_title,
    user_key,
)
from core.storage.metadata import partial_note
from core.training import TrainConfig


def _user_title(stem: str, dataset: str, partial: str) -> str:
    """``NAME (user-trained)``, plus the task when it is not MNIST and the partial note."""
    notes = ["user-trained"]
    notes += [task_title(dataset)] if dataset != "mnist" else []
    notes += [partial] if partial else []
    return f"{stem} ({', '.join(notes)})"


def user_title(checkpoint: str | Path) -> str:
    """The title of a user-trained model, as listings and pickers show it.

    Args:
        checkpoint: ``user:NAME`` or a ``.pt`` path in the user-model folder.

    Returns:
        ``NAME (user-trained)``, plus its task when it is not MNIST and
        ``partial: D of N epochs`` when its training did not finish (:func:`partial_note`).
    """
    path = resolve_checkpoint(checkpoint)
    partial = partial_note(cached_metadata(path))
    return _user_title(path.stem, checkpoint_dataset(checkpoint), partial)


def validate_model_name(name: str) -> str:
    """Check a user model's name.

    Args:
        name: The proposed name (surrounding spaces are dropped).

    Returns:
        The name, stripped.

    Raises:
        ValueError: If it is empty, too long, or has characters other than letters, digits,
            ``_`` and ``-`` (or does not start with a letter or digit).
    """
    name = name.strip()
    if not NAME_PATTERN.match(name):
        raise ValueError(
            f"{name!r} is not a valid model name: use 1 to 64 letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _user_spec(stem: str, meta: dict) -> CheckpointSpec:
    """The spec of a user-trained model, read from its metadata (defaults where absent)."""
    try:
        model = ModelConfig.from_dict(meta["model_config"])
    except (KeyError, TypeError, ValueError):
        model = ModelConfig()
    try:
        training = TrainConfig(**meta["training"])
    except (KeyError, TypeError, ValueError):
        training = TrainConfig()
    dataset = meta.get("dataset") or "mnist"
    description = meta.get("description") or meta.get("title") or ""
    return CheckpointSpec(
        user_key(stem),
        _user_title(stem, str(dataset), partial_note(meta)),
        str(description),
        model,
        training,
        dataset=str(dataset),
    )


def list_user_checkpoints(directory: Path | None = None) -> list[CheckpointInfo]:
    """Every model in the user-model folder, with whether it loads.

    Their specs are read from the metadata: the name is ``user:NAME``, the title
    ``NAME (user-trained)`` (plus the task when it is not MNIST, and ``partial: D of N epochs``
    when its training did not finish). Stale temporary files are removed first, so a run
    killed mid-save leaves nothing listed.

    Args:
        directory: The folder; None for :func:`~core.paths.user_model_dir`.

    Returns:
        One entry per ``.pt`` file, by name.
    """
    folder = directory or user_model_dir()
    remove_stale_temporaries(folder)
    infos = []
    for path in sorted(folder.glob("*.pt")):
        problem = checkpoint_problem(path)
        try:
            meta = read_metadata(path)
        except CheckpointError:
            meta = {}
        spec = _user_spec(path.stem, meta)
        infos.append(CheckpointInfo(spec, path, not problem, problem, {} if problem else meta))
    return infos


def rename_user_checkpoint(old: str, new: str, directory: Path | None = None) -> Path:
    """Rename a user-trained model (its ``.pt`` and ``.json``).

    The new metadata is written first (atomically), then the weights file is renamed in one
    step, then the old metadata removed: an interruption leaves at most a stray ``.json``.

    Args:
        old: The current name (file stem, or ``user:NAME``).
        new: The new name (see :func:`validate_model_name`).
        directory: The folder; None for :func:`~core.paths.user_model_dir`.

    Returns:
        The new ``.pt`` path.

    Raises:
        ValueError: If ``new`` is not a valid name.
        CheckpointError: If ``old`` does not exist or ``new`` does.
    """
    folder = directory or user_model_dir()
    old = old.removeprefix(USER_PREFIX)
    new = validate_model_name(new.removeprefix(USER_PREFIX))
    source, target = checkpoint_path(old, folder), checkpoint_path(new, folder)
    if not source.is_file():
        raise CheckpointError(f"{source}: no such user-trained model")
    if target.exists():
        raise CheckpointError(f"{target}: a model named {new!r} exists already")
    meta = read_metadata(source) | {"name": new}
    text = json.dumps(meta, indent=2, sort_keys=True).encode()
    atomic_write(target.with_suffix(".json"), lambda f: f.write(text))
    os.replace(source, target)
    source.with_suffix(".json").unlink(missing_ok=True)
    return target


def delete_user_checkpoint(name: str, directory: Path | None = None) -> None:
    """Delete a user-trained model (its ``.pt`` and ``.json``).

    Args:
        name: Its name (file stem, or ``user:NAME``).
        directory: The folder; None for :func:`~core.paths.user_model_dir`.

    Raises:
        CheckpointError: If there is no such model.
    """
    path = checkpoint_path(name.removeprefix(USER_PREFIX), directory or user_model_dir())
    if not path.is_file():
        raise CheckpointError(f"{path}: no such user-trained model")
    path.unlink()
    path.with_suffix(".json").unlink(missing_ok=True)
