"""Stated values of the Calibration page's cold-posterior section (SGLD against temperature)."""

from __future__ import annotations

from core.stated.registry import stated
from core.studies.cold_posterior import (
    METRICS,
    SPREAD_FLOOR,
    cold_posterior_study,
    sample_spread,
)


@stated("cold_posterior")
def cold_posterior(temperature: str, metric: str) -> str:
    """One measured value of SGLD at one temperature, e.g. ``cold_posterior 1 ece`` → ``0.0050``.

    ``metric``: a key of :data:`~core.studies.cold_posterior.METRICS`.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, not {metric!r}")
    return cold_posterior_study().at(float(temperature)).formatted(metric)


@stated("sample_spread")
def spread(checkpoint: str) -> str:
    """A shipped sampler's mean mutual information on rotated digits (nats), 4 decimals."""
    return f"{sample_spread(checkpoint):.4f}"


@stated("spread_floor")
def spread_floor() -> str:
    """The mutual information below which a sampler's samples barely differ (nats)."""
    return f"{SPREAD_FLOOR:g}"
