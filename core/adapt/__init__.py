"""Learning the class's handwriting: a trained model adapts to new labelled drawings.

Yesterday's posterior is today's prior. Each model kind says how it learns from a few new
drawings (:mod:`core.adapt.registry`: Bayes by Backprop by variational continual learning,
:mod:`core.adapt.bbb`; Laplace by online Laplace, :mod:`core.adapt.laplace`; point estimates by
fine-tuning, optionally pulled to their old weights, :mod:`core.adapt.point`; SWAG and the
samplers say why they cannot). :func:`adapt` runs it and saves a new model, never touching the
one it started from.
"""

from core.adapt.base import MIN_DRAWINGS, Adapter, CannotAdapt, Objective, check_drawings
from core.adapt.registry import ADAPTERS, adapter
from core.adapt.run import Adapted, Recipe, adapt, adapt_model, save_adapted

__all__ = [
    "ADAPTERS",
    "MIN_DRAWINGS",
    "Adapted",
    "Adapter",
    "CannotAdapt",
    "Objective",
    "Recipe",
    "adapt",
    "adapt_model",
    "adapter",
    "check_drawings",
    "save_adapted",
]
