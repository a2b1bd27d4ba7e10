"""Who may act on a training job or a user-trained model, and how much one visitor may ask.

A :class:`Visitor` is one browser session of the app (its ``id``, a token of the browser) or
the command line (no id, the teacher's rights). A job and the model it makes belong to the
visitor who asked: only they, or a visitor who entered the teacher key (:mod:`core.roles`; every
server has one), cancel, rename or delete them (a model saved before owners were recorded, or
by the command line, is the teacher's). A laptop's one user owns what their browser asked for.

**Limits**, everywhere: a visitor has at most ``BNN_JOBS_PER_VISITOR`` jobs queued or running,
and one job trains at most ``BNN_JOB_IMAGES`` images in all (epochs × training images), so
that one session cannot fill the class's queue for hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core import settings
from core.storage.checkpoints import (
    checkpoint_path,
    delete_user_checkpoint,
    read_metadata,
    rename_user_checkpoint,
)
from core.storage.paths import user_model_dir

JOBS_ENV = "BNN_JOBS_PER_VISITOR"
IMAGES_ENV = "BNN_JOB_IMAGES"
DEFAULT_JOBS = 3
DEFAULT_IMAGES = 6_000_000  # 100 epochs of the 60,000 training images
TRAIN_IMAGES = 60_000  # a request for "all" training images


@dataclass(frozen=True)
class Visitor:
    """One browser session (or the command line) acting on jobs and models.

    Attributes:
        id: The session's token ("" for the command line).
        teacher: Whether it entered the teacher key.
    """

    id: str = ""
    teacher: bool = False

    def may_act_on(self, owner: str) -> bool:
        """Whether this visitor may cancel, rename or delete what ``owner`` asked for.

        Args:
            owner: The owner recorded with the job or model ("" when none was recorded).
        """
        return self.teacher or (bool(owner) and owner == self.id)


def check_request(n_train: int | None, epochs: int, active_jobs: int) -> None:
    """Refuse a job over the limits, in one line.

    Args:
        n_train: Training images of the request (None: all 60,000).
        epochs: Its epochs.
        active_jobs: The visitor's jobs queued or running now.

    Raises:
        ValueError: If the visitor has the most jobs allowed, or the job is too large.
    """
    most = settings.positive_int(JOBS_ENV, DEFAULT_JOBS)
    if active_jobs >= most:
        raise ValueError(
            f"you have {active_jobs} jobs queued or running, the most one student may have; "
            "wait for one to finish or cancel one"
        )
    images = epochs * (n_train or TRAIN_IMAGES)
    cap = settings.positive_int(IMAGES_ENV, DEFAULT_IMAGES)
    if images > cap:
        raise ValueError(
            f"this job would train on {images:,} images in all (epochs × training images); "
            f"one job may train on at most {cap:,}: use fewer epochs or images"
        )


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
