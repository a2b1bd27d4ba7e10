"""Accuracy and uncertainty against the FGSM ε on an MNIST test subset, cached on disk.

A :class:`RobustnessCurve` holds, at each ε of a grid, for one model: the accuracy of its
``n_eval_samples``-pass predictive mean on the FGSM examples, the mean predictive entropy and
mutual information (nats), and the AUROC of telling adversarial from clean inputs by each of
those two scores (clean = the unperturbed subset, adversarial = every perturbed input, hit or
not; 0.5 = chance, so ≈ 0.5 at ε = 0 by construction).

The FGSM direction sign(∇ₓ NLL) is computed once per model (on the clean inputs, with
``n_attack_samples`` passes per gradient; see :mod:`core.evaluation.attacks`) and scaled by
each ε. For a transfer attack it comes from another model (``source``). Monte-Carlo noise is
seeded, so a curve is reproducible; the global RNG is left as it was.

:func:`cached_curve` evaluates a checkpoint on ``n_inputs`` MNIST test images drawn with
``seed`` (:func:`core.data.load_dataset`) and stores the curve in the disk cache
(:func:`core.storage.cache.cache_entry`), keyed by the contents of the attacked and of the
source checkpoint, the settings and :data:`CACHE_VERSION`, so a retrained checkpoint gets a
new curve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core.engine.device import default_device
from core.engine.sampler import predictive_samples
from core.evaluation.attacks import fgsm_direction, perturb
from core.evaluation.metrics import auroc
from core.evaluation.uncertainty import summarize
from core.progress import Job, ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.checkpoints import load_checkpoint

EPS_GRID = (0.0, 0.05, 0.1, 0.15, 0.2)
CACHE_VERSION = 3  # bump when what is computed or stored changes


@dataclass(frozen=True)
class CurveSettings:
    """What a curve depends on besides the models: ε grid (pixel units), ``n_inputs`` seeded
    MNIST test images, passes per gradient (1 = naive, > 1 = EOT) and per
    prediction, and the seed of the Monte-Carlo noise."""

    eps: tuple[float, ...] = EPS_GRID
    n_inputs: int = 1000
    n_attack_samples: int = 1
    n_eval_samples: int = 20
    seed: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["eps"] = list(self.eps)
        return d


@dataclass(frozen=True)
class RobustnessCurve:
    """Per ε of ``eps``: accuracy (fraction), mean entropy and mutual information (nats), and
    AUROC of detecting the adversarial inputs by each score."""

    eps: tuple[float, ...]
    accuracy: tuple[float, ...]
    entropy: tuple[float, ...]
    mutual_information: tuple[float, ...]
    auroc_entropy: tuple[float, ...]
    auroc_mutual_information: tuple[float, ...]

    def to_dict(self) -> dict:
        return {k: list(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> RobustnessCurve:
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
    """The curve of ``model`` on ``images (N, 1, 28, 28)`` in [0, 1] with ``labels (N,)``;
    FGSM crafted on ``source`` (transfer) or, when None, on ``model`` itself (white-box)."""
    devices = [images.device] if images.device.type == "cuda" else []
    rows = []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(settings.seed)
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
    """Where :func:`cached_curve` stores the curve of these arguments."""
    return cache_entry(
        "adversarial",
        CACHE_VERSION,
        checkpoints=(checkpoint, source),
        settings={**settings.to_dict(), "data": ["mnist", "test"]},
    )


def is_cached(
    checkpoint: str | Path, settings: CurveSettings, source: str | Path | None = None
) -> bool:
    """Whether :func:`cached_curve` with these arguments would load without computing."""
    return curve_entry(checkpoint, settings, source).exists()


def cached_curve(
    checkpoint: str | Path,
    settings: CurveSettings,
    source: str | Path | None = None,
    *,
    progress: ProgressFn | None = None,
) -> RobustnessCurve:
    """The curve of ``checkpoint`` (registry name or ``.pt`` path) against FGSM crafted on
    ``source`` (transfer) or on itself (None); computed once (reporting progress), then loaded.
    Raises :class:`core.data.DatasetUnavailable` or
    :class:`core.storage.checkpoints.CheckpointError`."""
    entry = curve_entry(checkpoint, settings, source)
    try:
        return RobustnessCurve.from_dict(entry.load())
    except (ValueError, TypeError, AttributeError):  # absent, corrupt, other version
        pass
    from core.data import load_dataset

    device = default_device()
    model = load_checkpoint(checkpoint, device)[0]
    crafter = None if source is None else load_checkpoint(source, device)[0]
    images, labels = load_dataset("mnist", "test", n_inputs=settings.n_inputs, seed=settings.seed)
    curve = robustness_curve(
        model, images.to(device), labels.to(device), settings, source=crafter, progress=progress
    )
    entry.save(curve.to_dict())
    return curve


def curve_jobs(
    checkpoints: dict[str, CurveSettings], source: str | None, *, title=str
) -> list[Job]:
    """A :class:`~core.progress.Job` per curve of ``checkpoints`` (name → its settings) not
    cached yet; ``title`` names a checkpoint in progress messages."""
    return [
        Job(
            title(name), lambda progress, n=name, s=s: cached_curve(n, s, source, progress=progress)
        )
        for name, s in checkpoints.items()
        if not is_cached(name, s, source)
    ]
