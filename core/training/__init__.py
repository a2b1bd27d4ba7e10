"""Training: the one loop (:func:`train`) and the :class:`Procedure` a method's steps follow.

It sits above :mod:`core.engine` and :mod:`core.evaluation` (each epoch is evaluated) and below
:mod:`core.methods`, whose procedures subclass :class:`Procedure`.
"""

from core.training.loop import (
    OPTIMIZERS,
    EpochStats,
    Procedure,
    StepStats,
    TrainConfig,
    TrainResult,
    make_optimizer,
    train,
)
from core.training.step import TrainStep, cuda_graphs_enabled

__all__ = [
    "OPTIMIZERS",
    "EpochStats",
    "Procedure",
    "StepStats",
    "TrainConfig",
    "TrainResult",
    "TrainStep",
    "make_optimizer",
    "cuda_graphs_enabled",
    "train",
]
