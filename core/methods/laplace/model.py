"""Last-layer Laplace approximation of a trained MLP, Kronecker-factored or full.

References: MacKay 1992; Ritter et al. 2018; Daxberger et al. 2021.

The network up to its last hidden layer is kept as trained (the MAP estimate); the last layer's
weights and bias θ = [W | b] ``(C, H + 1)`` get a Gaussian posterior N(θ*, P⁻¹) where P is the
generalised Gauss-Newton matrix of the training NLL plus the prior precision δ·I. For a linear
last layer on fixed features φ = [h, 1] the GGN is exactly the Hessian of the NLL; with θ
flattened row-major it is Σₙ (diag pₙ − pₙpₙᵀ) ⊗ (φₙφₙᵀ).

* ``"kron"`` (KFAC, what the shipped model uses): the sum is approximated by
  N · G ⊗ A with A = mean φφᵀ ``(H+1, H+1)`` and G = mean (diag p − ppᵀ) ``(C, C)``. With the
  eigendecompositions A = U_A Λ_A U_Aᵀ, G = U_G Λ_G U_Gᵀ the precision is diagonal in the
  Kronecker eigenbasis: D = N·λ_G λ_Aᵀ + δ ``(C, H+1)``. The model stores the two small
  eigenbases U_A and U_G and the diagonal D; a draw is θ = θ* + U_G (Z / √D) U_Aᵀ, Z standard
  normal.
* ``"full"``: P is formed as a dense ``(C(H+1), C(H+1))`` matrix (the exact GGN plus δ·I) and
  inverted; the model stores the Cholesky factor L of the covariance P⁻¹, and a draw is
  θ = θ* + L z, z standard normal. For small problems and for tests.

The prior precision δ maximises the Laplace approximation of the log marginal likelihood
log p(D|θ*) − ½ δ‖θ*‖² + ½ d·log δ − ½ log det P (d = C(H+1)), found on a log grid.

Everything the posterior needs is stored in buffers, so the model is an ordinary state dict
(``torch.load(weights_only=True)``) and prediction does not need a Laplace library. Passes draw
last-layer weights (the lab's ``n_samples`` passes); :meth:`LastLayerLaplace.probit_probs` is
the deterministic probit approximation of the predictive.
"""

from __future__ import annotations

import math
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from core.engine.interface import ModelConfig, MonteCarloModule, flat

PRIOR_GRID = torch.logspace(-4, 4, 161, dtype=torch.float64)
"""Prior precisions δ tried by :func:`fit_laplace` (then refined around the best)."""


STRUCTURES = ("kron", "full")


