"""Tiny two-hidden-layer regression networks trained in one compiled call (``tiny_mlp.c``).

A contextual bandit's reward networks (Blundell et al. 2015, §5.3: context ⊕ one-hot action →
100 → 100 ReLU → reward) are so small that PyTorch spends its time issuing operations, not
computing: one minibatch update of 20 such networks is ~170 MFLOP in ~500 operations. The
kernel runs a whole step of K networks — U minibatch updates each, forward, backward, the
weight-sampling reparameterisation with the prior's complexity cost, and Adam — in one call,
skipping the zeros of the one-hot inputs and of the ReLUs, with the networks shared out over
threads. It is specialised per shape (the sizes are compile-time constants) and built at first
use (:func:`core.engine.native.build.load_kernel`).

:class:`TinyNetworks` holds the shape's layout and converts between the methods' parameters
(``weight (K, out, in)``, ``bias (K, out)`` per layer) and the kernel's packed vectors
``(K, S)``; ``S`` = ``n_params`` for a point-estimate network (MLP) and ``2·n_params`` for a
Bayesian one (``[μ | ρ]``, σ = softplus(ρ)). The estimator is the PyTorch path's
(``BayesLinear`` with ``lrt=False`` and ``torch.optim.Adam``), tested against it given the same
noise (``tests/unit/test_native_tiny.py``).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import torch

from core.engine.fused import prior_constants
from core.engine.native import build
from core.engine.objective import KL_SCHEDULES
from core.engine.priors import GaussianPrior, Prior, ScaleMixturePrior

_P = ctypes.c_void_p
_LAYOUT = ("D", "A", "H1", "H2", "P1", "P2", "W1", "B1", "W2", "B2", "W3", "B3", "NP")

SOURCE = Path(__file__).with_name("tiny_mlp.c")
"""The kernel's C source, built per network shape."""


class NativeUnavailable(RuntimeError):
    """The compiled kernel cannot be built or loaded here (no C compiler, ``BNN_NATIVE=0``)."""


@dataclass(frozen=True)
class Hyper:
    """What one update needs besides the data.

    Attributes:
        lr: The optimiser's learning rate.
        noise_sigma: σ_n of the Gaussian likelihood, in the rewards' units.
        kl_weight: The complexity cost's weight β·B/N (BBB; 0 for a point estimate).
        kl_schedule: ``"uniform"`` (``kl_weight`` in each of a call's U updates) or
            ``"blundell"`` (update u's weight ``kl_weight`` times
            :func:`~core.bandits.neural.kl_factors`' U·2^-(u+1)/(1 − 2^-U), u = 0…U−1).
        prior: The weight prior (BBB).
        betas: Adam's β1, β2.
        eps: Adam's ε.
        optimizer: ``"adam"`` (as ``torch.optim.Adam``) or ``"sgd"`` (θ ← θ − lr·g, as
            ``torch.optim.SGD`` without momentum; the moments stay untouched).
    """

    lr: float
    noise_sigma: float
    kl_weight: float = 0.0
    kl_schedule: str = "uniform"
    prior: Prior = GaussianPrior(1.0)
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    optimizer: str = "adam"

    def packed(self) -> ctypes.Array:
        """The kernel's ``hyper_t``: 15 floats."""
        if isinstance(self.prior, GaussianPrior):
            prior = [1.0, 1.0 / self.prior.sigma**2, 0.0, 0.0, 0.0, 0.0, 0.0]
        elif isinstance(self.prior, ScaleMixturePrior):
            c = prior_constants(self.prior)
            prior = [0.0, 0.0, c.t0, c.k, c.log_b0, c.inv_s2, c.inv_s1]
        else:
            raise TypeError(f"no compiled complexity cost for the prior {self.prior!r}")
        values = [self.lr, *self.betas, self.eps]
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"no compiled optimiser {self.optimizer!r}")
        values += [1.0 / self.noise_sigma**2, self.kl_weight, *prior]
        values.append(1.0 if self.optimizer == "sgd" else 0.0)
        if self.kl_schedule not in KL_SCHEDULES:
            raise ValueError(f"no compiled complexity-cost schedule {self.kl_schedule!r}")
        values.append(1.0 if self.kl_schedule == "blundell" else 0.0)
        return (ctypes.c_float * len(values))(*values)


