"""Bandit agents behind one interface, vectorised over runs (agents × seeds) that act in lockstep.

An :class:`AgentGroup` holds every run of the agents of one *family*: the BBB, MC-dropout and
ensemble Thompson samplers, the greedy and ε-greedy MLPs (one family: the same network and
training, only the exploration differs), the uniform random agent and exact linear Thompson
sampling. Runs are ordered agent-major: run ``r`` is agent ``r // n_seeds`` on seed
``r % n_seeds``. Each step the runner calls :meth:`AgentGroup.act` with every run's context and
:meth:`AgentGroup.update` with the chosen actions and realised rewards.

**Reward model** (Blundell et al. 2015, §5.3): context ⊕ one-hot action → two hidden layers of
100 ReLU units → reward. The networks of a group are independent but their parameters are
stacked along a leading dim ``K`` (runs × ensemble members) and trained together on the sum of
their losses: Adam is element-wise, so that is the same as training each network alone. The BBB
network is the project's :class:`~core.engine.bbb.BayesMLP` of
:class:`~core.engine.layers.BayesLinear` layers with its prior's complexity cost
(:mod:`core.engine.priors`), run with ``torch.func.vmap`` over ``functional_call``; the plain and
dropout MLPs are batched matrix products of :class:`~core.engine.mlp.MLP`'s parameters (dropout
masks must come from the run's own generator, which ``F.dropout`` cannot use).

Every network is trained online from a buffer of its run's most recent ``buffer_size``
interactions with ``updates_per_step`` minibatch updates of ``batch_size`` per step (uniform
draws with replacement; each ensemble member draws its own minibatches).

* **BBB Thompson**: one weight draw per decision, the action of highest sampled reward. Its
  loss per update is the minibatch ELBO ``Σ_b (r_b − f(x_b))²/(2σ²) + β·(B/N)·KL(q‖p)`` with N
  the number of interactions in the buffer (the KL weighting of one minibatch of an epoch over
  the buffer), computed with local reparameterisation.
* **MC-dropout Thompson**: one dropout mask per decision (Gal & Ghahramani 2016).
* **Ensemble Thompson**: ``members`` networks per run, one drawn uniformly per decision.
* **SGLD Thompson**: the reward network's weights follow Langevin dynamics
  (:class:`~core.engine.sgmcmc.SGLD`) on the buffer's posterior — BBB's likelihood σ and
  prior, N the interactions in the buffer — and each decision acts on the chain's current
  weights, one posterior sample (Welling & Teh 2011; as "SGLD" in Riquelme et al. 2018).
* **Greedy / ε-greedy**: the MLP's best action; with probability ε a uniformly random one.
* **Linear Thompson** (Riquelme et al. 2018): per arm, Bayesian linear regression of the
  reward on (context, 1) with a normal-inverse-gamma prior, β | σ² ~ N(0, σ²/λ·I),
  σ² ~ IG(a₀, b₀); each decision draws (σ², β) from the exact posterior of every arm.

No agent uses the global random number generator: each group draws from its own
``torch.Generator`` (and linear Thompson's Gamma draws from its own NumPy generator), so runs
are reproducible and the server's other sessions are unaffected.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from core.bandits.environments import Environment
from core.engine.interface import ModelConfig
from core.engine.layers import inverse_softplus
from core.engine.priors import prior_from_dict
from core.engine.sgmcmc import SGLD
from core.methods import build_model

FAMILIES = ("bbb", "dropout", "ensemble", "sgld", "mlp", "random", "linear")


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the command line and the page.

    Attributes:
        name: Its short name (``bbb``, ``eps5`` ...).
        title: Human title.
        family: The :class:`AgentGroup` family that runs it, one of :data:`FAMILIES`.
        epsilon: Probability of a uniformly random action (greedy family only).
    """

    name: str
    title: str
    family: str
    epsilon: float = 0.0