class LastLayerLaplace(MonteCarloModule):
    """An MLP whose last layer has a Gaussian posterior of ``config.params["structure"]``.

    The ``layers`` are as in :class:`~core.engine.mlp.MLP`. Until :func:`fit_laplace` fills the
    posterior, it is N(θ*, I) and ``prior_precision`` is 1.

    Args:
        config: Architecture of the network and ``laplace_structure`` (``"kron"`` or
            ``"full"``).

    Attributes:
        stochastic: True: each pass draws fresh last-layer weights.
        weight_posterior: False: only the last layer has a posterior, and not a mean-field one.
        config: The architecture the model was built from.
        layers: The ``nn.Linear`` layers, input to output.
        eigvecs_a: ``"kron"`` only: eigenbasis U_A of A, ``(H+1, H+1)``.
        eigvecs_g: ``"kron"`` only: eigenbasis U_G of G, ``(C, C)``.
        precision: ``"kron"`` only: the posterior precision D in the Kronecker eigenbasis,
            ``(C, H+1)``.
        scale_tril: ``"full"`` only: the Cholesky factor of the posterior covariance,
            ``(C(H+1), C(H+1))``.
        prior_precision: The prior precision δ, a scalar.

    Raises:
        ValueError: If ``config.params["structure"]`` is not one of :data:`STRUCTURES`.
    """

    stochastic = True
    weight_posterior = False

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.params["structure"] not in STRUCTURES:
            raise ValueError(f"laplace_structure must be one of {STRUCTURES}")
        self.config = config
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(config.sizes))
        c, h1 = config.num_classes, config.sizes[-2] + 1
        if config.params["structure"] == "kron":
            self.register_buffer("eigvecs_a", torch.eye(h1))
            self.register_buffer("eigvecs_g", torch.eye(c))
            self.register_buffer("precision", torch.ones(c, h1))  # D in the eigenbasis
        else:
            self.register_buffer("scale_tril", torch.eye(c * h1))  # Cholesky of the covariance
        self.register_buffer("prior_precision", torch.tensor(1.0))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Features φ = [last hidden activations, 1] on which the last layer acts.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            φ ``(B, H + 1)``.
        """
        h = flat(x)
        for layer in self.layers[:-1]:
            h = F.relu(layer(h))
        return torch.cat([h, h.new_ones(h.shape[0], 1)], dim=1)

    def theta_map(self) -> torch.Tensor:
        """The last layer's MAP weights and bias θ* = [W | b].

        Returns:
            θ* ``(C, H + 1)``.
        """
        last = self.layers[-1]
        return torch.cat([last.weight, last.bias[:, None]], dim=1)

    def covariance(self) -> torch.Tensor:
        """The posterior covariance of θ flattened row-major.

        Returns:
            The covariance ``(C(H+1), C(H+1))``.
        """
        if self.config.params["structure"] == "full":
            return self.scale_tril @ self.scale_tril.T
        basis = torch.kron(self.eigvecs_g, self.eigvecs_a)  # row-major vec(U_G Z U_Aᵀ)
        return basis @ torch.diag(1.0 / self.precision.flatten()) @ basis.T

    def draw_theta(self) -> torch.Tensor:
        """One posterior draw of the last layer's weights and bias.

        Returns:
            θ ``(C, H + 1)``.
        """
        theta = self.theta_map()
        if self.config.params["structure"] == "full":
            z = torch.randn(theta.numel(), device=theta.device)
            return theta + (self.scale_tril @ z).view_as(theta)
        z = torch.randn_like(self.precision) / self.precision.sqrt()
        return theta + self.eigvecs_g @ z @ self.eigvecs_a.T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass with freshly drawn last-layer weights.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        return self.features(x) @ self.draw_theta().T

    def logit_moments(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and covariance of the Gaussian logits f = θφ.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            ``(mean, cov)``: mean ``(B, C)`` and covariance ``(B, C, C)``.
        """
        phi = self.features(x)
        c, h1 = self.theta_map().shape
        cov = self.covariance().view(c, h1, c, h1)
        return phi @ self.theta_map().T, torch.einsum("bi,cidj,bj->bcd", phi, cov, phi)

    def probit_probs(self, x: torch.Tensor) -> torch.Tensor:
        """Probit-approximated predictive softmax(μ / √(1 + π/8 · diag Σ)), deterministic.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Probabilities ``(B, C)``.
        """
        mean, cov = self.logit_moments(x)
        kappa = 1.0 / torch.sqrt(1.0 + math.pi / 8.0 * cov.diagonal(dim1=-2, dim2=-1))
        return (kappa * mean).softmax(-1)


def log_marglik(
    nll: float, theta_sq: float, n_params: int, ggn_eigs: torch.Tensor, delta: float
) -> float:
    """Laplace log marginal likelihood, up to a constant.

    log p(D|θ*) − ½ δ‖θ*‖² + ½ d·log δ − ½ Σ log(eigenvalues of the GGN + δ).

    Args:
        nll: Training NLL at θ*, −log p(D|θ*) (nats).
        theta_sq: ‖θ*‖².
        n_params: Number of last-layer parameters d = C(H+1).
        ggn_eigs: Eigenvalues of the GGN (of its Kronecker approximation for ``"kron"``),
            ``(d,)``.
        delta: Prior precision δ.

    Returns:
        The log marginal likelihood (nats).
    """
    return (
        -nll
        - 0.5 * delta * theta_sq
        + 0.5 * n_params * math.log(delta)
        - 0.5 * float(torch.log(ggn_eigs + delta).sum())
    )


def _best_delta(nll: float, theta_sq: float, n_params: int, ggn_eigs: torch.Tensor) -> float:
    def best(grid: torch.Tensor) -> int:
        values = [log_marglik(nll, theta_sq, n_params, ggn_eigs, float(d)) for d in grid]
        return max(range(len(grid)), key=values.__getitem__)

    i = best(PRIOR_GRID)
    lo, hi = PRIOR_GRID[max(i - 1, 0)], PRIOR_GRID[min(i + 1, len(PRIOR_GRID) - 1)]
    fine = torch.logspace(math.log10(lo), math.log10(hi), 41, dtype=torch.float64)
    return float(fine[best(fine)])


