"""Laplace adapts by online Laplace (Ritter et al. 2018; EWC, Kirkpatrick et al. 2017).

The trained last-layer posterior N(θ*, Λ⁻¹) becomes the prior of the new problem: the last
layer's weights and bias θ are trained on the drawings' summed negative log-likelihood plus the
quadratic penalty ½ (θ − θ*)ᵀ Λ (θ − θ*) with the shipped posterior precision Λ. The layers
below have no posterior (the approximation covers the last layer only), so they stay as they
are. After the last step the posterior precision gains the drawings' curvature (their GGN at
the new θ): in the Kronecker eigenbasis of the trained posterior, its diagonal there
(``"kron"``), or exactly (``"full"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.adapt.base import Adapter, Objective, StudyArm
from core.methods.laplace.model import full_ggn


@dataclass(frozen=True)
class QuadraticPrior:
    """The trained last-layer posterior as a quadratic penalty, frozen.

    Attributes:
        theta: θ* = [W | b], ``(C, H + 1)``.
        structure: ``"kron"`` or ``"full"``, as the model's.
        factors: ``"kron"``: ``{"eigvecs_a" (H+1, H+1), "eigvecs_g" (C, C), "precision"
            (C, H+1)}``, Λ = (U_G ⊗ U_A) diag(D) (U_G ⊗ U_A)ᵀ; ``"full"``: ``{"scale_tril"}``,
            the Cholesky factor L of Λ⁻¹.
    """

    theta: torch.Tensor
    structure: str
    factors: dict[str, torch.Tensor]

    @classmethod
    def posterior_of(cls, model: nn.Module) -> QuadraticPrior:
        """The posterior of a :class:`~core.engine.laplace.LastLayerLaplace`, copied.

        Args:
            model: The fitted model.

        Returns:
            Its θ* and posterior precision.
        """
        structure = model.config.params["structure"]
        names = ("eigvecs_a", "eigvecs_g", "precision") if structure == "kron" else ("scale_tril",)
        factors = {name: getattr(model, name).detach().clone() for name in names}
        return cls(model.theta_map().detach().clone(), structure, factors)

    def precision_matrix(self) -> torch.Tensor:
        """Λ as a dense matrix over θ flattened row-major, ``(C(H+1), C(H+1))``."""
        if self.structure == "full":
            scale = self.factors["scale_tril"].double()
            return torch.cholesky_inverse(scale).float()
        basis = torch.kron(self.factors["eigvecs_g"], self.factors["eigvecs_a"])
        return basis @ torch.diag(self.factors["precision"].flatten()) @ basis.T

    def penalty(self, theta: torch.Tensor) -> torch.Tensor:
        """½ (θ − θ*)ᵀ Λ (θ − θ*), in nats.

        Args:
            theta: The last layer's weights and bias ``(C, H + 1)``.

        Returns:
            A scalar, differentiable with respect to ``theta``.
        """
        delta = theta - self.theta
        if self.structure == "kron":
            z = self.factors["eigvecs_g"].T @ delta @ self.factors["eigvecs_a"]
            return 0.5 * (self.factors["precision"] * z * z).sum()
        solved = torch.linalg.solve_triangular(
            self.factors["scale_tril"], delta.reshape(-1, 1), upper=False
        )
        return 0.5 * (solved * solved).sum()


@torch.no_grad()
def absorb(model: nn.Module, x: torch.Tensor) -> None:
    """Add the curvature of the drawings ``x`` at the model's θ to its posterior precision.

    Args:
        model: A :class:`~core.engine.laplace.LastLayerLaplace`, modified in place.
        x: Images ``(N, 1, 28, 28)``; N = 0 changes nothing.
    """
    if len(x) == 0:
        return
    if model.config.params["structure"] == "full":
        precision = torch.cholesky_inverse(model.scale_tril.double()) + full_ggn(model, x)
        covariance = torch.cholesky_inverse(torch.linalg.cholesky(precision))
        model.scale_tril.copy_(torch.linalg.cholesky(covariance).float())
        return
    phi = model.features(x).double()
    p = (phi @ model.theta_map().double().T).softmax(-1)
    u_a, u_g = model.eigvecs_a.double(), model.eigvecs_g.double()
    lam = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # (N, C, C)
    g_diag = torch.einsum("ci,ncd,di->ni", u_g, lam, u_g)  # diag of U_Gᵀ Λₙ U_G, (N, C)
    a_diag = (phi @ u_a) ** 2  # (N, H+1)
    model.precision.add_((g_diag.T @ a_diag).float())


def objective(model: nn.Module, options: dict) -> Objective:
    """The drawings' NLL at the last layer's θ plus the trained posterior's quadratic penalty.

    Args:
        model: A fresh copy of the trained :class:`~core.engine.laplace.LastLayerLaplace`; its
            layers below the last are frozen.
        options: None used.

    Returns:
        The objective; its ``anchor`` is the :class:`QuadraticPrior`.
    """
    prior = QuadraticPrior.posterior_of(model)
    for layer in model.layers[:-1]:
        layer.requires_grad_(False)
    last = model.layers[-1]

    def nll(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model.features(x) @ model.theta_map().T, y, reduction="sum")

    def finish(x: torch.Tensor, y: torch.Tensor) -> dict:
        absorb(model, x)
        return {"posterior": "precision plus the drawings' curvature"}

    return Objective(
        [last.weight, last.bias],
        nll,
        lambda: prior.penalty(model.theta_map()),
        finish,
        anchor=prior,
    )


ADAPTER = Adapter(
    "laplace",
    "The last layer's Gaussian posterior after MNIST becomes a spring that pulls each "
    "direction of its weights back as firmly as MNIST pinned it down (online Laplace); the "
    "layers below stay as they are.",
    objective,
    study=(StudyArm("", "Laplace, online (last layer)"),),
)
