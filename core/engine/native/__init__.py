"""Compiled CPU kernels for the fused BBB step: parallel noise and one-pass sample/KL (issue 19).

On the CPU, PyTorch draws Gaussian noise on one thread (``normal_`` runs mt19937 serially:
1.2 ms for the 478k weights of a 784-400-400-10 network, whatever the thread count) and
:class:`~core.engine.fused.SampleKL` still makes about twenty passes over the weights. The C
kernels in ``sample_kl.c`` (built at first use, :mod:`core.engine.native.build`) do:

* :func:`standard_normal`: counter-based noise (SplitMix64 at position p of a stream keyed by a
  seed drawn from PyTorch's generator, then Box-Muller), vectorised and split over PyTorch's
  threads, bit-identical for any thread count; seeded runs stay reproducible under
  ``torch.manual_seed``;
* :class:`NativeSampleKL`: :class:`~core.engine.fused.SampleKL`'s forward (w = μ + σ·ε,
  σ = softplus(ρ), the complexity cost's sums) and backward in one pass each.

The estimator is the same (same formulas, tested against the autograd reference given the same
noise, ``tests/unit/test_native.py``). They apply to float32 tensors on the CPU; everything else,
and every machine without a C compiler (or with ``BNN_NATIVE=0``), uses the PyTorch paths.
"""

from __future__ import annotations

import ctypes
import math

import torch

from core.engine.native import build

_P, _I, _I64, _F = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float
_SIGNATURES = {  # the C prototypes in sample_kl.c; pointers as void*
    "bnn_normal": [_P, _I64, ctypes.c_uint64, _I],
    "bnn_sample_kl_forward": [_I, *[_P] * 10, _I],
    "bnn_sample_kl_backward": [_I, *[_P] * 9, _F, _F, _P, _P, _I],
    "bnn_sigma_kl_forward": [_I, _P, _P, _P, _P, _I64, _P, _P, _P, _P, _P, _P, _I],
    "bnn_sigma_kl_backward": [_I, _P, _P, _P, _I64, _P, _P, _P, _P, _P, _F, _P, _P, _P, _I],
}
SEED_BITS = 62


def kernels() -> ctypes.CDLL | None:
    """The loaded kernels with their signatures set, or None where they are unavailable.

    Returns:
        The library (built on first use), or None (see :func:`build.unavailable_reason`).
    """
    lib = build.load()
    if lib is not None and lib.bnn_normal.argtypes is None:
        for name, argtypes in _SIGNATURES.items():
            getattr(lib, name).argtypes = argtypes
            getattr(lib, name).restype = None
    return lib


def status() -> str:
    """One line for people and benchmark files: whether the kernels are in use, and why not.

    Returns:
        ``"on"``, or ``"off (<why>)"``.
    """
    return "on" if kernels() is not None else f"off ({build.unavailable_reason()})"


def applies_to(tensor: torch.Tensor) -> bool:
    """Whether the kernels handle ``tensor`` (float32 on the CPU) and are available.

    Args:
        tensor: A parameter or buffer the caller would pass.

    Returns:
        True if the native path should be used.
    """
    return tensor.device.type == "cpu" and tensor.dtype == torch.float32 and kernels() is not None


