"""SWAG: a Gaussian over weights fitted to SGD iterates (Maddox et al. 2019).

Every collected iterate θᵢ (i = 1..n, typically one per epoch at a constant or cyclical learning
rate) updates the running first and second moments θ̄ = (1/n) Σ θᵢ and s = (1/n) Σ θᵢ², and
appends the deviation θᵢ − θ̄ᵢ (θ̄ᵢ the mean just after adding θᵢ) to a matrix D of the last K
deviations. The posterior is N(θ̄, Σ_SWAG) with

    Σ_SWAG = ½ · (diag(σ²) + D Dᵀ / (K − 1)),   σ² = s − θ̄² (clamped at 0),

and a draw is θ = θ̄ + (1/√2)·σ⊙z₁ + (1/√(2(K − 1)))·D z₂, z₁ ~ N(0, I_d), z₂ ~ N(0, I_K); K is
the number of deviations held (fewer than ``rank`` early on).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector


class SWAG:
    """Running moments and a rank-``rank`` deviation matrix of a flat parameter vector.

    Args:
        dim: d, the number of parameters.
        rank: Maximum number of deviation columns kept (K of the paper), ≥ 2.
        dtype: Accumulator dtype; float64 by default because σ² = s − θ̄² cancels digits.
        device: Where the moments live.

    Attributes:
        n: Number of iterates collected.

    Raises:
        ValueError: If ``dim < 1`` or ``rank < 2``.
    """

    def __init__(
        self,
        dim: int,
        rank: int = 20,
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> None:
        if dim < 1 or rank < 2:
            raise ValueError("need dim >= 1 and rank >= 2")
        self.rank = rank
        self.n = 0
        self._mean = torch.zeros(dim, dtype=dtype, device=device)
        self._sq_mean = torch.zeros(dim, dtype=dtype, device=device)
        self._deviations: list[torch.Tensor] = []

    @classmethod
    def for_module(cls, module: nn.Module, rank: int = 20, **kwargs) -> SWAG:
        """A SWAG sized for ``module``'s parameters (in ``module.parameters()`` order).

        Args:
            module: The network whose iterates will be collected.
            rank: As for the constructor.
            **kwargs: ``dtype`` and ``device``, as for the constructor.

        Returns:
            An empty SWAG of d = the module's parameter count.
        """
        return cls(sum(p.numel() for p in module.parameters()), rank, **kwargs)

    def collect(self, theta: torch.Tensor | nn.Module) -> None:
        """Add one iterate.

        Args:
            theta: The flat parameters ``(d,)``, or a module whose parameters are flattened.

        Raises:
            ValueError: If the iterate does not have d entries.
        """
        if isinstance(theta, nn.Module):
            theta = parameters_to_vector(theta.parameters())
        theta = theta.detach().to(self._mean)
        if theta.shape != self._mean.shape:
            raise ValueError(f"expected {tuple(self._mean.shape)} parameters, got {theta.shape}")
        self.n += 1
        self._mean += (theta - self._mean) / self.n
        self._sq_mean += (theta**2 - self._sq_mean) / self.n
        self._deviations = [*self._deviations[-(self.rank - 1) :], theta - self._mean]

    @property
    def mean(self) -> torch.Tensor:
        """θ̄, the mean of the iterates ``(d,)``."""
        return self._mean.clone()

    @property
    def variance(self) -> torch.Tensor:
        """σ² = s − θ̄², the iterates' per-coordinate (biased, 1/n) variance ``(d,)``."""
        return (self._sq_mean - self._mean**2).clamp_min(0)

    @property
    def deviations(self) -> torch.Tensor:
        """D, the last K deviations θᵢ − θ̄ᵢ as columns, oldest first, ``(d, K)``."""
        if not self._deviations:
            return self._mean.new_zeros(self._mean.shape[0], 0)
        return torch.stack(self._deviations, dim=1)

    def covariance(self) -> torch.Tensor:
        """Σ_SWAG = ½ (diag(σ²) + D Dᵀ/(K − 1)) as a dense matrix (small d only).

        Returns:
            The covariance ``(d, d)``.

        Raises:
            RuntimeError: If fewer than 2 iterates have been collected.
        """
        d = self._low_rank_factor()
        return 0.5 * (torch.diag(self.variance) + d @ d.T)

    def sample(self, n_samples: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draws θ = θ̄ + (1/√2)·σ⊙z₁ + (1/√(2(K − 1)))·D z₂.

        Args:
            n_samples: Number of draws S.
            generator: Source of z₁, z₂, on the moments' device; None for torch's default.

        Returns:
            Draws ``(S, d)``, in the accumulator dtype.

        Raises:
            RuntimeError: If fewer than 2 iterates have been collected.
        """
        factor = self._low_rank_factor()
        return swag_draws(self._mean, self.variance.sqrt(), factor, n_samples, generator)

    def _low_rank_factor(self) -> torch.Tensor:
        """D/√(K − 1) ``(d, K)``."""
        if len(self._deviations) < 2:
            raise RuntimeError("SWAG needs at least 2 collected iterates")
        return self.deviations / math.sqrt(len(self._deviations) - 1)


def swag_draws(
    mean: torch.Tensor,
    std: torch.Tensor,
    factor: torch.Tensor,
    n_samples: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draws θ = θ̄ + (σ⊙z₁ + F z₂)/√2 from SWAG's Gaussian, F = D/√(K − 1).

    Args:
        mean: θ̄ ``(d,)``.
        std: σ ``(d,)``.
        factor: F ``(d, K)``.
        n_samples: Number of draws S.
        generator: Source of z₁ ~ N(0, I_d) and z₂ ~ N(0, I_K); None for torch's default.

    Returns:
        Draws ``(S, d)`` in ``mean``'s dtype.
    """
    like = dict(dtype=mean.dtype, device=mean.device, generator=generator)
    z1 = torch.randn(n_samples, mean.shape[0], **like)
    z2 = torch.randn(n_samples, factor.shape[1], **like)
    return mean + (z1 * std + z2 @ factor.T) / math.sqrt(2)


def load_flat(module: nn.Module, theta: torch.Tensor) -> None:
    """Copy a flat vector into ``module``'s parameters, converting dtype and device.

    The inverse of what :meth:`SWAG.collect` reads from a module.

    Args:
        module: The network to overwrite.
        theta: Flat parameters ``(d,)`` in ``module.parameters()`` order.

    Raises:
        ValueError: If ``theta`` does not have the module's parameter count.
    """
    params = list(module.parameters())
    if theta.shape != (sum(p.numel() for p in params),):
        raise ValueError("theta does not match the module's parameter count")
    with torch.no_grad():
        for p, chunk in zip(params, theta.split([p.numel() for p in params]), strict=True):
            p.copy_(chunk.view_as(p))
