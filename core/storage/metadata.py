"""What a checkpoint's stored metadata says: its configuration today, whether it finished.

Checkpoints, their metadata and stored training jobs written before a method's parameters moved
into :attr:`~core.engine.interface.ModelConfig.params` keep one flat model configuration and one
flat training configuration; :func:`migrate` turns them into today's form on loading.
:func:`partial_note` tells a model whose training did not finish.
"""

from __future__ import annotations

from core.methods import method
from core.methods.base import NETWORK_FIELDS, TRAIN_FIELDS, prior_settings

RENAMED_PARAMS = {"laplace_structure": "structure"}
"""Flat configuration fields that became a method's parameter of another name."""


def migrate(model_config: dict, training: dict | None = None) -> tuple[dict, dict]:
    """A stored model and training configuration in today's form.

    Checkpoints written before methods owned their parameters store one flat model
    configuration (the prior as a dict, ``members``, ``rank``, ``lrt``, ...) and one flat
    training configuration (``beta``, ``temperature``, ``impl``, ...). Their method's
    parameters move into the model's ``params`` (the prior as its settings' values, a
    convolutional dropout of None as the dropout probability, ``lrt`` as the estimator it
    trained with), checked and completed by the method's defaults; the rest of the training
    configuration stays where it is; what the method does not have is dropped. Today's form
    is returned as it is.

    Args:
        model_config: The stored ``model_config`` (metadata or weights file).
        training: The stored ``training`` settings, or None when there are none.

    Returns:
        ``(model_config, training)`` as :meth:`ModelConfig.from_dict` and
        :class:`~core.training.TrainConfig` read them.

    Raises:
        ValueError: If the stored kind is no method's.
    """
    training = dict(training or {})
    if "params" in model_config:
        return model_config, training
    flat = {**training, **model_config}
    unit = method(flat.get("kind", "bbb"))
    own = {s.name for s in unit.parameters} - TRAIN_FIELDS
    if isinstance(flat.get("prior"), dict):
        flat |= prior_settings(flat.pop("prior"))
    for old, new in RENAMED_PARAMS.items():
        if old in flat:
            flat[new] = flat.pop(old)
    if flat.get("conv_dropout") is None:
        flat["conv_dropout"] = flat.get("dropout", 0.5)
    if flat.pop("lrt", False) and "impl" not in training:
        flat["impl"] = "vmap_lrt"
    model = {k: v for k, v in model_config.items() if k in NETWORK_FIELDS or k == "kind"}
    model["params"] = unit.params({k: v for k, v in flat.items() if k in own})
    return model, {k: v for k, v in training.items() if k in TRAIN_FIELDS}


def partial_note(metadata: dict) -> str:
    """Tell whether a model's training finished, from its metadata.

    A model saved before completeness was recorded counts as finished unless it has fewer
    epochs than its training settings asked for (what a run killed between per-epoch saves
    left behind). Weights without metadata (``{}``: a save interrupted before its metadata was
    written) count as partial.

    Args:
        metadata: The model's metadata (:func:`~core.storage.checkpoints.read_metadata`).

    Returns:
        "" for a finished model; otherwise e.g. ``"partial: 1 of 15 epochs"``.
    """
    if not metadata:
        return "partial: no metadata"
    done = metadata.get("epochs")
    if "complete" in metadata:
        if metadata["complete"]:
            return ""
        planned = metadata.get("epochs_planned")
    else:
        training = metadata.get("training")
        planned = training.get("epochs") if isinstance(training, dict) else None
        if not (isinstance(done, int) and isinstance(planned, int) and done < planned):
            return ""
    if isinstance(done, int) and isinstance(planned, int):
        return f"partial: {done} of {planned} epochs"
    return "partial: training did not finish"
