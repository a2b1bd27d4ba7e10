"""Minibatch ELBO of Bayes by Backprop and its three sampling implementations.

For minibatch i of M the cost is ``F_i = Σ_b NLL_b + β·π_i·KL(q || p)`` averaged over S
posterior samples (Blundell et al. 2015, eq. 8-9), with the KL weighting π_i either uniform
(1/M) or Blundell's 2^(M−i)/(2^M−1), which puts most of the KL on the first minibatches.

Three interchangeable estimators of the same objective:

* ``"sequential"``: a Python loop over the S samples (weight sampling);
* ``"vmap"``: ``torch.func.vmap`` over samples of ``functional_call`` with
  ``randomness="different"`` (weight sampling, one weight draw per sample);
* ``"vmap_lrt"``: the same vmap with local reparameterisation. Unbatched work (the first
  layer's mean and variance, which do not depend on the noise) is done once for all samples.

Given identical noise (``noise=``, from ``BayesMLP.draw_noise``), sequential and vmap return
the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from core.engine.layers import LayerNoise

KL_SCHEDULES = ("uniform", "blundell")


def kl_weight(i: int, num_batches: int, schedule: str = "uniform") -> float:
    """π_i for minibatch ``i`` (1-based) of ``num_batches``; the weights sum to 1 over an epoch."""
    if not 1 <= i <= num_batches:
        raise ValueError(f"minibatch index {i} outside 1..{num_batches}")
    if schedule == "uniform":
        return 1.0 / num_batches
    if schedule == "blundell":  # 2^(M-i) / (2^M - 1) = 2^-i / (1 - 2^-M), without overflow
        return 2.0 ** (-i) / (1.0 - 2.0 ** (-num_batches))
    raise ValueError(f"KL schedule must be one of {KL_SCHEDULES}, got {schedule!r}")


@dataclass
class ObjectiveTerms:
    """Monte-Carlo averages over S samples. loss = nll + weight·kl (weight includes β).

    nll: summed over the minibatch (nats); kl: complexity cost (nats); probs: mean softmax
    over the samples ``(B, C)``, detached."""

    loss: torch.Tensor
    nll: torch.Tensor
    kl: torch.Tensor
    probs: torch.Tensor


def _terms(logits: torch.Tensor, kl: torch.Tensor, y: torch.Tensor, weight: float):
    nll = F.cross_entropy(logits, y, reduction="sum")
    return nll + weight * kl, nll, kl


def _sequential(model, x, y, n_samples, weight, noise) -> ObjectiveTerms:
    losses, nlls, kls, probs = [], [], [], []
    for s in range(n_samples):
        noise_s = None if noise is None else [{k: v[s] for k, v in n.items()} for n in noise]
        logits, kl = model.forward_with_kl(x, noise_s, lrt=False)
        loss, nll, kl = _terms(logits, kl, y, weight)
        losses.append(loss), nlls.append(nll), kls.append(kl)
        probs.append(logits.detach().softmax(-1))
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


def _vmapped(model, x, y, n_samples, weight, noise, lrt: bool) -> ObjectiveTerms:
    wrapper = _WithKL(model)
    params = dict(wrapper.named_parameters())

    def one_sample(noise_s: list[LayerNoise] | None):
        logits, kl = functional_call(wrapper, params, (x, noise_s, lrt))
        loss, nll, kl = _terms(logits, kl, y, weight)
        return loss, nll, kl, logits.softmax(-1)

    if noise is None:  # noise drawn inside, independently per sample
        loss, nll, kl, probs = vmap(lambda _: one_sample(None), randomness="different")(
            torch.arange(n_samples, device=x.device)
        )
    else:
        loss, nll, kl, probs = vmap(one_sample)(noise)
    return ObjectiveTerms(loss.mean(), nll.mean(), kl.mean(), probs.detach().mean(0))


ESTIMATORS = {
    "sequential": _sequential,
    "vmap": partial(_vmapped, lrt=False),
    "vmap_lrt": partial(_vmapped, lrt=True),
}
"""Implementation name → estimator ``(model, x, y, n_samples, weight, noise) -> terms``."""
IMPLEMENTATIONS = tuple(ESTIMATORS)


def minibatch_objective(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    n_samples: int = 1,
    weight: float = 1.0,
    impl: str = "vmap",
    noise: list[LayerNoise] | None = None,
) -> ObjectiveTerms:
    """``n_samples``-sample (S) estimate of ``Σ NLL + weight·KL`` for images
    ``x (B, 1, 28, 28)`` and labels ``y (B,)``.

    ``weight`` is β·π_i. ``noise`` (optional) fixes the randomness: a per-layer list of dicts
    with a leading ``n_samples`` dim, as from ``BayesMLP.draw_noise`` (``lrt=True`` for
    ``vmap_lrt``)."""
    if n_samples < 1:
        raise ValueError("n_samples must be ≥ 1")
    if impl not in ESTIMATORS:
        raise ValueError(f"impl must be one of {IMPLEMENTATIONS}, got {impl!r}")
    return ESTIMATORS[impl](model, x, y, n_samples, weight, noise)
