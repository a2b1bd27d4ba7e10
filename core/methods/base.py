"""What a method declares: :class:`Setting` (one parameter) and :class:`Method`.

A method is one package of :mod:`core.methods` that builds one :class:`Method`: its model class
(any layer sizes, inputs and outputs, from a :class:`~core.engine.interface.ModelConfig`), how
it trains (a :class:`~core.training.Procedure`), and its parameters, as :class:`Setting` s with
defaults. Their values live in the model's
:attr:`~core.engine.interface.ModelConfig.params`, checked and completed by
:meth:`Method.params`; a setting named like a field of :class:`~core.training.TrainConfig`
(SWAG's weight decay) sets that field instead. The Train page's controls, the
``python -m core train`` flags and the page's URL parameters are generated from the offered
settings (:attr:`Method.settings`); :attr:`Method.internal` ones are set by code or a stored
model only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from torch import nn

from core.engine.interface import ModelConfig
from core.training import Procedure, TrainConfig

SettingValue = float | int | str | bool


@dataclass(frozen=True)
class Setting:
    """One hyperparameter of a method, as a control, a command-line flag and a URL parameter.

    Attributes:
        name: Its name: the key of the model's ``params`` it sets (or the field of
            :class:`~core.training.TrainConfig` of that name); the flag is
            ``--name-with-dashes``.
        label: The control's label, e.g. ``"KL weight β"``.
        help: One line of help, in a student's words.
        default: The value of a new model of the method.
        options: The values offered (a choice, or the stops of a slider for a number); empty
            for a free number between ``low`` and ``high``.
        low: Smallest value of a free number.
        high: Largest value of a free number.
        titles: Shown names of choices (the value itself when absent).
        when: ``(other setting, value)``: the setting applies only then (e.g. the mixture's σ2
            only for the mixture prior).

    Raises:
        ValueError: If the default is not one of the options or outside [low, high].
    """

    name: str
    label: str
    help: str
    default: SettingValue
    options: tuple[SettingValue, ...] = ()
    low: float | None = None
    high: float | None = None
    titles: dict = field(default_factory=dict)
    when: tuple[str, SettingValue] | None = None

    def __post_init__(self) -> None:
        if self.options and self.default not in self.options:
            raise ValueError(f"{self.name}: default {self.default!r} is not an option")
        if (
            self.low is not None
            and self.high is not None
            and not (self.low <= self.default <= self.high)
        ):
            raise ValueError(
                f"{self.name}: default {self.default!r} not in [{self.low}, {self.high}]"
            )

    @property
    def type(self) -> type:
        """``bool``, ``int``, ``float`` or ``str``: the type of the default."""
        return type(self.default)

    def title(self, value: SettingValue) -> str:
        """How a value is shown (its title, or the value)."""
        return str(self.titles.get(value, value))

    def check(self, value: SettingValue) -> SettingValue:
        """A given value converted to the setting's type and checked.

        Args:
            value: The value (e.g. parsed from a command line).

        Returns:
            The value.

        Raises:
            ValueError: If it is not an option or outside [low, high], in one line.
        """
        try:
            value = self.type(value)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name} must be a {self.type.__name__}, got {value!r}") from None
        if self.options and self.type is str and value not in self.options:
            choices = ", ".join(map(str, self.options))
            raise ValueError(f"{self.name} must be one of {choices}, got {value!r}")
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise ValueError(f"{self.name} must be in [{self.low}, {self.high}], got {value!r}")
        return value

    def applies(self, values: dict) -> bool:
        """Whether the setting applies given the others' values (see :attr:`when`)."""
        return self.when is None or values.get(self.when[0]) == self.when[1]


@dataclass(frozen=True)
class BanditRole:
    """How a method's network serves as a contextual bandit's reward model (:mod:`core.bandits`).

    Attributes:
        agent: Title of the method's Thompson-sampling agent (e.g. ``"BBB Thompson"``); None
            when its network only serves agents declared by the bandits themselves (the plain
            MLP's greedy and ε-greedy agents).
        draws: Whether a decision is a fresh posterior draw (a weight sample, a dropout mask, a
            member), which the bandit's ``thompson_draws`` repeats; False when the agent acts on
            one network (a point estimate, a sampler's current weights).
        native: Whether the bandits' compiled kernel can train the network (two hidden layers,
            weights sampled in training).
    """

    agent: str | None = None
    draws: bool = False
    native: bool = False


def no_prior_weight_decay(config: ModelConfig, prior_sigma: float) -> float:
    """0: the prior enters otherwise (through the KL or the sampler), or not at all."""
    return 0.0


