"""Stated values of the Draw page for the guide's example drawings (``docs/img/examples/``).

A teacher can upload one of them on the Draw page and see these numbers: the page reads an
upload as :func:`drawing_input` does and seeds its Monte-Carlo passes, so the same image always
shows the same verdict.
"""

from __future__ import annotations

import torch

from core.data.preprocess import mnist_style
from core.data.upload import read_image
from core.engine.device import default_device
from core.engine.sampler import DEFAULT_SAMPLES
from core.evaluation.sweep import rotation_angles, rotation_sweep
from core.evaluation.uncertainty import seeded_summary, verdict
from core.paths import REPO_ROOT
from core.stated.registry import stated
from core.storage.checkpoints import shared_model
from core.studies.evaluations import rejection_thresholds

EXAMPLES = REPO_ROOT / "docs" / "img" / "examples"
"""The guide's example drawings: 280 × 280 PNGs drawn as the canvas draws (white on black)."""


def drawing_input(example: str) -> torch.Tensor:
    """An example drawing as the models see it.

    Args:
        example: The drawing's file stem, e.g. ``"zigzag"``.

    Returns:
        ``(28, 28)`` in [0, 1], centred and scaled like an MNIST digit.
    """
    image = mnist_style(read_image((EXAMPLES / f"{example}.png").read_bytes()))
    return torch.from_numpy(image.astype("float32"))


@stated("drawing", on_opening=False)
def drawing(example: str, checkpoint: str, field: str) -> str:
    """What the Draw page shows for an example drawing under one model's column.

    ``field``: ``verdict`` (``probably 3, but unsure``), ``probability`` (the top class's mean
    probability, ``95%``), ``mutual_information`` (``0.153``) or ``entropy``.
    """
    model = shared_model(checkpoint, default_device())
    summary = seeded_summary(model, drawing_input(example)[None, None], DEFAULT_SAMPLES)
    top = int(summary.predicted[0])
    texts = {
        "verdict": lambda: verdict(summary, rejection_thresholds(checkpoint))[0],
        "probability": lambda: f"{summary.mean[0, top]:.0%}",
        "mutual_information": lambda: f"{summary.mutual_information[0]:.3f}",
        "entropy": lambda: f"{summary.entropy[0]:.3f}",
    }
    return texts[field]()


@stated("sweep_flips", on_opening=False)
def sweep_flips(example: str, checkpoint: str, steps: str, degrees: str = "180") -> str:
    """The classes a model reads at some angle of the rotated-digit sweep, other than at 0°.

    In the order the sweep first reaches them, as words (``5 and 3``; ``none`` if it never
    changes its mind).
    """
    model = shared_model(checkpoint, default_device())
    angles = rotation_angles(float(degrees), int(steps))
    sweep = rotation_sweep(model, drawing_input(example), angles, DEFAULT_SAMPLES)
    read = sweep.mean.argmax(-1).tolist()
    others = list(dict.fromkeys(k for k in read if k != read[0]))
    if not others:
        return "none"
    words = [str(k) for k in others]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
