"""The settings of a bandit run's reward models and their online training: :class:`ModelSettings`.

What every reward network shares (its widths, the buffer, the minibatches, the optimiser, the
likelihood, the rewards' scale) are fields; a network's own parameters are its method's
:class:`~core.methods.base.Setting` s (:attr:`ModelSettings.params`, kind → values), at the
method's defaults with the bandit's overrides of :data:`core.catalogue.BANDIT_PARAMS`.

The command line (``--set prior_sigma1=0.37``), the stored runs' settings and their file names
speak of the parameters by the bandit's *flat names* (:data:`core.catalogue.BANDIT_FLAT_NAMES`:
``prior_sigma1`` is the ``sigma1`` of every method with a prior, ``lrt`` BBB's ``impl``,
``sgld_lr`` SGLD's learning rate): :meth:`ModelSettings.to_dict` writes them so and
:meth:`ModelSettings.from_dict` reads them back, so a run keeps the settings, the cache key and
the file name it was stored under.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from core.catalogue import BANDIT_FLAT_NAMES, BANDIT_PARAMS
from core.methods import METHODS, method
from core.methods.base import TRAIN_FIELDS
from core.training import OPTIMIZERS

ENGINES = ("torch", "native")
"""Who trains the reward networks (:attr:`ModelSettings.engine`)."""
KL_DATA = ("buffer", "seen")
"""What N of the complexity cost's weight B/N counts (:attr:`ModelSettings.kl_data`)."""
REWARD_MODELS = tuple(kind for kind, m in METHODS.items() if m.bandit is not None)
"""The kinds whose networks can be a bandit's reward model (a :attr:`Method.bandit` role)."""
FLAT_ORDER = (
    "hidden",
    "buffer_size",
    "batch_size",
    "updates_per_step",
    "lr",
    "optimizer",
    "noise_sigma",
    "reward_scale",
    "standardise_rewards",
    "thompson_draws",
    "prior",
    "prior_sigma",
    "prior_pi",
    "prior_sigma1",
    "prior_sigma2",
    "init_sigma",
    "kl_beta",
    "kl_data",
    "kl_schedule",
    "lrt",
    "engine",
    "dropout",
    "members",
    "sgld_lr",
    "linear_lambda",
    "linear_a0",
    "linear_b0",
)
"""The order of the flat settings, that of the first stored runs (file names list the changed
settings in it); names not in it follow."""


def bandit_params(kind: str, given: Mapping | None = None) -> dict:
    """A reward network's parameters: the method's defaults, the bandit's, then ``given``.

    Args:
        kind: A method's kind.
        given: Values by name: the method's parameters and
            :class:`~core.training.TrainConfig` fields of its training (e.g. ``lr``).

    Returns:
        Every parameter of the method, checked, and the training fields given.

    Raises:
        ValueError: For an unknown parameter or a bad value.
    """
    values = BANDIT_PARAMS.get(kind, {}) | dict(given or {})
    own = {k: v for k, v in values.items() if k not in TRAIN_FIELDS}
    return method(kind).params(own) | {k: v for k, v in values.items() if k in TRAIN_FIELDS}


def _has(kind: str, param: str) -> bool:
    return any(s.name == param for s in method(kind).parameters)


def params_of_flat(flat: Mapping) -> dict[str, dict]:
    """The reward networks' parameters that flat names set.

    Args:
        flat: Values by flat name (:data:`~core.catalogue.BANDIT_FLAT_NAMES`).

    Returns:
        Kind → parameter values, for every reward model's kind.

    Raises:
        ValueError: If a value is not one the flat name takes.
    """
    given: dict[str, dict] = {kind: {} for kind in REWARD_MODELS}
    for name, value in flat.items():
        param, only, values = BANDIT_FLAT_NAMES[name]
        if values is not None:
            if value not in values:
                raise ValueError(f"{name} must be one of {', '.join(map(str, values))}")
            value = values[value]
        for kind in REWARD_MODELS:
            if kind == only or (only is None and _has(kind, param)):
                given[kind][param] = value
    return given


