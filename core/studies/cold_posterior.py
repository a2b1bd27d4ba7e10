"""Cold posteriors: SGLD's temperature against its error, calibration and the spread of its samples.

SGLD samples the tempered posterior p(θ | D)^(1/T): at T = 1 the Bayesian posterior, below it a
sharper one that collapses onto the most probable network as T → 0 (Wenzel et al. 2020, "How
good is the Bayes posterior in deep neural networks really?"). The study trains the shipped
SGLD recipe at each temperature of :data:`TEMPERATURES` — the temperatures a registered model
is trained at are its shipped checkpoint (``sgld_t1`` at T = 1, ``sgld`` at T = 0.001), the
others are trained here with the same recipe and seed — and measures, per temperature:

* the test error, NLL (nats) and ECE of the predictive mean on the 10,000 MNIST test images;
* the **spread of the samples** (:func:`rotated_spread`): the mean mutual information (nats)
  between the prediction and the sampled network on rotated test digits (every angle of the
  rotation grid, :data:`core.evaluation.shift.SHIFTS`), the numbers of the Calibration page's
  shift table. Zero when the samples are one network.

:func:`cold_posterior_study` computes once and caches the result by the checkpoints' content and
the settings (:func:`stored_cold_posterior` only reads it: the page). The floor
(:data:`SPREAD_FLOOR`, :func:`samples_differ`) says whether a sampler's samples differ enough to
be shown as posterior samples; :func:`sample_spread` caches one checkpoint's spread.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from core.catalogue import REGISTRY
from core.engine.device import default_device
from core.engine.samples import WeightSamples
from core.evaluation.calibration import calibration_metrics
from core.evaluation.shift import SHIFTS, shift_images
from core.methods import build_model, method
from core.progress import ProgressFn, report, share
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import CheckpointSpec, load_checkpoint
from core.studies.calibration import predictive
from core.training import train

STUDY = "cold_posterior"
CACHE_VERSION = 1  # bump when what is computed or stored changes
RECIPE = "sgld_t1"
"""The registered model whose recipe every temperature shares (its temperature replaced)."""
TEMPERATURES = (1.0, 0.1, 0.01, 0.001)
SHIFT = "rotation"
SPREAD_FLOOR = 0.002
"""Mean mutual information on rotated digits (nats) below which a sampler's samples do not
differ enough to be called posterior samples. Measured (:data:`SPREAD_SETTINGS`): SGLD at
T = 0.001 0.0005, at T = 0.01 0.0013; cyclical SG-MCMC (T = 0.01) 0.011; SGLD at T = 1 0.04; BBB
and MC dropout 0.07–0.10. The floor sits 4× above the cold SGLD and 5× below the cyclical
sampler: below it the samples are, to the predictions, one network."""
METRICS = {
    "test_error": ("Test error", "{:.2%}"),
    "nll": ("NLL (nats)", "{:.4f}"),
    "ece": ("ECE", "{:.4f}"),
    "mutual_information": ("Spread of the samples (MI, nats)", "{:.4f}"),
}
"""Each measured field of a :class:`TemperaturePoint`: its name on the page and its format."""
CAVEAT = "barely differ"
"""The words a sampler below :data:`SPREAD_FLOOR` says of its samples (title or description)."""
CLAIM = "posterior sample"
"""The words that present a model's networks as samples of the posterior."""


@dataclass(frozen=True)
class SpreadSettings:
    """What the spread of a model's samples is measured on.

    Attributes:
        n_inputs: Test images drawn with ``seed``, rotated by every angle of the grid.
        n_samples: Passes per input (the stored samples, cycled, for a sampler).
        seed: Seed of the subset and of the Monte-Carlo noise.
    """

    n_inputs: int = 2000
    n_samples: int = 20
    seed: int = 0


SPREAD_SETTINGS = SpreadSettings()
"""Those of the Calibration page's shift section by default: its table shows the same MI."""


@dataclass(frozen=True)
class ColdSettings:
    """What the temperature study depends on besides the shipped checkpoints.

    Attributes:
        temperatures: The temperatures, hottest first.
        epochs: Epochs of the models the study trains (the shipped ones keep their recipe's).
        n_samples: Passes per test image for the error, NLL and ECE.
        seed: Seed of the Monte-Carlo noise of the test-set passes.
        spread: How the spread of the samples is measured.
    """

    temperatures: tuple[float, ...] = TEMPERATURES
    epochs: int = REGISTRY[RECIPE].training.epochs
    n_samples: int = 100
    seed: int = 0
    spread: SpreadSettings = field(default_factory=SpreadSettings)


