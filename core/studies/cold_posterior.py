"""Cold posteriors: SGLD's temperature against its error, calibration and the spread of its samples.

SGLD samples the tempered posterior p(θ | D)^(1/T): at T = 1 the Bayesian posterior, below it a
sharper one that collapses onto the most probable network as T → 0 (Wenzel et al. 2020, "How
good is the Bayes posterior in deep neural networks really?"). The study trains the shipped
SGLD recipe at each temperature of :data:`TEMPERATURES` — the temperatures a registered model
is trained at are its shipped checkpoint (``sgld_t1`` at T = 1, ``sgld`` at T = 0.001), the
others are trained here with the same recipe and seed — and measures, per temperature:

* the test error, NLL (nats) and ECE of the predictive mean of the 8 kept networks on the
  10,000 MNIST test images;
* the **spread of the samples** (:func:`rotated_spread`): the mean mutual information (nats)
  between the prediction and the sampled network on rotated test digits (every angle of the
  rotation grid, :data:`core.evaluation.shift.SHIFTS`), the numbers of the Calibration page's
  shift table. Zero when the samples are one network.

Each temperature's point (:func:`temperature_point`) is computed once and cached by the shipped
checkpoint's content, or the epochs it is trained for, and the settings;
:func:`cold_posterior_study` gathers them and :func:`stored_cold_posterior` only reads them (the
page). The floor
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
from core.methods import ModelConfig, build_model, method
from core.progress import ProgressFn, report, share
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import CheckpointSpec, load_checkpoint
from core.studies.calibration.validation import predictive
from core.training import train

STUDY = "cold_posterior"
CACHE_VERSION = 1  # bump when what is computed or stored changes
RECIPE = "sgld_t1"
"""The registered model whose recipe every temperature shares (its temperature replaced)."""
TEMPERATURES = (1.0, 0.1, 0.01, 0.001)
SHIFT = "rotation"
SPREAD_FLOOR = 0.002
"""Mean mutual information on rotated digits (nats) below which a sampler's samples do not
differ enough to be called posterior samples. Measured (:data:`SPREAD_SETTINGS`, the recipe of
``sgld`` at each temperature): T = 1 0.22, T = 0.1 0.040, T = 0.01 0.0048, T = 0.001 (``sgld``)
0.0009; cyclical SG-MCMC (T = 0.01, restarted every cycle) 0.049. The floor lies between the
two coldest, near their geometric mean (0.0021): twice the shipped cold SGLD's spread and less
than half that of the next temperature, so no measured model is a borderline call."""
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
        n_samples: Passes per test image for the error, NLL and ECE: 8, each of the 8 samples
            once (the exact mean of the samples).
        seed: Seed of the Monte-Carlo noise of the test-set passes.
        spread: How the spread of the samples is measured.
    """

    temperatures: tuple[float, ...] = TEMPERATURES
    epochs: int = REGISTRY[RECIPE].training.epochs
    n_samples: int = 8
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
        seconds: Wall-clock seconds of its computation (training included).
    """

    temperature: float
    checkpoint: str
    epochs: int
    test_error: float
    nll: float
    ece: float
    mutual_information: float
    seconds: float

    @property
    def samples_differ(self) -> bool:
        """Whether its samples' spread reaches :data:`SPREAD_FLOOR`."""
        return self.mutual_information >= SPREAD_FLOOR

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
    """

    points: list[TemperaturePoint]
    settings: dict

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
        spec.model.params["temperature"]: name
        for name, spec in REGISTRY.items()
        if spec.model.kind == recipe.model.kind
        and at_temperature(spec.model, recipe.model.params["temperature"]) == recipe.model
        and spec.dataset == recipe.dataset
        and spec.training == recipe.training
    }


def at_temperature(model: ModelConfig, temperature: float) -> ModelConfig:
    """The same model with its sampler at ``temperature``."""
    return replace(model, params=model.params | {"temperature": temperature})


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


def spread_caveat(name: str) -> str:
    """What a page says under a shipped sampler whose samples barely differ.

    Reads the stored spread only (:func:`spread_entry`); computes nothing.

    Args:
        name: A registry name, or another model's name (e.g. ``user:NAME``).

    Returns:
        One sentence for a registered sampler whose stored spread is below
        :data:`SPREAD_FLOOR`; "" otherwise (other models, or no stored spread).
    """
    spec = REGISTRY.get(name)
    if spec is None or not is_sampler(spec):
        return ""
    spread = spread_entry(name).read(float)
    if spread is None or spread >= SPREAD_FLOOR:
        return ""
    return (
        f"Its {spec.model.params['members']} samples {CAVEAT}: their mutual information on rotated "
        f"digits is {spread:.4f} nats, below {SPREAD_FLOOR} — a cold posterior acts as one "
        "network, so the spread shown here is not a posterior's uncertainty."
    )


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
    training = replace(spec.training, epochs=epochs)
    model = build_model(at_temperature(spec.model, temperature), seed=training.seed)
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


def point_entry(temperature: float, settings: ColdSettings = ColdSettings()) -> CacheEntry:
    """Give the cache entry of one temperature's point.

    Args:
        temperature: One of ``settings.temperatures``.
        settings: Epochs, passes and seeds.

    Returns:
        The entry, keyed by the shipped checkpoint's content at that temperature (if any),
        else by the recipe it is trained with, and the measurement's settings.
    """
    name = shipped_at().get(temperature)
    spec = REGISTRY[RECIPE]
    recipe = {
        "model": at_temperature(spec.model, temperature).to_dict(),
        "training": asdict(replace(spec.training, epochs=settings.epochs)),
        "train_subset": spec.train_subset,
    }
    return cache_entry(
        STUDY,
        CACHE_VERSION,
        checkpoints=(name,) if name else (),
        settings={
            "part": "point",
            "temperature": temperature,
            "recipe": None if name else recipe,  # a shipped checkpoint's content is its recipe
            "n_samples": settings.n_samples,
            "seed": settings.seed,
            "spread": asdict(settings.spread),
        },
        prefix=f"point-T{temperature:g}",
    )


def temperature_point(
    temperature: float,
    settings: ColdSettings = ColdSettings(),
    progress: ProgressFn | None = None,
) -> TemperaturePoint:
    """SGLD at one temperature: test error, NLL, ECE and the spread of its samples, cached.

    The shipped checkpoint of that temperature if there is one, else the recipe trained here
    (seeded, ``settings.epochs`` epochs; about 9 minutes for 65 on a quiet CPU thread).

    Args:
        temperature: The temperature T.
        settings: Epochs, passes and seeds.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The point.

    Raises:
        DatasetUnavailable: If MNIST is missing.
        CheckpointError: If the shipped checkpoint is missing or damaged.
    """

    def compute() -> TemperaturePoint:
        from core.data import load_dataset

        start = time.perf_counter()
        name = shipped_at().get(temperature)
        model, epochs = (
            _shipped(name)
            if name
            else _trained_at(temperature, settings.epochs, share(progress, 0, 3, "training"))
        )
        test = load_dataset("mnist", "test")
        metrics = _evaluate(model, test, settings, share(progress, 1, 3))
        spread = rotated_spread(model, settings.spread, share(progress, 2, 3))
        report(progress, 1.0, "done")
        return TemperaturePoint(
            temperature=temperature,
            checkpoint=name or "",
            epochs=epochs,
            mutual_information=spread,
            seconds=time.perf_counter() - start,
            **metrics,
        )

    return point_entry(temperature, settings).load_or_compute(
        compute, decode=lambda stored: TemperaturePoint(**stored), encode=asdict
    )


def stored_cold_posterior(settings: ColdSettings = ColdSettings()) -> ColdPosteriorStudy | None:
    """The stored study, without computing anything.

    Args:
        settings: Temperatures, epochs, passes and seeds.

    Returns:
        The study (its points cached or shipped), or None when a point was never computed for
        these files and settings.
    """
    entries = [point_entry(t, settings) for t in settings.temperatures]
    points = [e.read(lambda stored: TemperaturePoint(**stored)) for e in entries]
    if any(p is None for p in points):
        return None
    return ColdPosteriorStudy(points, asdict(settings))


def cold_posterior_study(
    settings: ColdSettings = ColdSettings(), progress: ProgressFn | None = None
) -> ColdPosteriorStudy:
    """SGLD at each temperature (:func:`temperature_point`), computed once and cached.

    Two SGLD trainings the first time (the temperatures without a shipped model).

    Args:
        settings: Temperatures, epochs, passes and seeds.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The study.

    Raises:
        DatasetUnavailable: If MNIST is missing.
        CheckpointError: If a shipped checkpoint is missing or damaged.
    """
    n = len(settings.temperatures)
    points = [
        temperature_point(t, settings, share(progress, i, n, f"T = {t:g}"))
        for i, t in enumerate(settings.temperatures)
    ]
    return ColdPosteriorStudy(points, asdict(settings))
