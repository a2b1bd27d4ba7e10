"""SWAG's model: the backbone MLP with SWAG's Gaussian N(θ̄, Σ) over its weights.

After training the parameters hold θ̄; buffers hold σ² and the last ``rank`` deviations
(float16). Each pass draws fresh weights, all passes in one vmapped call
(:class:`~core.engine.samples.CollectedMLP`).
"""

from __future__ import annotations

import math

import torch

from core.engine.interface import ModelConfig
from core.engine.samples import CollectedMLP, unflatten
from core.methods.swag.moments import swag_draws


class SWAGNetwork(CollectedMLP):
    """An MLP of ``config.sizes`` with SWAG's Gaussian over its weights.

    After :meth:`set_posterior` the parameters are the mean θ̄; a pass draws
    θ = θ̄ + σ⊙z₁/√2 + D z₂/√(2(K − 1)), z₁ ~ N(0, I_d), z₂ ~ N(0, I_K) (see
    :mod:`core.methods.swag.moments`).

    Args:
        config: Architecture, and the number of deviation columns K (``config.params["rank"]`` ≥ 2).

    Attributes:
        std: The per-weight standard deviation σ of the iterates, float16 ``(d,)``.
        deviations: The last K deviations as rows, float16 ``(K, d)``.
        n_collected: Iterates collected (0 before: the model predicts with its parameters).
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        dim = sum(p.numel() for p in self.parameters())
        self.register_buffer("std", torch.zeros(dim, dtype=torch.float16))
        self.register_buffer(
            "deviations", torch.zeros(config.params["rank"], dim, dtype=torch.float16)
        )

    def set_posterior(
        self, mean: torch.Tensor, variance: torch.Tensor, deviations: torch.Tensor, n: int
    ) -> None:
        """Store SWAG's moments (as :class:`~core.methods.swag.moments.SWAG` computes them).

        Args:
            mean: θ̄ ``(d,)``, copied into the parameters.
            variance: σ² ``(d,)``.
            deviations: D ``(d, K')`` with K' ≤ K columns (unused rows stay 0).
            n: Iterates collected; at least 2 for a posterior.
        """
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(mean.to(self.std.device).float(), self.parameters())
            self.std.copy_(variance.clamp_min(0).sqrt())
            self.deviations.zero_()
            k = deviations.shape[1]
            self.deviations[:k].copy_(deviations.T)
            self.n_collected.fill_(n)

    def _draws(self, n_samples: int) -> dict[str, torch.Tensor]:
        mean = torch.nn.utils.parameters_to_vector(self.parameters())
        k = min(int(self.n_collected), self.config.params["rank"])
        factor = self.deviations[:k].float().T / math.sqrt(max(k - 1, 1))
        return unflatten(swag_draws(mean, self.std.float(), factor, n_samples), self)
