"""The registry of model kinds and the one factory, :func:`build_model`.

To add a method: write its module (a class following :class:`~core.engine.interface.LabModel`,
built from a :class:`~core.engine.interface.ModelConfig`), add a
:class:`~core.engine.interface.ModelKind` member and one entry in :data:`MODEL_CLASSES`.
"""

from __future__ import annotations

from torch import nn

from core.engine.bbb import BayesMLP
from core.engine.interface import LabModel, ModelConfig, ModelKind
from core.engine.mlp import MLP, DropoutMLP

MODEL_CLASSES: dict[ModelKind, type[nn.Module]] = {
    ModelKind.BBB: BayesMLP,
    ModelKind.MLP: MLP,
    ModelKind.DROPOUT: DropoutMLP,
}

Model = LabModel


def build_model(config: ModelConfig) -> Model:
    """Fresh, randomly initialised model of ``config.kind``."""
    return MODEL_CLASSES[ModelKind(config.kind)](config)


def model_class(kind: str | ModelKind) -> type[nn.Module]:
    """The class registered for ``kind`` (to read ``stochastic`` or ``weight_posterior``
    without building a model)."""
    return MODEL_CLASSES[ModelKind(kind)]


__all__ = [
    "MLP",
    "MODEL_CLASSES",
    "BayesMLP",
    "DropoutMLP",
    "Model",
    "ModelConfig",
    "ModelKind",
    "build_model",
    "model_class",
]
