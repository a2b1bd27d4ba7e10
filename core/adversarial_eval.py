"""Accuracy and uncertainty against the FGSM ε on an MNIST test subset, cached on disk.

A :class:`RobustnessCurve` holds, at each ε of a grid, for one model: the accuracy of its
``eval_samples``-pass predictive mean on the FGSM examples, the mean predictive entropy and
mutual information (nats), and the AUROC of telling adversarial from clean inputs by each of
those two scores (clean = the unperturbed subset, adversarial = every perturbed input, hit or
not; 0.5 = chance, so ≈ 0.5 at ε = 0 by construction).

The FGSM direction sign(∇ₓ NLL) is computed once per model (on the clean inputs, with
``attack_samples`` passes per gradient; see :mod:`core.attacks`) and scaled by each ε. For a
transfer attack it comes from another model (``source``). Monte-Carlo noise is seeded, so a
curve is reproducible; the global RNG is left as it was.

:func:`cached_curve` evaluates a checkpoint on ``num_images`` MNIST test images drawn with
``seed`` (:func:`core.data.load_dataset`) and stores the curve in
``cache_dir()/adversarial/<key>.json``; the key hashes the bytes of the attacked and of the
source checkpoint (:func:`core.evalcache.content_hash`), the settings and
:data:`CACHE_VERSION`, so a retrained checkpoint gets a new curve.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core.atomic import atomic_write
from core.attacks import fgsm_direction, perturb
from core.checkpoints import load_checkpoint
from core.device import default_device
from core.evalcache import content_hash, resolve_checkpoint
from core.metrics import auroc
from core.paths import cache_dir
from core.predictive import predictive_samples
from core.progress import ProgressFn, report
from core.uncertainty import summarize

EPS_GRID = (0.0, 0.05, 0.1, 0.15, 0.2)
CACHE_VERSION = 2  # bump when what is computed or stored changes


@dataclass(frozen=True)
class CurveSettings:
    """What a curve depends on besides the models: ε grid (pixel units), the first
    ``num_images`` MNIST test images, passes per gradient (1 = naive, > 1 = EOT) and per
    prediction, and the seed of the Monte-Carlo noise."""

    eps: tuple[float, ...] = EPS_GRID
    num_images: int = 1000
    attack_samples: int = 1
    eval_samples: int = 20
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
        direction = fgsm_direction(source or model, images, labels, settings.attack_samples)
        torch.manual_seed(settings.seed + 1)  # same prediction noise whatever the attack
        clean = summarize(predictive_samples(model, images, settings.eval_samples))
        for i, eps in enumerate(settings.eps):
            report(progress, (i + 1) / (len(settings.eps) + 1), f"ε = {eps:g}")
            if eps == 0:
                summary = clean
            else:
                adv = perturb(images, direction, eps)
                summary = summarize(predictive_samples(model, adv, settings.eval_samples))
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


def curve_file(checkpoint: str | Path, settings: CurveSettings, source: str | Path | None) -> Path:
    """Where :func:`cached_curve` stores the curve of these arguments."""
    key = json.dumps(
        {
            "version": CACHE_VERSION,
            "checkpoint": content_hash(resolve_checkpoint(checkpoint)),
            "source": None if source is None else content_hash(resolve_checkpoint(source)),
            "settings": settings.to_dict(),
            "data": ["mnist", "test"],
        },
        sort_keys=True,
    )
    return cache_dir() / "adversarial" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def is_cached(
    checkpoint: str | Path, settings: CurveSettings, source: str | Path | None = None
) -> bool:
    """Whether :func:`cached_curve` with these arguments would load without computing."""
    return curve_file(checkpoint, settings, source).is_file()


def cached_curve(
    checkpoint: str | Path,
    settings: CurveSettings,
    source: str | Path | None = None,
    *,
    progress: ProgressFn | None = None,
) -> RobustnessCurve:
    """The curve of ``checkpoint`` (registry name or ``.pt`` path) against FGSM crafted on
    ``source`` (transfer) or on itself (None); computed once (reporting progress), then loaded.
    Raises :class:`core.data.DatasetUnavailable` or :class:`core.checkpoints.CheckpointError`."""
    file = curve_file(checkpoint, settings, source)
    try:
        return RobustnessCurve.from_dict(json.loads(file.read_text()))
    except (OSError, ValueError, TypeError, AttributeError):  # absent, corrupt, other version
        pass
    from core.data import load_dataset

    device = default_device()
    model = load_checkpoint(resolve_checkpoint(checkpoint), device)[0]
    crafter = None if source is None else load_checkpoint(resolve_checkpoint(source), device)[0]
    images, labels = load_dataset("mnist", "test", n=settings.num_images, seed=settings.seed)
    curve = robustness_curve(
        model, images.to(device), labels.to(device), settings, source=crafter, progress=progress
    )
    text = json.dumps(curve.to_dict()).encode()
    atomic_write(file, lambda f: f.write(text))
    return curve
