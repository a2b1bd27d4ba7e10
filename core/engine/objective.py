"""Minibatch ELBO of Bayes by Backprop and its three sampling implementations.

For minibatch i of M the cost is ``F_i = Σ_b NLL_b + β·π_i·KL(q || p)`` averaged over S
posterior samples (Blundell et al. 2015, eq. 8-9), with the KL weighting π_i either uniform
(1/M) or Blundell's 2^(M−i)/(2^M−1), which puts most of the KL on the first minibatches.

Three interchangeable estimators of the same objective:

* ``"sequential"``: a Python loop over the S samples (weight sampling);
* ``"vmap"``: ``torch.func.vmap`` over samples of ``functional_call`` with
  ``randomness="different"`` (weight sampling, one weight draw per sample);
* ``"vmap_lrt"``: local reparameterisation, vectorised over the samples. For a
  :class:`~core.methods.bbb.model.BayesMLP` it is batched by hand
  (:meth:`~core.methods.bbb.model.BayesMLP.lrt_forward_with_kl`): σ and the complexity cost once per
  step, the first layer's mean and variance (which do not depend on the noise) once for all
  samples, later layers on ``(S·B, width)`` rows; other models go through the vmap.

Given identical noise (``noise=``, from ``BayesMLP.draw_noise``), sequential and vmap return
the same numbers.

**α-divergence** (Li & Gal 2017; Hernández-Lobato et al. 2016). With ``alpha > 0`` the vmapped
estimators replace the S-sample average of each input's NLL ℓₙₖ by the black-box α-divergence
energy −(1/α)·log((1/S)·Σₖ exp(−α·ℓₙₖ)), computed with ``logsumexp``. It is the average NLL
when S = 1 or as α → 0 (the standard MC-dropout / ELBO objective), and moves towards the NLL of
the predictive mean, −log((1/S)·Σₖ p(yₙ|ωₖ)), at α = 1. For MC dropout the complexity term is
the optimiser's weight decay (L2).

**Ensembles** (``"members"``): the NLL of every member of a
:class:`~core.methods.ensemble.model.DeepEnsemble` on the minibatch, summed over members (their
parameters are disjoint, so each gets exactly its own gradient); S is ignored. With
``adversarial_eps`` each member also gets the NLL of its own FGSM example of the batch
(adversarial training, Lakshminarayanan et al. 2017, §2.3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from core.engine.layers import LayerNoise

KL_SCHEDULES = ("uniform", "blundell")


def kl_weight(i: int, num_batches: int, schedule: str = "uniform") -> float:
    """KL weighting π_i of one minibatch; the weights sum to 1 over an epoch.

    Args:
        i: Index of the minibatch, 1-based.
        num_batches: Number of minibatches M in an epoch.
        schedule: ``"uniform"`` (1/M) or ``"blundell"`` (2^(M−i)/(2^M−1)).

    Returns:
        π_i.

    Raises:
        ValueError: If ``i`` is outside 1..``num_batches`` or ``schedule`` is not one of
            :data:`KL_SCHEDULES`.
    """
    if not 1 <= i <= num_batches:
        raise ValueError(f"minibatch index {i} outside 1..{num_batches}")
    if schedule == "uniform":
        return 1.0 / num_batches
    if schedule == "blundell":  # 2^(M-i) / (2^M - 1) = 2^-i / (1 - 2^-M), without overflow
        return 2.0 ** (-i) / (1.0 - 2.0 ** (-num_batches))
    raise ValueError(f"KL schedule must be one of {KL_SCHEDULES}, got {schedule!r}")


@dataclass
class ObjectiveTerms:
    """Monte-Carlo averages over S samples of the minibatch objective.

    Attributes:
        loss: ``nll + weight·kl`` (weight includes β), the scalar to differentiate (nats);
            with ``alpha > 0`` the α-divergence energy replaces the average NLL.
        nll: NLL summed over the minibatch (nats).
        kl: Complexity cost (nats).
        probs: Mean softmax over the samples ``(B, C)``, detached.
    """

    loss: torch.Tensor
    nll: torch.Tensor
    kl: torch.Tensor
    probs: torch.Tensor


@dataclass(frozen=True)
class Likelihood:
    """How network outputs ``(B, C)`` score targets ``y``.

    The per-input NLL ``(B,)`` in nats, and the prediction averaged over samples (class
    probabilities, or the regression mean).

    Attributes:
        nll: ``(outputs, y) -> (B,)``.
        predict: ``outputs -> (B, C)``.
    """

    nll: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    predict: Callable[[torch.Tensor], torch.Tensor]


REGRESSION_NOISE = 0.1
"""Standard deviation of the fixed Gaussian noise of the ``"gaussian"`` likelihood."""

LIKELIHOODS = {
    "categorical": Likelihood(
        lambda out, y: F.cross_entropy(out, y, reduction="none"), lambda out: out.softmax(-1)
    ),
    "gaussian": Likelihood(
        lambda out, y: (
            0.5 * ((out[:, 0] - y) / REGRESSION_NOISE) ** 2
            + math.log(REGRESSION_NOISE)
            + 0.5 * math.log(2 * math.pi)
        ),
        lambda out: out,
    ),
}
"""Classification (softmax cross-entropy) and 1-D regression with fixed noise
:data:`REGRESSION_NOISE` (the regression column of the speed benchmark)."""


def _terms(out: torch.Tensor, kl: torch.Tensor, y: torch.Tensor, weight: float, lik: Likelihood):
    nll = lik.nll(out, y).sum()
    return nll + weight * kl, nll, kl


def _sequential(model, x, y, n_samples, weight, noise, likelihood="categorical") -> ObjectiveTerms:
    lik = LIKELIHOODS[likelihood]
    losses, nlls, kls, probs = [], [], [], []
    for s in range(n_samples):
        noise_s = None if noise is None else [{k: v[s] for k, v in n.items()} for n in noise]
        logits, kl = model.forward_with_kl(x, noise_s, lrt=False)
        loss, nll, kl = _terms(logits, kl, y, weight, lik)
        losses.append(loss), nlls.append(nll), kls.append(kl)
        probs.append(lik.predict(logits.detach()))
    return ObjectiveTerms(
        torch.stack(losses).mean(),
        torch.stack(nlls).mean(),
        torch.stack(kls).mean(),
        torch.stack(probs).mean(0),
    )


def _fused(model, x, y, n_samples, weight, noise, likelihood="categorical") -> ObjectiveTerms:
    """The sequential loop with :meth:`BayesMLP.fused_forward_with_kl` (other kinds: sequential)."""
    if not hasattr(model, "fused_forward_with_kl"):
        return _sequential(model, x, y, n_samples, weight, noise, likelihood)
    lik = LIKELIHOODS[likelihood]
    if n_samples == 1:
        noise_0 = None if noise is None else [{k: v[0] for k, v in n.items()} for n in noise]
        out, kl = model.fused_forward_with_kl(x, noise_0)
        loss, nll, kl = _terms(out, kl, y, weight, lik)
        return ObjectiveTerms(loss, nll, kl, lik.predict(out.detach()))
    losses, nlls, kls, probs = [], [], [], []
    for s in range(n_samples):
        noise_s = None if noise is None else [{k: v[s] for k, v in n.items()} for n in noise]
        out, kl = model.fused_forward_with_kl(x, noise_s)
        loss, nll, kl = _terms(out, kl, y, weight, lik)
        losses.append(loss), nlls.append(nll), kls.append(kl)
        probs.append(lik.predict(out.detach()))
    return ObjectiveTerms(
        torch.stack(losses).mean(),
        torch.stack(nlls).mean(),
        torch.stack(kls).mean(),
        torch.stack(probs).mean(0),
    )


class _WithKL(nn.Module):
    """Makes ``forward_with_kl`` the ``forward`` that ``functional_call`` runs."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x, noise, lrt):
        return self.model.forward_with_kl(x, noise, lrt=lrt)


