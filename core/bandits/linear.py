"""Exact linear Thompson sampling (Riquelme et al. 2018): :class:`LinearGroup`.

Per arm, Bayesian linear regression of the reward on (context, 1) with a normal-inverse-gamma
prior, β | σ² ~ N(0, σ²/λ·I), σ² ~ IG(a₀, b₀); each decision draws (σ², β) from the exact
posterior of every arm (the Gamma draws from the group's own NumPy generator).
"""

from __future__ import annotations

import numpy as np
import torch

from core.bandits.groups import AgentGroup


class LinearGroup(AgentGroup):
    """Exact linear Thompson sampling: Bayesian linear regression per arm (float64).

    Features are the context and a constant 1. Sufficient statistics ``XᵀX``, ``Xᵀy``, ``yᵀy``
    and counts are kept per run and arm, over the whole history (no buffer).
    """

    family = "linear"

    def __init__(self, specs, n_seeds, env, settings, seed, device="cpu", compile=False) -> None:
        """Start every arm at the prior.

        Args:
            specs: The linear agent.
            n_seeds: Runs per agent.
            env: The environment.
            settings: The prior's λ, a₀, b₀.
            seed: Seed of the group's generators.
            device: Ignored: exact linear Thompson sampling computes on the CPU in float64.
            compile: Ignored (no network).
        """
        super().__init__(specs, n_seeds, env, settings, seed)
        p = self.context_dim + 1
        shape = (self.n_runs, self.n_actions)
        self.xtx = torch.zeros(*shape, p, p, dtype=torch.float64)
        self.xty = torch.zeros(*shape, p, dtype=torch.float64)
        self.yty = torch.zeros(*shape, dtype=torch.float64)
        self.count = torch.zeros(*shape, dtype=torch.float64)
        self.rng = np.random.default_rng(seed)

    def state_dict(self) -> dict:
        """The generators and every arm's sufficient statistics.

        Returns:
            Tensors and plain values (the NumPy generator's state is a dict of ints).
        """
        return super().state_dict() | {
            "xtx": self.xtx,
            "xty": self.xty,
            "yty": self.yty,
            "count": self.count,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`.

        Args:
            state: What :meth:`state_dict` returned.
        """
        super().load_state_dict(state)
        for name in ("xtx", "xty", "yty", "count"):
            getattr(self, name).copy_(state[name])
        self.rng.bit_generator.state = state["rng"]

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """Design rows (context, 1).

        Args:
            contexts: ``(..., context_dim)``.

        Returns:
            ``(..., context_dim + 1)`` float64.
        """
        ones = torch.ones(*contexts.shape[:-1], 1, dtype=torch.float64)
        return torch.cat([contexts.double(), ones], -1)

    def posterior(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The exact normal-inverse-gamma posterior of every run and arm.

        Returns:
            ``(mean (R, A, p), precision (R, A, p, p), a (R, A), b (R, A))``: β | σ² ~
            N(mean, σ²·precision⁻¹) and σ² ~ IG(a, b), with precision = λI + XᵀX,
            mean = precision⁻¹·Xᵀy, a = a₀ + n/2 and b = b₀ + ½·(yᵀy − meanᵀ·precision·mean).
        """
        s = self.settings
        eye = torch.eye(self.xtx.shape[-1], dtype=torch.float64)
        precision = self.xtx + s.linear_lambda * eye
        mean = torch.linalg.solve(precision, self.xty)
        quad = (mean * (precision @ mean.unsqueeze(-1)).squeeze(-1)).sum(-1)
        a = s.linear_a0 + self.count / 2
        b = s.linear_b0 + 0.5 * (self.yty - quad).clamp_min(0.0)
        return mean, precision, a, b

    def draw(self, generator: torch.Generator, rng: np.random.Generator, n_samples: int = 1):
        """Posterior draws of every arm's coefficients.

        Args:
            generator: Randomness of the normal draws.
            rng: Randomness of the inverse-gamma draws.
            n_samples: Number of draws.

        Returns:
            β ``(n_samples, R, A, p)``.
        """
        mean, precision, a, b = self.posterior()
        chol = torch.linalg.cholesky(precision)
        gamma = torch.from_numpy(rng.gamma(a.numpy(), size=(n_samples, *a.shape)))
        sigma2 = b / gamma  # (S, R, A)
        z = torch.randn(n_samples, *mean.shape, 1, generator=generator, dtype=torch.float64)
        # precision = L Lᵀ, so L⁻ᵀ z has covariance precision⁻¹
        step = torch.linalg.solve_triangular(chol.mT.expand(n_samples, *chol.shape), z, upper=True)
        return mean + sigma2.sqrt().unsqueeze(-1) * step.squeeze(-1)

    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Draw every arm's coefficients, take the arm of highest sampled mean reward.

        Args:
            contexts: ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)``.
        """
        beta = self.draw(self.generator, self.rng)[0]  # (R, A, p)
        return (beta * self.features(contexts).unsqueeze(1)).sum(-1).argmax(-1)

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Add each run's interaction to its arm's statistics.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)`` (reward units).
        """
        x = self.features(contexts)
        runs, y = torch.arange(self.n_runs), rewards.double()
        self.xtx[runs, actions] += x.unsqueeze(-1) * x.unsqueeze(-2)
        self.xty[runs, actions] += x * y.unsqueeze(-1)
        self.yty[runs, actions] += y * y
        self.count[runs, actions] += 1

    @torch.no_grad()
    def sample_rewards(self, run, contexts, n_samples, generator):
        """Sampled mean rewards of every arm under posterior draws of one run.

        Args:
            run: Which run.
            contexts: ``(n_inputs, context_dim)``.
            n_samples: Number of posterior draws.
            generator: Randomness of the normal draws (the Gamma draws use a generator
                seeded from it).

        Returns:
            ``(n_samples, n_inputs, n_actions)`` in reward units.
        """
        rng = np.random.default_rng(int(torch.randint(2**31, (), generator=generator)))
        beta = self.draw(generator, rng, n_samples)[:, run]  # (S, A, p)
        return torch.einsum("sap,np->sna", beta, self.features(contexts))