class Job(ctypes.Structure):
    """One family's step: the kernel's ``job_t`` (``tiny_mlp.c``), from :meth:`TinyNetworks.job`."""

    _fields_ = [
        *((name, ctypes.c_int64) for name in ("K", "bayes", "t0", "cap", "stride", "U", "B")),
        ("seed", ctypes.c_uint64),
        *((name, _P) for name in ("theta", "m", "v", "inputs", "count", "actions")),
        *((name, _P) for name in ("rewards", "positions")),
        ("hyper", ctypes.c_float * 16),
    ]


class TinyNetworks:
    """The compiled kernel of one shape, and its packed layout.

    Attributes:
        in_features: Input width D (context and one-hot action).
        n_actions: Actions A (the last A inputs are the one-hot action).
        hidden: The two hidden widths.
        n_params: Floats of one network's packed parameters (padding included).
        mask: ``(n_params,)`` float32: 1 where a parameter is real, 0 for padding.
    """

    def __init__(self, in_features: int, n_actions: int, hidden: tuple[int, int]) -> None:
        """Build (or load) the kernel for this shape.

        Args:
            in_features: D.
            n_actions: A < D.
            hidden: ``(H1, H2)``.

        Raises:
            ValueError: If the shape is not two hidden layers with A < D.
            NativeUnavailable: If the kernel cannot be built or loaded.
        """
        if len(hidden) != 2 or min(hidden) < 1 or not 0 < n_actions < in_features:
            raise ValueError(
                f"the compiled networks have two hidden layers and A < D, got {hidden}, "
                f"A={n_actions}, D={in_features}"
            )
        self.in_features, self.n_actions, self.hidden = in_features, n_actions, tuple(hidden)
        defines = (
            ("TINY_D", in_features),
            ("TINY_A", n_actions),
            ("TINY_H1", hidden[0]),
            ("TINY_H2", hidden[1]),
        )
        lib = build.load_kernel(SOURCE, defines)
        if lib is None:
            raise NativeUnavailable(build.kernel_reason(SOURCE, defines) or "not built")
        self._lib = lib
        lib.tiny_key.restype = ctypes.c_uint64
        lib.tiny_key.argtypes = [ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64]
        lib.tiny_layout.restype = ctypes.c_int64
        lib.tiny_compact.restype = ctypes.c_int64
        out = (ctypes.c_int64 * 16)()
        n = lib.tiny_layout(out)
        self.layout = dict(zip(_LAYOUT, list(out)[:n], strict=True))
        self.n_params = self.layout["NP"]
        mask = torch.zeros(self.n_params)
        for w, b in self._blocks():
            mask[w] = 1.0
            mask[b] = 1.0
        self.mask = mask.contiguous()

    def _blocks(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, the packed positions of ``weight (out, in)`` and ``bias (out,)``."""
        lay, d, (h1, h2) = self.layout, self.in_features, self.hidden
        p1, p2 = lay["P1"], lay["P2"]

        def weight(offset: int, n_in: int, n_out: int, stride: int) -> torch.Tensor:
            # element (o, i) lies at offset + i·stride + o
            o = torch.arange(n_out)[:, None]
            i = torch.arange(n_in)[None, :]
            return offset + i * stride + o

        return [
            (weight(lay["W1"], d, h1, p1), lay["B1"] + torch.arange(h1)),
            (weight(lay["W2"], h1, h2, p2), lay["B2"] + torch.arange(h2)),
            (weight(lay["W3"], h2, 1, 1).view(1, h2), lay["B3"] + torch.arange(1)),
        ]

    def pack(self, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Packed vectors of K networks.

        Args:
            layers: Per layer, ``weight (K, out, in)`` and ``bias (K, out)``.

        Returns:
            ``(K, n_params)`` float32, padding 0.
        """
        k = layers[0][0].shape[0]
        flat = torch.zeros(k, self.n_params)
        for (w_at, b_at), (w, b) in zip(self._blocks(), layers, strict=True):
            flat[:, w_at.flatten()] = w.detach().reshape(k, -1).float()
            flat[:, b_at] = b.detach().float()
        return flat

    def unpack(self, flat: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Inverse of :meth:`pack`.

        Args:
            flat: ``(K, n_params)``.

        Returns:
            Per layer, ``weight (K, out, in)`` and ``bias (K, out)`` (copies).
        """
        return [(flat[:, w_at], flat[:, b_at]) for w_at, b_at in self._blocks()]

    def key(self, seed: int, network: int, update: int) -> int:
        """The noise stream of update ``update`` of network ``network`` in a call with ``seed``.

        Args:
            seed: The call's seed (a decision's draw uses update 65535).
            network: Index k of the network.
            update: Index u of the update within the call.

        Returns:
            The stream's 64-bit key.
        """
        return int(self._lib.tiny_key(seed, network, update))

    def noise(self, key: int) -> torch.Tensor:
        """The standard normals ε of a stream, one per packed parameter.

        Args:
            key: From :meth:`key`.

        Returns:
            ``(n_params,)`` (padding entries included: the kernel masks them).
        """
        out = torch.empty(self.n_params)
        self._lib.tiny_noise(ctypes.c_uint64(key), _P(out.data_ptr()))
        return out

    def job(
        self,
        theta: torch.Tensor,
        adam: tuple[torch.Tensor, torch.Tensor],
        steps: int,
        buffer: tuple[torch.Tensor, ...],
        positions: torch.Tensor,
        hyper: Hyper,
        seed: int,
        bayesian: bool,
    ) -> Job:
        """One family's step, to run with :meth:`run` (with other families' steps).

        Args:
            theta: ``(K, S)`` packed parameters (``[μ | ρ]`` when ``bayesian``), updated in
                place.
            adam: Adam's first and second moments, each like ``theta``.
            steps: Adam steps taken so far (the bias corrections count on from it).
            buffer: Each network's ring of interactions: its contexts' non-zero columns
                ``inputs (K, capacity, stride, 2)`` int32 (the first ``count (K, capacity)``
                int32 of each row; :meth:`compact`), ``actions (K, capacity)`` int64 and
                ``rewards (K, capacity)`` float32.
            positions: ``(U, K, B)`` int64: update u trains network k on these positions.
            hyper: Learning rate, likelihood, complexity cost and prior.
            seed: The step's noise seed (update u of network k draws :meth:`key`).
            bayesian: Whether ``theta`` is a weight posterior (BBB) or weights (MLP).

        Returns:
            The step, holding its tensors.

        Raises:
            ValueError: If a tensor's shape, type or layout does not fit.
        """
        inputs, count, actions, rewards = buffer
        k, capacity = actions.shape
        width = (2 if bayesian else 1) * self.n_params
        m, v = adam
        for t in (theta, m, v):
            if t.shape != (k, width) or t.dtype != torch.float32 or not t.is_contiguous():
                raise ValueError(f"packed state must be contiguous float32 ({k}, {width})")
        if (
            inputs.shape[:2] != (k, capacity)
            or inputs.shape[3:] != (2,)
            or count.shape != (k, capacity)
        ):
            raise ValueError(f"inputs {tuple(inputs.shape)} do not fit the buffer")
        if inputs.dtype != torch.int32 or count.dtype != torch.int32:
            raise ValueError("inputs and counts must be int32 (from compact())")
        if count.numel() and (count.min() < 0 or count.max() > inputs.shape[2]):
            raise ValueError("a row counts more non-zero columns than it has room for")
        positions = positions.contiguous()
        if positions.dtype != torch.int64 or positions.dim() != 3 or positions.shape[1] != k:
            raise ValueError("positions must be int64 (U, K, B)")
        if positions.numel() and (positions.min() < 0 or positions.max() >= capacity):
            raise ValueError("positions outside the buffer")
        u, _, b = positions.shape
        held = (theta, m, v, *(t.contiguous() for t in buffer), positions)
        job = Job(k, int(bayesian), steps, capacity, inputs.shape[2], u, b, seed)
        job.theta, job.m, job.v, job.inputs, job.count = (t.data_ptr() for t in held[:5])
        job.actions, job.rewards, job.positions = (t.data_ptr() for t in held[5:])
        packed = list(hyper.packed())
        job.hyper[: len(packed)] = packed
        job.held, job.kernel = held, self
        return job

    def run(self, jobs: list[Job], threads: int = 1) -> None:
        """Take the steps of several families at once, each network a task for the threads.

        Args:
            jobs: From :meth:`job` of this kernel, costliest first (the threads take the
                networks in this order).
            threads: OpenMP threads (results do not depend on it).
        """
        if any(job.kernel is not self for job in jobs):
            raise ValueError("every job must be of this kernel's shape")
        array = (Job * len(jobs))(*jobs)
        self._lib.tiny_update(
            ctypes.c_int(len(jobs)), array, _P(self.mask.data_ptr()), ctypes.c_int(max(1, threads))
        )

    def update(self, *args, threads: int = 1, **kwargs) -> None:
        """One family's step now: :meth:`job` with these arguments, then :meth:`run`.

        Args:
            *args: Those of :meth:`job`.
            threads: OpenMP threads.
            **kwargs: Those of :meth:`job`.
        """
        self.run([self.job(*args, **kwargs)], threads)

    def compact(
        self, contexts: torch.Tensor, stride: int
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The non-zero columns of contexts, the form :meth:`job` reads.

        Args:
            contexts: ``(n, D − A)``.
            stride: Room per row (non-zero columns).

        Returns:
            ``(inputs, count, most)``: ``inputs (n, stride, 2)`` int32 — per row, the first
            ``count (n,)`` int32 pairs (column, value as float32 bits) — and the largest number
            of non-zeros of a row; a row with more than ``stride`` keeps its first ``stride``
            (widen and compact again).
        """
        contexts = contexts.float().contiguous()
        n, width = contexts.shape
        if width != self.in_features - self.n_actions or stride < 1:
            raise ValueError(f"contexts of {width} columns do not fit the networks")
        inputs = torch.zeros(n, stride, 2, dtype=torch.int32)
        count = torch.zeros(n, dtype=torch.int32)
        most = self._lib.tiny_compact(
            ctypes.c_int64(n),
            _P(contexts.data_ptr()),
            ctypes.c_int64(stride),
            _P(inputs.data_ptr()),
            _P(count.data_ptr()),
        )
        return inputs, count, int(most)

    def values(
        self,
        theta: torch.Tensor,
        contexts: torch.Tensor,
        seed: int,
        bayesian: bool,
        threads: int = 1,
    ) -> torch.Tensor:
        """Every network's value of every action for its own context.

        A Bayesian network acts on one weight draw for all actions (stream
        ``key(seed, k, 65535)``); a point estimate on its weights.

        Args:
            theta: ``(K, S)`` packed parameters.
            contexts: ``(K, D − A)``.
            seed: The decision's noise seed.
            bayesian: Whether ``theta`` is a weight posterior.
            threads: OpenMP threads.

        Returns:
            ``(K, A)`` float32.
        """
        k = theta.shape[0]
        contexts = contexts.float().contiguous()
        if contexts.shape != (k, self.in_features - self.n_actions):
            raise ValueError(f"contexts {tuple(contexts.shape)} do not fit the networks")
        out = torch.empty(k, self.n_actions)
        self._lib.tiny_values(
            ctypes.c_int(k),
            ctypes.c_int(int(bayesian)),
            _P(theta.contiguous().data_ptr()),
            _P(contexts.data_ptr()),
            _P(self.mask.data_ptr()),
            ctypes.c_uint64(seed),
            _P(out.data_ptr()),
            ctypes.c_int(max(1, threads)),
        )
        return out
