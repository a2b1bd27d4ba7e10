"""Bayes by Backprop adapts by variational continual learning (Nguyen et al. 2018).

Yesterday's posterior is today's prior: the trained network's q(w) = N(μ₀, σ₀²), weight by
weight, becomes the prior of the new problem, and the same ELBO is trained on the class's
drawings with the complexity cost KL(q ‖ N(μ₀, σ₀²)) in closed form. Before the first step q is
its own prior, so the cost and its gradient are 0: with no drawings nothing moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.adapt.base import Adapter, Objective, StudyArm
from core.methods.base import Setting


def gaussian_kl(
    mu_q: torch.Tensor, sigma_q: torch.Tensor, mu_p: torch.Tensor, sigma_p: torch.Tensor
) -> torch.Tensor:
    """Σ KL(N(μ_q, σ_q²) ‖ N(μ_p, σ_p²)) over the elements, in nats.

    Written with r = σ_q / σ_p as ½(r² − 1) − log r + ½((μ_q − μ_p)/σ_p)², so that at
    q = p the value and the gradient are exactly 0.

    Args:
        mu_q: Means of q, any shape.
        sigma_q: Standard deviations of q, same shape.
        mu_p: Means of p, same shape.
        sigma_p: Standard deviations of p, same shape.

    Returns:
        The summed divergence, a scalar.
    """
    r = sigma_q / sigma_p
    return (0.5 * (r * r - 1.0) - torch.log(r) + 0.5 * ((mu_q - mu_p) / sigma_p) ** 2).sum()


@dataclass(frozen=True)
class GaussianPrior:
    """A mean-field Gaussian prior, per layer: the trained posterior, frozen.

    Attributes:
        layers: Per layer ``{"weight_mu", "weight_sigma", "bias_mu", "bias_sigma"}``, shaped
            like that layer's parameters ``(out, in)`` and ``(out,)``.
    """

    layers: tuple[dict[str, torch.Tensor], ...]

    @classmethod
    def posterior_of(cls, model: nn.Module) -> GaussianPrior:
        """The posterior of a Bayes-by-Backprop network, copied (it no longer follows the model).

        Args:
            model: A :class:`~core.engine.bbb.BayesMLP`.

        Returns:
            Its μ and σ = softplus(ρ) per weight and bias.
        """
        return cls(
            tuple(
                {
                    "weight_mu": layer.weight_mu.detach().clone(),
                    "weight_sigma": layer.weight_sigma.detach().clone(),
                    "bias_mu": layer.bias_mu.detach().clone(),
                    "bias_sigma": layer.bias_sigma.detach().clone(),
                }
                for layer in model.layers
            )
        )

    def kl(self, model: nn.Module) -> torch.Tensor:
        """KL(q ‖ this prior) of the model's posterior q, summed over every weight and bias.

        Args:
            model: A :class:`~core.engine.bbb.BayesMLP` of the same sizes.

        Returns:
            The divergence in nats, differentiable with respect to μ and ρ.
        """
        total = torch.zeros(())
        for layer, prior in zip(model.layers, self.layers, strict=True):
            total = total + gaussian_kl(
                layer.weight_mu, layer.weight_sigma, prior["weight_mu"], prior["weight_sigma"]
            )
            total = total + gaussian_kl(
                layer.bias_mu, layer.bias_sigma, prior["bias_mu"], prior["bias_sigma"]
            )
        return total


def objective(model: nn.Module, options: dict) -> Objective:
    """The ELBO on the new drawings with the trained posterior as the prior.

    Args:
        model: A fresh copy of the trained :class:`~core.engine.bbb.BayesMLP`.
        options: ``{"n_samples"}``: Monte-Carlo passes (local reparameterisation) per step.

    Returns:
        The objective; its ``anchor`` is the :class:`GaussianPrior` it uses.
    """
    prior = GaussianPrior.posterior_of(model)
    n_samples = int(options["n_samples"])

    def nll(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits, _ = model.lrt_forward_with_kl(x, n_samples)  # its own prior's cost unused
        target = y.repeat(n_samples)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target, reduction="sum") / (
            n_samples
        )

    params = [p for layer in model.layers for p in layer.parameters()]
    return Objective(params, nll, lambda: prior.kl(model), anchor=prior)


ADAPTER = Adapter(
    "bbb",
    "Yesterday's posterior is today's prior: each weight's mean and spread after MNIST become "
    "the prior for the class's drawings, and the network is trained again (variational "
    "continual learning).",
    objective,
    settings=(
        Setting(
            "n_samples",
            "Passes per step",
            "Sampled networks averaged in each training step.",
            4,
            options=(1, 2, 4, 8),
        ),
    ),
    study=(StudyArm("", "BBB, MNIST posterior as prior"),),
)