def prior_precision(config: ModelConfig, prior_sigma: float) -> float:
    """1/σp² of a Gaussian prior N(0, σp²): the weight decay of a MAP estimate."""
    return 1.0 / prior_sigma**2


@dataclass(frozen=True)
class Method:
    """One inference method: model, training procedure and settings.

    Attributes:
        kind: The kind its checkpoints store.
        title: Its name on pages, e.g. ``"Bayes by Backprop (BBB)"``.
        summary: One or two sentences on what it does and how it trains.
        model_class: The model class built from a configuration of this kind.
        procedure: How its training steps are taken.
        settings: Its own parameters offered as controls and flags (the common ones, epochs,
            learning rate and batch size, are every method's).
        internal: Its parameters that code or a stored model sets, not offered as controls
            (e.g. the α-divergence of MC dropout); the model reads them like the others.
        order: Where pickers list it (ascending; a new method without one comes last).
        convolutional: Whether its model may start with convolutions
            (:attr:`~core.engine.interface.ModelConfig.conv`).
        trains_like: A kind whose shipped model's training settings a new model starts from
            (a post-hoc method trains its network as that kind), or None for its own.
        curve_kl: Whether the complexity cost is worth a curve while it trains.
        lr: The learning rate of a new model where no shipped model says otherwise (Adam's
            10⁻³; a sampler's SGD-like step).
        prior_weight_decay: ``(config, σp)`` → the L2 coefficient that puts a Gaussian
            prior N(0, σp²) into a full-batch training on the summed NLL (1/σp² for a point
            estimate; 0 when the prior enters otherwise, through the KL or the sampler, or,
            for an ensemble's maximum-likelihood members, not at all).
        regression: Whether it can fit a real-valued output under a Gaussian likelihood (the
            regression playground); False for a method whose posterior assumes classes.
        bandit: How its network acts as a bandit's reward model, or None when it cannot.
    """

    kind: str
    title: str
    summary: str
    model_class: type[nn.Module]
    procedure: type[Procedure] = Procedure
    settings: tuple[Setting, ...] = ()
    internal: tuple[Setting, ...] = ()
    order: int = 100
    convolutional: bool = False
    trains_like: str | None = None
    curve_kl: bool = False
    lr: float = 1e-3
    prior_weight_decay: Callable[[ModelConfig, float], float] = no_prior_weight_decay
    regression: bool = True
    bandit: BanditRole | None = None

    @property
    def parameters(self) -> tuple[Setting, ...]:
        """Every parameter: the offered settings, then the internal ones."""
        return (*self.settings, *self.internal)

    @property
    def has_prior(self) -> bool:
        """Whether a Gaussian prior N(0, σp²) changes its fit.

        True when it has a ``prior_sigma`` parameter or its weight decay is the prior's.
        """
        return self.prior_weight_decay is not no_prior_weight_decay or any(
            s.name == "prior_sigma" for s in self.parameters
        )

    def setting(self, name: str) -> Setting:
        """The parameter called ``name``.

        Raises:
            KeyError: If the method has none.
        """
        for s in self.parameters:
            if s.name == name:
                return s
        raise KeyError(f"{self.kind} has no setting {name!r}")

    def defaults(self) -> dict:
        """Every offered setting's default, by name."""
        return {s.name: s.default for s in self.settings}

    def params(self, given: dict | None = None) -> dict:
        """The model's parameters: given values checked, the others at their defaults.

        Args:
            given: Values by parameter name (those named like a
                :class:`~core.training.TrainConfig` field belong to the training, not here).

        Returns:
            Every parameter of the method (but the training's) by name, for
            :attr:`~core.engine.interface.ModelConfig.params`.

        Raises:
            ValueError: For an unknown parameter or a bad value, in one line.
        """
        given = dict(given or {})
        own = [s for s in self.parameters if s.name not in TRAIN_FIELDS]
        unknown = set(given) - {s.name for s in own}
        if unknown:
            raise ValueError(f"{self.kind} has no setting {', '.join(sorted(unknown))}")
        return {s.name: s.check(given.get(s.name, s.default)) for s in own}

    def configure(self, given: dict) -> dict:
        """Every offered setting's value: the given ones checked, the others at their defaults.

        Args:
            given: Values by setting name.

        Returns:
            Setting name → value, for :meth:`apply`.

        Raises:
            ValueError: For an unknown setting or a bad value, in one line.
        """
        unknown = set(given) - {s.name for s in self.settings}
        if unknown:
            raise ValueError(f"{self.kind} has no setting {', '.join(sorted(unknown))}")
        return self.defaults() | {k: self.setting(k).check(v) for k, v in given.items()}

    def apply(
        self, values: dict, model: ModelConfig, training: TrainConfig
    ) -> tuple[ModelConfig, TrainConfig]:
        """Configurations of this method with ``values`` set, each where it belongs.

        Args:
            values: Name → value: the method's parameters (the others at their defaults),
                fields of the network (:data:`NETWORK_FIELDS`) and of
                :class:`~core.training.TrainConfig`.
            model: The network to start from (its kind becomes this method's; its
                parameters are kept when it already is).
            training: The optimisation settings to start from.

        Returns:
            ``(model, training)``.

        Raises:
            ValueError: For a name of none of these, or an invalid value.
        """
        own = {s.name for s in self.parameters}
        unknown = set(values) - own - NETWORK_FIELDS - TRAIN_FIELDS
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
        kept = model.params if model.kind == self.kind else {}
        given = {k: v for k, v in values.items() if k in own and k not in TRAIN_FIELDS}
        network = {k: v for k, v in values.items() if k in NETWORK_FIELDS}
        params = self.params(kept | given)
        model = ModelConfig.from_dict(
            model.to_dict() | network | {"kind": self.kind, "params": params}
        )
        return model, replace(training, **{k: v for k, v in values.items() if k in TRAIN_FIELDS})


