"""Peers side by side (issue 19 item 4): bayesian-torch 0.5.0 and blitz 0.2.8 against ours.

Both libraries keep a layer's weight noise ε in a buffer and redraw it in place through
``.data`` at every forward pass (bayesian-torch: ``self.eps_weight.data.normal_()``; blitz:
``self.eps_w.data.normal_()``). Autograd saved that buffer for the backward of σ·ε, and writing
through ``.data`` does not bump its version counter, so with S > 1 samples summed before one
``backward`` every sample's σ-gradient silently uses the *last* sample's noise. The gradients
with respect to μ are right; those with respect to ρ are not the gradient of the loss that was
computed.

:func:`gradient_check` shows it numerically: it runs an S-sample loss through a model, records the
noise each sample actually used (cloned right after each pass), and compares the model's
ρ-gradients with those of a functional reference (w_s = μ + softplus(ρ)·ε_s with the recorded
ε_s, pure autograd, no buffers). Ours is checked the same way. :func:`time_peers` times a
training step of each library on the same network, batch and S as ours, in the same process.

The libraries are optional (``requirements-peers.txt``), never needed by the app or CI: they
are imported only here, from the environment or from a ``pip install --target`` folder on
``PYTHONPATH``.
"""

from __future__ import annotations

import importlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from core.catalogue import BASELINE_KIND, BAYESIAN_KIND
from core.engine.objective import minibatch_objective
from core.methods import ModelConfig, build_model
from core.studies.training_speed import FLOOR_IMPL

PEERS = {"bayesian-torch": "bayesian_torch", "blitz": "blitz"}
"""Display name → import name of the peer libraries (pinned in ``requirements-peers.txt``)."""
INIT_RHO = math.log(math.expm1(1e-3))
"""Initial ρ of every network (σ = 1e-3, our default ``init_sigma``)."""


def available_peers() -> dict[str, str | None]:
    """Which peer libraries import.

    Returns:
        Display name → None if importable, else the reason it is not.
    """
    out = {}
    for name, module in PEERS.items():
        try:
            importlib.import_module(module)
            out[name] = None
        except Exception as error:  # ImportError or a broken install
            out[name] = f"{type(error).__name__}: {error}"
    return out