def alpha_energy(nll: torch.Tensor, alpha: float) -> torch.Tensor:
    """Black-box α-divergence energy Σₙ −(1/α)·log((1/S)·Σₖ exp(−α·ℓₙₖ)).

    Args:
        nll: Per-sample, per-input NLLs ℓₙₖ ``(S, B)`` (nats).
        alpha: α ≥ 0; ``alpha = 0`` gives the limit Σₙ (1/S)·Σₖ ℓₙₖ.

    Returns:
        The energy, a scalar (nats).
    """
    if alpha == 0:
        return nll.mean(0).sum()
    n_samples = nll.shape[0]
    return -(torch.logsumexp(-alpha * nll, dim=0) - math.log(n_samples)).sum() / alpha


def _vmapped(
    model, x, y, n_samples, weight, noise, lrt: bool, alpha: float = 0.0, likelihood="categorical"
):
    lik = LIKELIHOODS[likelihood]
    if lrt and hasattr(model, "lrt_forward_with_kl"):  # BBB: batched without vmap
        out, kl = model.lrt_forward_with_kl(x, n_samples, noise)
        n_batch = out.shape[1]
        nll = lik.nll(out.flatten(0, 1), y.repeat(n_samples)).view(n_samples, n_batch)
        probs = lik.predict(out)
    else:
        wrapper = _WithKL(model)
        params = dict(wrapper.named_parameters())

        def one_sample(noise_s: list[LayerNoise] | None):
            logits, kl = functional_call(wrapper, params, (x, noise_s, lrt))
            return lik.nll(logits, y), kl, lik.predict(logits)

        if noise is None and n_samples == 1:  # one sample: the same draws without vmap's cost
            nll, kl, probs = (t.unsqueeze(0) for t in one_sample(None))
        elif noise is None:  # noise drawn inside, independently per sample
            nll, kl, probs = vmap(lambda _: one_sample(None), randomness="different")(
                torch.arange(n_samples, device=x.device)
            )
        else:
            nll, kl, probs = vmap(one_sample)(noise)
    loss = alpha_energy(nll, alpha) + weight * kl.mean()
    return ObjectiveTerms(loss, nll.sum(1).mean(), kl.mean(), probs.detach().mean(0))


