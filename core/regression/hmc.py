"""Reference posterior of the regression network by Hamiltonian Monte Carlo (NUTS, pyro-ppl).

The network is the lab's plain :class:`~core.engine.mlp.MLP` of the same widths as the
approximate methods, its weights flattened into one vector w. NUTS (Hoffman & Gelman 2014,
pyro's implementation with step-size and diagonal mass-matrix adaptation during warm-up)
samples

    p(w | D) ∝ Πₙ N(yₙ; f_w(xₙ), σ²) · Πᵢ N(wᵢ; 0, σp²)

through pyro's ``potential_fn`` interface (the potential is −log of the above, written in
torch), with the same prior as BBB's Gaussian prior and the same likelihoods: a fixed σ, a
sampled log σ ~ N(log 0.1, 1.5²) for ``"learned"``, or a second output log σ²(x) for
``"heteroscedastic"``. The chain starts at a MAP estimate (a few hundred Adam steps) so that
warm-up adapts around the posterior rather than wandering from the prior.

With ``hidden=()`` the network is linear, y = a·x + b, and the posterior is the conjugate
Gaussian of Bayesian linear regression (:func:`linear_posterior`), which the tests use to check
the sampler.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import torch
from torch.func import functional_call, vmap

from core.engine.mlp import MLP
from core.engine.priors import GaussianPrior, gaussian_log_prob
from core.engine.seeding import seeded
from core.progress import ProgressFn, report
from core.regression.data import RegressionData
from core.regression.likelihood import gaussian_nll, mean_and_log_var
from core.regression.methods import model_config
from core.regression.settings import FitSettings

LOG_NOISE_PRIOR = (math.log(0.1), 1.5)
"""Mean and standard deviation of the N(m, s²) prior of log σ for the ``"learned"`` noise."""
MAP_STEPS = 500
"""Adam steps of the MAP estimate the chain starts from."""


@dataclass
class Chain:
    """NUTS samples of the network's weights.

    Attributes:
        weights: Flattened weight vectors ``(S, D)``.
        log_noise: Sampled log σ ``(S,)`` for the ``"learned"`` noise, else None.
        seconds: Wall-clock time of the MAP start, warm-up and sampling.
        cpu_seconds: CPU time of the calling thread over the same work.
        step_size: The adapted leapfrog step size.
        acceptance: Fraction of kept iterations that moved to a new point (pyro's
            "acceptance rate"; near 1 for NUTS, which rarely stays put).
        divergences: Number of divergent transitions among the kept samples.
    """

    weights: torch.Tensor
    log_noise: torch.Tensor | None
    seconds: float
    cpu_seconds: float
    step_size: float
    acceptance: float
    divergences: int


class FlatMLP:
    """The plain MLP of a method's widths as a function of one flat weight vector.

    Attributes:
        template: A stateless (meta-device) :class:`~core.engine.mlp.MLP`.
        names: Parameter names, in flattening order.
        shapes: Their shapes.
        dim: Length D of the flat vector.
    """

    def __init__(self, settings: FitSettings) -> None:
        """Lay out the parameters of the settings' network.

        Args:
            settings: Widths (``hidden``) and noise model (the output width).
        """
        mlp = MLP(model_config("hmc", settings))
        self.names = [name for name, _ in mlp.named_parameters()]
        self.shapes = [p.shape for _, p in mlp.named_parameters()]
        self.dim = sum(p.numel() for p in mlp.parameters())
        self.template = mlp.to("meta")

    def flatten(self, module: torch.nn.Module) -> torch.Tensor:
        """The flat vector of an MLP's parameters.

        Args:
            module: An MLP with this layout.

        Returns:
            The vector ``(D,)``.
        """
        params = dict(module.named_parameters())
        return torch.cat([params[name].detach().flatten() for name in self.names])

    def unflatten(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        """Parameters by name from a flat vector.

        Args:
            w: The vector ``(D,)``.

        Returns:
            Name → tensor of its shape (views of ``w``).
        """
        out, start = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            size = math.prod(shape)
            out[name] = w[start : start + size].reshape(shape)
            start += size
        return out

    def __call__(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Network outputs for one weight vector.

        Args:
            w: The vector ``(D,)``.
            x: Inputs ``(B,)``.

        Returns:
            Outputs ``(B, out)``.
        """
        return functional_call(self.template, self.unflatten(w), (x[:, None],))