AGENTS = {
    spec.name: spec
    for spec in (
        AgentSpec("bbb", "BBB Thompson", "bbb"),
        AgentSpec("dropout", "MC-dropout Thompson", "dropout"),
        AgentSpec("ensemble", "Ensemble Thompson", "ensemble"),
        AgentSpec("sgld", "SGLD Thompson", "sgld"),
        AgentSpec("greedy", "Greedy MLP", "mlp"),
        AgentSpec("eps1", "ε-greedy MLP, ε = 1 %", "mlp", 0.01),
        AgentSpec("eps5", "ε-greedy MLP, ε = 5 %", "mlp", 0.05),
        AgentSpec("random", "Uniform random", "random"),
        AgentSpec("lints", "Linear Thompson (exact)", "linear"),
    )
}
"""Agent name → spec, in display order."""


@dataclass(frozen=True)
class ModelSettings:
    """Reward models, their online training and the linear baseline's prior.

    Attributes:
        hidden: Hidden layer widths of every reward network.
        buffer_size: Interactions kept per run (the most recent ones).
        batch_size: Interactions per minibatch update.
        updates_per_step: Minibatch updates per bandit step.
        lr: Adam's learning rate.
        noise_sigma: BBB's likelihood standard deviation σ, in units of the environment's
            ``reward_scale``.
        prior_sigma: Standard deviation of BBB's Gaussian weight prior.
        init_sigma: BBB's initial posterior standard deviation of every weight.
        kl_beta: Multiplies BBB's complexity cost (1 = the ELBO).
        dropout: Dropout probability of MC dropout.
        members: Networks per ensemble.
        sgld_lr: SGLD's step as plain SGD's learning rate on the minibatch mean squared error
            (ε = 2·lr/N; the noise variance per step is ε).
        linear_lambda: Linear Thompson's prior precision λ (times 1/σ²).
        linear_a0: Shape a₀ of the inverse-gamma prior of σ².
        linear_b0: Scale b₀ of the inverse-gamma prior of σ².

    Raises:
        ValueError: If a size is below 1 or a probability or scale is out of range.
    """

    hidden: tuple[int, ...] = (100, 100)
    buffer_size: int = 4096
    batch_size: int = 64
    updates_per_step: int = 1
    lr: float = 1e-3
    noise_sigma: float = 1.0
    prior_sigma: float = 1.0
    init_sigma: float = 0.02
    kl_beta: float = 1.0
    dropout: float = 0.2
    members: int = 5
    sgld_lr: float = 0.01
    linear_lambda: float = 0.25
    linear_a0: float = 6.0
    linear_b0: float = 6.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        sizes = (self.buffer_size, self.batch_size, self.updates_per_step, self.members)
        if min(sizes) < 1 or not self.hidden or min(self.hidden) < 1:
            raise ValueError("buffer, batch, updates, members and hidden widths must be ≥ 1")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        positive = (self.lr, self.sgld_lr, self.noise_sigma, self.prior_sigma, self.init_sigma)
        if min(positive) <= 0 or self.kl_beta < 0:
            raise ValueError(
                "lr, sgld_lr, noise_sigma, prior_sigma, init_sigma must be > 0, kl_beta ≥ 0"
            )
        if min(self.linear_lambda, self.linear_a0, self.linear_b0) <= 0:
            raise ValueError("linear_lambda, linear_a0 and linear_b0 must be > 0")

    def to_dict(self) -> dict:
        """The settings as a JSON-serialisable dict.

        Returns:
            Every field by name, ``hidden`` as a list.
        """
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelSettings:
        """Inverse of :meth:`to_dict`.

        Args:
            d: Field values by name; missing fields take their defaults.

        Returns:
            The validated settings.
        """
        return cls(**d)


