"""Every model kind's way of learning from new drawings, by its kind value (one registry).

Kinds without an honest way say why (:attr:`~core.adapt.base.Adapter.reason`): their
uncertainty comes from a procedure run on the whole training set (SGD iterates for SWAG, a
Markov chain for the samplers), so a few hundred drawings alone would describe only those
drawings.
"""

from __future__ import annotations

from core.adapt import bbb, laplace, point
from core.adapt.base import Adapter, CannotAdapt

RETRAIN = "; train a new model on MNIST and the class's drawings on the Train page instead."

ADAPTERS: dict[str, Adapter] = {
    a.kind: a
    for a in (
        bbb.ADAPTER,
        point.adapter("mlp", "the network", "MLP"),
        point.adapter("dropout", "the network (with its dropout)", "MC dropout"),
        point.adapter("ensemble", "every member", "Ensemble"),
        laplace.ADAPTER,
        Adapter(
            "swag",
            "",
            None,
            reason="SWAG's Gaussian is fitted to the path of SGD on all of MNIST; refitted on "
            "a few hundred drawings it would describe only them" + RETRAIN,
        ),
        Adapter(
            "sgld",
            "",
            None,
            reason="SGLD's networks are samples of a Markov chain over all of MNIST; "
            "continuing the chain honestly needs MNIST in every step" + RETRAIN,
        ),
        Adapter(
            "sgmcmc_cyclic",
            "",
            None,
            reason="cyclical SG-MCMC's networks are samples of a Markov chain over all of "
            "MNIST; continuing the chain honestly needs MNIST in every step" + RETRAIN,
        ),
    )
}
"""Kind value → how it adapts."""


def adapter(kind: str) -> Adapter:
    """The adapter of a model kind that can adapt.

    Args:
        kind: A method's kind (a key of :data:`core.methods.METHODS`).

    Returns:
        Its adapter.

    Raises:
        CannotAdapt: One line: why the kind cannot learn from the drawings (or that it is
            unknown).
    """
    found = ADAPTERS.get(kind)
    if found is None:
        raise CannotAdapt(f"{kind} models cannot learn from the class's drawings")
    if not found.can_adapt:
        raise CannotAdapt(f"{kind} cannot learn from the class's drawings: {found.reason}")
    return found