class PeerNet(nn.Module):
    """A 784-…-10 ReLU network of one peer library's Bayesian linear layers.

    Attributes:
        library: ``"bayesian-torch"`` or ``"blitz"``.
        layers: The peer's layers.
    """

    def __init__(self, library: str, sizes: list[int]) -> None:
        """Build the layers with a N(0, 1) prior and σ = 1e-3 initially.

        Args:
            library: A key of :data:`PEERS`.
            sizes: Layer widths, input to output.

        Raises:
            ValueError: For an unknown library.
        """
        super().__init__()
        self.library = library
        pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
        if library == "bayesian-torch":
            from bayesian_torch.layers import LinearReparameterization

            self.layers = nn.ModuleList(
                LinearReparameterization(a, b, prior_variance=1.0, posterior_rho_init=INIT_RHO)
                for a, b in pairs
            )
        elif library == "blitz":
            from blitz.modules import BayesianLinear

            self.layers = nn.ModuleList(
                BayesianLinear(a, b, prior_pi=1.0, prior_sigma_1=1.0, posterior_rho_init=INIT_RHO)
                for a, b in pairs
            )
        else:
            raise ValueError(f"unknown peer {library!r}")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One stochastic pass as the library intends it.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat ``(B, 784)``.

        Returns:
            ``(logits (B, C), complexity cost)`` in the library's own units.
        """
        h, kl = x.reshape(len(x), -1), 0.0
        for i, layer in enumerate(self.layers):
            if self.library == "bayesian-torch":
                h, layer_kl = layer(h)
            else:
                h = layer(h)
                layer_kl = layer.log_variational_posterior - layer.log_prior
            kl = kl + layer_kl
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h, kl

    def posterior(self) -> list[tuple[torch.Tensor, ...]]:
        """Per layer, the tensors the pass uses: ``(μ_W, ρ_W, ε_W, μ_b, ρ_b, ε_b)``.

        Returns:
            The parameters and the noise buffers (the latter overwritten by every pass).
        """
        out = []
        for layer in self.layers:
            if self.library == "bayesian-torch":
                out.append(
                    (layer.mu_weight, layer.rho_weight, layer.eps_weight)
                    + (layer.mu_bias, layer.rho_bias, layer.eps_bias)
                )
            else:
                w, b = layer.weight_sampler, layer.bias_sampler
                out.append((w.mu, w.rho, w.eps_w, b.mu, b.rho, b.eps_w))
        return out


def _functional_nll(x, y, params, noises) -> torch.Tensor:
    """Average over samples of the summed NLL with w_s = μ + softplus(ρ)·ε_s (pure autograd)."""
    total = 0.0
    for noise in noises:
        h = x.reshape(len(x), -1)
        for i, ((mw, rw, mb, rb), (ew, eb)) in enumerate(zip(params, noise, strict=True)):
            h = F.linear(h, mw + F.softplus(rw) * ew, mb + F.softplus(rb) * eb)
            if i < len(params) - 1:
                h = F.relu(h)
        total = total + F.cross_entropy(h, y, reduction="sum")
    return total / len(noises)


def _relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def gradient_check(
    library: str, n_samples: int, *, sizes=(784, 64, 10), batch_size: int = 32, seed: int = 0
) -> dict:
    """Compare an S-sample NLL's ρ- and μ-gradients with the functional reference.

    Args:
        library: ``"ours"`` (BBB, sequential and fused estimators) or a key of :data:`PEERS`.
        n_samples: Samples S averaged before one ``backward``.
        sizes: Layer widths (a small network: the check is about the estimator, not speed).
        batch_size: Inputs per batch (random images and labels).
        seed: Seed of the data, initialisation and noise.

    Returns:
        ``{"library", "samples", "rho_rel_error", "mu_rel_error"}``: the relative L2 errors
        (‖g − g_ref‖ / ‖g_ref‖) of the first layer's weight gradients; float rounding is ~1e-7,
        a wrong estimator O(1).
    """
    torch.manual_seed(seed)
    x, y = torch.rand(batch_size, sizes[0]), torch.randint(0, sizes[-1], (batch_size,))
    if library == "ours":
        config = ModelConfig(hidden=tuple(sizes[1:-1]), in_features=sizes[0])
        model = build_model(config.__class__(**{**config.__dict__, "num_classes": sizes[-1]}))
        for layer in model.layers:  # a visible σ so that ρ-gradients are not tiny
            layer.weight_rho.data.fill_(math.log(math.expm1(0.05)))
        noise = model.draw_noise(n_samples, batch_size, lrt=False)
        terms = minibatch_objective(
            model, x, y, n_samples=n_samples, weight=0.0, impl="fused", noise=noise
        )
        grads = torch.autograd.grad(
            terms.nll, [model.layers[0].weight_rho, model.layers[0].weight_mu]
        )
        params = [(la.weight_mu, la.weight_rho, la.bias_mu, la.bias_rho) for la in model.layers]
        noises = [[(n["weight"][s], n["bias"][s]) for n in noise] for s in range(n_samples)]
    else:
        model = PeerNet(library, list(sizes))
        for tensors in model.posterior():  # the same visible σ
            tensors[1].data.fill_(math.log(math.expm1(0.05)))
        total, noises = 0.0, []
        for _ in range(n_samples):  # the library's own usage: sum S passes, one backward
            logits, _ = model(x)
            total = total + F.cross_entropy(logits, y, reduction="sum")
            noises.append([(t[2].clone(), t[5].clone()) for t in model.posterior()])
        first = model.posterior()[0]
        grads = torch.autograd.grad(total / n_samples, [first[1], first[0]])
        params = [(t[0], t[1], t[3], t[4]) for t in model.posterior()]
    reference = _functional_nll(x, y, params, noises)
    ref_grads = torch.autograd.grad(reference, [params[0][1], params[0][0]])
    return {
        "library": library,
        "samples": n_samples,
        "rho_rel_error": _relative_error(grads[0], ref_grads[0]),
        "mu_rel_error": _relative_error(grads[1], ref_grads[1]),
    }


def _peer_stepper(library: str, sizes: list[int], lr: float) -> Callable:
    torch.manual_seed(0)
    model = PeerNet(library, sizes)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)

    def step(xb, yb, n_samples: int, weight: float) -> None:
        loss = 0.0
        for _ in range(n_samples):
            logits, kl = model(xb)
            loss = loss + F.cross_entropy(logits, yb, reduction="sum") + weight * kl
        optimizer.zero_grad(set_to_none=True)
        (loss / n_samples).backward()
        optimizer.step()

    return step


def _our_stepper(impl: str, sizes: list[int], lr: float) -> Callable:
    """A step of our baseline (``impl`` :data:`FLOOR_IMPL`) or Bayesian network (its estimator)."""
    floor = impl == FLOOR_IMPL
    torch.manual_seed(0)
    kind = BASELINE_KIND if floor else BAYESIAN_KIND
    model = build_model(ModelConfig(kind=kind, hidden=tuple(sizes[1:-1])))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)

    def step(xb, yb, n_samples: int, weight: float) -> None:
        if floor:
            loss = F.cross_entropy(model(xb), yb, reduction="sum")
        else:
            terms = minibatch_objective(
                model, xb, yb, n_samples=n_samples, weight=weight, impl=impl
            )
            loss = terms.loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def time_peers(
    n_samples=(1, 10),
    *,
    ours=("sequential", "vmap_lrt", "fused"),
    peers=tuple(PEERS),
    steps: int = 5,
    repeats: int = 3,
    batch_size: int = 128,
    hidden=(400, 400),
    epoch_steps: int = 469,
    progress: Callable[[float, str], None] | None = None,
) -> list[dict]:
    """Time a training step of ours and the peers, interleaved, medians of ``repeats`` rounds.

    Args:
        n_samples: Sample counts S.
        ours: Our estimators to time (the plain MLP is always timed, once, as the floor).
        peers: Peer libraries to time (keys of :data:`PEERS`; must be importable).
        steps: Timed steps per point and round (after one untimed step).
        repeats: Rounds; the median step time is kept.
        batch_size: Inputs per step (random images in [0, 1]).
        hidden: Hidden widths of the 784-…-10 network.
        epoch_steps: Steps per epoch for the extrapolation (469 = 60,000 / 128).
        progress: Called with (fraction done, message); None for silence.

    Returns:
        Rows ``library, impl, samples, step_seconds, epoch_seconds`` (``library`` "ours" or a
        peer; ``samples`` None for the MLP floor).
    """
    sizes = [784, *hidden, 10]
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(batch_size, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (batch_size,), generator=gen)
    jobs: list[tuple[str, str, int | None, Callable]] = [
        ("ours", FLOOR_IMPL, None, _our_stepper(FLOOR_IMPL, sizes, 1e-3))
    ]
    for s in n_samples:
        jobs += [("ours", impl, s, _our_stepper(impl, sizes, 1e-3)) for impl in ours]
        jobs += [(p, p, s, _peer_stepper(p, sizes, 1e-3)) for p in peers]
    times: dict[int, list[float]] = {k: [] for k in range(len(jobs))}
    total = len(jobs) * repeats
    for r in range(repeats):
        for k, (_library, impl, s, step) in enumerate(jobs):
            if progress:
                progress((r * len(jobs) + k) / total, f"round {r + 1}: {impl}, S={s}")
            if r == 0:
                step(x, y, s or 1, 1.0 / epoch_steps)
            start = time.perf_counter()
            for _ in range(steps):
                step(x, y, s or 1, 1.0 / epoch_steps)
            times[k].append((time.perf_counter() - start) / steps)
    rows = []
    for k, (library, impl, s, _) in enumerate(jobs):
        ordered = sorted(times[k])
        median = ordered[len(ordered) // 2]
        rows.append(
            {
                "library": library,
                "impl": impl,
                "samples": s,
                "step_seconds": median,
                "epoch_seconds": median * epoch_steps,
            }
        )
    return rows


def load_peer_results(folder: Path | None = None) -> dict | None:
    """The newest saved ``python -m core bench --peers --save`` result.

    Args:
        folder: Where to look; None for the Training speed page's stored runs.

    Returns:
        The result of the newest readable ``peers-*.json`` file (by date), or None.
    """
    from core.studies.training_speed_runs import RUNS

    results = []
    for path in (folder or RUNS.folder).glob("peers-*.json"):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and "timings" in result:
            results.append(result)
    return max(results, key=lambda r: r.get("date") or "", default=None)
