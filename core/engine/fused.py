"""Fused weight sampling and complexity cost of Bayes by Backprop (the ``"fused"`` estimator).

One training step of BBB with weight sampling needs, for every weight, σ = softplus(ρ), the draw
w = μ + σ·ε and the complexity cost with its gradient. Written with autograd that is dozens of
separate passes over the 478k weights of a 784-400-400-10 network, each storing its result for
the backward pass; on a CPU they cost several times the network's matrix products (issue 19).

:class:`SampleKL` does the same arithmetic as one autograd node over *all* layers at once:
the elementwise work runs over flat vectors of every layer's weights and biases (the means and
spreads are read in place, not concatenated), one standard-normal draw covers all layers, and a
hand-written backward gives the exact gradients

* Gaussian prior N(0, σp²), closed-form KL:
  ``dμ = g + β·μ/σp²`` and ``dρ = (g·ε + β·(σ/σp² − 1/σ))·sigmoid(ρ)``;
* scale-mixture prior, one-sample estimate log q(w) − log p(w) at the draw w:
  with h = β·w·(r/σ1² + (1 − r)/σ2²), r the posterior responsibility of the wide component,
  ``dμ = g + h`` and ``dρ = ((g + h)·ε − β/σ)·sigmoid(ρ)``;

where g = ∂loss/∂w and β = ∂loss/∂KL (the KL weight). The estimator is unchanged: the same w,
the same KL (to float rounding) and the same gradients as the autograd reference of
:class:`~core.engine.layers.BayesLinear` given the same noise (``tests/unit/test_speed_fused.py``).

:class:`SigmaKL` is its counterpart for local reparameterisation (σ² and the complexity cost
once per step, no weights drawn) and :class:`LRTActivation` the noise-and-ReLU of one LRT layer
for all samples at once (:meth:`~core.methods.bbb.model.BayesMLP.lrt_forward_with_kl`).

Measured on this project's 2-core CPU (1 thread, 478k elements): ``softplus``, ``log1p`` and
``logaddexp`` run at about 10 ns per element, ``exp`` and ``log`` at under 1 ns, ``sigmoid``
at 0.2 ns, a ``mul`` at 0.1 ns; ``exp`` or ``sigmoid`` with denormal intermediate results is
about 10× slower; ``normal_`` costs 2.5 ns per element (mt19937) and is the largest single
pass left. Hence :func:`softplus` from ``exp`` and ``log`` with a rounding correction, the
mixture prior's log-density from one ``sigmoid`` and a blocked ``log`` (:func:`sum_log_bounded`),
and clamps at ±:data:`EXP_CLAMP`.

These PyTorch nodes are the reference and the path for float64, CUDA and machines without a C
compiler; for float32 on the CPU, :class:`FusedSampler` uses their one-pass C counterparts
(:mod:`core.engine.native`, which also draws the noise on every thread).

Everything stays on the parameters' device; nothing synchronises with the host.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
from torch import nn

from core.engine import native
from core.engine.priors import LOG_SQRT_2PI, GaussianPrior, Prior, ScaleMixturePrior

EXP_CLAMP = 80.0
"""Above this ρ, softplus(ρ) = ρ in float32 and float64 alike (e^−80 ≈ 1.8e−35)."""


def softplus(rho: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Compute log(1 + e^ρ), accurate to a few ulp, and its derivative sigmoid(ρ).

    With u = e^ρ and v = 1 + u rounded, log1p(u) = log(v) − ((v − 1) − u)/v to about one ulp
    (the correction undoes the rounding of v; where v rounds to 1 it gives u exactly), from the
    fast ``exp`` and ``log``; sigmoid(ρ) = u/v. The exponent is clamped at :data:`EXP_CLAMP`
    and the result raised to ρ where larger, which is softplus to float precision there.

    Args:
        rho: Any shape.

    Returns:
        ``(softplus(ρ), sigmoid(ρ))``, shaped like ``rho``.
    """
    sigma, sig, _ = _softplus_of_exp(rho.clamp(max=EXP_CLAMP).exp_())
    return torch.maximum(sigma, rho, out=sigma), sig