def _members(
    model, x, y, n_samples, weight, noise, alpha: float = 0.0, adversarial_eps: float = 0.0
) -> ObjectiveTerms:
    members = model.members
    xm = x.detach().expand(members, *x.shape).clone().requires_grad_(adversarial_eps > 0)
    logits = model.member_logits(xm, per_member=True)  # (M, B, C)
    targets = y.repeat(members)
    nll = F.cross_entropy(logits.flatten(0, 1), targets, reduction="sum")
    loss = nll
    if adversarial_eps > 0:  # each member's own FGSM example (Lakshminarayanan et al. 2017)
        (grad,) = torch.autograd.grad(nll, xm, retain_graph=True)
        adversarial = (xm + adversarial_eps * grad.sign()).clamp(0.0, 1.0).detach()
        adv_logits = model.member_logits(adversarial, per_member=True)
        loss = nll + F.cross_entropy(adv_logits.flatten(0, 1), targets, reduction="sum")
    probs = logits.detach().softmax(-1).mean(0)
    return ObjectiveTerms(loss, nll / members, nll.new_zeros(()), probs)


ESTIMATORS = {
    "sequential": _sequential,
    "vmap": partial(_vmapped, lrt=False),
    "vmap_lrt": partial(_vmapped, lrt=True),
    "members": _members,
    "fused": _fused,
}
"""Implementation name → estimator ``(model, x, y, n_samples, weight, noise[, alpha])``."""
IMPLEMENTATIONS = ("sequential", "vmap", "vmap_lrt")
"""The three interchangeable estimators of the BBB ELBO (compared by the speed benchmark)."""


def minibatch_objective(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    n_samples: int = 1,
    weight: float = 1.0,
    impl: str = "vmap",
    noise: list[LayerNoise] | None = None,
    alpha: float = 0.0,
    adversarial_eps: float = 0.0,
    likelihood: str = "categorical",
) -> ObjectiveTerms:
    """``n_samples``-sample (S) estimate of ``Σ NLL + weight·KL`` on one minibatch.

    Args:
        model: The network (a :class:`~core.engine.interface.LabModel`; a
            :class:`~core.methods.ensemble.model.DeepEnsemble` for ``impl="members"``).
        x: Images ``(B, 1, 28, 28)``.
        y: Labels ``(B,)``.
        n_samples: Number of Monte-Carlo samples S.
        weight: KL weight β·π_i.
        impl: A key of :data:`ESTIMATORS`.
        noise: Optional fixed randomness: a per-layer list of dicts with a leading
            ``n_samples`` dim, as from ``BayesMLP.draw_noise`` (``lrt=True`` for ``vmap_lrt``).
        alpha: When > 0, the α-divergence energy instead of the average NLL (vmapped
            estimators only; see the module docstring).
        adversarial_eps: When > 0 (``impl="members"`` only), each member is also trained on
            its own FGSM example x + ε·sign(∇ₓ NLL), clipped to [0, 1] (pixel units).
        likelihood: A key of :data:`LIKELIHOODS` (``"gaussian"``: ``y (B,)`` real targets and
            one network output; the three BBB estimators only).

    Returns:
        The loss, NLL, KL and mean probabilities of the minibatch.

    Raises:
        ValueError: If ``n_samples < 1``, ``impl`` is unknown, ``alpha < 0``, ``alpha > 0``
            with the sequential estimator, or ``adversarial_eps`` without ``"members"``.
    """
    if n_samples < 1:
        raise ValueError("n_samples must be ≥ 1")
    if impl not in ESTIMATORS:
        raise ValueError(f"impl must be one of {tuple(ESTIMATORS)}, got {impl!r}")
    if alpha < 0:
        raise ValueError(f"alpha must be ≥ 0, got {alpha}")
    if likelihood != "categorical":
        if likelihood not in LIKELIHOODS or impl not in IMPLEMENTATIONS or alpha:
            raise ValueError(f"likelihood {likelihood!r} needs one of {IMPLEMENTATIONS}, α = 0")
        return ESTIMATORS[impl](model, x, y, n_samples, weight, noise, likelihood=likelihood)
    if adversarial_eps:
        if impl != "members":
            raise ValueError("adversarial training is implemented for ensembles ('members')")
        return ESTIMATORS[impl](
            model, x, y, n_samples, weight, noise, adversarial_eps=adversarial_eps
        )
    if alpha:
        if impl == "sequential":
            raise ValueError("the α-divergence energy needs a vmapped estimator")
        return ESTIMATORS[impl](model, x, y, n_samples, weight, noise, alpha=alpha)
    return ESTIMATORS[impl](model, x, y, n_samples, weight, noise)