@dataclass(frozen=True)
class TemperaturePoint:
    """SGLD at one temperature.

    Attributes:
        temperature: T (1 = the posterior).
        checkpoint: The shipped model's registry name; "" for a model the study trained.
        epochs: Epochs it was trained for.
        test_error: Error of the predictive mean on the test set (fraction).
        nll: Test NLL of the predictive mean (nats per image).
        ece: Test expected calibration error (fraction, 15 bins).
        mutual_information: Mean mutual information on rotated test digits (nats): the spread
            of the samples.
    """

    temperature: float
    checkpoint: str
    epochs: int
    test_error: float
    nll: float
    ece: float
    mutual_information: float

    def formatted(self, metric: str) -> str:
        """One measured field as the page shows it.

        Args:
            metric: A key of :data:`METRICS`.

        Returns:
            The value in the metric's format, e.g. ``"1.57%"``.
        """
        return METRICS[metric][1].format(getattr(self, metric))


@dataclass(frozen=True)
class ColdPosteriorStudy:
    """SGLD's temperature against its error, calibration and sample spread.

    Attributes:
        points: One per temperature, hottest first.
        settings: What it was computed with (``asdict`` of :class:`ColdSettings`).
        seconds: Wall-clock seconds of the computation (training included).
    """

    points: list[TemperaturePoint]
    settings: dict
    seconds: float

    def to_dict(self) -> dict:
        """Give the fields as a JSON-ready dict (what the cache file stores).

        Returns:
            Field name → value.
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, stored: dict) -> ColdPosteriorStudy:
        """Rebuild a study from :meth:`to_dict`'s output.

        Args:
            stored: The stored dict.

        Returns:
            The study.
        """
        points = [TemperaturePoint(**p) for p in stored["points"]]
        return cls(points=points, settings=stored["settings"], seconds=stored["seconds"])

    def at(self, temperature: float) -> TemperaturePoint:
        """The point of one temperature.

        Args:
            temperature: One of the study's temperatures.

        Returns:
            Its point.

        Raises:
            KeyError: If the study has no such temperature.
        """
        for point in self.points:
            if point.temperature == temperature:
                return point
        raise KeyError(f"the study has no T = {temperature:g}")


def is_sampler(spec: CheckpointSpec) -> bool:
    """Whether a registered model predicts from stored weight samples (SGLD, cyclical SG-MCMC).

    Args:
        spec: A registered model.

    Returns:
        True when its method's model keeps MCMC samples.
    """
    return issubclass(method(spec.model.kind).model_class, WeightSamples)


def shipped_at() -> dict[float, str]:
    """The registered models trained with the study's recipe, by temperature.

    Returns:
        Temperature → registry name (``sgld_t1`` at 1, ``sgld`` at 0.001).
    """
    recipe = REGISTRY[RECIPE]
    return {
        spec.training.temperature: name
        for name, spec in REGISTRY.items()
        if spec.model == recipe.model
        and spec.dataset == recipe.dataset
        and replace(spec.training, temperature=recipe.training.temperature) == recipe.training
    }


def rotated_spread(
    model: torch.nn.Module,
    settings: SpreadSettings = SPREAD_SETTINGS,
    progress: ProgressFn | None = None,
) -> float:
    """The spread of a model's samples: its mean mutual information on rotated test digits.

    The mutual information I(y; θ) = H[mean p] − mean H[p] (nats) of each input, averaged over
    the inputs and every angle of the rotation grid (0–180°). It is zero when every sampled
    network gives the same probabilities.

    Args:
        model: The network, on its device (not modified).
        settings: Subset, passes and seed.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        The mean mutual information in nats.
    """
    from core.data import load_dataset

    images, _ = load_dataset("mnist", "test", n_inputs=settings.n_inputs, seed=settings.seed)
    grid = SHIFTS[SHIFT].severities
    means = []
    for i, angle in enumerate(grid):
        rotated = shift_images(images, SHIFT, angle, settings.seed)
        _, scores = predictive(
            model, rotated, settings.n_samples, settings.seed, share(progress, i, len(grid))
        )
        means.append(scores["mutual_information"].double().mean().item())
    report(progress, 1.0, "rotated digits")
    return sum(means) / len(means)


def spread_entry(checkpoint: str | Path, settings: SpreadSettings = SPREAD_SETTINGS) -> CacheEntry:
    """Give the cache entry of one checkpoint's spread.

    Args:
        checkpoint: Registry name or ``.pt`` path; the key uses the file's content hash.
        settings: Subset, passes and seed.

    Returns:
        The entry.
    """
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        checkpoints=(checkpoint,),
        settings={"part": "spread", "shift": SHIFT, **asdict(settings)},
        prefix="spread",
    )


def sample_spread(
    checkpoint: str | Path,
    settings: SpreadSettings = SPREAD_SETTINGS,
    progress: ProgressFn | None = None,
) -> float:
    """A checkpoint's :func:`rotated_spread`, computed once and cached by its content.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        settings: Subset, passes and seed.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The mean mutual information on rotated test digits, in nats.

    Raises:
        CheckpointError: If the checkpoint is missing or damaged.
    """

    def compute() -> float:
        model, _ = load_checkpoint(checkpoint, default_device())
        return rotated_spread(model, settings, progress)

    return spread_entry(checkpoint, settings).load_or_compute(
        compute, decode=float, encode=lambda v: v
    )


def samples_differ(checkpoint: str | Path, settings: SpreadSettings = SPREAD_SETTINGS) -> bool:
    """Whether a sampler's samples differ enough to be shown as posterior samples.

    Args:
        checkpoint: Registry name or ``.pt`` path.
        settings: Subset, passes and seed of the spread.

    Returns:
        True when :func:`sample_spread` reaches :data:`SPREAD_FLOOR`.
    """
    return sample_spread(checkpoint, settings) >= SPREAD_FLOOR


def _evaluate(
    model: torch.nn.Module,
    test: tuple[torch.Tensor, torch.Tensor],
    settings: ColdSettings,
    progress: ProgressFn | None,
) -> dict[str, float]:
    """Test error, NLL and ECE of the predictive mean."""
    mean, _ = predictive(model, test[0], settings.n_samples, settings.seed, progress, "test ")
    metrics = calibration_metrics(mean, test[1])
    return {"test_error": 1.0 - metrics["accuracy"], "nll": metrics["nll"], "ece": metrics["ece"]}


def _trained_at(
    temperature: float, epochs: int, progress: ProgressFn | None
) -> tuple[torch.nn.Module, int]:
    """The recipe's model trained at ``temperature`` for ``epochs`` epochs, in eval mode."""
    from core.data import load_dataset

    spec = REGISTRY[RECIPE]
    training = replace(spec.training, temperature=temperature, epochs=epochs)
    model = build_model(spec.model, seed=training.seed)
    train_data = load_dataset(spec.dataset, "train", n_inputs=spec.train_subset)
    test = load_dataset(spec.dataset, "test")
    train(
        model,
        training,
        train_data,
        test,
        device=default_device(),
        progress=progress,
        procedure=method(spec.model.kind).procedure,
    )
    return model.eval().requires_grad_(False), epochs