class AgentGroup:
    """The runs of one family's agents, vectorised; subclasses implement the family.

    Attributes:
        specs: The agents of the group.
        n_seeds: Runs per agent.
        n_runs: ``len(specs) · n_seeds``.
        n_actions: Actions A of the environment.
        seed_index: Seed of each run, ``(n_runs,)``.
        generator: The group's own source of randomness.
    """

    family = ""

    def __init__(
        self,
        specs: list[AgentSpec],
        n_seeds: int,
        env: Environment,
        settings: ModelSettings,
        seed: int,
    ) -> None:
        """Set up the group's runs.

        Args:
            specs: The agents, all of this group's family.
            n_seeds: Runs per agent.
            env: The environment (its sizes and reward scale).
            settings: Reward model and training settings.
            seed: Seed of the group's generator.
        """
        self.specs, self.n_seeds = list(specs), n_seeds
        self.n_runs = len(self.specs) * n_seeds
        self.n_actions, self.context_dim = env.n_actions, env.context_dim
        self.reward_scale = float(env.reward_scale)
        self.settings = settings
        self.seed_index = torch.arange(self.n_runs) % n_seeds
        self.generator = torch.Generator().manual_seed(seed)

    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Choose an action for every run.

        Args:
            contexts: Each run's context ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)`` (int64).
        """
        raise NotImplementedError

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Learn from this step's interactions.

        Args:
            contexts: Each run's context ``(n_runs, context_dim)``.
            actions: The actions taken ``(n_runs,)``.
            rewards: The realised rewards ``(n_runs,)`` (reward units).
        """

    def sample_rewards(
        self, run: int, contexts: torch.Tensor, n_samples: int, generator: torch.Generator
    ) -> torch.Tensor | None:
        """The reward model's sampled rewards of every action, as used for decisions.

        Args:
            run: Which run (agent-major index).
            contexts: ``(n_inputs, context_dim)``.
            n_samples: Number of posterior draws (networks, masks, members, β).
            generator: Randomness for the draws (not the group's own, so that looking does
                not change the run).

        Returns:
            ``(n_samples, n_inputs, n_actions)`` in reward units, or None for a model-free
            agent.
        """
        return None


class RandomGroup(AgentGroup):
    """Uniformly random actions."""

    family = "random"

    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Draw actions uniformly.

        Args:
            contexts: ``(n_runs, context_dim)`` (ignored).

        Returns:
            Actions ``(n_runs,)``.
        """
        return torch.randint(self.n_actions, (self.n_runs,), generator=self.generator)


class ReplayBuffer:
    """The most recent interactions of every run, in a ring.

    Attributes:
        contexts: ``(n_runs, capacity, context_dim)``.
        actions: ``(n_runs, capacity)`` int64.
        rewards: ``(n_runs, capacity)`` float32, reward units divided by the scale.
        size: Interactions held per run (the same for all runs: they act in lockstep).
    """

    def __init__(self, n_runs: int, capacity: int, context_dim: int) -> None:
        """Allocate an empty buffer.

        Args:
            n_runs: Number of runs.
            capacity: Interactions kept per run.
            context_dim: Width of a context.
        """
        self.capacity = capacity
        self.contexts = torch.zeros(n_runs, capacity, context_dim)
        self.actions = torch.zeros(n_runs, capacity, dtype=torch.long)
        self.rewards = torch.zeros(n_runs, capacity)
        self.size, self._next = 0, 0

    def add(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        """Store one interaction per run, over the oldest when full.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)``.
        """
        i = self._next
        self.contexts[:, i] = contexts
        self.actions[:, i] = actions
        self.rewards[:, i] = rewards.float()
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, runs: torch.Tensor, batch_size: int, generator: torch.Generator):
        """Uniform minibatches with replacement, one per network.

        Args:
            runs: The run each network learns from, ``(K,)``.
            batch_size: Interactions per minibatch B.
            generator: Randomness.

        Returns:
            ``(contexts (K, B, context_dim), actions (K, B), rewards (K, B))``.
        """
        idx = torch.randint(self.size, (len(runs), batch_size), generator=generator)
        rows = runs[:, None]
        return self.contexts[rows, idx], self.actions[rows, idx], self.rewards[rows, idx]


class _ForwardWithKL(nn.Module):
    """Makes a BayesMLP's ``forward_with_kl`` the ``forward`` that ``functional_call`` runs."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x, noise, lrt, with_kl):
        return self.model.forward_with_kl(x, noise, lrt=lrt, with_kl=with_kl)