def standard_normal(shape: int | tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """Independent standard-normal draws with ``like``'s dtype and device.

    The counter-based kernel where it applies (seeded from PyTorch's default generator, so
    ``torch.manual_seed`` fixes the draw), else ``normal_``.

    Args:
        shape: Shape of the draw.
        like: Sets the dtype and device.

    Returns:
        The draws, shaped ``shape``.
    """
    out = like.new_empty(shape)
    return _normal_(out) if applies_to(like) else out.normal_()


def _normal_(out: torch.Tensor) -> torch.Tensor:
    """Fill a contiguous float32 CPU tensor with the kernel's draw under a fresh seed."""
    seed = int(torch.randint(2**SEED_BITS, (), dtype=torch.int64))
    kernels().bnn_normal(out.data_ptr(), out.numel(), seed, torch.get_num_threads())
    return out


def _pointers(tensors) -> ctypes.Array:
    return (_P * len(tensors))(*(0 if t is None else t.data_ptr() for t in tensors))


def _sizes(layout) -> ctypes.Array:
    return (ctypes.c_int64 * len(layout.slices))(*(s.stop - s.start for s in layout.slices))


def _mixture(constants) -> ctypes.Array | None:
    if constants.gaussian:
        return None
    c = constants
    return (ctypes.c_float * 5)(c.t0, c.k, c.log_b0, c.inv_s2, c.inv_s1)


def _hold(ctx, layout, buffers: list[torch.Tensor]) -> None:
    """Keep a node's reused buffers for its backward pass, or give them back now (no grad)."""
    ctx.layout, ctx.buffers = layout, buffers if any(ctx.needs_input_grad) else None
    if ctx.buffers is None:
        layout.give(buffers)


def _check_held(ctx) -> None:
    """Raise on a second backward pass: the node's buffers were given back after the first."""
    if ctx.buffers is None:
        raise RuntimeError("a native node supports one backward pass per forward pass")


def _give_back(ctx) -> None:
    """Return a node's buffers to its layout after its backward pass."""
    ctx.layout.give(ctx.buffers)
    ctx.buffers = None


class NativeSampleKL(torch.autograd.Function):
    """:class:`~core.engine.fused.SampleKL` with one-pass C kernels (float32, CPU).

    The same signature, outputs and gradients: ``(ε, constants, layout, μ pieces, ρ pieces) →
    (w pieces, KL)``. The complexity cost's sums are accumulated in float64.
    """

    @staticmethod
    def forward(ctx, eps, constants, layout, *params):
        """Draw the weights and their complexity cost (see ``SampleKL.forward``).

        Args:
            ctx: Autograd context.
            eps: Standard-normal noise, flat ``(N,)``, pieces in order; None draws it
                (:func:`standard_normal`'s generator) into a reused buffer.
            constants: The prior's constants (``core.engine.fused._Constants``).
            layout: The pieces' layout (``core.engine.fused._Layout``); its reused buffers
                hold the node's state until the backward pass gives them back.
            *params: The K means, then the K unconstrained spreads.

        Returns:
            The K drawn pieces, then the complexity cost in nats (scalar).
        """
        half = len(params) // 2
        mus, rhos = [p.contiguous() for p in params[:half]], [p.contiguous() for p in params[half:]]
        lib, threads = kernels(), torch.get_num_threads()
        gaussian = constants.gaussian
        buffers = layout.take(mus[0], (2 if gaussian else 3) + (eps is None))
        sigma, sig = buffers[:2]
        narrow = None if gaussian else buffers[2]
        if eps is None:
            eps = _normal_(buffers[-1])
        ws = [torch.empty_like(mu) for mu in mus]
        sums = (ctypes.c_double * 3)()
        lib.bnn_sample_kl_forward(
            half,
            _pointers(mus),
            _pointers(rhos),
            _pointers(ws),
            _sizes(layout),
            eps.data_ptr(),
            sigma.data_ptr(),
            sig.data_ptr(),
            0 if narrow is None else narrow.data_ptr(),
            _mixture(constants),
            sums,
            threads,
        )
        n, c = eps.numel(), constants
        if gaussian:
            kl = n * (c.log_sp - 0.5) - sums[0] + 0.5 * c.inv_sp2 * (sums[1] + sums[2])
            saved = (eps, sigma, sig, *mus)
        else:
            log_q = -n * 0.5 * math.log(2 * math.pi) - sums[0] - 0.5 * sums[1]
            kl = log_q - sums[2]
            saved = (eps, sigma, sig, narrow, *ws)
        ctx.constants = constants
        ctx.save_for_backward(*saved)
        _hold(ctx, layout, buffers)
        return (*ws, torch.tensor(kl, dtype=eps.dtype))

    @staticmethod
    def backward(ctx, *grads):
        """Exact gradients with respect to the means and spreads (see ``SampleKL.backward``).

        The node's buffers go back to the layout afterwards, so a second backward through it
        (``retain_graph=True``) raises instead of reading overwritten state.

        Args:
            ctx: Autograd context.
            *grads: ∂loss/∂w per piece (or None), then ∂loss/∂KL (scalar, or None).

        Returns:
            ``(None, None, None, dμ pieces…, dρ pieces…)``.

        Raises:
            RuntimeError: On a second backward through the same node.
        """
        _check_held(ctx)
        c, layout = ctx.constants, ctx.layout
        grad_ws, grad_kl = [None if g is None else g.contiguous() for g in grads[:-1]], grads[-1]
        eps, sigma, sig = ctx.saved_tensors[:3]
        beta = 0.0 if grad_kl is None else float(grad_kl)
        if c.gaussian:
            narrow, mus, ws = None, ctx.saved_tensors[3:], None
        else:
            narrow, mus, ws = ctx.saved_tensors[3], None, ctx.saved_tensors[4:]
        d_mu, d_rho = torch.empty_like(eps), torch.empty_like(eps)
        kernels().bnn_sample_kl_backward(
            len(grad_ws),
            _pointers(grad_ws),
            None if mus is None else _pointers(mus),
            None if ws is None else _pointers(ws),
            _sizes(layout),
            eps.data_ptr(),
            sigma.data_ptr(),
            sig.data_ptr(),
            0 if narrow is None else narrow.data_ptr(),
            _mixture(c),
            c.inv_sp2,
            beta,
            d_mu.data_ptr(),
            d_rho.data_ptr(),
            torch.get_num_threads(),
        )
        _give_back(ctx)
        return (None, None, None, *layout.views(d_mu), *layout.views(d_rho))


class NativeSigmaKL(torch.autograd.Function):
    """:class:`~core.engine.fused.SigmaKL` with one-pass C kernels (float32, CPU).

    The same signature, outputs and gradients: ``(ε, constants, layout, μ pieces, ρ pieces) →
    (σ² pieces, KL)``, with ``ε`` the mixture's ``(S, N)`` weight noise (None for a Gaussian
    prior) and KL a scalar (Gaussian) or one value per pass ``(S,)`` (mixture). The mixture's
    draws w_p = μ + σ·ε_p are recomputed in the backward pass, not stored.
    """

    @staticmethod
    def forward(ctx, eps, constants, layout, *params):
        """σ² and the complexity costs (see ``SigmaKL.forward``).

        Args:
            ctx: Autograd context.
            eps: Mixture: standard-normal noise ``(S, N)``; Gaussian: None.
            constants: The prior's constants (``core.engine.fused._Constants``).
            layout: The pieces' layout (``core.engine.fused._Layout``).
            *params: The K means, then the K unconstrained spreads.

        Returns:
            The K variance pieces σ², then the complexity cost in nats: a scalar (Gaussian)
            or one per pass ``(S,)`` (mixture).
        """
        half = len(params) // 2
        mus, rhos = [p.contiguous() for p in params[:half]], [p.contiguous() for p in params[half:]]
        gaussian = constants.gaussian
        samples = 0 if gaussian else eps.shape[0]
        eps = None if gaussian else eps.contiguous()
        sigma, sig = layout.take(mus[0], 2)
        narrow = None if gaussian else torch.empty_like(eps)
        variances = [torch.empty_like(mu) for mu in mus]
        sums = (ctypes.c_double * (3 + 2 * samples))()
        kernels().bnn_sigma_kl_forward(
            half,
            _pointers(mus),
            _pointers(rhos),
            _pointers(variances),
            _sizes(layout),
            samples,
            None if eps is None else eps.data_ptr(),
            sigma.data_ptr(),
            sig.data_ptr(),
            None if narrow is None else narrow.data_ptr(),
            _mixture(constants),
            sums,
            torch.get_num_threads(),
        )
        n, c = layout.numel, constants
        if gaussian:
            kl = torch.tensor(
                n * (c.log_sp - 0.5) - sums[0] + 0.5 * c.inv_sp2 * (sums[1] + sums[2]),
                dtype=mus[0].dtype,
            )
            ctx.save_for_backward(sigma, sig, *mus)
        else:
            log_q0 = -n * 0.5 * math.log(2 * math.pi) - sums[0]
            kl = torch.tensor(
                [log_q0 - 0.5 * sums[3 + 2 * p] - sums[4 + 2 * p] for p in range(samples)],
                dtype=mus[0].dtype,
            )
            ctx.save_for_backward(sigma, sig, eps, narrow, *mus)
        ctx.constants, ctx.samples = constants, samples
        _hold(ctx, layout, [sigma, sig])
        return (*variances, kl)

    @staticmethod
    def backward(ctx, *grads):
        """Exact gradients with respect to the means and spreads (see ``SigmaKL.backward``).

        Args:
            ctx: Autograd context.
            *grads: ∂loss/∂σ² per piece (or None), then ∂loss/∂KL (scalar or ``(S,)``, or
                None).

        Returns:
            ``(None, None, None, dμ pieces…, dρ pieces…)``.

        Raises:
            RuntimeError: On a second backward through the same node.
        """
        _check_held(ctx)
        c, layout = ctx.constants, ctx.layout
        grad_vars = [None if g is None else g.contiguous() for g in grads[:-1]]
        grad_kl = grads[-1]
        sigma, sig = ctx.saved_tensors[:2]
        if c.gaussian:
            eps, narrow, mus = None, None, ctx.saved_tensors[2:]
            beta = [0.0 if grad_kl is None else float(grad_kl)]
        else:
            eps, narrow, mus = ctx.saved_tensors[2], ctx.saved_tensors[3], ctx.saved_tensors[4:]
            beta = [0.0] * ctx.samples if grad_kl is None else grad_kl.tolist()
        d_mu, d_rho = torch.empty_like(sigma), torch.empty_like(sigma)
        kernels().bnn_sigma_kl_backward(
            len(grad_vars),
            _pointers(grad_vars),
            _pointers(mus),
            _sizes(layout),
            ctx.samples,
            None if eps is None else eps.data_ptr(),
            sigma.data_ptr(),
            sig.data_ptr(),
            None if narrow is None else narrow.data_ptr(),
            _mixture(c),
            c.inv_sp2,
            (ctypes.c_float * len(beta))(*beta),
            d_mu.data_ptr(),
            d_rho.data_ptr(),
            torch.get_num_threads(),
        )
        _give_back(ctx)
        return (None, None, None, *layout.views(d_mu), *layout.views(d_rho))
