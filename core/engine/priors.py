"""Weight priors and the complexity cost KL(q || p) of a mean-field Gaussian posterior.

* :class:`GaussianPrior` N(0, σp²): the KL has a closed form, used whatever weights were drawn.
* :class:`ScaleMixturePrior` π·N(0, σ1²) + (1−π)·N(0, σ2²) (Blundell et al. 2015, eq. 7): no
  closed form, so the complexity cost is the one-sample Monte-Carlo estimate
  log q(w) − log p(w) at a weight draw w ~ q. Its expectation over w is the exact KL.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(w: torch.Tensor, mean: torch.Tensor | float, sigma: torch.Tensor | float):
    """Elementwise log N(w; mean, sigma²) (same shape as ``w``)."""
    sigma = torch.as_tensor(sigma, dtype=w.dtype, device=w.device)
    return -LOG_SQRT_2PI - torch.log(sigma) - (w - mean) ** 2 / (2.0 * sigma**2)


@dataclass(frozen=True)
class GaussianPrior:
    """Isotropic Gaussian prior N(0, sigma²) on every weight and bias."""

    sigma: float = 1.0
    analytic_kl = True

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        """Elementwise log p(w)."""
        return gaussian_log_prob(w, 0.0, self.sigma)

    def kl(self, mu: torch.Tensor, sigma: torch.Tensor, w: torch.Tensor | None = None):
        """Closed-form Σ KL(N(mu, sigma²) || N(0, σp²)) in nats (``w`` is ignored)."""
        sp = self.sigma
        return (math.log(sp) - torch.log(sigma) + (sigma**2 + mu**2) / (2 * sp**2) - 0.5).sum()

    def to_dict(self) -> dict:
        return {"kind": "gaussian", **asdict(self)}


@dataclass(frozen=True)
class ScaleMixturePrior:
    """Blundell's scale mixture π·N(0, sigma1²) + (1−π)·N(0, sigma2²), sigma1 > sigma2."""

    pi: float = 0.5
    sigma1: float = 1.0
    sigma2: float = math.exp(-6.0)
    analytic_kl = False

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        """Elementwise log p(w), computed stably with logsumexp."""
        a = math.log(self.pi) + gaussian_log_prob(w, 0.0, self.sigma1)
        b = math.log1p(-self.pi) + gaussian_log_prob(w, 0.0, self.sigma2)
        return torch.logaddexp(a, b)

    def kl(self, mu: torch.Tensor, sigma: torch.Tensor, w: torch.Tensor | None = None):
        """One-sample estimate Σ [log q(w) − log p(w)] at the draw ``w`` ~ N(mu, sigma²)."""
        if w is None:
            raise ValueError("the scale-mixture complexity cost needs a weight sample w")
        return (gaussian_log_prob(w, mu, sigma) - self.log_prob(w)).sum()

    def to_dict(self) -> dict:
        return {"kind": "mixture", **asdict(self)}


Prior = GaussianPrior | ScaleMixturePrior


def prior_from_dict(spec: dict) -> Prior:
    """Inverse of ``Prior.to_dict``: ``{"kind": "gaussian", "sigma": 1.0}`` or a mixture."""
    spec = dict(spec)
    kind = spec.pop("kind")
    if kind == "gaussian":
        return GaussianPrior(**spec)
    if kind == "mixture":
        return ScaleMixturePrior(**spec)
    raise ValueError(f"unknown prior kind {kind!r}")


def blundell_mixture_grid() -> list[ScaleMixturePrior]:
    """The paper's 27 mixtures: π ∈ {1/4, 1/2, 3/4}, −ln σ1 ∈ {0, 1, 2}, −ln σ2 ∈ {6, 7, 8}."""
    return [
        ScaleMixturePrior(pi, math.exp(-a), math.exp(-b))
        for pi in (0.25, 0.5, 0.75)
        for a in (0, 1, 2)
        for b in (6, 7, 8)
    ]