def _map_start(
    flat: FlatMLP, settings: FitSettings, x: torch.Tensor, y: torch.Tensor, noise: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """A MAP estimate (Adam, full batch) of the weights and log σ to start the chain from."""
    mlp = MLP(model_config("hmc", settings))
    w = flat.flatten(mlp).requires_grad_(True)
    log_noise = torch.tensor(math.log(noise), requires_grad=True)
    optimizer = torch.optim.Adam([w, log_noise], lr=1e-2)
    for _ in range(MAP_STEPS):
        loss = _potential(flat, settings, x, y, w, log_noise, noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return w.detach(), log_noise.detach()


def _potential(
    flat: FlatMLP,
    settings: FitSettings,
    x: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    log_noise: torch.Tensor | None,
    noise: float,
) -> torch.Tensor:
    """−log p(w, log σ | D) up to a constant."""
    prior = GaussianPrior(settings.prior_scale)
    if settings.noise_model == "learned":
        level = log_noise
    else:
        level = torch.tensor(math.log(noise))
    mean, log_var = mean_and_log_var(flat(w, x), settings.noise_model, level)
    u = gaussian_nll(y, mean, log_var).sum() - prior.log_prob(w).sum()
    if settings.noise_model == "learned":
        u = u - gaussian_log_prob(log_noise, *LOG_NOISE_PRIOR)
    return u


def run_nuts(
    data: RegressionData, settings: FitSettings, progress: ProgressFn | None = None
) -> Chain:
    """Sample the network's posterior with NUTS.

    Seeded by ``settings.seed`` inside :func:`torch.random.fork_rng` (the caller's random state
    is unchanged). One chain of ``hmc_warmup`` adaptation steps and ``hmc_samples`` kept ones.

    Args:
        data: The training set.
        settings: Widths, noise model, prior σ and the ``hmc_*`` settings.
        progress: Gets the fraction of NUTS iterations done (warm-up included).

    Returns:
        The samples and the chain's diagnostics.
    """
    with warnings.catch_warnings():  # pyro's import warns about torch.jit deprecations
        warnings.simplefilter("ignore")
        from pyro.infer import MCMC, NUTS

    flat = FlatMLP(settings)
    x, y = data.x_train, data.y_train
    noise = settings.noise_sigma(data)
    learned = settings.noise_model == "learned"
    total = settings.hmc_warmup + settings.hmc_samples
    done = [0]

    def potential(params: dict[str, torch.Tensor]) -> torch.Tensor:
        theta = params["theta"]
        w, log_noise = (theta[:-1], theta[-1]) if learned else (theta, None)
        return _potential(flat, settings, x, y, w, log_noise, noise)

    def hook(kernel, samples, stage, i) -> None:
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == total:
            report(progress, done[0] / total, f"{stage.lower()} {i + 1}")

    with seeded(settings.seed, cuda=False):
        report(progress, 0.0, "MAP start")
        start, cpu_start = time.perf_counter(), time.thread_time()
        w0, log_noise0 = _map_start(flat, settings, x, y, noise)
        theta0 = torch.cat([w0, log_noise0[None]]) if learned else w0
        kernel = NUTS(
            potential_fn=potential,
            max_tree_depth=settings.hmc_tree_depth,
            adapt_step_size=True,
            adapt_mass_matrix=True,
        )
        mcmc = MCMC(
            kernel,
            num_samples=settings.hmc_samples,
            warmup_steps=settings.hmc_warmup,
            initial_params={"theta": theta0},
            hook_fn=hook,
            disable_progbar=True,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mcmc.run()
        seconds = time.perf_counter() - start
        cpu_seconds = time.thread_time() - cpu_start
    theta = mcmc.get_samples()["theta"].detach().float()
    diagnostics = mcmc.diagnostics()
    divergences = diagnostics.get("divergences", {}).get("chain 0", [])
    acceptance = diagnostics.get("acceptance rate", {}).get("chain 0", float("nan"))
    return Chain(
        weights=theta[:, :-1] if learned else theta,
        log_noise=theta[:, -1] if learned else None,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        step_size=float(kernel.step_size),
        acceptance=float(acceptance),
        divergences=len(divergences),
    )


@torch.no_grad()
def chain_functions(
    chain: Chain, settings: FitSettings, data: RegressionData, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampled networks' functions on ``x``.

    Args:
        chain: NUTS samples.
        settings: The settings the chain was run with.
        data: The training set (the fixed noise level).
        x: Inputs ``(B,)``.

    Returns:
        ``(mean, log_var)``, each ``(S, B)``.
    """
    flat = FlatMLP(settings)
    out = vmap(lambda w: flat(w, x))(chain.weights)  # (S, B, out)
    if chain.log_noise is not None:
        level = chain.log_noise[:, None]
    else:
        level = torch.tensor(math.log(settings.noise_sigma(data)))
    return mean_and_log_var(out, settings.noise_model, level)


def linear_posterior(
    x: torch.Tensor, y: torch.Tensor, noise: float, prior_sigma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed-form posterior of Bayesian linear regression y = a·x + b + ε.

    Prior a, b ~ N(0, σp²) independently; ε ~ N(0, σ²) with σ known. With features
    Φ = [x, 1], the posterior is N(μ, Σ), Σ = (ΦᵀΦ/σ² + I/σp²)⁻¹, μ = Σ·Φᵀy/σ².

    Args:
        x: Inputs ``(N,)``.
        y: Targets ``(N,)``.
        noise: σ.
        prior_sigma: σp.

    Returns:
        ``(mean, cov)``: ``(2,)`` and ``(2, 2)``, ordered (a, b) like the flat weights of
        the 1-1 network (``layers.0.weight``, then ``layers.0.bias``), in float64.
    """
    phi = torch.stack([x, torch.ones_like(x)], 1).double()
    precision = phi.T @ phi / noise**2 + torch.eye(2, dtype=torch.float64) / prior_sigma**2
    cov = torch.linalg.inv(precision)
    mean = cov @ phi.T @ y.double() / noise**2
    return mean, cov
