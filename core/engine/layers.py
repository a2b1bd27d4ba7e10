"""``BayesLinear``: a linear layer with a mean-field Gaussian posterior over weights and biases.

Each weight has a mean μ and σ = softplus(ρ). Two stochastic forward modes:

* **weight sampling** (``lrt=False``): draw W = μ + σ·ε once and apply it to the whole batch;
  the noise has the parameters' shapes.
* **local reparameterisation** (``lrt=True``, Kingma, Salimans & Welling 2015): the
  pre-activation b = xW + c is Gaussian with mean x·μ and variance x²·σ² for each input, so
  it is sampled directly with one ε per input and output unit; noise shape ``(B, out)``.

The forward returns ``(output, kl)`` where kl is the layer's complexity cost (see
:mod:`core.engine.priors`). With a scale-mixture prior under LRT no weight is drawn for the forward
pass, so the Monte-Carlo complexity cost uses its own independent weight draw; that is still an
unbiased estimate of KL(q || p), because the objective is a sum of separately unbiased terms.

Noise may be passed explicitly (a dict of standard-normal tensors: ``"weight"``, ``"bias"``,
and ``"out"`` for LRT) so that different implementations can be fed identical randomness.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.engine.fused import fast_softplus
from core.engine.priors import Prior

LayerNoise = dict[str, torch.Tensor]


def inverse_softplus(sigma: float) -> float:
    """The ρ such that softplus(ρ) = sigma.

    Args:
        sigma: A standard deviation, > 0.

    Returns:
        ρ = log(exp(sigma) − 1).
    """
    return math.log(math.expm1(sigma))


class BayesLinear(nn.Module):
    """Linear map ``in_features → out_features`` with Gaussian weights q(W) = N(μ, σ²).

    ``init_sigma`` sets the initial σ of every weight (small: a large initial σ or a strong KL
    stops learning); μ starts like ``nn.Linear`` (uniform ±1/√in) scaled by ``init_mu_scale``.

    Attributes:
        in_features: Input width ``in``.
        out_features: Output width ``out``.
        prior: The weight prior of the complexity cost.
        weight_mu: Posterior means of the weights ``(out, in)``.
        weight_rho: Unconstrained weight spreads ``(out, in)``, σ = softplus(ρ).
        bias_mu: Posterior means of the biases ``(out,)``.
        bias_rho: Unconstrained bias spreads ``(out,)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        prior: Prior,
        init_sigma: float = 1e-3,
        init_mu_scale: float = 1.0,
    ) -> None:
        """Initialise μ uniformly and every σ to ``init_sigma``.

        Args:
            in_features: Input width ``in``.
            out_features: Output width ``out``.
            prior: Weight prior of the complexity cost.
            init_sigma: Initial posterior standard deviation of every weight and bias.
            init_mu_scale: Scale of the uniform ±1/√in initialisation of the means.
        """
        super().__init__()
        self.in_features, self.out_features, self.prior = in_features, out_features, prior
        bound = init_mu_scale / math.sqrt(in_features)
        rho = inverse_softplus(init_sigma)
        self.weight_mu = nn.Parameter(
            torch.empty(out_features, in_features).uniform_(-bound, bound)
        )
        self.weight_rho = nn.Parameter(torch.full((out_features, in_features), rho))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_rho = nn.Parameter(torch.full((out_features,), rho))

    @property
    def weight_sigma(self) -> torch.Tensor:
        """Posterior standard deviations of the weights, softplus(ρ), ``(out, in)``."""
        return F.softplus(self.weight_rho)

    @property
    def bias_sigma(self) -> torch.Tensor:
        """Posterior standard deviations of the biases, softplus(ρ), ``(out,)``."""
        return F.softplus(self.bias_rho)

    def _kl(self, w_sigma, b_sigma, noise: LayerNoise | None, w=None, b=None) -> torch.Tensor:
        if self.prior.analytic_kl:
            return self.prior.kl(self.weight_mu, w_sigma) + self.prior.kl(self.bias_mu, b_sigma)
        if w is None:  # LRT: draw weights only for the Monte-Carlo complexity cost
            w = self.weight_mu + w_sigma * _noise(noise, "weight", self.weight_mu)
            b = self.bias_mu + b_sigma * _noise(noise, "bias", self.bias_mu)
        return self.prior.kl(self.weight_mu, w_sigma, w) + self.prior.kl(self.bias_mu, b_sigma, b)

    def forward(
        self,
        x: torch.Tensor,
        noise: LayerNoise | None = None,
        lrt: bool = False,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One stochastic pass.

        Args:
            x: Inputs ``(..., in)``.
            noise: Standard-normal noise (``"weight"``, ``"bias"``, and ``"out"`` for LRT); a
                missing key is drawn fresh.
            lrt: True for local reparameterisation, False for weight sampling.
            with_kl: Whether to compute the complexity cost.

        Returns:
            ``(output, kl)``: outputs ``(..., out)`` and the layer's complexity cost in nats
            (see the module docstring), or None when ``with_kl`` is False.
        """
        if lrt:  # the fast softplus: same σ to a few ulp (see core.engine.fused)
            w_sigma, b_sigma = fast_softplus(self.weight_rho), fast_softplus(self.bias_rho)
            mean = F.linear(x, self.weight_mu, self.bias_mu)
            var = F.linear(x * x, w_sigma * w_sigma, b_sigma * b_sigma)
            out = mean + torch.sqrt(var + 1e-16) * _noise(noise, "out", mean)
            kl = self._kl(w_sigma, b_sigma, noise) if with_kl else None
            return out, kl
        w_sigma, b_sigma = self.weight_sigma, self.bias_sigma
        w = self.weight_mu + w_sigma * _noise(noise, "weight", self.weight_mu)
        b = self.bias_mu + b_sigma * _noise(noise, "bias", self.bias_mu)
        kl = self._kl(w_sigma, b_sigma, noise, w, b) if with_kl else None
        return F.linear(x, w, b), kl

    def extra_repr(self) -> str:
        """Widths and prior, shown by ``repr(module)``."""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, prior={self.prior}"
        )


def _noise(noise: LayerNoise | None, key: str, like: torch.Tensor) -> torch.Tensor:
    """The given standard-normal noise for ``key``, or a fresh draw shaped like ``like``."""
    if noise is not None and key in noise:
        return noise[key]
    return torch.randn_like(like)
