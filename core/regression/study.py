"""Fits of the regression methods, cached on disk by (data, method, settings).

:func:`fit_method` trains a method (or runs NUTS for ``"hmc"``), summarises its sampled
functions on the plot grid and on the zoomed-out grid (:class:`~core.regression.metrics.
Predictive`), computes its numbers (:func:`~core.regression.metrics.regression_metrics`) and
stores all of it with the loss history, the training time and, for HMC, the NUTS samples
themselves in the entry of
:func:`core.storage.cache.cache_entry` keyed by the data's identity, the method and the
settings it depends on (:meth:`~core.regression.settings.FitSettings.for_method`). A second call
loads it.

The fits of the presets' default data and settings (HMC and the page's default methods) also
ship with the repository in :data:`REFERENCE_DIR` (``python -m core regression --ship``), so
that the page shows them at once on a fresh clone; a shipped file is used only when its name,
the cache entry's digest of all of the above, matches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from core.paths import REPO_ROOT
from core.progress import Job, ProgressFn, report
from core.regression.data import RegressionData
from core.regression.hmc import chain_functions, run_nuts
from core.regression.methods import predict, train_network
from core.regression.metrics import Predictive, band_difference, regression_metrics, summarize
from core.regression.settings import FitSettings
from core.regression.variants import VARIANTS, check_method
from core.storage.cache import CacheEntry, cache_entry

STUDY = "regression"
CACHE_VERSION = 4  # bump when what is computed or stored changes
GRID_POINTS = 300
"""Inputs of each plotting grid."""
REFERENCE_DIR = REPO_ROOT / "checkpoints" / "regression"
"""Shipped fits (file names as in the cache)."""


@dataclass
class RegressionFit:
    """One method fitted to one data set.

    Attributes:
        method: The key of :data:`~core.regression.variants.VARIANTS`.
        settings: The settings the fit depends on (its cache key).
        plot: The predictive on the plot range.
        wide: The predictive on the zoomed-out range.
        metrics: The numbers of :func:`~core.regression.metrics.regression_metrics`.
        losses: Training loss per point after each step (nats); empty for HMC.
        train_seconds: Wall-clock time of training (HMC: warm-up and sampling).
        info: Extra facts: ``learned_noise`` (σ per network) and, for HMC, ``step_size``,
            ``acceptance``, ``divergences``, ``n_samples``.
        samples: HMC only: the NUTS samples themselves, ``{"weights": (S, D)}`` flat weight
            vectors of :class:`~core.regression.hmc.FlatMLP` and, for the learned noise,
            ``"log_noise": (S,)``; None for the other methods.
        source: ``"computed"`` now, ``"cache"`` or ``"shipped"`` (not stored).
    """

    method: str
    settings: dict
    plot: Predictive
    wide: Predictive
    metrics: dict[str, float]
    losses: list[float]
    train_seconds: float
    info: dict = field(default_factory=dict)
    samples: dict[str, torch.Tensor] | None = None
    source: str = "computed"

    def to_dict(self) -> dict:
        """What the cache file stores.

        Returns:
            The fields except ``source``, tensors and plain values only.
        """
        return {
            "method": self.method,
            "settings": self.settings,
            "plot": self.plot.to_dict(),
            "wide": self.wide.to_dict(),
            "metrics": self.metrics,
            "losses": self.losses,
            "train_seconds": self.train_seconds,
            "info": self.info,
            "samples": self.samples,
        }

    @classmethod
    def from_dict(cls, d: dict, source: str) -> RegressionFit:
        """The inverse of :meth:`to_dict`.

        Args:
            d: What :meth:`to_dict` returned.
            source: Where it was read from.

        Returns:
            The fit.
        """
        d = dict(d)
        d["plot"] = Predictive.from_dict(d["plot"])
        d["wide"] = Predictive.from_dict(d["wide"])
        return cls(**d, source=source)


def grids(data: RegressionData) -> tuple[torch.Tensor, torch.Tensor]:
    """The plotting grids of a data set.

    Args:
        data: The data set.

    Returns:
        ``(plot, wide)``: :data:`GRID_POINTS` inputs each over ``data.plot_range`` and
        ``data.wide_range``.
    """
    return (
        torch.linspace(*data.plot_range, GRID_POINTS),
        torch.linspace(*data.wide_range, GRID_POINTS),
    )


def fit_entry(data: RegressionData, method: str, settings: FitSettings) -> CacheEntry:
    """The cache entry of a fit.

    Args:
        data: The data set (its ``key`` is hashed).
        method: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters (only those the method depends on are hashed).

    Returns:
        The entry, which may not exist yet.
    """
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        settings={
            "data": data.key,
            "method": method,
            "settings": settings.for_method(method, data),
        },
        format="pt",
        prefix=f"{data.name}-{method}",
    )


def load_fit(data: RegressionData, method: str, settings: FitSettings) -> RegressionFit | None:
    """A stored fit: from the cache, else from the shipped fits.

    Args:
        data: The data set.
        method: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.

    Returns:
        The fit, or None when it has not been computed.
    """
    entry = fit_entry(data, method, settings)
    shipped = CacheEntry(REFERENCE_DIR / entry.path.name, "pt")
    return entry.read(lambda stored: RegressionFit.from_dict(stored, "cache")) or shipped.read(
        lambda stored: RegressionFit.from_dict(stored, "shipped")
    )


def _summaries(data, settings, functions) -> tuple[Predictive, Predictive, dict]:
    """Plot summaries and numbers from ``functions(x) -> (mean, log_var)``."""
    plot_x, wide_x = grids(data)
    plot = summarize(plot_x, *functions(plot_x))
    wide = summarize(wide_x, *functions(wide_x))
    metrics = regression_metrics(data.y_test, *functions(data.x_test), plot, data.inside(plot_x))
    return plot, wide, metrics


def compute_fit(
    data: RegressionData,
    method: str,
    settings: FitSettings,
    *,
    progress: ProgressFn | None = None,
    on_loss=None,
) -> RegressionFit:
    """Fit a method now, without the cache.

    Args:
        data: The data set.
        method: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.
        progress: Gets the fraction done.
        on_loss: Gradient methods: gets the loss history so far (see
            :func:`~core.regression.methods.train_network`).

    Returns:
        The fit (``source="computed"``).

    Raises:
        ValueError: If ``method`` is unknown.
    """
    if check_method(method).nuts:
        chain = run_nuts(data, settings, progress)
        plot, wide, metrics = _summaries(
            data, settings, lambda x: chain_functions(chain, settings, data, x)
        )
        noise = None if chain.log_noise is None else torch.exp(chain.log_noise).mean().item()
        info = {
            "step_size": chain.step_size,
            "acceptance": chain.acceptance,
            "divergences": chain.divergences,
            "n_samples": len(chain.weights),
            "learned_noise": None if noise is None else [noise],
        }
        losses, seconds, cpu_seconds = [], chain.seconds, chain.cpu_seconds
        samples = {"weights": chain.weights}
        if chain.log_noise is not None:
            samples["log_noise"] = chain.log_noise
    else:
        trained = train_network(method, data, settings, progress=progress, on_loss=on_loss)
        plot, wide, metrics = _summaries(
            data,
            settings,
            lambda x: predict(trained.net, x, settings.n_predict, seed=settings.seed),
        )
        info = {"learned_noise": trained.net.learned_noise()}
        losses, seconds, samples = trained.losses, trained.seconds, None
        cpu_seconds = trained.cpu_seconds
    metrics["train_seconds"] = seconds
    metrics["train_cpu_seconds"] = cpu_seconds
    report(progress, 1.0, "done")
    return RegressionFit(
        method=method,
        settings=settings.for_method(method, data),
        plot=plot,
        wide=wide,
        metrics=metrics,
        losses=losses,
        train_seconds=seconds,
        info=info,
        samples=samples,
    )


def fit_method(
    data: RegressionData,
    method: str,
    settings: FitSettings,
    *,
    progress: ProgressFn | None = None,
    on_loss=None,
    refresh: bool = False,
) -> RegressionFit:
    """A method's fit: stored, or computed now and stored.

    Args:
        data: The data set.
        method: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.
        progress: Gets the fraction done when computing.
        on_loss: Gradient methods: gets the loss history so far when computing.
        refresh: Compute again even when stored (e.g. to watch HMC run), and overwrite.

    Returns:
        The fit.
    """
    if not refresh:
        stored = load_fit(data, method, settings)
        if stored is not None:
            report(progress, 1.0, "from cache")
            return stored
    result = compute_fit(data, method, settings, progress=progress, on_loss=on_loss)
    fit_entry(data, method, settings).save(result.to_dict())
    return result


def fit_jobs(
    data: RegressionData, methods: list[str], settings: FitSettings, title=None
) -> list[Job]:
    """The fits not stored yet, as jobs for :func:`core.progress.run_all`.

    Args:
        data: The data set.
        methods: Keys of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.
        title: ``title(method) -> str`` naming each job; default the method's title.

    Returns:
        One job per missing fit, each storing its result.
    """
    title = title or (lambda m: VARIANTS[m].title)
    return [
        Job(title(m), lambda progress, m=m: fit_method(data, m, settings, progress=progress))
        for m in methods
        if load_fit(data, m, settings) is None
    ]


def ship_fit(data: RegressionData, method: str, settings: FitSettings) -> str:
    """Copy a cached fit into :data:`REFERENCE_DIR` so that it ships with the repository.

    Args:
        data: The data set.
        method: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.

    Returns:
        The shipped file's path.

    Raises:
        ValueError: If the fit is neither cached nor shipped.
    """
    entry = fit_entry(data, method, settings)
    target = CacheEntry(REFERENCE_DIR / entry.path.name, "pt")
    stored = entry.load()
    if stored is None:
        if target.exists():  # shipped already (and read from there)
            return str(target.path)
        raise ValueError(f"no cached {method} fit for {data.key}: run it first")
    target.save(stored)  # atomic
    return str(target.path)


def compared_numbers(fits: Mapping[str, RegressionFit]) -> dict[str, dict[str, float]]:
    """Each fit's numbers, with those that compare it to HMC's reference.

    Args:
        fits: Method → its fit on one data set, with one settings.

    Returns:
        Method → its :attr:`RegressionFit.metrics` plus ``std_vs_hmc`` (the gap between its
        predictive std and HMC's over the plot, :func:`~core.regression.metrics.band_difference`;
        NaN unless ``"hmc"`` is among the fits) and ``learned_noise`` (mean learned σ over
        the networks; NaN when σ is not learned).
    """
    reference = fits.get("hmc")
    numbers = {}
    for method, fit in fits.items():
        noise = fit.info.get("learned_noise")
        numbers[method] = fit.metrics | {
            "std_vs_hmc": band_difference(fit.plot, reference.plot) if reference else math.nan,
            "learned_noise": sum(noise) / len(noise) if noise else math.nan,
        }
    return numbers
