"""Adapt a trained model to the class's drawings: one function for the page, the CLI and tests.

:func:`adapt` loads a fresh copy of a checkpoint (a shipped file is never written), asks the
kind's adapter (:mod:`core.adapt.registry`) for its objective, runs full-batch Adam on it
(:func:`adapt_model`) with a progress report and cancellation, and saves the result as a new
user model (``user:NAME``) owned by whoever asked, atomically. A cancelled run saves nothing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from core.adapt.base import COMMON_SETTINGS, check_drawings
from core.adapt.registry import adapter
from core.engine.seeding import seeded
from core.jobs.training import free_name
from core.methods import Model
from core.paths import user_model_dir
from core.progress import ProgressFn, report
from core.storage.checkpoints import checkpoint_dataset, load_checkpoint, save_checkpoint
from core.storage.user_models import validate_model_name

STEPS = COMMON_SETTINGS[0]
LR = COMMON_SETTINGS[1]


@dataclass(frozen=True)
class Recipe:
    """How a model learns from drawings: the same for every kind but its own options.

    Attributes:
        steps: Full-batch Adam steps.
        lr: Adam's learning rate.
        options: The kind's own options (:meth:`~core.adapt.base.Adapter.options`, e.g.
            ``{"pull": 100.0}``); None for its defaults.
        seed: Seed of the steps' Monte-Carlo noise (the caller's random state is kept).
    """

    steps: int = int(STEPS.default)
    lr: float = float(LR.default)
    options: dict | None = None
    seed: int = 0


@dataclass(frozen=True)
class Adapted:
    """A model adapted to drawings.

    Attributes:
        model: The adapted network, in eval mode with gradients off.
        metadata: What was done: the checkpoint it started from, its kind, the options, the
            drawings (how many, per digit), the seconds it took.
        path: The saved ``.pt`` file (``user:`` + its stem addresses it); None when not saved.
    """

    model: Model
    metadata: dict
    path: Path | None


def adapt_model(
    model: Model,
    images: torch.Tensor,
    labels: torch.Tensor,
    recipe: Recipe | None = None,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> dict | None:
    """Adapt ``model`` in place to labelled drawings by its kind's adapter.

    Any number of drawings, zero included (then only the penalty is optimised, whose gradient
    at the trained model is 0: the model does not move); :func:`adapt` checks a class's
    drawings first.

    Args:
        model: A fresh copy of a trained model (modified in place).
        images: float ``(N, 1, 28, 28)`` in [0, 1].
        labels: int64 ``(N,)`` digits.
        recipe: Steps, learning rate, the kind's options and seed; None for the defaults.
        progress: Gets the fraction of steps done.
        cancel: Setting it stops within one step.

    Returns:
        What the adapter's finish reported plus the final loss (nats), or None when
        cancelled (the model is then half-way: drop it).

    Raises:
        CannotAdapt: If the model's kind cannot adapt.
        ValueError: For a bad option.
    """
    recipe = recipe or Recipe()
    unit = adapter(model.config.kind)
    objective = unit.objective(model, unit.options(recipe.options))
    steps, lr = int(STEPS.check(recipe.steps)), float(recipe.lr)
    model.train()
    for p in objective.params:
        p.requires_grad_(True)
    optimiser = torch.optim.Adam(objective.params, lr=lr)
    x, y = images.float(), labels.long()
    loss = torch.zeros(())
    every = max(1, steps // 50)
    with seeded(recipe.seed, cuda=False):
        for step in range(steps):
            if cancel is not None and cancel.is_set():
                return None
            optimiser.zero_grad(set_to_none=True)
            loss = objective.loss(x, y)
            if loss.requires_grad:  # plain fine-tuning on no drawings: nothing to learn
                loss.backward()
                optimiser.step()
            if step % every == 0 or step == steps - 1:
                report(progress, (step + 1) / steps, f"step {step + 1} of {steps}")
    if cancel is not None and cancel.is_set():
        return None
    model.eval().requires_grad_(False)
    info = objective.finish(x, y)
    return {**info, "final_loss": float(loss.detach())}


def adapt(
    checkpoint: str | Path,
    images: torch.Tensor,
    labels: torch.Tensor,
    recipe: Recipe | None = None,
    *,
    name: str | None = None,
    owner: str = "",
    directory: Path | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Adapted | None:
    """Adapt a trained digit model to a class's drawings, and save it as a new model if named.

    Args:
        checkpoint: A registry name, ``user:NAME`` or ``.pt`` path (only read).
        images: float ``(N, 1, 28, 28)`` in [0, 1], N ≥ :data:`~core.adapt.base.MIN_DRAWINGS`.
        labels: int64 ``(N,)``, at least two different digits.
        recipe: Steps, learning rate, the kind's options and seed; None for the defaults.
        name: Save the result as ``user:NAME`` (``NAME-2``, ... when taken); None: do not save.
        owner: Who may rename or delete the saved model
            (:attr:`core.jobs.owners.Visitor.id`; "" for the teacher at the command line).
        directory: Where to save; None for :func:`~core.paths.user_model_dir`.
        progress: Gets the fraction done.
        cancel: Setting it stops within one step; nothing is saved.

    Returns:
        The adapted model, or None when cancelled.

    Raises:
        ValueError: One line, for drawings no model should learn from (too few, one digit
            only), a model of another task, a bad option or name, or a kind that cannot adapt
            (:class:`~core.adapt.base.CannotAdapt`).
        CheckpointError: If the checkpoint does not load.
    """
    recipe = recipe or Recipe()
    check_drawings(images, labels)
    if name is not None:
        name = validate_model_name(name)
    if checkpoint_dataset(checkpoint) != "mnist":
        raise ValueError(f"{checkpoint} was trained on another task, not on digits")
    start = time.perf_counter()
    model, source = load_checkpoint(checkpoint)
    unit = adapter(model.config.kind)
    recipe = replace(recipe, options=unit.options(recipe.options))
    info = adapt_model(model, images, labels, recipe, progress=progress, cancel=cancel)
    if info is None:
        return None
    seconds = time.perf_counter() - start
    digits = torch.bincount(labels.long(), minlength=10).tolist()
    origin = str(checkpoint)
    metadata = {
        "adapted_from": origin,
        "kind": model.config.kind,
        "dataset": "mnist",
        "user_trained": True,
        "description": f"{source.get('title') or origin}, adapted to {len(labels)} class "
        f"drawings: {unit.summary}",
        "adaptation": {
            "steps": int(recipe.steps),
            "lr": float(recipe.lr),
            "seed": int(recipe.seed),
            "options": recipe.options,
            "drawings": len(labels),
            "per_digit": digits,
            **info,
        },
        "train_seconds": seconds,
    }
    adapted = Adapted(model, metadata, None)
    if name is not None:
        if cancel is not None and cancel.is_set():
            return None
        adapted = save_adapted(adapted, name, owner, directory)
    report(progress, 1.0, "saved" if adapted.path else "done")
    return adapted


def save_adapted(
    adapted: Adapted, name: str, owner: str = "", directory: Path | None = None
) -> Adapted:
    """Save an adapted model as a new user model (atomically; never over another one).

    Args:
        adapted: The model and its metadata.
        name: The wanted name (``NAME-2``, ... when taken).
        owner: Who may rename or delete it ("" for the teacher at the command line).
        directory: Where; None for :func:`~core.paths.user_model_dir`.

    Returns:
        The same model with its ``path``.

    Raises:
        ValueError: If the name is not a valid model name.
    """
    name = validate_model_name(name)
    folder = directory or user_model_dir()
    folder.mkdir(parents=True, exist_ok=True)
    metadata = adapted.metadata | ({"owner": owner} if owner else {})
    path = save_checkpoint(free_name(name, folder), adapted.model, metadata, folder)
    return Adapted(adapted.model, metadata, path)