def _softplus_of_exp(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log1p(u), u/(1 + u) and a free scratch buffer, from u = e^ρ (see :func:`softplus`)."""
    v = u + 1.0
    sigma = torch.log(v)
    correction = torch.sub(v, 1.0).sub_(u)  # the rounding error of v = 1 + u
    sigma.addcdiv_(correction, v, value=-1.0)
    return sigma, torch.div(u, v, out=correction), v


class Softplus(torch.autograd.Function):
    """Differentiable :func:`softplus` (works under ``torch.func.vmap``): σ = softplus(ρ)."""

    @staticmethod
    def forward(rho):
        """σ and sigmoid(ρ) (the latter saved for the backward pass).

        Args:
            rho: Any shape.

        Returns:
            ``(softplus(ρ), sigmoid(ρ))``.
        """
        u = rho.clamp(max=EXP_CLAMP).exp()
        v = u + 1.0
        sigma = torch.log(v) - ((v - 1.0) - u) / v
        return torch.maximum(sigma, rho), u / v

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Save sigmoid(ρ).

        Args:
            ctx: Autograd context.
            inputs: ``(rho,)``.
            output: ``(sigma, sig)``.
        """
        ctx.save_for_backward(output[1])
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    def vmap(info, in_dims, rho):
        """The rule under ``vmap``: element-wise, so the batched tensor goes through whole.

        ``torch.func``'s generated rule for this function cost ~40× more on the CPU.

        Args:
            info: Batch size and randomness (unused).
            in_dims: ``(dim of the batch in rho,)``.
            rho: The batched tensor, as one.

        Returns:
            ``((softplus(ρ), sigmoid(ρ)), (dim, dim))``.
        """
        (dim,) = in_dims
        return Softplus.apply(rho), (dim, dim)

    @staticmethod
    def backward(ctx, grad_sigma, _grad_sig):
        """dσ/dρ = sigmoid(ρ).

        Args:
            ctx: Autograd context.
            grad_sigma: ∂loss/∂σ.
            _grad_sig: Unused (sigmoid(ρ) is not differentiable here).

        Returns:
            ∂loss/∂ρ.
        """
        (sig,) = ctx.saved_tensors
        return grad_sigma * sig


def fast_softplus(rho: torch.Tensor) -> torch.Tensor:
    """Differentiable softplus(ρ) at a fraction of ``F.softplus``'s cost on the CPU.

    Args:
        rho: Any shape.

    Returns:
        softplus(ρ), shaped like ``rho``.
    """
    return Softplus.apply(rho)[0]


LOG_BLOCK = 16
"""Factors per product in :func:`sum_log_bounded` (16 factors in [1/2, 2] stay normal floats)."""


def sum_log_bounded(m: torch.Tensor) -> torch.Tensor:
    """Σ log m over the last dim for m in [1/2, 2], with one ``log`` per 16 elements.

    ``log`` is the dearest pass left in the complexity cost: the elements are multiplied in
    blocks of :data:`LOG_BLOCK` by halving in place (contiguous halves, cheap vectorised
    ``mul_``, no allocation; m is overwritten), and only the block products go through
    ``log``. A product of 16 factors in [1/2, 2] lies in
    [2^−16, 2^16]; the rounding of the product (≤ 15 ulp relative) is an absolute error of
    the same order as that of 16 separate logs.

    Args:
        m: Values in [1/2, 2], shape ``(..., N)``; used as scratch (overwritten).

    Returns:
        Σ log m over the last dim, shape ``(...)``.
    """
    size = m.shape[-1]
    main = size - size % LOG_BLOCK
    p = m[..., :main]
    while p.shape[-1] > main // LOG_BLOCK:
        half = p.shape[-1] // 2
        p = p[..., :half].mul_(p[..., half:])
    total = p.log_().sum(-1)
    if main < size:
        total = total + torch.log(m[..., main:]).sum(-1)
    return total


def _responsibility(t: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """sigmoid(t), with t clamped in place to ±:data:`EXP_CLAMP` (the same value in float).

    A sigmoid whose internal e^−t is denormal (t > 87 in float32, common here: t = t0 + k·w²
    with k ≈ 8·10⁴ for the default mixture) runs about 10× slower on this CPU.
    """
    return torch.sigmoid(t.clamp_(-EXP_CLAMP, EXP_CLAMP), out=out)


def _mixture_log_prior(
    t: torch.Tensor, ww: torch.Tensor, c: _Constants, scratch: torch.Tensor
) -> torch.Tensor:
    """Σ log p(w) of the scale-mixture prior over the last dim.

    With t = t0 + k·w² the log-odds of the wide component, log p(w) = log b(w) + softplus(t)
    where b is the narrow component's density, and softplus(t) = relu(t) − log sigmoid(|t|):
    one vectorised ``sigmoid`` (fast on the CPU) instead of ``exp`` + ``log``, and
    sigmoid(|t|) = max(r, 1 − r) ∈ [1/2, 1] (r = sigmoid(t), the responsibility of the wide
    component) is summed by :func:`sum_log_bounded`.

    Args:
        t: The log-odds ``(..., N)`` (left unchanged).
        ww: Σ w² over the last dim ``(...)``.
        c: The prior's constants.
        scratch: A buffer shaped like ``t`` (overwritten).

    Returns:
        Σ log p(w), shape ``(...)``.
    """
    a = torch.abs(t, out=scratch)
    relu_sum = 0.5 * (t.sum(-1) + a.sum(-1))  # Σ relu(t)
    m = _responsibility(a, out=a)  # sigmoid(|t|) = max(r, 1 − r)
    return t.shape[-1] * c.log_b0 - 0.5 * c.inv_s2 * ww + relu_sum - sum_log_bounded(m)


@dataclass(frozen=True)
class _Constants:
    """Python-float constants of one prior's complexity cost (no tensors: no host sync)."""

    gaussian: bool
    log_sp: float = 0.0  # Gaussian: log σp
    inv_sp2: float = 0.0  # Gaussian: 1 / σp²
    t0: float = 0.0  # mixture: log(π σ2 / ((1 − π) σ1)), the log-odds of the wide component at 0
    k: float = 0.0  # mixture: 1/(2σ2²) − 1/(2σ1²), so log-odds = t0 + k·w²
    log_b0: float = 0.0  # mixture: log((1 − π)/(√(2π) σ2)), the narrow component's log-density at 0
    inv_s1: float = 0.0  # mixture: 1/σ1²
    inv_s2: float = 0.0  # mixture: 1/σ2²

    @classmethod
    def of(cls, prior: Prior) -> _Constants:
        if isinstance(prior, GaussianPrior):
            return cls(True, log_sp=math.log(prior.sigma), inv_sp2=1.0 / prior.sigma**2)
        if isinstance(prior, ScaleMixturePrior):
            s1, s2, pi = prior.sigma1, prior.sigma2, prior.pi
            return cls(
                False,
                t0=math.log(pi) - math.log(s1) - math.log1p(-pi) + math.log(s2),
                k=0.5 / s2**2 - 0.5 / s1**2,
                log_b0=math.log1p(-pi) - LOG_SQRT_2PI - math.log(s2),
                inv_s1=1.0 / s1**2,
                inv_s2=1.0 / s2**2,
            )
        raise TypeError(f"no fused complexity cost for the prior {prior!r}")


def prior_constants(prior: Prior) -> _Constants:
    """The Python-float constants of a prior's complexity cost (as the native kernels take them).

    Args:
        prior: A Gaussian or scale-mixture prior.

    Returns:
        Its constants (``gaussian``, ``inv_sp2``; or ``t0``, ``k``, ``log_b0``, ``inv_s1``,
        ``inv_s2``).

    Raises:
        TypeError: For another prior.
    """
    return _Constants.of(prior)


MAX_FREE_BUFFERS = 16
"""Most flat buffers a :class:`_Layout` keeps for reuse (4 per fused node of one sample)."""


class _Layout:
    """Where each parameter tensor (piece) lies in the flat vectors, and one scratch buffer.

    The scratch buffer (N elements, kept between calls) holds only values that never leave one
    forward call (e^ρ, log σ, |t|): writing a freshly allocated 1.9 MB buffer costs several
    times a pass over a reused one on this CPU (page faults, cold cache lines). Hence a model's
    fused nodes must not run in two threads at once (training a model is single-threaded).
    """

    def __init__(self, pieces) -> None:
        self.shapes = [p.shape for p in pieces]
        sizes = [p.numel() for p in pieces]
        ends = list(itertools.accumulate(sizes))
        self.slices = [slice(e - n, e) for n, e in zip(sizes, ends, strict=True)]
        self.numel = ends[-1] if ends else 0
        self._scratch: torch.Tensor | None = None
        self._free: list[torch.Tensor] = []

    def scratch(self, like: torch.Tensor) -> torch.Tensor:
        """The scratch buffer ``(N,)`` with ``like``'s dtype and device (reused when they match)."""
        buf = self._scratch
        if buf is None or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._scratch = like.new_empty(self.numel)
        return buf

    def take(self, like: torch.Tensor, count: int) -> list[torch.Tensor]:
        """``count`` flat buffers ``(N,)`` like ``like``: given back ones first, else new ones.

        For a node's state between its forward and backward (see :meth:`give`): a freshly
        allocated buffer costs a page-faulting first pass.
        """
        free = [b for b in self._free if b.dtype == like.dtype and b.device == like.device]
        taken = free[:count]
        for b in taken:
            self._free.remove(b)
        return taken + [like.new_empty(self.numel) for _ in range(count - len(taken))]

    def give(self, buffers: list[torch.Tensor]) -> None:
        """Return buffers from :meth:`take` whose contents are no longer needed."""
        self._free.extend(buffers[: max(0, MAX_FREE_BUFFERS - len(self._free))])

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per piece, a view of ``flat`` shaped like the piece."""
        return [flat[s].view(shape) for s, shape in zip(self.slices, self.shapes, strict=True)]


def _sigma(rhos, layout: _Layout):
    """Flat σ = softplus(ρ) and sigmoid(ρ) of the pieces ``rhos`` (no concatenated copy of ρ).

    Returns:
        ``(sigma, sig, scratch_a, scratch_b)``: σ, sigmoid(ρ) and two free buffers ``(N,)``
        (``scratch_a`` is the layout's reused scratch: for values that stay inside the call).
    """
    u = layout.scratch(rhos[0])
    for rho, part in zip(rhos, layout.slices, strict=True):
        torch.clamp(rho.reshape(-1), max=EXP_CLAMP, out=u[part])
    sigma, sig, v = _softplus_of_exp(u.exp_())
    for rho, part in zip(rhos, layout.slices, strict=True):
        torch.maximum(sigma[part], rho.reshape(-1), out=sigma[part])
    return sigma, sig, u, v


def _draw(mus, sigma, eps, layout: _Layout, out: torch.Tensor | None = None):
    """Draw μ + σ·ε per piece: fresh parameter-shaped tensors, or written into flat ``out``."""
    if out is None:
        return [
            torch.addcmul(mu, s, e)
            for mu, s, e in zip(mus, layout.views(sigma), layout.views(eps), strict=True)
        ]
    for mu, part in zip(mus, layout.slices, strict=True):
        torch.addcmul(mu.reshape(-1), sigma[part], eps[part], out=out[part])
    return out


def _gaussian_kl(mus, sigma, sum_log_sigma, c: _Constants) -> torch.Tensor:
    squares = torch.dot(sigma, sigma)
    for mu in mus:
        squares = squares + torch.dot(mu.reshape(-1), mu.reshape(-1))
    return sigma.numel() * (c.log_sp - 0.5) - sum_log_sigma + 0.5 * c.inv_sp2 * squares


def _log_odds(ws: list[torch.Tensor], layout: _Layout, c: _Constants, t: torch.Tensor):
    """Flat t = t0 + k·w² of parameter-shaped draws, written into ``t``, and Σ w²."""
    for w, part in zip(ws, layout.slices, strict=True):
        torch.mul(w.reshape(-1), w.reshape(-1), out=t[part])
    ww = t.sum()
    return t.mul_(c.k).add_(c.t0), ww


def _mixture_h(beta: torch.Tensor, r: torch.Tensor, c: _Constants, out=None) -> torch.Tensor:
    """β·(r/σ1² + (1 − r)/σ2²): times w, the β-weighted gradient of log q − log p at w.

    Python-float factors first, the tensor β last and in place: an ``addcmul`` with 0-dim
    tensor operands takes a slow broadcasting path (several times a plain ``mul``).
    """
    return torch.mul(r, c.inv_s1 - c.inv_s2, out=out).add_(c.inv_s2).mul_(beta)


class SampleKL(torch.autograd.Function):
    """``(ε, μ pieces, ρ pieces) → (w pieces, KL)``, with a hand-written backward.

    ``w = μ + softplus(ρ)·ε`` for every parameter tensor (piece) of a network and the summed
    complexity cost of all of them (closed form for a Gaussian prior, the one-sample estimate
    log q(w) − log p(w) at w for a scale mixture). The elementwise work runs over flat vectors
    of all pieces; the means and spreads are read in place (no concatenated copies) and the
    gradients are returned as views of flat vectors.
    """

    @staticmethod
    def forward(ctx, eps, constants: _Constants, layout: _Layout | None, *params):
        """Draw the weights and their complexity cost.

        Args:
            ctx: Autograd context.
            eps: Standard-normal noise, flat ``(N,)``, pieces in order.
            constants: The prior's constants.
            layout: The pieces' layout (None: computed from the means).
            *params: The K means, then the K unconstrained spreads (same shapes pairwise).

        Returns:
            The K drawn pieces (shaped like the means), then the complexity cost in nats
            (scalar).
        """
        half = len(params) // 2
        mus, rhos = params[:half], params[half:]
        layout = layout or _Layout(mus)
        sigma, sig, scratch_a, scratch_b = _sigma(rhos, layout)
        ws = _draw(mus, sigma, eps, layout)
        sum_log_sigma = torch.log(sigma, out=scratch_a).sum()
        c = constants
        if c.gaussian:
            kl = _gaussian_kl(mus, sigma, sum_log_sigma, c)
            ctx.save_for_backward(sig, eps, sigma, *mus)
        else:
            t, ww = _log_odds(ws, layout, c, scratch_b)
            log_p = _mixture_log_prior(t, ww, c, scratch=scratch_a)
            log_q = -eps.numel() * LOG_SQRT_2PI - sum_log_sigma - 0.5 * torch.dot(eps, eps)
            kl = log_q - log_p
            ctx.save_for_backward(sig, eps, sigma, t, *ws)
        ctx.constants, ctx.layout = constants, layout
        return (*ws, kl)

    @staticmethod
    def backward(ctx, *grads):
        """Exact gradients with respect to the means and spreads (see the module docstring).

        Args:
            ctx: Autograd context.
            *grads: ∂loss/∂w per piece (or None), then ∂loss/∂KL (scalar, or None).

        Returns:
            ``(None, None, None, dμ pieces…, dρ pieces…)``.
        """
        c, layout = ctx.constants, ctx.layout
        grad_ws, grad_kl = grads[:-1], grads[-1]
        sig, eps, sigma = ctx.saved_tensors[:3]
        beta = grad_kl if grad_kl is not None else sigma.new_zeros(())
        if c.gaussian:
            grad_rho = torch.div(-beta, sigma)
            mus = ctx.saved_tensors[3:]
            grad_rho.addcmul_(sigma, beta * c.inv_sp2)
            grad_mus = []
            for mu, g in zip(mus, grad_ws, strict=True):
                grad_mus.append(
                    mu * (beta * c.inv_sp2) if g is None else g.addcmul(mu, beta * c.inv_sp2)
                )
            for g, part in zip(grad_ws, layout.slices, strict=True):
                if g is not None:
                    grad_rho[part].addcmul_(g.reshape(-1), eps[part])
        else:
            # the gradients are written over the node's own saved buffers t and σ (fresh memory
            # costs a cold pass); a second backward through this node raises (version check)
            t, ws = ctx.saved_tensors[3], ctx.saved_tensors[4:]
            h = _mixture_h(beta, _responsibility(t, out=t), c, out=t)
            for w, g, part in zip(ws, grad_ws, layout.slices, strict=True):
                if g is None:
                    h[part].mul_(w.reshape(-1))
                else:
                    torch.addcmul(g.reshape(-1), h[part], w.reshape(-1), out=h[part])
            grad_rho = sigma.reciprocal_().mul_(-beta).addcmul_(h, eps)
            grad_mus = layout.views(h)
        return (None, None, None, *grad_mus, *layout.views(grad_rho.mul_(sig)))


class SigmaKL(torch.autograd.Function):
    """``(ε, μ pieces, ρ pieces) → (σ² pieces, KL)`` for local reparameterisation (no weights).

    σ = softplus(ρ) once for every pass of a step, the variances σ² that LRT's variance
    product needs, and the complexity costs: the Gaussian closed form (one value, ``eps``
    unused), or for a scale mixture one estimate log q(w_s) − log p(w_s) per row s of ``eps`` at
    w_s = μ + σ·ε_s (one independent weight draw per pass, as
    :class:`~core.engine.layers.BayesLinear` does under LRT). Backward, with g = ∂loss/∂σ²:
    ``dρ = (2σ·g + Σ_s (h_s·ε_s − β_s/σ))·sigmoid(ρ)``, ``dμ = Σ_s h_s`` (mixture;
    h_s = β_s·dKL/dw at w_s), or the Gaussian closed form's gradients plus ``2σ·g·sigmoid(ρ)``.
    The mixture's draws are processed one row at a time (a row of N stays in cache, an (S, N)
    batch does not) and recomputed in the backward pass instead of being stored.
    """

    @staticmethod
    def forward(ctx, eps, constants: _Constants, layout: _Layout | None, *params):
        """σ² and the complexity costs.

        Args:
            ctx: Autograd context.
            eps: Mixture: standard-normal noise ``(S, N)``, one row per pass; Gaussian: None.
            constants: The prior's constants.
            layout: The pieces' layout (None: computed from the means).
            *params: The K means, then the K unconstrained spreads (same shapes pairwise).

        Returns:
            The K variance pieces σ² (shaped like the means), then the complexity cost in
            nats: a scalar (Gaussian) or one per pass ``(S,)`` (mixture).
        """
        half = len(params) // 2
        mus, rhos = params[:half], params[half:]
        layout = layout or _Layout(mus)
        sigma, sig, scratch_a, scratch_b = _sigma(rhos, layout)
        sum_log_sigma = torch.log(sigma, out=scratch_a).sum()
        c = constants
        if c.gaussian:
            kl = _gaussian_kl(mus, sigma, sum_log_sigma, c)
            ctx.save_for_backward(sig, sigma, *mus)
        else:
            log_p = []
            for e in eps:
                w = _draw(mus, sigma, e, layout, out=scratch_a)
                ww = torch.dot(w, w)
                t = w.mul_(w).mul_(c.k).add_(c.t0)
                log_p.append(_mixture_log_prior(t, ww, c, scratch=scratch_b))
            log_q = -layout.numel * LOG_SQRT_2PI - sum_log_sigma - 0.5 * (eps * eps).sum(-1)
            kl = log_q - torch.stack(log_p)
            ctx.save_for_backward(sig, sigma, eps, *mus)
        ctx.constants, ctx.layout = constants, layout
        return (*layout.views(torch.mul(sigma, sigma, out=scratch_b)), kl)

    @staticmethod
    def backward(ctx, *grads):
        """Exact gradients with respect to the means and spreads (see the class docstring).

        Args:
            ctx: Autograd context.
            *grads: ∂loss/∂σ² per piece (or None), then ∂loss/∂KL (scalar or ``(S,)``, or
                None).

        Returns:
            ``(None, None, None, dμ pieces…, dρ pieces…)``.
        """
        c, layout = ctx.constants, ctx.layout
        grad_vars, grad_kl = grads[:-1], grads[-1]
        sig, sigma = ctx.saved_tensors[:2]
        if c.gaussian:
            mus = ctx.saved_tensors[2:]
            beta = grad_kl if grad_kl is not None else sigma.new_zeros(())
            grad_rho = torch.div(-beta, sigma)
            grad_rho.addcmul_(sigma, beta * c.inv_sp2)
            grad_mus = [mu * (beta * c.inv_sp2) for mu in mus]
        else:
            eps, mus = ctx.saved_tensors[2], ctx.saved_tensors[3:]
            beta = grad_kl if grad_kl is not None else sigma.new_zeros(eps.shape[0])
            grad_rho = torch.div(-beta.sum(), sigma)
            grad_mu = torch.zeros_like(sigma)
            w, t = torch.empty_like(sigma), torch.empty_like(sigma)
            for e, b in zip(eps, beta.expand(eps.shape[0]), strict=True):
                _draw(mus, sigma, e, layout, out=w)
                torch.mul(w, w, out=t).mul_(c.k).add_(c.t0)
                h = _mixture_h(b, _responsibility(t, out=t), c, out=t).mul_(w)
                grad_mu.add_(h)
                grad_rho.addcmul_(h, e)
            grad_mus = layout.views(grad_mu)
        for g, part in zip(grad_vars, layout.slices, strict=True):
            if g is not None:  # ∂loss/∂σ through σ²: 2σ·g
                grad_rho[part].addcmul_(sigma[part], g.reshape(-1), value=2.0)
        return (None, None, None, *grad_mus, *layout.views(grad_rho.mul_(sig)))


class LRTActivation(torch.autograd.Function):
    """One LRT layer's noise and ReLU: ``(mean, var, ε) → relu(mean + √var·ε)`` (and its square).

    With ``hidden=True`` it also returns h², the next layer's variance-product input, so that
    its gradient joins h's in one pass; the backward is hand-written (mask, ``Σ g·ε/(2√var)``),
    a few passes over the ``(S, B, width)`` activations fewer than autograd's. ``mean`` and
    ``var`` may lack the leading S dim (the first layer's, computed once for all samples): their
    gradients are then summed over it.
    """

    @staticmethod
    def forward(ctx, mean, var, eps, hidden: bool):
        """Pre-activations of all passes, rectified (and squared) for a hidden layer.

        Args:
            ctx: Autograd context.
            mean: Pre-activation means ``(S, B, out)`` or ``(B, out)``.
            var: Pre-activation variances (> 0), shaped like ``mean``.
            eps: Standard-normal noise ``(S, B, out)``.
            hidden: Whether to apply the ReLU and also return the square.

        Returns:
            ``(h, h²)`` for a hidden layer, else the pre-activations, ``(S, B, out)``.
        """
        std = torch.sqrt(var)
        out = torch.addcmul(mean, std, eps)
        ctx.hidden, ctx.shapes = hidden, (mean.shape, var.shape)
        if not hidden:
            ctx.save_for_backward(std, eps)
            return out
        out.clamp_min_(0.0)
        ctx.save_for_backward(std, eps, out)
        return out, out * out

    @staticmethod
    def backward(ctx, grad_out, grad_square=None):
        """Gradients with respect to the mean and the variance.

        Args:
            ctx: Autograd context.
            grad_out: ∂loss/∂h (or None).
            grad_square: ∂loss/∂h² (hidden layers; or None).

        Returns:
            ``(d mean, d var, None, None)``.
        """
        std, eps = ctx.saved_tensors[:2]
        g = grad_out if grad_out is not None else torch.zeros_like(eps)
        scratch = None
        if ctx.hidden:
            # h = relu(...) is 0 where the mask is 0, so the h² term needs no mask of its own
            out = ctx.saved_tensors[2]
            g = torch.ops.aten.threshold_backward(g, out, 0.0)
            if grad_square is not None:
                g.addcmul_(out, grad_square, value=2.0)
            # h's buffer is free now (the next layer's backward, which read it, has run): reuse
            # it (a second backward through this node raises: autograd's version check)
            scratch = out
        mean_shape, var_shape = ctx.shapes
        grad_var = torch.mul(g, eps, out=scratch).sum_to_size(var_shape).div_(std).mul_(0.5)
        return g.sum_to_size(mean_shape), grad_var, None, None


class FusedSampler:
    """Flat views of a :class:`~core.methods.bbb.model.BayesMLP`'s parameters for the fused nodes.

    The parameters themselves (and so ``state_dict`` keys and checkpoints) are unchanged: the
    nodes read them in place and lay their elementwise work out flat (weight, bias, weight, …).
    The sampler holds no parameters or buffers of the model (only reused scratch vectors).
    :meth:`sample` and :meth:`sigma_kl` use :mod:`core.engine.native`'s nodes where they apply
    (float32 on the CPU, kernels built), else :class:`SampleKL` and :class:`SigmaKL`.

    Attributes:
        layers: The model's ``BayesLinear`` layers.
        constants: The shared prior's constants.
        layout: Where each weight and bias lies in the flat vectors.
        numel: Total number of weights and biases N.
    """

    def __init__(self, layers: nn.ModuleList) -> None:
        """Record the layout of ``layers``.

        Args:
            layers: ``BayesLinear`` layers sharing one prior.

        Raises:
            ValueError: If the layers' priors differ.
        """
        self.layers = layers
        priors = {layer.prior for layer in layers}
        if len(priors) != 1:
            raise ValueError("the fused sampler needs one prior for all layers")
        self.constants = _Constants.of(next(iter(priors)))
        self.layout = _Layout(self._params()[: 2 * len(layers)])
        self.numel = self.layout.numel

    def flat_noise(self, noise: list[dict[str, torch.Tensor]] | None) -> torch.Tensor:
        """One pass's standard-normal noise as a flat vector ``(N,)``.

        Args:
            noise: Per layer, ``"weight"`` and ``"bias"`` noise of one pass, or None for one fresh
                draw for all layers.

        Returns:
            The noise, on the parameters' device.
        """
        if noise is None:
            return native.standard_normal(self.numel, self.layers[0].weight_mu)
        return torch.cat([n[k].reshape(-1) for n in noise for k in ("weight", "bias")])

    def sample(
        self, noise: list[dict[str, torch.Tensor]] | None = None
    ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
        """Draw every layer's weights and the total complexity cost.

        Args:
            noise: Per layer, ``"weight"`` and ``"bias"`` noise of one pass (as one pass's slice
                of ``BayesMLP.draw_noise``); None draws fresh noise.

        Returns:
            ``(weights, kl)``: per layer ``(W (out, in), b (out,))``, and the summed complexity
            cost in nats (scalar).
        """
        params = self._params()
        if native.applies_to(params[0]):  # draws its own noise into reused buffers
            eps = None if noise is None else self.flat_noise(noise)
            *ws, kl = native.NativeSampleKL.apply(eps, self.constants, self.layout, *params)
        else:
            *ws, kl = SampleKL.apply(self.flat_noise(noise), self.constants, self.layout, *params)
        return list(zip(ws[::2], ws[1::2], strict=True)), kl

    def sigma_kl(
        self, n_samples: int, noise: list[dict[str, torch.Tensor]] | None = None
    ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
        """σ² of every layer and the complexity costs of ``n_samples`` LRT passes (no weights).

        One :class:`SigmaKL` node: σ = softplus(ρ) and σ² once; the Gaussian closed form once,
        or for a scale mixture one independent weight draw per pass (one noise draw for all).

        Args:
            n_samples: Number of passes S.
            noise: Per layer, ``"weight"`` and ``"bias"`` noise with a leading S dim (as from
                ``BayesMLP.draw_noise``; only the mixture uses it), or None for fresh draws.

        Returns:
            ``(variances, kl)``: per layer ``(σ_W² (out, in), σ_b² (out,))``, and per pass the
            summed complexity cost in nats ``(S,)`` (one value repeated for a Gaussian prior).
        """
        mu = self.layers[0].weight_mu
        eps = None
        if not self.constants.gaussian:
            if noise is None:
                eps = native.standard_normal((n_samples, self.numel), mu)
            else:
                eps = torch.cat(
                    [n[k].reshape(n_samples, -1) for n in noise for k in ("weight", "bias")], 1
                )
        params = self._params()
        node = native.NativeSigmaKL if native.applies_to(mu) else SigmaKL
        *variances, kl = node.apply(eps, self.constants, self.layout, *params)
        return list(zip(variances[::2], variances[1::2], strict=True)), kl.expand(n_samples)

    def _params(self) -> list[torch.Tensor]:
        """The means of every layer (weight, bias, …), then the spreads in the same order."""
        mus = [p for layer in self.layers for p in _pair(layer, "mu")]
        return mus + [p for layer in self.layers for p in _pair(layer, "rho")]


def _pair(layer: nn.Module, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    return getattr(layer, f"weight_{kind}"), getattr(layer, f"bias_{kind}")