NETWORK_FIELDS = frozenset(f.name for f in fields(ModelConfig)) - {"kind", "params"}
"""The fields of :class:`~core.engine.interface.ModelConfig` that describe the network."""
TRAIN_FIELDS = frozenset(f.name for f in fields(TrainConfig))
"""The fields of :class:`~core.training.TrainConfig`."""


# --- settings several methods share ---------------------------------------------------------

MIXTURE_SIGMA2 = math.exp(-6)
"""σ2 of the shipped scale-mixture prior, e^-6."""

PRIOR_SETTINGS = (
    Setting(
        "prior",
        "Prior",
        "The prior over every weight. The scale mixture π·N(0, σ1²) + (1 − π)·N(0, σ2²) has a "
        "wide and a narrow component (Blundell et al. 2015).",
        "gaussian",
        options=("gaussian", "mixture"),
        titles={"gaussian": "Gaussian N(0, σ²)", "mixture": "Scale mixture"},
    ),
    Setting(
        "prior_sigma",
        "Prior σ",
        "Standard deviation of the Gaussian prior.",
        1.0,
        options=(0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
        when=("prior", "gaussian"),
    ),
    Setting(
        "pi",
        "π (weight of the wide part)",
        "How much of the mixture is the wide component.",
        0.5,
        options=(0.25, 0.5, 0.75),
        when=("prior", "mixture"),
    ),
    Setting(
        "sigma1",
        "σ1 (wide part)",
        "Standard deviation of the wide component.",
        1.0,
        options=tuple(round(math.exp(-k / 2), 4) for k in range(7))[::-1],
        when=("prior", "mixture"),
    ),
    Setting(
        "sigma2",
        "σ2 (narrow part)",
        "Standard deviation of the narrow component, e^-4 to e^-9.",
        MIXTURE_SIGMA2,
        options=tuple(math.exp(-k / 2) for k in range(18, 7, -1)),
        titles={math.exp(-k / 2): f"e^-{k / 2:g}" for k in range(18, 7, -1)},
        when=("prior", "mixture"),
    ),
)
"""The prior family and its scales (BBB and the SG-MCMC samplers)."""


def prior_config(params: dict) -> dict:
    """The prior of the :data:`PRIOR_SETTINGS` values among a model's parameters.

    Args:
        params: Parameter values, among them ``prior`` and its scales.

    Returns:
        ``{"kind": "gaussian", "sigma": σ}`` or ``{"kind": "mixture", "pi", "sigma1",
        "sigma2"}``, as :func:`~core.engine.priors.prior_from_dict` reads it.
    """
    if params["prior"] == "gaussian":
        return {"kind": "gaussian", "sigma": float(params["prior_sigma"])}
    return {"kind": "mixture", **{k: float(params[k]) for k in ("pi", "sigma1", "sigma2")}}


def prior_settings(prior: dict) -> dict:
    """The :data:`PRIOR_SETTINGS` values of a prior (the inverse of :func:`prior_config`).

    Args:
        prior: ``{"kind": "gaussian", "sigma": σ}`` or ``{"kind": "mixture", "pi", "sigma1",
            "sigma2"}``.

    Returns:
        ``{"prior": family, ...}`` with its scales.
    """
    if prior["kind"] == "gaussian":
        return {"prior": "gaussian", "prior_sigma": float(prior["sigma"])}
    return {"prior": "mixture", **{k: float(prior[k]) for k in ("pi", "sigma1", "sigma2")}}
