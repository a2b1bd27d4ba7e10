"""The inference methods of the lab, one module each, and the one factory :func:`build_model`.

Each module (:mod:`~core.methods.bbb`, :mod:`~core.methods.mlp`, :mod:`~core.methods.dropout`,
:mod:`~core.methods.ensemble`, :mod:`~core.methods.laplace`, :mod:`~core.methods.sgld`,
:mod:`~core.methods.cyclical`, :mod:`~core.methods.swag`) builds one
:class:`~core.methods.base.Method`: its model, its training procedure and its settings.
:data:`METHODS` lists them; everything else (the Train page, ``python -m core train``, the
checkpoints, the regression playground) reads this registry.

To add a method: write its module, add a :class:`~core.engine.interface.ModelKind` member and
list the module's ``METHOD`` here.
"""

from __future__ import annotations

from torch import nn

from core.engine.interface import LabModel, ModelConfig, ModelKind
from core.engine.seeding import seeded
from core.methods import bbb, cyclical, dropout, ensemble, laplace, mlp, sgld, swag
from core.methods.base import Method, Setting

METHODS: dict[str, Method] = {
    m.kind.value: m
    for m in (
        bbb.METHOD,
        mlp.METHOD,
        dropout.METHOD,
        ensemble.METHOD,
        laplace.METHOD,
        sgld.METHOD,
        cyclical.METHOD,
        swag.METHOD,
    )
}
"""Every method by its kind value, in the order pages list them."""

Model = LabModel


def method(kind: str | ModelKind) -> Method:
    """The method of ``kind``.

    Args:
        kind: A :class:`~core.engine.interface.ModelKind` or its value.

    Returns:
        Its :class:`~core.methods.base.Method`.

    Raises:
        ValueError: If no method has that kind.
    """
    try:
        return METHODS[ModelKind(kind).value]
    except (KeyError, ValueError):
        raise ValueError(f"kind must be one of {list(METHODS)}, got {kind!r}") from None


def build_model(config: ModelConfig, seed: int | None = None) -> Model:
    """Fresh, randomly initialised model of ``config.kind``.

    Args:
        config: Architecture of the model; ``config.kind`` picks the method.
        seed: Seed of the initial weights (the caller's random state is unchanged); None to
            draw them from torch's global generator.

    Returns:
        The new model, in training mode.
    """
    model_class = method(config.kind).model_class
    if seed is None:
        return model_class(config)
    with seeded(seed, cuda=False):
        return model_class(config)


def model_class(kind: str | ModelKind) -> type[nn.Module]:
    """The model class of ``kind`` (to read ``stochastic`` or ``weight_posterior`` cheaply).

    Args:
        kind: A :class:`~core.engine.interface.ModelKind` or its value.

    Returns:
        The class.

    Raises:
        ValueError: If no method has that kind.
    """
    return method(kind).model_class


__all__ = [
    "METHODS",
    "Method",
    "Model",
    "ModelConfig",
    "ModelKind",
    "Setting",
    "build_model",
    "method",
    "model_class",
]
