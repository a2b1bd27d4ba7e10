"""Who may act on a training job or a user-trained model.

A :class:`Visitor` is one browser session of the app (its ``id``, a token of the browser, and
its network ``address``) or the command line (no id, the teacher's rights). A job and the model
it makes belong to the visitor who asked: only they, or a visitor who entered the teacher key
(:mod:`core.roles`; every server has one), cancel, rename or delete them (a model saved before
owners were recorded, or by the command line, is the teacher's). A laptop's one user owns what
their browser asked for. The limits on what a visitor may ask of the training queue are in
:mod:`core.jobs.limits`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.paths import user_model_dir
from core.storage.checkpoints import checkpoint_path, read_metadata
from core.storage.user_models import delete_user_checkpoint, rename_user_checkpoint


@dataclass(frozen=True)
class Visitor:
    """One browser session (or the command line) acting on jobs and models.

    Attributes:
        id: The session's token ("" for the command line).
        teacher: Whether it entered the teacher key.
        address: The network address it connects from
            (:func:`~core.jobs.limits.client_address`; "" when unknown or loopback).
    """

    id: str = ""
    teacher: bool = False
    address: str = ""

    def may_act_on(self, owner: str) -> bool:
        """Whether this visitor may cancel, rename or delete what ``owner`` asked for.

        Args:
            owner: The owner recorded with the job or model ("" when none was recorded).
        """
        return self.teacher or (bool(owner) and owner == self.id)


def model_owner(name: str, directory: Path | None = None) -> str:
    """The owner recorded with a user-trained model ("" when none).

    Args:
        name: The model's file stem.
        directory: The user-model folder; None for the current one.
    """
    path = checkpoint_path(name, directory or user_model_dir())
    return str(read_metadata(path).get("owner", "")) if path.exists() else ""


def _check(visitor: Visitor, name: str, directory: Path | None, verb: str) -> None:
    if not visitor.may_act_on(model_owner(name, directory)):
        raise PermissionError(
            f"{name} was trained by another student: only they or the teacher can {verb} it"
        )


def rename_model(visitor: Visitor, old: str, new: str, directory: Path | None = None) -> Path:
    """Rename a user-trained model the visitor may act on.

    Args:
        visitor: Who asks.
        old: The model's name.
        new: Its new name.
        directory: The user-model folder; None for the current one.

    Returns:
        The new ``.pt`` path.

    Raises:
        PermissionError: If the model is another visitor's.
        ValueError: If the new name is invalid or taken.
        CheckpointError: If the model does not exist.
    """
    _check(visitor, old, directory, "rename")
    return rename_user_checkpoint(old, new, directory)


def delete_model(visitor: Visitor, name: str, directory: Path | None = None) -> None:
    """Delete a user-trained model the visitor may act on.

    Args:
        visitor: Who asks.
        name: The model's name.
        directory: The user-model folder; None for the current one.

    Raises:
        PermissionError: If the model is another visitor's.
        CheckpointError: If the model does not exist.
    """
    _check(visitor, name, directory, "delete")
    delete_user_checkpoint(name, directory)