@dataclass(frozen=True)
class ModelSettings:
    """Reward models, their online training and the linear baseline's prior.

    Attributes:
        hidden: Hidden layer widths of every reward network.
        buffer_size: Interactions kept per run (the most recent ones).
        batch_size: Interactions per minibatch update.
        updates_per_step: Minibatch updates per bandit step.
        lr: The optimiser's learning rate.
        optimizer: How the reward networks follow their gradients: ``"adam"`` or ``"sgd"``
            (plain gradient steps, the update rule of Blundell et al. 2015, §3.2); one of
            :data:`~core.training.OPTIMIZERS`.
        noise_sigma: The likelihood's standard deviation σ, in the units the networks see
            (reward units divided by the reward scale).
        reward_scale: Rewards are divided by it before the reward networks see them, and the
            networks' outputs multiplied by it; None takes the environment's own
            ``reward_scale`` (5 for the mushroom, 10 for the wheel), 1 trains on the rewards
            as they are.
        standardise_rewards: The networks learn the rewards standardised, (r − m)/s with m
            and s the mean and standard deviation of the environment's reward under uniformly
            random actions (its closed-form :meth:`reward_moments`: m = −2.32, s = 12.3 for the
            mushroom), and their outputs are mapped back by s·f + m; ``noise_sigma`` is then in
            units of s, so ``noise_sigma=1`` is a likelihood as wide as the rewards' spread.
            Needs ``reward_scale=None``; False (the default) divides by ``reward_scale`` only.
        thompson_draws: Posterior draws a Thompson decision averages: each network's sampled
            rewards of every action are averaged over this many independent draws (weights,
            dropout masks, members) and the action of the highest average is taken. 1 (the
            default) is Thompson sampling; a point estimate (the greedy networks, SGLD's
            current weights) ignores it.
        kl_data: N of the complexity cost's weight B/N in a minibatch's loss: ``"buffer"``,
            the interactions in the buffer (an epoch of minibatches over it weighs the KL
            once), or ``"seen"``, every interaction of the run so far (the buffer read as a
            sample of them, so the weight keeps falling once the buffer is full).
        engine: Who trains the reward networks whose method allows it
            (:attr:`~core.methods.base.BanditRole.native`): ``"torch"`` (the methods' own
            PyTorch models and procedures) or ``"native"`` (the compiled kernel of
            :mod:`core.bandits.kernel.tiny`: the same estimator and optimisers, two hidden
            layers, weight sampling only; the others stay on PyTorch).
        linear_lambda: Linear Thompson's prior precision λ (times 1/σ²).
        linear_a0: Shape a₀ of the inverse-gamma prior of σ².
        linear_b0: Scale b₀ of the inverse-gamma prior of σ².
        params: Each reward network's parameters by kind (:data:`REWARD_MODELS`): its
            method's, and the :class:`~core.training.TrainConfig` fields of its training that
            are its own (SGLD's learning rate); given ones complete the bandit's defaults
            (:func:`bandit_params`).

    Raises:
        ValueError: If a size is below 1, a probability or scale is out of range, or a
            parameter is unknown.
    """

    hidden: tuple[int, ...] = (100, 100)
    buffer_size: int = 4096
    batch_size: int = 64
    updates_per_step: int = 1
    lr: float = 1e-3
    optimizer: str = "adam"
    noise_sigma: float = 1.0
    reward_scale: float | None = None
    standardise_rewards: bool = False
    thompson_draws: int = 1
    kl_data: str = "buffer"
    engine: str = "torch"
    linear_lambda: float = 0.25
    linear_a0: float = 6.0
    linear_b0: float = 6.0
    params: Mapping[str, Mapping] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        unknown = set(self.params) - set(REWARD_MODELS)
        if unknown:
            raise ValueError(f"no reward model of kind {', '.join(sorted(unknown))}")
        params = {kind: bandit_params(kind, self.params.get(kind)) for kind in REWARD_MODELS}
        object.__setattr__(self, "params", params)
        flat = self._flat()
        sizes = (
            self.buffer_size,
            self.batch_size,
            self.updates_per_step,
            flat.get("members", 1),
            self.thompson_draws,
        )
        if min(sizes) < 1 or not self.hidden or min(self.hidden) < 1:
            raise ValueError(
                "buffer, batch, updates, members, Thompson draws and hidden widths must be ≥ 1"
            )
        if not 0.0 <= flat.get("dropout", 0.0) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {flat['dropout']}")
        positive = [self.lr, self.noise_sigma]
        positive += [flat.get(k, 1.0) for k in ("sgld_lr", "prior_sigma", "init_sigma")]
        if min(positive) <= 0 or flat.get("kl_beta", 1.0) < 0:
            raise ValueError(
                "lr, sgld_lr, noise_sigma, prior_sigma, init_sigma must be > 0, kl_beta ≥ 0"
            )
        if self.reward_scale is not None and self.reward_scale <= 0:
            raise ValueError(f"reward_scale must be > 0 or None, got {self.reward_scale}")
        if self.standardise_rewards and self.reward_scale is not None:
            raise ValueError("standardised rewards set their own scale: leave reward_scale None")
        if min(self.linear_lambda, self.linear_a0, self.linear_b0) <= 0:
            raise ValueError("linear_lambda, linear_a0 and linear_b0 must be > 0")
        pi, sigma1 = flat.get("prior_pi", 0.5), flat.get("prior_sigma1", 1.0)
        sigma2 = flat.get("prior_sigma2", sigma1 / 2)
        if not 0.0 < pi < 1.0 or not 0.0 < sigma2 < sigma1:
            raise ValueError("need 0 < prior_pi < 1 and 0 < prior_sigma2 < prior_sigma1")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.kl_data not in KL_DATA:
            raise ValueError(f"kl_data must be one of {KL_DATA}, got {self.kl_data!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.engine == "native" and (flat.get("lrt", False) or len(self.hidden) != 2):
            raise ValueError(
                "the native engine trains two hidden layers by weight sampling: "
                "set lrt=False and two hidden widths"
            )

    def network_params(self, kind: str) -> dict:
        """The parameters of a kind's reward network, for its model's configuration.

        Args:
            kind: One of :data:`REWARD_MODELS`.

        Returns:
            Parameter name → value (the training's fields left out).
        """
        return {k: v for k, v in self.params[kind].items() if k not in TRAIN_FIELDS}

    def training(self, kind: str) -> dict:
        """The :class:`~core.training.TrainConfig` fields of a kind's networks' training.

        Args:
            kind: One of :data:`REWARD_MODELS`.

        Returns:
            The shared optimiser and learning rate, replaced by the kind's own where it has
            them (SGLD's step).
        """
        own = {k: v for k, v in self.params[kind].items() if k in TRAIN_FIELDS}
        return {"lr": self.lr, "optimizer": self.optimizer} | own

    def _flat(self) -> dict:
        """Every flat name's value, from the first reward model that has its parameter."""
        flat = {}
        for name, (param, only, values) in BANDIT_FLAT_NAMES.items():
            holder = next(
                (k for k in REWARD_MODELS if (only in (None, k)) and param in self.params[k]),
                None,
            )
            if holder is None:
                continue
            value = self.params[holder][param]
            found = [v for v in values if values[v] == value] if values is not None else [value]
            if found:  # a parameter value no flat value stands for is left to ``params``
                flat[name] = found[0]
        return flat

    def to_dict(self) -> dict:
        """The settings as a JSON-serialisable dict, in the flat names.

        Returns:
            Every field but ``params`` by name (``hidden`` as a list) and every flat name's
            value, in :data:`FLAT_ORDER`; then ``params``, kind → the parameters that the flat
            names do not say (only when there are any).
        """
        flat = self._flat()
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "params"}
        d = d | flat | {"hidden": list(self.hidden)}
        rank = {name: i for i, name in enumerate(FLAT_ORDER)}
        d = dict(sorted(d.items(), key=lambda item: rank.get(item[0], len(rank))))
        implied = params_of_flat(flat)
        extra = {}
        for kind in REWARD_MODELS:
            expected = bandit_params(kind, implied[kind])
            if diff := {k: v for k, v in self.params[kind].items() if expected.get(k) != v}:
                extra[kind] = diff
        return d | ({"params": extra} if extra else {})

    @classmethod
    def from_dict(cls, d: Mapping) -> ModelSettings:
        """Inverse of :meth:`to_dict`; also reads the flat names alone (every stored run).

        Args:
            d: Field values and flat names' values by name, and optionally ``params`` (kind →
                values); missing ones take their defaults.

        Returns:
            The validated settings.

        Raises:
            ValueError: For a bad value; TypeError for an unknown name.
        """
        d = dict(d)
        flat = {name: d.pop(name) for name in list(d) if name in BANDIT_FLAT_NAMES}
        params = params_of_flat(flat)
        for kind, values in d.pop("params", {}).items():
            params[kind] = params.get(kind, {}) | dict(values)
        return cls(**d, params=params)

    def replace(self, **values) -> ModelSettings:
        """These settings with fields and flat names replaced, e.g. ``replace(lrt=False)``.

        A flat name sets its parameter in every method that has it, whatever one method's
        own value was.

        Args:
            **values: As :meth:`from_dict` takes them.

        Returns:
            The validated settings.
        """
        d = self.to_dict()
        named = params_of_flat({k: v for k, v in values.items() if k in BANDIT_FLAT_NAMES})
        extra = {
            kind: {k: v for k, v in own.items() if k not in named[kind]}
            for kind, own in d.pop("params", {}).items()
        }
        return ModelSettings.from_dict(d | values | {"params": extra})
