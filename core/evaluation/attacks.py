"""Gradient attacks on the Monte-Carlo predictive: FGSM, targeted iterative FGSM, transfer.

Images are ``(B, 1, 28, 28)`` in [0, 1]; ε and step sizes are in the same pixel units.

**Expectation over transformation (EOT).** A stochastic model classifies with the predictive
mean p̄(y|x) = 1/k Σ_s softmax(f_s(x)) of k passes, so the attacked loss is the NLL of that
mean, −log p̄(y|x) (not the mean of k per-pass losses). Its gradient is taken through
:func:`core.engine.sampler.predictive_logits` with ``n_samples = k`` fresh passes; ``n_samples = 1``
differentiates one random pass and reproduces the naive attack, whose gradient noise can look
like robustness. For a deterministic model every k gives the same gradient. BBB passes use
local reparameterisation by default (``lrt``): exact per input, and the loss is a sum of
per-input terms, so nothing needs one network shared across inputs.

**Transfer.** Craft on one model (e.g. the MLP: ``fgsm(mlp, x, y, eps)``) and evaluate on another.

Attacks never change a model: gradients are taken w.r.t. the input only (``torch.autograd.grad``
on a detached copy of x inside ``torch.enable_grad``), so shared read-only models stay intact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.engine.interface import LabModel
from core.engine.sampler import predictive_logits, predictive_samples


def predictive_log_probs(
    model: LabModel, x: torch.Tensor, n_samples: int, *, lrt: bool | None = True
) -> torch.Tensor:
    """Log-probabilities log p̄(·|x) of the ``n_samples``-pass predictive mean.

    Differentiable w.r.t. ``x``; computed with logsumexp over the passes' log-softmax.

    Args:
        model: The network.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        n_samples: Number of Monte-Carlo passes k of the mean.
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.

    Returns:
        Log-probabilities ``(B, C)`` in nats, on the model's device.
    """
    logits = predictive_logits(model, x, n_samples, lrt=lrt)
    return torch.logsumexp(logits.log_softmax(-1), dim=0) - math.log(n_samples)


def input_gradient(
    model: LabModel,
    x: torch.Tensor,
    labels: torch.Tensor,
    n_samples: int = 1,
    *,
    lrt: bool | None = True,
) -> torch.Tensor:
    """Gradient ∇ₓ Σᵢ −log p̄(labelsᵢ|xᵢ) of the ``n_samples``-pass predictive (EOT).

    The model is not changed: the gradient is taken w.r.t. a detached copy of ``x`` only.

    Args:
        model: The network.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        labels: Class indices ``(B,)`` whose NLL is differentiated.
        n_samples: Number of Monte-Carlo passes k of the predictive mean.
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.

    Returns:
        The gradient, shaped like ``x``.
    """
    with torch.enable_grad():
        x = x.detach().clone().requires_grad_(True)
        log_probs = predictive_log_probs(model, x, n_samples, lrt=lrt)
        loss = F.nll_loss(log_probs, labels.to(log_probs.device), reduction="sum")
        (grad,) = torch.autograd.grad(loss, x)
    return grad


def perturb(x: torch.Tensor, direction: torch.Tensor, eps: float) -> torch.Tensor:
    """Step ``x`` by ε along ``direction`` and clip: clip(x + ε·direction, 0, 1).

    With ``direction = sign(∇ₓ loss)`` this is FGSM.

    Args:
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        direction: Step direction, shaped like ``x``.
        eps: Step size ε in pixel units.

    Returns:
        Perturbed images, shaped like ``x``, in [0, 1].
    """
    return (x + eps * direction).clamp(0.0, 1.0)


def fgsm_direction(
    model: LabModel,
    x: torch.Tensor,
    labels: torch.Tensor,
    n_samples: int = 1,
    *,
    lrt: bool | None = True,
) -> torch.Tensor:
    """The FGSM direction sign(∇ₓ NLL); one gradient serves every ε (see :func:`perturb`).

    Args:
        model: The network.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        labels: True class indices ``(B,)``.
        n_samples: Number of Monte-Carlo passes k per gradient (EOT).
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.

    Returns:
        Signs in {−1, 0, 1}, shaped like ``x``.
    """
    return input_gradient(model, x, labels, n_samples, lrt=lrt).sign()


def fgsm(
    model: LabModel,
    x: torch.Tensor,
    labels: torch.Tensor,
    eps: float,
    n_samples: int = 1,
    *,
    lrt: bool | None = True,
) -> torch.Tensor:
    """Fast gradient sign method (Goodfellow et al. 2015): x' = clip(x + ε·sign(∇ₓ NLL), 0, 1).

    Args:
        model: The network the gradient is taken on (for a transfer attack, the source model).
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        labels: True class indices ``(B,)``.
        eps: Perturbation size ε in pixel units; 0 returns a copy of ``x``.
        n_samples: Number of Monte-Carlo passes k per gradient (EOT).
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.

    Returns:
        Adversarial images, shaped like ``x``, in [0, 1].
    """
    if eps == 0:
        return x.clone()
    return perturb(x, fgsm_direction(model, x, labels, n_samples, lrt=lrt), eps)


@dataclass
class TargetedResult:
    """Outcome of :func:`targeted_fgsm`.

    Attributes:
        adversarial: Final images ``(B, 1, 28, 28)``.
        probs: Predictive-mean class probabilities at each iterate, ``(steps + 1, B, C)``, on
            the CPU (index 0 is the clean input).
    """

    adversarial: torch.Tensor
    probs: torch.Tensor


def targeted_fgsm(
    model: LabModel,
    x: torch.Tensor,
    target: torch.Tensor | int,
    *,
    step: float = 0.01,
    steps: int = 20,
    eps: float | None = None,
    n_samples: int = 1,
    n_eval_samples: int = 20,
    lrt: bool | None = True,
) -> TargetedResult:
    """Iterative targeted FGSM towards the class ``target``.

    ``steps`` times x ← clip(x − step·sign(∇ₓ −log p̄(target|x)), 0, 1), projected onto the L∞
    ball of radius ``eps`` around the clean x when given.

    Args:
        model: The network.
        x: Clean images ``(B, 1, 28, 28)`` in [0, 1].
        target: Target class, one for all inputs or per input ``(B,)``.
        step: Step size in pixel units.
        steps: Number of iterations.
        eps: Radius of the L∞ ball around the clean ``x`` in pixel units; None for no bound.
        n_samples: Number of Monte-Carlo passes per gradient (EOT, see the module docstring).
        n_eval_samples: Number of passes of the fresh predictive mean recorded at every iterate.
        lrt: BBB only, for the gradient passes: True for local reparameterisation, False for
            weight sampling, None for the model's configured default.

    Returns:
        The final images and the recorded trajectory of probabilities.
    """
    x0 = x.detach()
    target = torch.as_tensor(target, dtype=torch.long).expand(len(x0)).to(x0.device)
    probs = [predictive_samples(model, x0, n_eval_samples).mean(0)]
    adv = x0.clone()
    for _ in range(steps):
        adv = perturb(adv, -fgsm_direction(model, adv, target, n_samples, lrt=lrt), step)
        if eps is not None:
            adv = torch.minimum(torch.maximum(adv, x0 - eps), x0 + eps).clamp(0.0, 1.0)
        probs.append(predictive_samples(model, adv, n_eval_samples).mean(0))
    return TargetedResult(adv, torch.stack(probs).cpu())
