"""The settings of a regression fit: what every method shares, and each method's own values.

:class:`FitSettings` keeps the network, the likelihood, the full-batch training, the prior
every method shares with HMC, the prediction and NUTS's own settings; each method's
parameters are values of its :class:`~core.methods.base.Setting` s
(:func:`~core.regression.variants.offered`), completed from the playground's defaults.
:meth:`FitSettings.for_method` is a fit's cache key: the values it depends on, by the names the
shipped fits were keyed with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from core.methods import method
from core.regression.data import RegressionData
from core.regression.likelihood import check_noise_model
from core.regression.variants import Variant, check_method, complete_params, regression_kinds

PRIOR_KEY = "prior_sigma"
"""The name of the shared prior σp in a fit's cache key (as the shipped fits were keyed)."""


@dataclass(frozen=True)
class FitSettings:
    """What a regression fit depends on: shared settings, and each method's parameters.

    Attributes:
        hidden: Hidden layer widths (ReLU), e.g. ``(100,)`` for a 1-100-1 network.
        noise_model: One of :data:`core.regression.likelihood.NOISE_MODELS`.
        fixed_noise: σ of the ``"fixed"`` likelihood; None for the data's own noise level
            (0.1 for user data).
        epochs: Full-batch training steps.
        lr: Adam's learning rate (of the learned noise level too; a method may fix its own,
            :attr:`~core.regression.variants.Variant.fixed`).
        prior_scale: σp of the N(0, σp²) weight prior that every method shares with HMC (the
            wide component of the mixture): a method's ``prior_sigma`` and ``sigma1``
            parameters, and the weight decay of the point estimates (1/σp², MC dropout
            (1 − p)/σp², the ensemble none).
        n_predict: Monte-Carlo passes per prediction (of the methods that sample).
        seed: Seed of the initialisation and of all training and prediction noise.
        hmc_samples: HMC: kept NUTS samples.
        hmc_warmup: HMC: adaptation steps (discarded).
        hmc_tree_depth: HMC: NUTS's maximum tree depth (at most 2^depth leapfrog steps per
            sample).
        params: Method kind → its offered settings' values
            (:func:`~core.regression.variants.offered`); missing ones, and missing kinds, are
            completed from the playground's defaults.

    Raises:
        ValueError: If a value is out of range, or a kind or setting is unknown.
    """

    hidden: tuple[int, ...] = (100,)
    noise_model: str = "learned"
    fixed_noise: float | None = None
    epochs: int = 2000
    lr: float = 1e-2
    prior_scale: float = 1.0
    n_predict: int = 100
    seed: int = 0
    hmc_samples: int = 300
    hmc_warmup: int = 300
    hmc_tree_depth: int = 7
    params: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_noise_model(self.noise_model)
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        if any(h < 1 for h in self.hidden):
            raise ValueError(f"hidden widths must be ≥ 1, got {self.hidden}")
        positive = {"lr": self.lr, "prior_scale": self.prior_scale}
        if self.fixed_noise is not None:
            positive["fixed_noise"] = self.fixed_noise
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        counts = {
            "epochs": self.epochs,
            "n_predict": self.n_predict,
            "hmc_samples": self.hmc_samples,
            "hmc_tree_depth": self.hmc_tree_depth,
        }
        for name, value in counts.items():
            if value < 1:
                raise ValueError(f"{name} must be ≥ 1, got {value}")
        if self.hmc_warmup < 0:
            raise ValueError(f"hmc_warmup must be ≥ 0, got {self.hmc_warmup}")
        kinds = regression_kinds()
        unknown = set(self.params) - set(kinds)
        if unknown:
            raise ValueError(f"no regression method of kind {', '.join(sorted(unknown))}")
        complete = {k: complete_params(k, self.params.get(k, {})) for k in kinds}
        object.__setattr__(self, "params", complete)

    def to_dict(self) -> dict:
        """Every field by name, JSON-serialisable (``hidden`` as a list).

        Returns:
            The settings.
        """
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FitSettings:
        """Settings from :meth:`to_dict` (unknown keys are ignored).

        Args:
            d: Field values by name; missing fields take their defaults.

        Returns:
            The validated settings.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def noise_sigma(self, data: RegressionData) -> float:
        """σ of the ``"fixed"`` likelihood for ``data``.

        Args:
            data: The training set.

        Returns:
            ``fixed_noise``, else the preset's noise level (its largest σ for a varying one),
            else 0.1; never below 10⁻³.
        """
        if self.fixed_noise is not None:
            return float(self.fixed_noise)
        return max(float(data.key.get("noise", 0.1)), 1e-3)

    def method_values(self, variant: Variant) -> dict:
        """Every value a variant's network and training take from these settings.

        Args:
            variant: A trained playground method.

        Returns:
            Name → value: the shared prior as its method's prior parameters, the method's
            offered settings, then the variant's fixed values (parameters of the method and
            fields of :class:`~core.training.TrainConfig`).
        """
        prior = {"prior": "gaussian", "prior_sigma": self.prior_scale, "sigma1": self.prior_scale}
        own = {s.name for s in method(variant.kind).parameters}
        shared = {k: v for k, v in prior.items() if k in own}
        return shared | self.params[variant.kind] | variant.fixed

    def for_method(self, name: str, data: RegressionData) -> dict:
        """The settings a method's fit depends on, its cache key.

        Changing any other setting leaves the method's stored result valid. The names are
        those the shipped fits were keyed with: the shared fields, σp as ``prior_sigma``, and
        the method's offered settings by their own names.

        Args:
            name: A key of :data:`~core.regression.variants.VARIANTS`.
            data: The training set (resolves the fixed noise level).

        Returns:
            Name → value, JSON-serialisable.

        Raises:
            ValueError: If ``name`` is unknown.
        """
        variant = check_method(name)
        out: dict = {
            "hidden": list(self.hidden),
            "noise_model": self.noise_model,
            "seed": self.seed,
        }
        if self.noise_model == "fixed":
            out["fixed_noise"] = self.noise_sigma(data)
        if variant.nuts or method(variant.kind).has_prior:
            out[PRIOR_KEY] = self.prior_scale
        if variant.nuts:
            return out | {
                "hmc_samples": self.hmc_samples,
                "hmc_warmup": self.hmc_warmup,
                "hmc_tree_depth": self.hmc_tree_depth,
            }
        out |= {"epochs": self.epochs, "lr": self.lr} | self.params[variant.kind]
        sampling = method(variant.kind).model_class.stochastic is not False
        if sampling and not variant.members_are_passes:
            out["n_predict"] = self.n_predict
        return out
