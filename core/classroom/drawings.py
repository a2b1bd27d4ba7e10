"""A class drawing and its checks: class code, the digit meant, the 784 stored bytes, tensors."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import torch

CLASS_CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")
SIDE = 28
PIXELS = SIDE * SIDE
NUM_CLASSES = 10
EMPTY_INK = 0.05
"""A drawing whose brightest pixel is below this (in [0, 1]) is empty (as
:data:`core.data.preprocess.BLANK`)."""


@dataclass(frozen=True)
class Drawing:
    """One stored drawing.

    Attributes:
        id: The row's id (increasing with submission order, never reused).
        class_code: The class it belongs to.
        label: The digit the student meant, 0–9.
        pixels: The 28×28 image as 784 uint8 bytes, row-major, 255 = full ink.
        created: When it was stored (UTC, timezone-aware).
    """

    id: int
    class_code: str
    label: int
    pixels: bytes
    created: datetime

    def image(self) -> np.ndarray:
        """Give the drawing as an array.

        Returns:
            uint8 ``(28, 28)``.
        """
        return np.frombuffer(self.pixels, np.uint8).reshape(SIDE, SIDE)


class ClassDrawings(NamedTuple):
    """A class's drawings as tensors, oldest first (unpacks as ``images, labels, ids, times``).

    Attributes:
        images: float32 ``(N, 1, 28, 28)`` in [0, 1], the inputs the models saw (to 1/255).
        labels: int64 ``(N,)``, the digits the students meant.
        ids: The rows' ids, ``N`` ints.
        times: When each was stored, ``N`` UTC datetimes.
    """

    images: torch.Tensor
    labels: torch.Tensor
    ids: list[int]
    times: list[datetime]


def check_class_code(code: str | None) -> str:
    """Validate a class code.

    There is no default class: a code nobody chose would be every teacher's, and guessable.

    Args:
        code: The code, e.g. from the link's ``?class=``.

    Returns:
        The code, surrounding spaces removed.

    Raises:
        ValueError: If it is missing, or not 1–32 letters, digits, ``_`` or ``-``.
    """
    code = (code or "").strip()
    if not code:
        raise ValueError("no class code: use the code your teacher gave")
    if not CLASS_CODE_PATTERN.fullmatch(code):
        raise ValueError(
            f"bad class code: use 1 to 32 letters, digits, '_' or '-' (got {len(code)} characters)"
        )
    return code


CODE_WORDS = (
    ("amber", "brave", "calm", "clever", "coral", "eager", "gentle", "golden", "happy", "jolly")
    + ("lively", "lucky", "merry", "quick", "quiet", "silver", "sunny", "swift", "witty"),
    ("badger", "beaver", "falcon", "gecko", "heron", "koala", "lynx", "marten", "otter", "panda")
    + ("puffin", "raven", "robin", "salmon", "tiger", "walrus", "wombat", "zebra", "finch"),
)
"""Words of :func:`new_class_code`: an adjective, then an animal."""


def new_class_code() -> str:
    """Propose a fresh class code that is easy to read out and type.

    Returns:
        ``adjective-animal-NN``, e.g. ``"swift-otter-42"`` (one of 36,100).
    """
    adjective, animal = (secrets.choice(words) for words in CODE_WORDS)
    return f"{adjective}-{animal}-{secrets.randbelow(100):02d}"


def checked_label(label: Any) -> int:
    """The digit a student meant, checked: a whole number 0-9 (not a bool)."""
    if isinstance(label, bool) or not isinstance(label, int | np.integer):
        raise ValueError(f"label must be a whole number 0-9, got {label!r}")
    if not 0 <= int(label) < NUM_CLASSES:
        raise ValueError(f"label out of range: {int(label)} is not a digit 0-9")
    return int(label)


def checked_submission_id(submission_id: Any) -> str:
    """A client's submission id, checked and normalised as a UUID."""
    try:
        return str(uuid.UUID(str(submission_id)))
    except ValueError:
        raise ValueError(f"bad submission id: {str(submission_id)[:40]!r} is not a UUID") from None


def to_pixels(image: torch.Tensor | np.ndarray) -> bytes:
    """Quantise a 28×28 input to the stored 784 bytes.

    Args:
        image: float ``(28, 28)`` or ``(1, 28, 28)`` in [0, 1], white ink on black (the
            preprocessed input the models saw).

    Returns:
        784 uint8 bytes, row-major, ``round(255 · value)``.

    Raises:
        ValueError: On a wrong shape, values outside [0, 1] (or NaN), or an empty drawing
            (brightest pixel below :data:`EMPTY_INK`).
    """
    x = torch.as_tensor(image).detach().cpu()
    if tuple(x.shape) not in ((SIDE, SIDE), (1, SIDE, SIDE)):
        raise ValueError(f"wrong shape: expected (28, 28) or (1, 28, 28), got {tuple(x.shape)}")
    x = x.double().reshape(SIDE, SIDE)
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise ValueError("pixel values must lie in [0, 1]")
    if float(x.max()) < EMPTY_INK:
        raise ValueError("empty drawing: there is no ink to send")
    return (x * 255).round().to(torch.uint8).numpy().tobytes()


def as_tensors(records: Sequence[Drawing]) -> ClassDrawings:
    """Turn drawing records into tensors.

    Args:
        records: The drawings, in the order wanted.

    Returns:
        ``(images (N, 1, 28, 28) float32 in [0, 1], labels (N,) int64, ids, times)``.
    """
    if records:
        raw = np.frombuffer(b"".join(r.pixels for r in records), np.uint8)
        images = torch.from_numpy(raw.reshape(-1, 1, SIDE, SIDE).astype(np.float32) / 255.0)
    else:
        images = torch.zeros(0, 1, SIDE, SIDE)
    labels = torch.tensor([r.label for r in records], dtype=torch.long)
    return ClassDrawings(images, labels, [r.id for r in records], [r.created for r in records])