@torch.no_grad()
def last_layer_statistics(
    model: LastLayerLaplace, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1000
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Sums that the Kronecker factors and the marginal likelihood need, over the training set.

    Args:
        model: The network; its ``layers`` give φ and θ*.
        x: Images ``(N, 1, 28, 28)``.
        y: Labels ``(N,)``.
        batch_size: Images per batch.

    Returns:
        ``(a, g, nll)``: Σₙ φₙφₙᵀ ``(H+1, H+1)`` and Σₙ (diag pₙ − pₙpₙᵀ) ``(C, C)`` (float64,
        on the CPU) and the training NLL at θ* (nats).
    """
    h1, c = model.config.sizes[-2] + 1, model.config.num_classes
    a = torch.zeros(h1, h1, dtype=torch.float64)
    g = torch.zeros(c, c, dtype=torch.float64)
    nll = 0.0
    for xb, yb in zip(x.split(batch_size), y.split(batch_size), strict=True):
        phi = model.features(xb).double().cpu()
        logits = phi @ model.theta_map().double().cpu().T
        p = logits.softmax(-1)
        a += phi.T @ phi
        g += torch.diag(p.sum(0)) - p.T @ p
        nll += F.cross_entropy(logits, yb.cpu(), reduction="sum").item()
    return a, g, nll


@torch.no_grad()
def full_ggn(model: LastLayerLaplace, x: torch.Tensor) -> torch.Tensor:
    """The exact GGN (= Hessian of the NLL) of θ flattened row-major: Σₙ (diag pₙ − pₙpₙᵀ) ⊗ φₙφₙᵀ.

    Dense: for small last layers.

    Args:
        model: The network; its ``layers`` give φ and θ*.
        x: Images ``(N, 1, 28, 28)``.

    Returns:
        The GGN ``(C(H+1), C(H+1))``, float64, on the CPU.
    """
    phi = model.features(x).double().cpu()
    p = (phi @ model.theta_map().double().cpu().T).softmax(-1)
    lam = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # (N, C, C)
    d = p.shape[1] * phi.shape[1]
    return torch.einsum("ncd,ni,nj->cidj", lam, phi, phi).reshape(d, d)


@torch.no_grad()
def fit_laplace(
    model: LastLayerLaplace,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    prior_precision: float | None = None,
) -> dict:
    """Fit the last-layer posterior of ``model`` in place.

    The posterior precision is the GGN of the NLL (Kronecker-factored or full, by
    ``model.config.params["structure"]``) plus δ·I.

    Args:
        model: The network, its ``layers`` already trained; its posterior buffers are filled.
        x: Training images ``(N, 1, 28, 28)``.
        y: Training labels ``(N,)``.
        prior_precision: The prior precision δ; None chooses it by the marginal likelihood.

    Returns:
        ``{"prior_precision": δ, "log_marglik": the log marginal likelihood at δ (nats)}``.
    """
    a_sum, g_sum, nll = last_layer_statistics(model, x, y)
    n = float(len(x))
    theta = model.theta_map().double()
    theta_sq, n_params = float((theta**2).sum()), theta.numel()
    if model.config.params["structure"] == "kron":
        lam_a, u_a = torch.linalg.eigh(a_sum / n)
        lam_g, u_g = torch.linalg.eigh(g_sum / n)
        kron = n * lam_g.clamp_min(0)[:, None] * lam_a.clamp_min(0)[None, :]  # (C, H+1)
        ggn_eigs = kron.flatten()
    else:
        ggn = full_ggn(model, x)
        ggn_eigs = torch.linalg.eigvalsh(ggn).clamp_min(0)
    delta = prior_precision or _best_delta(nll, theta_sq, n_params, ggn_eigs)
    if model.config.params["structure"] == "kron":
        model.eigvecs_a.copy_(u_a.float())
        model.eigvecs_g.copy_(u_g.float())
        model.precision.copy_((kron + delta).float())
    else:
        covariance = torch.linalg.inv(ggn + delta * torch.eye(n_params, dtype=torch.float64))
        model.scale_tril.copy_(torch.linalg.cholesky(covariance).float())
    model.prior_precision.fill_(delta)
    return {
        "prior_precision": delta,
        "log_marglik": log_marglik(nll, theta_sq, n_params, ggn_eigs, delta),
    }
