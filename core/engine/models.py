"""The registry of model kinds and the one factory, :func:`build_model`.

To add a method: write its module (a class following :class:`~core.engine.interface.LabModel`,
built from a :class:`~core.engine.interface.ModelConfig`), add a
:class:`~core.engine.interface.ModelKind` member and one entry in :data:`MODEL_CLASSES`.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from core.engine.bbb import BayesMLP
from core.engine.ensemble import DeepEnsemble
from core.engine.interface import LabModel, ModelConfig, ModelKind
from core.engine.laplace import LastLayerLaplace, fit_laplace
from core.engine.mlp import MLP, DropoutMLP

MODEL_CLASSES: dict[ModelKind, type[nn.Module]] = {
    ModelKind.BBB: BayesMLP,
    ModelKind.MLP: MLP,
    ModelKind.DROPOUT: DropoutMLP,
    ModelKind.ENSEMBLE: DeepEnsemble,
    ModelKind.LAPLACE: LastLayerLaplace,
}

Model = LabModel

POST_HOC_FITS: dict[ModelKind, Callable[..., dict]] = {ModelKind.LAPLACE: fit_laplace}
"""Kinds fitted after (or instead of) gradient training: ``fit(model, x, y) -> info``, run by
``python -m core train`` on the training set; ``info`` is stored in the checkpoint metadata."""


def build_model(config: ModelConfig) -> Model:
    """Fresh, randomly initialised model of ``config.kind``.

    Args:
        config: Architecture of the model; ``config.kind`` picks the class in
            :data:`MODEL_CLASSES`.

    Returns:
        The new model, in training mode.
    """
    return MODEL_CLASSES[ModelKind(config.kind)](config)


def model_class(kind: str | ModelKind) -> type[nn.Module]:
    """The class registered for ``kind``.

    Used to read ``stochastic`` or ``weight_posterior`` without building a model.

    Args:
        kind: A :class:`~core.engine.interface.ModelKind` or its value.

    Returns:
        The model class of :data:`MODEL_CLASSES`.

    Raises:
        ValueError: If ``kind`` is not a :class:`~core.engine.interface.ModelKind` value.
    """
    return MODEL_CLASSES[ModelKind(kind)]


__all__ = [
    "MLP",
    "MODEL_CLASSES",
    "POST_HOC_FITS",
    "BayesMLP",
    "DeepEnsemble",
    "DropoutMLP",
    "LastLayerLaplace",
    "Model",
    "ModelConfig",
    "ModelKind",
    "build_model",
    "model_class",
]
