"""The inference methods of the lab, one package each, found by the registry itself.

Every subpackage of :mod:`core.methods` (``bbb``, ``mlp``, ``dropout``, ``ensemble``,
``laplace``, ``sgld``, ``cyclical``, ``swag``, ...) is one method: its model, its objective or
sampler and its parameters, and a module-level ``METHOD``, a
:class:`~core.methods.base.Method`. The registry imports every subpackage it finds
(:func:`pkgutil.iter_modules`), so a new folder with a ``METHOD`` adds a method and deleting the
folder removes it; everything else (the Train page, ``python -m core train``, the checkpoints,
the regression playground, the bandits, active learning) reads :data:`METHODS`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace

from torch import nn

from core.engine.interface import LabModel, ModelConfig
from core.engine.seeding import seeded
from core.methods.base import TRAIN_FIELDS, Method, Setting


def discover() -> dict[str, Method]:
    """Every method package's ``METHOD``, by kind, in the order pages list them.

    Returns:
        Kind → method, sorted by :attr:`~core.methods.base.Method.order` (then by kind).

    Raises:
        ValueError: If a subpackage has no ``METHOD`` or two have the same kind.
    """
    found: dict[str, Method] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        package = importlib.import_module(f"{__name__}.{info.name}")
        declared = getattr(package, "METHOD", None)
        if not isinstance(declared, Method):
            raise ValueError(f"{package.__name__} declares no METHOD")
        if declared.kind in found:
            raise ValueError(f"two method packages have the kind {declared.kind!r}")
        found[declared.kind] = declared
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


METHODS: dict[str, Method] = discover()
"""Every method by its kind, in the order pages list them."""

Model = LabModel


def method(kind: str) -> Method:
    """The method of ``kind``.

    Args:
        kind: A method's kind, e.g. ``"bbb"``.

    Returns:
        Its :class:`~core.methods.base.Method`.

    Raises:
        ValueError: If no method has that kind.
    """
    try:
        return METHODS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"kind must be one of {list(METHODS)}, got {kind!r}") from None


def params_for(kind: str, values: dict) -> dict:
    """Those of ``values`` that are parameters of the method of ``kind``.

    A study or a playground that sets one value for several methods (a prior σ, a dropout
    probability, a number of members) hands each method the ones it has.

    Args:
        kind: A method's kind.
        values: Candidate values by parameter name.

    Returns:
        The method's parameters among them (those named like a
        :class:`~core.training.TrainConfig` field left out).

    Raises:
        ValueError: If no method has that kind.
    """
    own = {s.name for s in method(kind).parameters} - TRAIN_FIELDS
    return {k: v for k, v in values.items() if k in own}


def check_config(config: ModelConfig) -> ModelConfig:
    """``config`` checked against its method, its parameters completed.

    Args:
        config: A model's network and parameters.

    Returns:
        The configuration with every parameter of its method (the missing ones at their
        defaults).

    Raises:
        ValueError: If no method has ``config.kind``, it has convolutions and the method does
            not offer them, or a parameter is unknown or out of range.
    """
    own = method(config.kind)
    if config.conv and not own.convolutional:
        offered = " and ".join(k for k, m in METHODS.items() if m.convolutional)
        raise ValueError(f"convolutions are offered for {offered}, not {config.kind}")
    return replace(config, params=own.params(config.params))


def build_model(config: ModelConfig, seed: int | None = None) -> Model:
    """Fresh, randomly initialised model of ``config.kind``.

    Args:
        config: Architecture of the model; ``config.kind`` picks the method.
        seed: Seed of the initial weights (the caller's random state is unchanged); None to
            draw them from torch's global generator.

    Returns:
        The new model, in training mode.

    Raises:
        ValueError: If :func:`check_config` refuses the configuration.
    """
    config = check_config(config)
    model_class = method(config.kind).model_class
    if seed is None:
        return model_class(config)
    with seeded(seed, cuda=False):
        return model_class(config)


def model_class(kind: str) -> type[nn.Module]:
    """The model class of ``kind`` (to read ``stochastic`` or ``weight_posterior`` cheaply).

    Args:
        kind: A method's kind.

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
    "Setting",
    "build_model",
    "check_config",
    "discover",
    "method",
    "model_class",
    "params_for",
]