def _shipped(name: str) -> tuple[torch.nn.Module, int]:
    model, meta = load_checkpoint(name, default_device())
    return model, int(meta.get("epochs", REGISTRY[name].training.epochs))


def study_entry(settings: ColdSettings = ColdSettings()) -> CacheEntry:
    """Give the cache entry of the study.

    Args:
        settings: Temperatures, epochs, passes and seeds.

    Returns:
        The entry, keyed by the shipped checkpoints' content and the settings.
    """
    ends = shipped_at()
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        checkpoints=tuple(ends[t] for t in settings.temperatures if t in ends),
        settings={"part": "study", "recipe": RECIPE, **asdict(settings)},
        prefix="study",
    )


def stored_cold_posterior(settings: ColdSettings = ColdSettings()) -> ColdPosteriorStudy | None:
    """The stored study, without computing anything.

    Args:
        settings: Temperatures, epochs, passes and seeds.

    Returns:
        The study (cached or shipped), or None when it was never computed for these files.
    """
    return study_entry(settings).read(ColdPosteriorStudy.from_dict)


def cold_posterior_study(
    settings: ColdSettings = ColdSettings(), progress: ProgressFn | None = None
) -> ColdPosteriorStudy:
    """SGLD at each temperature: test error, NLL, ECE and the spread of its samples, cached.

    A temperature with a registered model of the recipe uses its shipped checkpoint; the others
    are trained here (seeded, ``settings.epochs`` epochs; about 9 minutes each on one CPU
    thread), so the first call takes a while.

    Args:
        settings: Temperatures, epochs, passes and seeds.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The study.

    Raises:
        DatasetUnavailable: If MNIST is missing.
        CheckpointError: If a shipped checkpoint is missing or damaged.
    """

    def compute() -> ColdPosteriorStudy:
        from core.data import load_dataset

        start = time.perf_counter()
        ends = shipped_at()
        test = load_dataset("mnist", "test")
        points = []
        steps = 3 * len(settings.temperatures)
        for i, t in enumerate(settings.temperatures):
            part = share(progress, 3 * i, steps, f"T = {t:g}")
            model, epochs = (
                _shipped(ends[t]) if t in ends else _trained_at(t, settings.epochs, part)
            )
            metrics = _evaluate(model, test, settings, share(progress, 3 * i + 1, steps))
            spread = rotated_spread(model, settings.spread, share(progress, 3 * i + 2, steps))
            points.append(
                TemperaturePoint(
                    temperature=t,
                    checkpoint=ends.get(t, ""),
                    epochs=epochs,
                    mutual_information=spread,
                    **metrics,
                )
            )
        report(progress, 1.0, "done")
        return ColdPosteriorStudy(points, asdict(settings), time.perf_counter() - start)

    return study_entry(settings).load_or_compute(
        compute, decode=ColdPosteriorStudy.from_dict, encode=ColdPosteriorStudy.to_dict
    )
