"""Accuracy and uncertainty against the FGSM ε on a test subset, cached on disk.

A :class:`RobustnessCurve` holds, at each ε of a grid, for one model: the accuracy of its
``n_eval_samples``-pass predictive mean on the FGSM examples, the mean predictive entropy and
mutual information (nats), and the AUROC of telling adversarial from clean inputs by each of
those two scores (clean = the unperturbed subset, adversarial = every perturbed input, hit or
not; 0.5 = chance, so ≈ 0.5 at ε = 0 by construction).

The FGSM direction sign(∇ₓ NLL) is computed once per model (on the clean inputs, with
``n_attack_samples`` passes per gradient; see :mod:`core.evaluation.attacks`) and scaled by
each ε. For a transfer attack it comes from another model (``source``). Monte-Carlo noise is
seeded, so a curve is reproducible; the global RNG is left as it was.

:func:`cached_curve` evaluates a checkpoint on ``n_inputs`` test images of its own task
(:func:`~core.storage.checkpoints.checkpoint_dataset`: MNIST, or Fashion-MNIST) drawn with
``seed`` (:func:`core.data.load_dataset`) and stores the curve in the disk cache
(:func:`core.storage.cache.cache_entry`), keyed by the contents of the attacked and of the
source checkpoint, the settings and :data:`CACHE_VERSION`, so a retrained checkpoint gets a
new curve.

For the page's examples: :func:`class_grid_direction` (the FGSM direction on the first test
image of each class) and :func:`targeted_trajectory` (one targeted iterative attack on one
test image, with its trajectory of class probabilities), cached the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.attacks import fgsm_direction, perturb, targeted_fgsm
from core.evaluation.metrics import auroc
from core.evaluation.uncertainty import summarize
from core.progress import Job, ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import checkpoint_dataset, load_checkpoint, shared_model

EPS_GRID = (0.0, 0.05, 0.1, 0.15, 0.2)
CACHE_VERSION = 3  # bump when what is computed or stored changes


@dataclass(frozen=True)
class CurveSettings:
    """What a curve depends on besides the models.

    Attributes:
        eps: The ε grid, in pixel units.
        n_inputs: Seeded MNIST test images.
        n_attack_samples: Passes per gradient (1 = naive, > 1 = EOT).
        n_eval_samples: Passes per prediction.
        seed: Seed of the subset and of the Monte-Carlo noise.
    """

    eps: tuple[float, ...] = EPS_GRID
    n_inputs: int = 1000
    n_attack_samples: int = 1
    n_eval_samples: int = 20
    seed: int = 0

    def to_dict(self) -> dict:
        """Give the settings as a JSON-ready dict (part of the cache key).

        Returns:
            Field name → value, ``eps`` as a list.
        """
        d = asdict(self)
        d["eps"] = list(self.eps)
        return d


@dataclass(frozen=True)
class RobustnessCurve:
    """Accuracy and uncertainty of one model at each ε of a grid.

    Attributes:
        eps: The ε grid, in pixel units.
        accuracy: Accuracy of the predictive mean per ε (fraction).
        entropy: Mean predictive entropy per ε (nats).
        mutual_information: Mean mutual information per ε (nats).
        auroc_entropy: AUROC of detecting the adversarial inputs by entropy, per ε.
        auroc_mutual_information: AUROC of detecting them by mutual information, per ε.
    """

    eps: tuple[float, ...]
    accuracy: tuple[float, ...]
    entropy: tuple[float, ...]
    mutual_information: tuple[float, ...]
    auroc_entropy: tuple[float, ...]
    auroc_mutual_information: tuple[float, ...]

    def to_dict(self) -> dict:
        """Give the curve as a JSON-ready dict (what the cache file stores).

        Returns:
            Field name → list of floats.
        """
        return {k: list(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> RobustnessCurve:
        """Rebuild a curve from :meth:`to_dict`'s output.

        Args:
            d: Field name → list of numbers.

        Returns:
            The curve.
        """
        return cls(**{k: tuple(float(x) for x in v) for k, v in d.items()})


def robustness_curve(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    settings: CurveSettings,
    *,
    source: torch.nn.Module | None = None,
    progress: ProgressFn | None = None,
) -> RobustnessCurve:
    """Compute the robustness curve of a model on labelled images.

    Args:
        model: The attacked model.
        images: ``(N, 1, 28, 28)`` in [0, 1].
        labels: ``(N,)`` int64 class labels.
        settings: The ε grid, passes and seed.
        source: Model the FGSM direction is crafted on (transfer); None for ``model`` itself
            (white-box).
        progress: Called with (fraction done, message); None for silence.

    Returns:
        The curve.
    """
    rows = []
    with seeded(settings.seed):
        report(progress, 0.0, "gradient")
        direction = fgsm_direction(source or model, images, labels, settings.n_attack_samples)
        torch.manual_seed(settings.seed + 1)  # same prediction noise whatever the attack
        clean = summarize(predictive_samples(model, images, settings.n_eval_samples))
        for i, eps in enumerate(settings.eps):
            report(progress, (i + 1) / (len(settings.eps) + 1), f"ε = {eps:g}")
            if eps == 0:
                summary = clean
            else:
                adv = perturb(images, direction, eps)
                summary = summarize(predictive_samples(model, adv, settings.n_eval_samples))
            rows.append(
                (
                    (summary.predicted == labels.cpu()).double().mean().item(),
                    summary.entropy.mean().item(),
                    summary.mutual_information.mean().item(),
                    auroc(clean.entropy, summary.entropy),
                    auroc(clean.mutual_information, summary.mutual_information),
                )
            )
    report(progress, 1.0, "done")
    return RobustnessCurve(tuple(settings.eps), *(tuple(col) for col in zip(*rows, strict=True)))


def curve_entry(
    checkpoint: str | Path, settings: CurveSettings, source: str | Path | None
) -> CacheEntry:
    """Give the cache entry where :func:`cached_curve` stores a curve.

    Args:
        checkpoint: The attacked checkpoint, registry name or ``.pt`` path.
        settings: The curve's settings.
        source: The checkpoint the attack is crafted on; None for white-box.

    Returns:
        The entry, keyed by both checkpoints' contents and the settings.
    """
    return cache_entry(
        "adversarial",
        CACHE_VERSION,
        checkpoints=(checkpoint, source),
        settings={**settings.to_dict(), "data": [checkpoint_dataset(checkpoint), "test"]},
    )


def is_cached(
    checkpoint: str | Path, settings: CurveSettings, source: str | Path | None = None
) -> bool:
    """Tell whether :func:`cached_curve` with these arguments would load without computing.

    Args:
        checkpoint: The attacked checkpoint, registry name or ``.pt`` path.
        settings: The curve's settings.
        source: The checkpoint the attack is crafted on; None for white-box.

    Returns:
        True when the curve is cached.
    """
    return curve_entry(checkpoint, settings, source).exists()


def cached_curve(
    checkpoint: str | Path,
    settings: CurveSettings,
    source: str | Path | None = None,
    *,
    progress: ProgressFn | None = None,
) -> RobustnessCurve:
    """Get a checkpoint's robustness curve: computed once (reporting progress), then loaded.

    Args:
        checkpoint: The attacked checkpoint, registry name or ``.pt`` path.
        settings: The ε grid, subset, passes and seed.
        source: The checkpoint FGSM is crafted on (transfer); None for the attacked one.
        progress: Called with (fraction done, message) while computing; None for silence.

    Returns:
        The curve.

    Raises:
        DatasetUnavailable: If the checkpoint's test set is missing.
        CheckpointError: If a checkpoint is missing or damaged.
    """

    def compute() -> RobustnessCurve:
        from core.data import load_dataset

        device = default_device()
        model = load_checkpoint(checkpoint, device)[0]
        crafter = None if source is None else load_checkpoint(source, device)[0]
        dataset = checkpoint_dataset(checkpoint)
        images, labels = load_dataset(
            dataset, "test", n_inputs=settings.n_inputs, seed=settings.seed
        )
        return robustness_curve(
            model, images.to(device), labels.to(device), settings, source=crafter, progress=progress
        )

    return curve_entry(checkpoint, settings, source).load_or_compute(
        compute, decode=RobustnessCurve.from_dict, encode=RobustnessCurve.to_dict
    )


def curve_jobs(
    checkpoints: dict[str, CurveSettings], source: str | None, *, title=str
) -> list[Job]:
    """List the curves not cached yet, as jobs.

    Args:
        checkpoints: Checkpoint name → its settings.
        source: The checkpoint the attacks are crafted on; None for white-box.
        title: Names a checkpoint in progress messages.

    Returns:
        A :class:`~core.progress.Job` per missing curve.
    """
    return [
        Job(
            title(name), lambda progress, n=name, s=s: cached_curve(n, s, source, progress=progress)
        )
        for name, s in checkpoints.items()
        if not is_cached(name, s, source)
    ]


@dataclass(frozen=True)
class TargetedSettings:
    """A targeted iterative FGSM on a seeded MNIST test subset.

    Each image is pushed towards the class after its label, (y + 1) mod 10.

    Attributes:
        n_inputs: Number of test images.
        step: Step α per iteration (pixel units).
        steps: Number of iterations.
        eps: L∞ budget around the clean image (pixel units).
        n_attack_samples: Passes per gradient (1 = naive, > 1 = EOT).
        n_eval_samples: Passes per prediction on clean and attacked images.
        seed: Seed of the subset and of the Monte-Carlo noise.
    """

    n_inputs: int = 500
    step: float = 0.01
    steps: int = 30
    eps: float = 0.2
    n_attack_samples: int = 20
    n_eval_samples: int = 20
    seed: int = 0


def targeted_detection(
    checkpoint: str | Path, settings: TargetedSettings, *, progress: ProgressFn | None = None
) -> dict[str, float]:
    """How often a targeted attack succeeds and how well uncertainty detects its images.

    Cached on disk like :func:`cached_curve`. A deterministic model is attacked with one pass
    per gradient whatever ``settings.n_attack_samples`` says (its gradient does not depend on
    it).

    Args:
        checkpoint: Registry name or ``.pt`` path of the attacked model.
        settings: The attack.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        ``{"success_rate", "accuracy", "auroc_entropy", "auroc_mutual_information",
        "entropy_clean", "entropy_adversarial", "mi_clean", "mi_adversarial"}``: fractions,
        AUROCs of telling attacked from clean images (0.5 = chance) and mean scores (nats).

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If the checkpoint's test set is missing.
    """
    dataset = checkpoint_dataset(checkpoint)
    key = asdict(settings) | ({} if dataset == "mnist" else {"data": dataset})
    entry = cache_entry("targeted", CACHE_VERSION, checkpoints=(checkpoint,), settings=key)
    return entry.load_or_compute(
        lambda: _targeted(checkpoint, dataset, settings, progress),
        decode=lambda stored: dict(stored.items()),
    )


def _targeted(
    checkpoint: str | Path, dataset: str, settings: TargetedSettings, progress: ProgressFn | None
) -> dict[str, float]:
    """The uncached study of :func:`targeted_detection`."""
    from core.data import load_dataset

    device = default_device()
    model = load_checkpoint(checkpoint, device)[0]
    images, labels = load_dataset(dataset, "test", n_inputs=settings.n_inputs, seed=settings.seed)
    images, labels = images.to(device), labels.to(device)
    target = (labels + 1) % 10
    k = settings.n_attack_samples if model.stochastic else 1
    chunks = list(zip(images.split(100), target.split(100), strict=True))
    adversarial = []
    with seeded(settings.seed):
        for i, (xb, tb) in enumerate(chunks):
            report(progress, i / len(chunks), f"attacking {i * 100}/{len(images)} images")
            result = targeted_fgsm(
                model,
                xb,
                tb,
                step=settings.step,
                steps=settings.steps,
                eps=settings.eps,
                n_samples=k,
                n_eval_samples=1,
            )
            adversarial.append(result.adversarial)
        adv = torch.cat(adversarial)
        clean = summarize(predictive_samples(model, images, settings.n_eval_samples))
        attacked = summarize(predictive_samples(model, adv, settings.n_eval_samples))
    report(progress, 1.0, "done")
    return {
        "success_rate": (attacked.predicted == target.cpu()).double().mean().item(),
        "accuracy": (attacked.predicted == labels.cpu()).double().mean().item(),
        "auroc_entropy": auroc(clean.entropy, attacked.entropy),
        "auroc_mutual_information": auroc(clean.mutual_information, attacked.mutual_information),
        "entropy_clean": clean.entropy.mean().item(),
        "entropy_adversarial": attacked.entropy.mean().item(),
        "mi_clean": clean.mutual_information.mean().item(),
        "mi_adversarial": attacked.mutual_information.mean().item(),
    }


def class_grid_direction(checkpoint: str | Path, n_attack_samples: int) -> torch.Tensor:
    """The FGSM direction on the first test image of each class, cached on disk (seeded).

    sign(∇ₓ NLL) of the checkpoint on :func:`core.data.class_examples` of its own task.

    Args:
        checkpoint: Registry name or ``.pt`` path of the model crafting the attack.
        n_attack_samples: Passes per gradient (1 = naive, > 1 = EOT).

    Returns:
        The direction ``(C, 1, 28, 28)`` in {−1, 0, 1}, in the order of
        :func:`core.data.class_examples`.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If the checkpoint's test set is missing.
    """
    dataset = checkpoint_dataset(checkpoint)
    key = {"n_attack_samples": n_attack_samples, "data": dataset}
    entry = cache_entry(
        "class_grid", CACHE_VERSION, checkpoints=(checkpoint,), settings=key, format="pt"
    )
    return entry.load_or_compute(lambda: _class_grid_direction(checkpoint, dataset, key))


def _class_grid_direction(checkpoint: str | Path, dataset: str, key: dict) -> torch.Tensor:
    from core.data import class_examples

    device = default_device()
    model = shared_model(checkpoint, device)
    x, y = class_examples(dataset)
    with seeded(0):
        return fgsm_direction(model, x.to(device), y.to(device), key["n_attack_samples"]).cpu()


@dataclass(frozen=True)
class TrajectorySettings:
    """One targeted iterative FGSM on one test image.

    Attributes:
        index: The test image (of the checkpoint's task).
        target: The class it is pushed towards.
        step: Step α per iteration (pixel units).
        steps: Number of iterations.
        eps: L∞ budget around the clean image (pixel units).
        n_attack_samples: Passes per gradient (1 = naive, > 1 = EOT).
        n_eval_samples: Passes per recorded prediction.
    """

    index: int = 0
    target: int = 3
    step: float = 0.01
    steps: int = 30
    eps: float = 0.2
    n_attack_samples: int = 1
    n_eval_samples: int = 20


@dataclass(frozen=True)
class Trajectory:
    """What a targeted attack did to one image.

    Attributes:
        adversarial: The attacked image ``(28, 28)`` in [0, 1].
        probs: The predictive mean before and after each iteration ``(steps + 1, C)``.
    """

    adversarial: torch.Tensor
    probs: torch.Tensor


def targeted_trajectory(checkpoint: str | Path, settings: TrajectorySettings) -> Trajectory:
    """A targeted iterative FGSM on one test image, cached on disk (seeded).

    Args:
        checkpoint: Registry name or ``.pt`` path of the attacked model (white-box).
        settings: The attack.

    Returns:
        The attacked image and the trajectory of its class probabilities.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If the checkpoint's test set is missing.
    """
    dataset = checkpoint_dataset(checkpoint)
    key = asdict(settings) | {"data": dataset}
    entry = cache_entry(
        "trajectory", CACHE_VERSION, checkpoints=(checkpoint,), settings=key, format="pt"
    )
    return entry.load_or_compute(
        lambda: _trajectory(checkpoint, dataset, settings),
        decode=lambda stored: Trajectory(**stored),
        encode=asdict,
    )


def _trajectory(checkpoint: str | Path, dataset: str, settings: TrajectorySettings) -> Trajectory:
    from core.data import load_dataset

    device = default_device()
    model = shared_model(checkpoint, device)
    x, _ = load_dataset(dataset, "test")
    i = settings.index
    with seeded(0):
        result = targeted_fgsm(
            model,
            x[i : i + 1].to(device),
            settings.target,
            step=settings.step,
            steps=settings.steps,
            eps=settings.eps,
            n_samples=settings.n_attack_samples,
            n_eval_samples=settings.n_eval_samples,
        )
    return Trajectory(result.adversarial[0, 0].cpu(), result.probs[:, 0].cpu())