class NeuralGroup(AgentGroup):
    """Agents with a neural reward model: BBB, MC dropout, ensemble, greedy and ε-greedy.

    Attributes:
        nets_per_run: ``members`` for the ensemble, else 1.
        net_run: The run of each of the ``K`` stacked networks, ``(K,)``.
        params: The stacked parameters, name → ``(K, ...)`` leaf tensors.
        buffer: The runs' recent interactions.
    """

    KINDS = {"bbb": "bbb", "dropout": "dropout", "ensemble": "mlp", "sgld": "mlp", "mlp": "mlp"}

    def __init__(self, specs, n_seeds, env, settings, seed) -> None:
        """Build the stacked networks, the optimiser and the buffer.

        Args:
            specs: The agents, all of one neural family.
            n_seeds: Runs per agent.
            env: The environment.
            settings: Reward model and training settings.
            seed: Seed of the group's generator.
        """
        super().__init__(specs, n_seeds, env, settings, seed)
        self.family = specs[0].family
        self.nets_per_run = settings.members if self.family == "ensemble" else 1
        self.net_run = torch.arange(self.n_runs).repeat_interleave(self.nets_per_run)
        k = len(self.net_run)
        config = ModelConfig(
            kind=self.KINDS[self.family],
            hidden=settings.hidden,
            in_features=self.context_dim + self.n_actions,
            num_classes=1,
            prior={"kind": "gaussian", "sigma": settings.prior_sigma},
            init_sigma=settings.init_sigma,
            dropout=settings.dropout,
        )
        with torch.device("meta"):  # a stateless template: no memory, no global randomness
            self.template = build_model(config)
        self.prior = prior_from_dict(config.prior)
        self._wrapper = _ForwardWithKL(self.template)
        self.sizes = config.sizes
        self.params = self._init_params(k)
        if self.family == "sgld":  # ε = 2·lr/N; N (the buffer's size) is set at each update
            self.optimizer = SGLD(
                self.params.values(),
                lr=settings.sgld_lr,
                num_data=1,
                prior=self.prior,
                batch_sum=settings.batch_size,
                generator=self.generator,
            )
        else:
            self.optimizer = torch.optim.Adam(self.params.values(), lr=settings.lr, fused=True)
        self.epsilon = torch.tensor(
            [spec.epsilon for spec in self.specs for _ in range(n_seeds)], dtype=torch.float64
        )
        self.buffer = ReplayBuffer(self.n_runs, settings.buffer_size, self.context_dim)
        self._eye = torch.eye(self.n_actions)

    def _init_params(self, k: int) -> dict[str, torch.Tensor]:
        """K independent draws of the template's initialisation, from the group's generator.

        Means, weights and biases are uniform in ±1/√fan_in (as ``nn.Linear`` and
        ``BayesLinear`` initialise them); BBB's ρ is constant, σ = ``init_sigma``.
        """
        params = {}
        for name, p in self.template.named_parameters():
            layer = int(name.split(".")[1])
            if name.endswith("_rho"):
                value = torch.full((k, *p.shape), inverse_softplus(self.settings.init_sigma))
            else:
                bound = 1.0 / math.sqrt(self.sizes[layer])
                value = (torch.rand(k, *p.shape, generator=self.generator) * 2 - 1) * bound
            params[name] = value.requires_grad_(True)
        return params

    # --- forward passes ---------------------------------------------------------------------

    def _bbb_forward(self, params, x, noise, lrt: bool, with_kl: bool):
        """Stacked BayesMLP passes: ``x (K, n, in)`` → outputs ``(K, n)`` and KL ``(K,)``."""
        prefixed = {f"model.{name}": p for name, p in params.items()}

        def one(p, xk, nk):
            out, kl = functional_call(self._wrapper, p, (xk, nk, lrt, with_kl))
            return (out, kl) if with_kl else out

        if with_kl:
            out, kl = vmap(one)(prefixed, x, noise)
            return out.squeeze(-1), kl
        return vmap(one)(prefixed, x, noise).squeeze(-1), None

    def _mlp_forward(self, params, x, masks=None) -> torch.Tensor:
        """Stacked MLP passes ``x (K, n, in)`` → ``(K, n)``, with dropout ``masks`` if given."""
        h, n_layers = x, len(self.sizes) - 1
        for i in range(n_layers):
            w, b = params[f"layers.{i}.weight"], params[f"layers.{i}.bias"]
            h = torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
            if i < n_layers - 1:
                h = F.relu(h)
                if masks is not None:
                    h = h * masks[i]
        return h.squeeze(-1)

    def _weight_noise(self, lead: tuple[int, ...], generator: torch.Generator, lrt_rows=None):
        """Standard-normal noise per layer for ``BayesLinear``.

        Weights and biases (``lead`` dims first), or with ``lrt_rows`` the pre-activation
        noise ``(*lead, lrt_rows, out)`` of local reparameterisation (plus weight noise for
        the Monte-Carlo complexity cost of a prior without a closed-form KL).
        """
        noise = []
        for fan_in, fan_out in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            if lrt_rows is not None:
                layer = {"out": torch.randn(*lead, lrt_rows, fan_out, generator=generator)}
                if self.prior.analytic_kl:
                    noise.append(layer)
                    continue
            else:
                layer = {}
            layer["weight"] = torch.randn(*lead, fan_out, fan_in, generator=generator)
            layer["bias"] = torch.randn(*lead, fan_out, generator=generator)
            noise.append(layer)
        return noise

    def _dropout_masks(self, lead: tuple[int, ...], generator: torch.Generator):
        """Inverted-dropout masks ``(*lead, width)`` for every hidden layer."""
        keep = 1.0 - self.settings.dropout
        return [
            torch.bernoulli(torch.full((*lead, width), keep), generator=generator) / keep
            for width in self.sizes[1:-1]
        ]

    def _all_actions(self, contexts: torch.Tensor) -> torch.Tensor:
        """Inputs ``(..., A, in)``: every context joined with each one-hot action."""
        lead = contexts.shape[:-1]
        x = contexts.unsqueeze(-2).expand(*lead, self.n_actions, self.context_dim)
        return torch.cat([x, self._eye.expand(*lead, self.n_actions, self.n_actions)], -1)

    def _values(self, params, x, k: int, generator: torch.Generator) -> torch.Tensor:
        """One decision's values: ``x (k, n, in)`` → ``(k, n)``, one draw per network.

        The draw is a weight sample, a dropout mask shared by the ``n`` inputs, or the point
        estimate.
        """
        if self.family == "bbb":
            return self._bbb_forward(params, x, self._weight_noise((k,), generator), False, False)[
                0
            ]
        if self.family == "dropout":
            masks = [m.unsqueeze(1) for m in self._dropout_masks((k,), generator)]
            return self._mlp_forward(params, x, masks)
        return self._mlp_forward(params, x)

    # --- the agent interface ----------------------------------------------------------------

    @torch.no_grad()
    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Thompson draw (or greedy value) of every action, then the best; ε explores.

        Args:
            contexts: ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)``.
        """
        x = self._all_actions(contexts[self.net_run])  # (K, A, in)
        values = self._values(self.params, x, len(self.net_run), self.generator)  # (K, A)
        if self.nets_per_run > 1:  # one member per decision
            member = torch.randint(self.nets_per_run, (self.n_runs,), generator=self.generator)
            values = values.view(self.n_runs, self.nets_per_run, -1)[
                torch.arange(self.n_runs), member
            ]
        actions = values.argmax(-1)
        if self.family == "mlp" and bool((self.epsilon > 0).any()):
            explore = torch.rand(self.n_runs, generator=self.generator, dtype=torch.float64)
            uniform = torch.randint(self.n_actions, (self.n_runs,), generator=self.generator)
            actions = torch.where(explore < self.epsilon, uniform, actions)
        return actions

    def loss(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """The summed training loss of all networks on one minibatch each.

        Args:
            contexts: ``(K, B, context_dim)``.
            actions: ``(K, B)``.
            rewards: ``(K, B)`` divided by the reward scale.

        Returns:
            A scalar: BBB's minibatch ELBO terms, else half the squared error, summed.
        """
        x = torch.cat([contexts, F.one_hot(actions, self.n_actions).float()], -1)
        k, batch = actions.shape
        sigma = self.settings.noise_sigma
        if self.family == "bbb":
            noise = self._weight_noise((k,), self.generator, lrt_rows=batch)
            pred, kl = self._bbb_forward(self.params, x, noise, True, True)
            nll = ((pred - rewards) ** 2).sum() / (2 * sigma**2)
            # uniform KL weighting π = 1/M over the M = N/B minibatches of the buffer
            weight = self.settings.kl_beta * batch / self.buffer.size
            return nll + weight * kl.sum()
        masks = None
        if self.family == "dropout":
            masks = self._dropout_masks((k, batch), self.generator)
        pred = self._mlp_forward(self.params, x, masks)
        if self.family == "sgld":  # the likelihood of the posterior it samples
            return ((pred - rewards) ** 2).sum() / (2 * sigma**2)
        return 0.5 * ((pred - rewards) ** 2).sum()

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Store the interactions, then ``updates_per_step`` Adam steps on fresh minibatches.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)`` (reward units).
        """
        self.buffer.add(contexts, actions, rewards / self.reward_scale)
        if self.family == "sgld":  # the posterior of the N interactions in the buffer
            n = self.buffer.size
            self.optimizer.param_groups[0].update(num_data=n, lr=2 * self.settings.sgld_lr / n)
        for _ in range(self.settings.updates_per_step):
            batch = self.buffer.sample(self.net_run, self.settings.batch_size, self.generator)
            loss = self.loss(*batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()

    @torch.no_grad()
    def sample_rewards(self, run, contexts, n_samples, generator):
        """Sampled rewards of every action for one run's reward model.

        Args:
            run: Which run (agent-major index).
            contexts: ``(n_inputs, context_dim)``.
            n_samples: Number of draws; ensemble draws cycle through the members.
            generator: Randomness for the draws.

        Returns:
            ``(n_samples, n_inputs, n_actions)`` in reward units.
        """
        nets = torch.nonzero(self.net_run == run).squeeze(1)
        pick = nets[torch.arange(n_samples) % len(nets)]
        params = {name: p[pick] for name, p in self.params.items()}
        n_inputs = contexts.shape[0]
        x = self._all_actions(contexts).reshape(1, n_inputs * self.n_actions, -1)
        x = x.expand(n_samples, -1, -1)
        if self.family == "bbb":
            values = self._bbb_forward(
                params, x, self._weight_noise((n_samples,), generator), False, False
            )[0]
        elif self.family == "dropout":  # one mask per input, shared by its actions
            masks = [
                m.repeat_interleave(self.n_actions, 1)
                for m in self._dropout_masks((n_samples, n_inputs), generator)
            ]
            values = self._mlp_forward(params, x, masks)
        else:
            values = self._mlp_forward(params, x)
        return values.view(n_samples, n_inputs, self.n_actions) * self.reward_scale


class LinearGroup(AgentGroup):
    """Exact linear Thompson sampling: Bayesian linear regression per arm (float64).

    Features are the context and a constant 1. Sufficient statistics ``XᵀX``, ``Xᵀy``, ``yᵀy``
    and counts are kept per run and arm, over the whole history (no buffer).
    """

    family = "linear"

    def __init__(self, specs, n_seeds, env, settings, seed) -> None:
        """Start every arm at the prior.

        Args:
            specs: The linear agent.
            n_seeds: Runs per agent.
            env: The environment.
            settings: The prior's λ, a₀, b₀.
            seed: Seed of the group's generators.
        """
        super().__init__(specs, n_seeds, env, settings, seed)
        p = self.context_dim + 1
        shape = (self.n_runs, self.n_actions)
        self.xtx = torch.zeros(*shape, p, p, dtype=torch.float64)
        self.xty = torch.zeros(*shape, p, dtype=torch.float64)
        self.yty = torch.zeros(*shape, dtype=torch.float64)
        self.count = torch.zeros(*shape, dtype=torch.float64)
        self.rng = np.random.default_rng(seed)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """Design rows (context, 1).

        Args:
            contexts: ``(..., context_dim)``.

        Returns:
            ``(..., context_dim + 1)`` float64.
        """
        ones = torch.ones(*contexts.shape[:-1], 1, dtype=torch.float64)
        return torch.cat([contexts.double(), ones], -1)

    def posterior(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The exact normal-inverse-gamma posterior of every run and arm.

        Returns:
            ``(mean (R, A, p), precision (R, A, p, p), a (R, A), b (R, A))``: β | σ² ~
            N(mean, σ²·precision⁻¹) and σ² ~ IG(a, b), with precision = λI + XᵀX,
            mean = precision⁻¹·Xᵀy, a = a₀ + n/2 and b = b₀ + ½·(yᵀy − meanᵀ·precision·mean).
        """
        s = self.settings
        eye = torch.eye(self.xtx.shape[-1], dtype=torch.float64)
        precision = self.xtx + s.linear_lambda * eye
        mean = torch.linalg.solve(precision, self.xty)
        quad = (mean * (precision @ mean.unsqueeze(-1)).squeeze(-1)).sum(-1)
        a = s.linear_a0 + self.count / 2
        b = s.linear_b0 + 0.5 * (self.yty - quad).clamp_min(0.0)
        return mean, precision, a, b

    def draw(self, generator: torch.Generator, rng: np.random.Generator, n_samples: int = 1):
        """Posterior draws of every arm's coefficients.

        Args:
            generator: Randomness of the normal draws.
            rng: Randomness of the inverse-gamma draws.
            n_samples: Number of draws.

        Returns:
            β ``(n_samples, R, A, p)``.
        """
        mean, precision, a, b = self.posterior()
        chol = torch.linalg.cholesky(precision)
        gamma = torch.from_numpy(rng.gamma(a.numpy(), size=(n_samples, *a.shape)))
        sigma2 = b / gamma  # (S, R, A)
        z = torch.randn(n_samples, *mean.shape, 1, generator=generator, dtype=torch.float64)
        # precision = L Lᵀ, so L⁻ᵀ z has covariance precision⁻¹
        step = torch.linalg.solve_triangular(chol.mT.expand(n_samples, *chol.shape), z, upper=True)
        return mean + sigma2.sqrt().unsqueeze(-1) * step.squeeze(-1)

    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Draw every arm's coefficients, take the arm of highest sampled mean reward.

        Args:
            contexts: ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)``.
        """
        beta = self.draw(self.generator, self.rng)[0]  # (R, A, p)
        return (beta * self.features(contexts).unsqueeze(1)).sum(-1).argmax(-1)

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Add each run's interaction to its arm's statistics.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)`` (reward units).
        """
        x = self.features(contexts)
        runs, y = torch.arange(self.n_runs), rewards.double()
        self.xtx[runs, actions] += x.unsqueeze(-1) * x.unsqueeze(-2)
        self.xty[runs, actions] += x * y.unsqueeze(-1)
        self.yty[runs, actions] += y * y
        self.count[runs, actions] += 1

    @torch.no_grad()
    def sample_rewards(self, run, contexts, n_samples, generator):
        """Sampled mean rewards of every arm under posterior draws of one run.

        Args:
            run: Which run.
            contexts: ``(n_inputs, context_dim)``.
            n_samples: Number of posterior draws.
            generator: Randomness of the normal draws (the Gamma draws use a generator
                seeded from it).

        Returns:
            ``(n_samples, n_inputs, n_actions)`` in reward units.
        """
        rng = np.random.default_rng(int(torch.randint(2**31, (), generator=generator)))
        beta = self.draw(generator, rng, n_samples)[:, run]  # (S, A, p)
        return torch.einsum("sap,np->sna", beta, self.features(contexts))


GROUPS: dict[str, type[AgentGroup]] = {
    "bbb": NeuralGroup,
    "dropout": NeuralGroup,
    "ensemble": NeuralGroup,
    "sgld": NeuralGroup,
    "mlp": NeuralGroup,
    "random": RandomGroup,
    "linear": LinearGroup,
}
"""Family → the group class that runs it."""


def parse_agents(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Agent names from ``"bbb,greedy"`` or a list, validated, duplicates removed.

    Args:
        text: Comma-separated names or a sequence of names.

    Returns:
        The names, in the order given.

    Raises:
        ValueError: If a name is unknown or none is given.
    """
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else list(text)
    names = list(dict.fromkeys(n for n in names if n))
    unknown = [n for n in names if n not in AGENTS]
    if unknown:
        raise ValueError(f"unknown agent(s) {unknown}; choose from {', '.join(AGENTS)}")
    if not names:
        raise ValueError(f"no agent given; choose from {', '.join(AGENTS)}")
    return tuple(names)
