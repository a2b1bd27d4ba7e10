"""Stochastic-gradient MCMC: SGLD and pSGLD, the cyclical step-size schedule, a sample collector.

References: Welling & Teh 2011 (SGLD); Li et al. 2016 (pSGLD); Zhang et al. 2020 (cyclical
SG-MCMC).

Convention. For N training points and a minibatch B the stochastic potential is

    Ũ(θ) = −log p(θ) − N · (1/|B|) Σ_{i∈B} log p(yᵢ | xᵢ, θ),

whose expectation over minibatches is the negative log posterior up to a constant. The caller
back-propagates the minibatch *mean* negative log-likelihood (the ordinary training loss, e.g.
``F.cross_entropy``); :class:`SGLD` is given N and the prior and forms ∇Ũ itself. One step is

    θ ← θ − (ε/2) · ∇Ũ(θ) + N(0, ε·T·I),

which for small ε samples p_T(θ) ∝ exp(−Ũ(θ)/T); T = 1 is the posterior ("cold" posteriors
have T < 1). The drift ε/2 and the noise variance ε go together: a step of plain SGD with
learning rate α is ε = 2α.

The cyclical schedule (:class:`CyclicalSchedule`) restarts ε on a cosine every cycle; each cycle
starts with an exploration stage (SGD, no noise) and ends with a sampling stage (Langevin
noise) in which :class:`SampleCollector` keeps weight samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from core.engine.priors import Prior


class SGLD(torch.optim.Optimizer):
    """Stochastic-gradient Langevin dynamics, optionally RMSprop-preconditioned (pSGLD).

    ``p.grad`` must hold the gradient of the minibatch mean negative log-likelihood (see the
    module docstring), or of its sum over ``batch_sum`` points; ``step`` adds the prior, scales
    by N and adds the Langevin noise.

    * SGLD: θ ← θ − (ε/2)·∇Ũ + N(0, ε·T).
    * pSGLD (``precondition=True``): V ← a·V + (1 − a)·ḡ⊙ḡ with ḡ = ``p.grad`` (V starts at 0),
      G = 1 / (λ + √V) elementwise, θ ← θ − (ε/2)·G⊙∇Ũ + N(0, ε·T·G). The correction term
      Γ(θ) = Σⱼ ∂G/∂θⱼ is omitted, as in the practical algorithm of Li et al. 2016. That biases
      the samples when V follows θ's own fluctuations (with full-batch gradients on a Gaussian
      linear-regression posterior the variances came out about 15 % too large at a = 0.999
      and 2× at a = 0.99), less when V is dominated by minibatch noise. ``alpha = 1`` freezes
      V (set it after burn-in; from the start V stays 0): with G fixed the update is exact
      Langevin dynamics preconditioned by G.

    Each parameter group takes the options below; ``lr`` and ``noise`` may be changed between
    steps (as :meth:`CyclicalSchedule.apply` does).

    Args:
        params: Parameters or parameter groups, as for any optimizer.
        lr: Step size ε > 0, in units of θ² per unit of Ũ (the noise variance per step at T = 1).
        num_data: N, the number of training points the minibatch means stand for.
        prior: The prior p(θ) on every weight (its elementwise ``log_prob`` is differentiated);
            None for a flat prior.
        temperature: T ≥ 0; multiplies the noise variance.
        precondition: True for pSGLD.
        alpha: pSGLD only: decay a of the running mean square V, in [0, 1]; 1 freezes V.
        eps: pSGLD only: λ > 0 added to √V (units of ``p.grad``).
        noise: False for a noise-free step θ ← θ − (ε/2)·G⊙∇Ũ (SGD; the exploration stage).
        batch_sum: B when ``p.grad`` is the gradient of the minibatch's *summed* NLL over B
            points (it is divided by B); 1 for the mean.
        generator: Source of the noise, on the parameters' device; None for torch's default.

    Raises:
        ValueError: If an option is out of range.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict],
        lr: float,
        num_data: int,
        *,
        prior: Prior | None = None,
        temperature: float = 1.0,
        precondition: bool = False,
        alpha: float = 0.99,
        eps: float = 1e-5,
        noise: bool = True,
        batch_sum: int = 1,
        generator: torch.Generator | None = None,
    ) -> None:
        bad = lr <= 0 or num_data < 1 or temperature < 0 or eps <= 0 or batch_sum < 1
        if bad or not 0 <= alpha <= 1:
            raise ValueError(
                "need lr > 0, num_data >= 1, temperature >= 0, 0 <= alpha <= 1, eps > 0 and "
                "batch_sum >= 1"
            )
        defaults = dict(
            lr=lr,
            num_data=num_data,
            prior=prior,
            temperature=temperature,
            precondition=precondition,
            alpha=alpha,
            eps=eps,
            noise=noise,
            batch_sum=batch_sum,
        )
        super().__init__(params, defaults)
        self.generator = generator

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One SGLD (or pSGLD) step of every parameter that has a gradient.

        Args:
            closure: Optional; re-evaluates the minibatch mean NLL and back-propagates it.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, temperature = group["lr"], group["temperature"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad / group["batch_sum"]
                grad_u = group["num_data"] * grad + _neg_log_prior_grad(group["prior"], p)
                if group["precondition"]:
                    square_avg = self.state[p].setdefault("square_avg", torch.zeros_like(p))
                    square_avg.mul_(group["alpha"]).addcmul_(grad, grad, value=1 - group["alpha"])
                    precond = (square_avg.sqrt() + group["eps"]).reciprocal()
                    noise_std = (lr * temperature * precond).sqrt()
                    grad_u.mul_(precond)
                else:
                    noise_std = math.sqrt(lr * temperature)
                p.add_(grad_u, alpha=-lr / 2)
                if group["noise"]:
                    draw = torch.randn(
                        p.shape, generator=self.generator, dtype=p.dtype, device=p.device
                    )
                    p.add_(draw.mul_(noise_std))
        return loss


def _neg_log_prior_grad(prior: Prior | None, p: torch.Tensor) -> torch.Tensor:
    """∇(−log p(θ)) of an elementwise prior at ``p`` (zeros for a flat prior), shape of ``p``."""
    if prior is None:
        return torch.zeros_like(p)
    with torch.enable_grad():
        w = p.detach().requires_grad_()
        (grad,) = torch.autograd.grad(-prior.log_prob(w).sum(), w)
    return grad


@dataclass(frozen=True)
class CyclicalSchedule:
    """Cosine step-size cycles of cyclical SG-MCMC (Zhang et al. 2020, eq. 1).

    Steps are numbered k = 1..K. With L = ⌈K/M⌉ steps per cycle, the position of step k in its
    cycle is r(k) = mod(k − 1, L) / L ∈ [0, 1) and the step size is
    ε_k = ε₀/2 · (cos(π·r(k)) + 1): ε₀ at each cycle's first step, decaying towards 0. Step k
    is in the sampling stage when r(k) ≥ β and in the exploration stage before. When L does
    not divide K the last cycle is cut short, and there may be fewer than M cycles
    (:attr:`n_cycles`).

    Attributes:
        lr0: Initial step size ε₀ of every cycle (the SGLD ε, not an SGD learning rate).
        total_steps: K ≥ 1.
        cycles: M, 1 ≤ M ≤ K.
        exploration: β ∈ [0, 1], the fraction of each cycle spent exploring.

    Raises:
        ValueError: If an attribute is out of range.
    """

    lr0: float
    total_steps: int
    cycles: int
    exploration: float = 0.5

    def __post_init__(self) -> None:
        if self.lr0 <= 0 or not 1 <= self.cycles <= self.total_steps:
            raise ValueError("need lr0 > 0 and 1 <= cycles <= total_steps")
        if not 0 <= self.exploration <= 1:
            raise ValueError("exploration must be in [0, 1]")

    @property
    def cycle_length(self) -> int:
        """L = ⌈K/M⌉, steps per (full) cycle."""
        return math.ceil(self.total_steps / self.cycles)

    @property
    def n_cycles(self) -> int:
        """Number of cycles actually run, ⌈K/L⌉ (≤ M)."""
        return math.ceil(self.total_steps / self.cycle_length)

    def position(self, k: int) -> float:
        """r(k), the fraction of its cycle before step k, in [0, 1).

        Args:
            k: Step, 1..K.

        Returns:
            mod(k − 1, L) / L.

        Raises:
            ValueError: If k is not in 1..K.
        """
        if not 1 <= k <= self.total_steps:
            raise ValueError(f"step {k} not in 1..{self.total_steps}")
        return (k - 1) % self.cycle_length / self.cycle_length

    def cycle(self, k: int) -> int:
        """The cycle step k belongs to, 0..n_cycles − 1."""
        self.position(k)  # validates k
        return (k - 1) // self.cycle_length

    def lr(self, k: int) -> float:
        """ε_k = ε₀/2 · (cos(π·r(k)) + 1)."""
        return self.lr0 / 2 * (math.cos(math.pi * self.position(k)) + 1)

    def sampling(self, k: int) -> bool:
        """Whether step k is in the sampling stage, r(k) ≥ β."""
        return self.position(k) >= self.exploration

    def end_of_cycle(self, k: int) -> bool:
        """Whether step k is the last of its cycle (where cyclical SG-MCMC takes a sample)."""
        return k == self.total_steps or self.cycle(k + 1) != self.cycle(k)

    def apply(self, optimizer: SGLD, k: int) -> bool:
        """Set every parameter group of ``optimizer`` for step k: ``lr`` ε_k and ``noise``.

        Args:
            optimizer: The sampler to configure.
            k: Step about to be taken, 1..K.

        Returns:
            Whether step k is in the sampling stage (noise on).
        """
        sampling = self.sampling(k)
        for group in optimizer.param_groups:
            group["lr"] = self.lr(k)
            group["noise"] = sampling
        return sampling


class SampleCollector:
    """Weight samples (state dicts) kept as they are drawn, on the CPU.

    Args:
        half: True to store floating-point tensors in float16 (halves shipped checkpoints;
            about 3 significant digits); integer buffers are kept as they are.

    Attributes:
        samples: The stored state dicts, oldest first.
    """

    def __init__(self, half: bool = False) -> None:
        self.half = half
        self.samples: list[dict[str, torch.Tensor]] = []

    def __len__(self) -> int:
        return len(self.samples)

    def add(self, model: nn.Module) -> None:
        """Store a copy of ``model``'s current state dict.

        Args:
            model: The network whose weights are one sample.
        """
        self.samples.append(
            {
                name: t.detach().to(
                    device="cpu",
                    dtype=torch.float16 if self.half and t.is_floating_point() else t.dtype,
                    copy=True,
                )
                for name, t in model.state_dict().items()
            }
        )

    def stacked(self, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
        """All samples stacked per entry, floating-point ones cast to ``dtype``.

        Args:
            dtype: Floating-point dtype of the result.

        Returns:
            ``{name: (S, *shape)}`` for S samples, ready for ``torch.func.functional_call``
            under ``vmap``.

        Raises:
            ValueError: If no sample has been stored.
        """
        if not self.samples:
            raise ValueError("no samples collected")
        return {
            name: torch.stack(
                [
                    s[name].to(dtype) if s[name].is_floating_point() else s[name]
                    for s in self.samples
                ]
            )
            for name in self.samples[0]
        }
