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
    """Elementwise Gaussian log-density log N(w; mean, sigma²).

    Args:
        w: Values, any shape.
        mean: Mean, broadcastable to ``w``.
        sigma: Standard deviation, broadcastable to ``w``.

    Returns:
        Log-densities (nats), same shape as ``w``.
    """
    log_sigma = torch.log(sigma) if isinstance(sigma, torch.Tensor) else math.log(sigma)
    return -LOG_SQRT_2PI - log_sigma - (w - mean) ** 2 / (2.0 * sigma**2)


@dataclass(frozen=True)
class GaussianPrior:
    """Isotropic Gaussian prior N(0, sigma²) on every weight and bias.

    Attributes:
        sigma: Prior standard deviation σp.
        analytic_kl: True: the complexity cost has a closed form.
    """

    sigma: float = 1.0
    analytic_kl = True

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        """Elementwise log p(w).

        Args:
            w: Weights, any shape.

        Returns:
            Log-densities (nats), same shape as ``w``.
        """
        return gaussian_log_prob(w, 0.0, self.sigma)

    def kl(self, mu: torch.Tensor, sigma: torch.Tensor, w: torch.Tensor | None = None):
        """Closed-form Σ KL(N(mu, sigma²) || N(0, σp²)).

        Args:
            mu: Posterior means, any shape.
            sigma: Posterior standard deviations, shaped like ``mu``.
            w: Ignored (accepted for the same signature as :meth:`ScaleMixturePrior.kl`).

        Returns:
            The summed KL in nats, a scalar tensor.
        """
        sp = self.sigma
        return (math.log(sp) - torch.log(sigma) + (sigma**2 + mu**2) / (2 * sp**2) - 0.5).sum()

    def to_dict(self) -> dict:
        """JSON-serialisable form, the inverse of :func:`prior_from_dict`.

        Returns:
            ``{"kind": "gaussian", "sigma": sigma}``.
        """
        return {"kind": "gaussian", **asdict(self)}


@dataclass(frozen=True)
class ScaleMixturePrior:
    """Blundell's scale mixture π·N(0, sigma1²) + (1−π)·N(0, sigma2²), sigma1 > sigma2.

    Attributes:
        pi: Weight π of the wide component.
        sigma1: Standard deviation of the wide component.
        sigma2: Standard deviation of the narrow component.
        analytic_kl: False: the complexity cost is a Monte-Carlo estimate at a weight draw.
    """

    pi: float = 0.5
    sigma1: float = 1.0
    sigma2: float = math.exp(-6.0)
    analytic_kl = False

    def log_prob(self, w: torch.Tensor) -> torch.Tensor:
        """Elementwise log p(w), computed stably with logsumexp.

        Args:
            w: Weights, any shape.

        Returns:
            Log-densities (nats), same shape as ``w``.
        """
        a = math.log(self.pi) + gaussian_log_prob(w, 0.0, self.sigma1)
        b = math.log1p(-self.pi) + gaussian_log_prob(w, 0.0, self.sigma2)
        return torch.logaddexp(a, b)

    def kl(self, mu: torch.Tensor, sigma: torch.Tensor, w: torch.Tensor | None = None):
        """One-sample estimate Σ [log q(w) − log p(w)] at the draw ``w`` ~ N(mu, sigma²).

        Args:
            mu: Posterior means, any shape.
            sigma: Posterior standard deviations, shaped like ``mu``.
            w: The weight draw, shaped like ``mu``.

        Returns:
            The summed estimate in nats, a scalar tensor; its expectation over ``w`` is the KL.

        Raises:
            ValueError: If ``w`` is None.
        """
        if w is None:
            raise ValueError("the scale-mixture complexity cost needs a weight sample w")
        return (gaussian_log_prob(w, mu, sigma) - self.log_prob(w)).sum()

    def to_dict(self) -> dict:
        """JSON-serialisable form, the inverse of :func:`prior_from_dict`.

        Returns:
            ``{"kind": "mixture", "pi": pi, "sigma1": sigma1, "sigma2": sigma2}``.
        """
        return {"kind": "mixture", **asdict(self)}


Prior = GaussianPrior | ScaleMixturePrior


def prior_from_dict(spec: dict) -> Prior:
    """Inverse of ``Prior.to_dict``.

    Args:
        spec: ``{"kind": "gaussian", "sigma": 1.0}`` or
            ``{"kind": "mixture", "pi": p, "sigma1": s1, "sigma2": s2}`` (omitted fields take
            their defaults).

    Returns:
        The :class:`GaussianPrior` or :class:`ScaleMixturePrior`.

    Raises:
        ValueError: If ``spec["kind"]`` is neither ``"gaussian"`` nor ``"mixture"``.
    """
    spec = dict(spec)
    kind = spec.pop("kind")
    if kind == "gaussian":
        return GaussianPrior(**spec)
    if kind == "mixture":
        return ScaleMixturePrior(**spec)
    raise ValueError(f"unknown prior kind {kind!r}")


def blundell_mixture_grid() -> list[ScaleMixturePrior]:
    """The paper's 27 mixtures: π ∈ {1/4, 1/2, 3/4}, −ln σ1 ∈ {0, 1, 2}, −ln σ2 ∈ {6, 7, 8}.

    Returns:
        The priors, π varying slowest and σ2 fastest.
    """
    return [
        ScaleMixturePrior(pi, math.exp(-a), math.exp(-b))
        for pi in (0.25, 0.5, 0.75)
        for a in (0, 1, 2)
        for b in (6, 7, 8)
    ]
