"""Bandit agents behind one interface, vectorised over runs (agents × seeds) that act in lockstep.

An :class:`AgentGroup` holds every run of the agents of one *family*: the agents whose reward
model is a network of one inference method (:mod:`core.methods`: BBB, MC dropout, the deep
ensemble, SGLD; the greedy and ε-greedy agents share the MLP's family, only their exploration
differs), the uniform random agent, and exact linear Thompson sampling. Runs are ordered
agent-major: run ``r`` is agent ``r // n_seeds`` on seed ``r % n_seeds``. Each step the runner
calls :meth:`AgentGroup.act` with every run's context and :meth:`AgentGroup.update` with the
chosen actions and realised rewards.

**Reward model** (Blundell et al. 2015, §5.3): context ⊕ one-hot action → two hidden layers of
100 ReLU units → reward, built by the method's own model class at these sizes
(:func:`core.methods.build_model`). :class:`NeuralGroup` knows no method: it stacks the runs'
parameters, calls the model's own passes vmapped over the runs, and steps with the method's
own :class:`~core.training.Procedure`. The runs' networks are independent: Adam and the
Langevin sampler are element-wise, so training the stack on the sum of the runs' losses is
training each network alone.

Every network is trained online from a buffer of its run's most recent ``buffer_size``
interactions with ``updates_per_step`` minibatch updates of ``batch_size`` per step (uniform
draws with replacement).

* **BBB Thompson**: one weight draw per decision, the action of highest sampled reward. Its
  loss per update is the minibatch ELBO ``Σ_b (r_b − f(x_b))²/(2σ²) + β·(B/N)·KL(q‖p)`` with N
  the number of interactions in the buffer (the KL weighting of one minibatch of an epoch over
  the buffer), computed with local reparameterisation.
* **MC-dropout Thompson**: one dropout mask per decision (Gal & Ghahramani 2016).
* **Ensemble Thompson**: ``members`` networks per run (trained on the same minibatches), one
  drawn uniformly per decision.
* **SGLD Thompson**: the reward network's weights follow Langevin dynamics
  (:mod:`core.methods.sgld`) on the buffer's posterior — BBB's likelihood σ and prior, N the
  interactions in the buffer — and each decision acts on the chain's current weights, one
  posterior sample (Welling & Teh 2011; as "SGLD" in Riquelme et al. 2018).
* **Greedy / ε-greedy**: the MLP's best action; with probability ε a uniformly random one.
* **Linear Thompson** (Riquelme et al. 2018): per arm, Bayesian linear regression of the
  reward on (context, 1) with a normal-inverse-gamma prior, β | σ² ~ N(0, σ²/λ·I),
  σ² ~ IG(a₀, b₀); each decision draws (σ², β) from the exact posterior of every arm.

Randomness comes from each group's own ``torch.Generator`` (and linear Thompson's Gamma draws
from its own NumPy generator); the models' draws use torch's generator inside
:func:`torch.random.fork_rng`, seeded from the group's (:func:`drawn_from`), so runs are
reproducible and the caller's random state is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from torch.utils._pytree import tree_map

from core.bandits.environments import Environment
from core.bandits.updates import StepUpdates
from core.engine.seeding import seeded
from core.methods import METHODS, ModelConfig, build_model, check_config, params_for
from core.methods import method as lab_method
from core.methods.base import MIXTURE_SIGMA2, prior_settings
from core.training import OPTIMIZERS, TrainConfig
from core.training.step import cuda_graphs_enabled


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the command line and the page.

    Attributes:
        name: Its short name (``bbb``, ``eps5`` ...).
        title: Human title.
        family: Who runs it: the method of its reward network (a key of
            :data:`core.methods.METHODS`, run by :class:`NeuralGroup`), or ``"random"`` or
            ``"linear"``.
        epsilon: Probability of a uniformly random action.
        training: The :class:`~core.training.TrainConfig` fields of its network's training,
            from the settings (the optimiser and its learning rate, or the sampler's).
    """

    name: str
    title: str
    family: str
    epsilon: float = 0.0
    training: Callable[[ModelSettings], dict] = field(
        default=lambda settings: {"lr": settings.lr, "optimizer": settings.optimizer},
        compare=False,
    )


AGENTS = {
    spec.name: spec
    for spec in (
        AgentSpec("bbb", "BBB Thompson", "bbb"),
        AgentSpec("dropout", "MC-dropout Thompson", "dropout"),
        AgentSpec("ensemble", "Ensemble Thompson", "ensemble"),
        AgentSpec("sgld", "SGLD Thompson", "sgld", training=lambda s: {"lr": s.sgld_lr}),
        AgentSpec("greedy", "Greedy MLP", "mlp"),
        AgentSpec("eps1", "ε-greedy MLP, ε = 1 %", "mlp", 0.01),
        AgentSpec("eps5", "ε-greedy MLP, ε = 5 %", "mlp", 0.05),
        AgentSpec("random", "Uniform random", "random"),
        AgentSpec("lints", "Linear Thompson (exact)", "linear"),
    )
}
"""Agent name → spec, in display order."""


DRAWN_FAMILIES = ("bbb", "dropout", "ensemble")
"""Families whose decision is a fresh posterior draw (weights, mask, member), which
:attr:`ModelSettings.thompson_draws` repeats; the others act on one network (the greedy MLP,
SGLD's current weights)."""

ENGINES = ("torch", "native")
"""Who trains the reward networks (:attr:`ModelSettings.engine`)."""
KL_DATA = ("buffer", "seen")
"""What N of the complexity cost's weight B/N counts (:attr:`ModelSettings.kl_data`)."""
KL_SCHEDULES = ("constant", "geometric")
"""How a step's updates share its complexity cost (:attr:`ModelSettings.kl_schedule`)."""


def kl_factors(n_updates: int, schedule: str) -> torch.Tensor:
    """Each of a step's updates' weight of the complexity cost, relative to β·B/N.

    ``"constant"``: 1 for every update, each minibatch of an epoch weighing the KL alike
    (Graves 2011). ``"geometric"``: U·π_i for update i = 1…U with π_i = 2^(U−i)/(2^U − 1), the
    re-weighting of Blundell et al. (2015, §3.4) — the first minibatches mostly the complexity
    cost, the last mostly the data — with a step's U updates read as the M minibatches of an
    epoch over the buffer. Either way the step weighs the complexity cost U·β·B/N in all.

    Args:
        n_updates: U, the updates of a step.
        schedule: One of :data:`KL_SCHEDULES`.

    Returns:
        ``(U,)`` float64, summing to U.
    """
    if schedule == "constant":
        return torch.ones(n_updates, dtype=torch.float64)
    i = torch.arange(1, n_updates + 1, dtype=torch.float64)
    return n_updates * torch.exp2(-i) / (1.0 - 2.0**-n_updates)


@dataclass(frozen=True)
class ModelSettings:
    """Reward models, their online training and the linear baseline's prior.

    Attributes:
        hidden: Hidden layer widths of every reward network.
        buffer_size: Interactions kept per run (the most recent ones).
        batch_size: Interactions per minibatch update.
        updates_per_step: Minibatch updates per bandit step.
        lr: The optimiser's learning rate.
        optimizer: How the reward networks follow their gradients: ``"adam"`` or ``"sgd"``
            (plain gradient steps, the update rule of Blundell et al. 2015, §3.2); one of
            :data:`~core.training.OPTIMIZERS`.
        noise_sigma: BBB's likelihood standard deviation σ, in the units the networks see
            (reward units divided by the reward scale).
        reward_scale: Rewards are divided by it before the reward networks see them, and the
            networks' outputs multiplied by it; None takes the environment's own
            ``reward_scale`` (5 for the mushroom, 10 for the wheel), 1 trains on the rewards
            as they are.
        standardise_rewards: The networks learn the rewards standardised, (r − m)/s with m
            and s the mean and standard deviation of the environment's reward under uniformly
            random actions (its closed-form :meth:`reward_moments`: m = −2.32, s = 12.3 for the
            mushroom), and their outputs are mapped back by s·f + m; ``noise_sigma`` is then in
            units of s, so ``noise_sigma=1`` is a likelihood as wide as the rewards' spread.
            Needs ``reward_scale=None``; False (the default) divides by ``reward_scale`` only.
        thompson_draws: Posterior draws a Thompson decision averages: each network's sampled
            rewards of every action are averaged over this many independent draws (weights,
            dropout masks, members) and the action of the highest average is taken. 1 (the
            default) is Thompson sampling; a point estimate (the greedy networks, SGLD's
            current weights) ignores it.
        prior: BBB's weight prior: ``"gaussian"`` N(0, prior_sigma²) or ``"mixture"``, the
            scale mixture prior_pi·N(0, prior_sigma1²) + (1 − prior_pi)·N(0, prior_sigma2²)
            of Blundell et al. (2015).
        prior_sigma: Standard deviation of the Gaussian prior.
        prior_pi: Weight of the mixture's wide component.
        prior_sigma1: Standard deviation of the mixture's wide component.
        prior_sigma2: Standard deviation of the mixture's narrow component.
        init_sigma: BBB's initial posterior standard deviation of every weight.
        kl_beta: Multiplies BBB's complexity cost (1 = the ELBO).
        kl_data: N of the complexity cost's weight B/N in a minibatch's loss: ``"buffer"``,
            the interactions in the buffer (an epoch of minibatches over it weighs the KL
            once), or ``"seen"``, every interaction of the run so far (the buffer read as a
            sample of them, so the weight keeps falling once the buffer is full).
        kl_schedule: How a step's updates share its complexity cost: ``"constant"`` (β·B/N
            in each) or ``"geometric"`` (Blundell et al.'s §3.4 re-weighting over the step's
            updates, :func:`kl_factors`).
        lrt: BBB's training passes use local reparameterisation (Kingma et al. 2015); False
            draws one weight sample per minibatch, as Blundell et al. (2015) do.
        engine: Who trains the MLP and BBB reward networks: ``"torch"`` (the methods' own
            PyTorch models and procedures) or ``"native"`` (the compiled kernel of
            :mod:`core.bandits.kernel.tiny`: the same estimator and optimisers, two hidden layers,
            weight sampling only; the other families stay on PyTorch).
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
    optimizer: str = "adam"
    noise_sigma: float = 1.0
    reward_scale: float | None = None
    standardise_rewards: bool = False
    thompson_draws: int = 1
    prior: str = "gaussian"
    prior_sigma: float = 1.0
    prior_pi: float = 0.5
    prior_sigma1: float = 1.0
    prior_sigma2: float = MIXTURE_SIGMA2
    init_sigma: float = 0.02
    kl_beta: float = 1.0
    kl_data: str = "buffer"
    kl_schedule: str = "constant"
    lrt: bool = True
    engine: str = "torch"
    dropout: float = 0.2
    members: int = 5
    sgld_lr: float = 0.01
    linear_lambda: float = 0.25
    linear_a0: float = 6.0
    linear_b0: float = 6.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        sizes = (
            self.buffer_size,
            self.batch_size,
            self.updates_per_step,
            self.members,
            self.thompson_draws,
        )
        if min(sizes) < 1 or not self.hidden or min(self.hidden) < 1:
            raise ValueError(
                "buffer, batch, updates, members, Thompson draws and hidden widths must be ≥ 1"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        positive = (self.lr, self.sgld_lr, self.noise_sigma, self.prior_sigma, self.init_sigma)
        if min(positive) <= 0 or self.kl_beta < 0:
            raise ValueError(
                "lr, sgld_lr, noise_sigma, prior_sigma, init_sigma must be > 0, kl_beta ≥ 0"
            )
        if self.reward_scale is not None and self.reward_scale <= 0:
            raise ValueError(f"reward_scale must be > 0 or None, got {self.reward_scale}")
        if self.standardise_rewards and self.reward_scale is not None:
            raise ValueError("standardised rewards set their own scale: leave reward_scale None")
        if min(self.linear_lambda, self.linear_a0, self.linear_b0) <= 0:
            raise ValueError("linear_lambda, linear_a0 and linear_b0 must be > 0")
        if self.prior not in ("gaussian", "mixture"):
            raise ValueError(f"prior must be 'gaussian' or 'mixture', got {self.prior!r}")
        if not 0.0 < self.prior_pi < 1.0 or not 0.0 < self.prior_sigma2 < self.prior_sigma1:
            raise ValueError("need 0 < prior_pi < 1 and 0 < prior_sigma2 < prior_sigma1")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.kl_data not in KL_DATA:
            raise ValueError(f"kl_data must be one of {KL_DATA}, got {self.kl_data!r}")
        if self.kl_schedule not in KL_SCHEDULES:
            raise ValueError(f"kl_schedule must be one of {KL_SCHEDULES}, got {self.kl_schedule!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.engine == "native" and (self.lrt or len(self.hidden) != 2):
            raise ValueError(
                "the native engine trains two hidden layers by weight sampling: "
                "set lrt=False and two hidden widths"
            )

    @property
    def prior_config(self) -> dict:
        """The weight prior as :class:`~core.engine.interface.ModelConfig` takes it."""
        if self.prior == "gaussian":
            return {"kind": "gaussian", "sigma": self.prior_sigma}
        return {
            "kind": "mixture",
            "pi": self.prior_pi,
            "sigma1": self.prior_sigma1,
            "sigma2": self.prior_sigma2,
        }

    @property
    def method_params(self) -> dict:
        """The reward networks' parameters by name; each method takes those it has."""
        return prior_settings(self.prior_config) | {
            "init_sigma": self.init_sigma,
            "impl": "vmap_lrt" if self.lrt else "vmap",
            "dropout": self.dropout,
            "members": self.members,
        }

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


@contextmanager
def drawn_from(generator: torch.Generator, cuda: bool = False) -> Iterator[None]:
    """Fork torch's generator (the caller's state is restored) and seed it from ``generator``.

    Args:
        generator: The group's (or a snapshot's) own randomness.
        cuda: Fork and seed the CUDA generators too (networks on a GPU draw from them).
    """
    with seeded(int(torch.randint(2**62, (), generator=generator)), cuda=cuda):
        yield


class AgentGroup:
    """The runs of one family's agents, vectorised; subclasses implement the family.

    Attributes:
        specs: The agents of the group.
        n_seeds: Runs per agent.
        n_runs: ``len(specs) · n_seeds``.
        n_actions: Actions A of the environment.
        seed_index: Seed of each run, ``(n_runs,)``.
        generator: The group's own source of randomness.
        reward_scale: What the networks' targets are divided by (reward units per unit).
        reward_shift: What is subtracted from a reward before the division (0 unless the
            rewards are standardised).
    """

    family = ""

    def __init__(
        self,
        specs: list[AgentSpec],
        n_seeds: int,
        env: Environment,
        settings: ModelSettings,
        seed: int,
        device: torch.device | str = "cpu",
        compile: bool = False,
    ) -> None:
        """Set up the group's runs.

        Args:
            specs: The agents, all of this group's family.
            n_seeds: Runs per agent.
            env: The environment (its sizes and reward scale, unless ``settings`` sets one,
                or its reward moments for standardised rewards).
            settings: Reward model and training settings.
            seed: Seed of the group's generator.
            device: Where the reward networks compute (the random and linear agents always
                compute on the CPU). The group's own generator stays on the CPU.
            compile: For a group of networks, compile their training loss with
                :func:`torch.compile` (fewer, fused kernels; the first steps take longer).
        """
        self.specs, self.n_seeds = list(specs), n_seeds
        self.n_runs = len(self.specs) * n_seeds
        self.n_actions, self.context_dim = env.n_actions, env.context_dim
        scale = env.reward_scale if settings.reward_scale is None else settings.reward_scale
        self.reward_shift = 0.0
        if settings.standardise_rewards:
            self.reward_shift, scale = env.reward_moments()
        self.reward_scale = float(scale)
        self.settings = settings
        self.seed_index = torch.arange(self.n_runs) % n_seeds
        self.generator = torch.Generator().manual_seed(seed)
        self.device = torch.device(device)

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

    def state_dict(self) -> dict:
        """What continues the runs elsewhere (the group's generator; subclasses add theirs).

        Returns:
            Tensors and plain values (for ``torch.save`` and a ``weights_only`` load).
        """
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict` of a group built with the same settings.

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.generator.set_state(state["generator"])

    def targets(self, rewards: torch.Tensor) -> torch.Tensor:
        """What the reward networks learn for rewards: ``(r − reward_shift)/reward_scale``.

        Args:
            rewards: Realised rewards (reward units).

        Returns:
            The targets, shaped like ``rewards``.
        """
        return (rewards - self.reward_shift) / self.reward_scale

    @property
    def thompson_draws(self) -> int:
        """Posterior draws a decision averages.

        :attr:`ModelSettings.thompson_draws`, or 1 for a family that acts on one network.
        """
        return self.settings.thompson_draws if self.family in DRAWN_FAMILIES else 1

    def weight_sigma(self) -> torch.Tensor | None:
        """Each run's mean posterior standard deviation of its weights.

        Returns:
            ``(n_runs,)``, or None for agents without a weight posterior.
        """
        return None

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
        seen: Interactions added per run since the buffer was made (``size`` until it is full).
    """

    def __init__(
        self, n_runs: int, capacity: int, context_dim: int, device: torch.device | str = "cpu"
    ) -> None:
        """Allocate an empty buffer.

        Args:
            n_runs: Number of runs.
            capacity: Interactions kept per run.
            context_dim: Width of a context.
            device: Where the interactions are kept (the networks' device).
        """
        self.capacity = capacity
        self.contexts = torch.zeros(n_runs, capacity, context_dim, device=device)
        self.actions = torch.zeros(n_runs, capacity, dtype=torch.long, device=device)
        self.rewards = torch.zeros(n_runs, capacity, device=device)
        self.size, self._next, self.seen = 0, 0, 0

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
        self.seen += 1

    @property
    def next_slot(self) -> int:
        """Where :meth:`add` writes the next interaction."""
        return self._next

    def state_dict(self) -> dict:
        """The interactions held and where the next one goes.

        Returns:
            Tensors and ints.
        """
        return {
            "contexts": self.contexts,
            "actions": self.actions,
            "rewards": self.rewards,
            "size": self.size,
            "next": self._next,
            "seen": self.seen,
        }

    def load_state_dict(self, state: dict) -> None:
        """Hold what :meth:`state_dict` of a buffer of the same sizes returned.

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.contexts.copy_(state["contexts"])
        self.actions.copy_(state["actions"])
        self.rewards.copy_(state["rewards"])
        self.size, self._next = state["size"], state["next"]
        self.seen = state.get("seen", self.size)  # states saved before it was kept

    def gather(self, idx: torch.Tensor):
        """The interactions at positions ``idx`` of every run's ring.

        Args:
            idx: Positions ``(K, B)`` in ``[0, size)``, row k from run k (on the buffer's
                device).

        Returns:
            ``(contexts (K, B, context_dim), actions (K, B), rewards (K, B))``.
        """
        rows = torch.arange(idx.shape[0], device=idx.device)[:, None]
        return self.contexts[rows, idx], self.actions[rows, idx], self.rewards[rows, idx]


class _Call(nn.Module):
    """Makes one method of a model the ``forward`` that ``functional_call`` runs."""

    def __init__(self, model: nn.Module, name: str) -> None:
        super().__init__()
        self.model, self.name = model, name

    def forward(self, *args):
        return getattr(self.model, self.name)(*args)


class _Stacked(nn.Module):
    """The K networks' stacked parameters as one module, for the method's optimiser.

    Attributes:
        config: The networks' configuration (the procedure reads its prior).
        names: The model's parameter names; ``stacked[i]`` is ``names[i]``, ``(K, ...)``.
    """

    def __init__(self, config: ModelConfig, params: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.config = config
        self.names = list(params)
        self.stacked = nn.ParameterList(nn.Parameter(p) for p in params.values())

    def named_stack(self) -> dict[str, torch.Tensor]:
        """The parameters by the model's own names, each ``(K, ...)``."""
        return dict(zip(self.names, self.stacked, strict=True))


class NeuralGroup(AgentGroup):
    """Agents whose reward model is a network of one method (:mod:`core.methods`).

    The method's model is built at the bandit's sizes (context ⊕ one-hot action → hidden
    widths → 1) once per run; the runs' parameters are stacked and every call is the model's
    own, vmapped over the runs: :meth:`~core.engine.interface.MonteCarloModule.training_passes`
    in training and :meth:`~core.engine.interface.MonteCarloModule.sample_function` (one
    posterior draw for all actions) for a decision. The steps are the method's
    :class:`~core.training.Procedure` (Adam, or the Langevin sampler with N the interactions
    in the buffer). The models draw their randomness from torch's generator inside
    :func:`torch.random.fork_rng`, seeded from the group's own generator, so the caller's
    random state is unchanged.

    Attributes:
        config: The networks' :class:`~core.engine.interface.ModelConfig`.
        net: The stacked parameters (``params``: name → ``(n_runs, ...)`` leaves).
        buffer: The runs' recent interactions.
    """

    def __init__(self, specs, n_seeds, env, settings, seed, device="cpu", compile=False) -> None:
        """Build the runs' networks, the method's procedure and the buffer.

        Args:
            specs: The agents, all of one method's family.
            n_seeds: Runs per agent.
            env: The environment.
            settings: Reward model and training settings.
            seed: Seed of the group's generator.
            device: Where the networks and the buffer live; on CUDA a step's updates are
                replayed from a CUDA graph (:mod:`core.bandits.updates`) when the method's
                procedure allows it, and the group works on its own stream.
            compile: Compile the training loss (:func:`torch.compile`).
        """
        super().__init__(specs, n_seeds, env, settings, seed, device, compile)
        self.family = specs[0].family
        self.config = check_config(
            ModelConfig(
                kind=self.family,
                hidden=settings.hidden,
                in_features=self.context_dim + self.n_actions,
                num_classes=1,
                params=params_for(self.family, settings.method_params),
            )
        )
        seeds = torch.randint(2**31, (self.n_runs,), generator=self.generator).tolist()
        params, _ = stack_module_state([build_model(self.config, seed=s) for s in seeds])
        params = {name: p.to(self.device) for name, p in params.items()}
        with torch.device("meta"):  # a stateless template: no memory, no global randomness
            template = build_model(self.config)
        self._training = _Call(template, "training_passes")
        self._draw = _Call(template, "sample_function")
        self.net = _Stacked(self.config, params)
        self.epsilon = torch.tensor(
            [spec.epsilon for spec in self.specs for _ in range(n_seeds)], dtype=torch.float64
        )
        self.buffer = ReplayBuffer(
            self.n_runs, settings.buffer_size, self.context_dim, device=self.device
        )
        self._eye = torch.eye(self.n_actions, device=self.device)
        self._n_data = torch.ones((), device=self.device)  # N of the KL weight: :attr:`kl_n`
        factors = kl_factors(settings.updates_per_step, settings.kl_schedule)
        self._kl_factors = factors.to(self.device, torch.float32)  # update u's share of it
        cuda = self.device.type == "cuda"
        self.stream = torch.cuda.Stream(self.device) if cuda else None
        self._setup_training(TrainConfig(batch_size=settings.batch_size, **self.training), compile)

    @property
    def training(self) -> dict:
        """The :class:`~core.training.TrainConfig` fields of the networks' training."""
        return self.specs[0].training(self.settings)

    def _setup_training(self, train_config: TrainConfig, compile: bool) -> None:
        """The method's procedure and optimiser, and the step's updates (eager or graphed)."""
        self.procedure = lab_method(self.family).procedure(train_config, 1, 0, self.config.params)
        self.procedure.optimizer(self.procedure.network(self.net))
        self._loss = torch.compile(self.loss, dynamic=False) if compile else self.loss
        self.updates = StepUpdates(
            self._update,
            self.procedure.zero_grad,
            graphs=self.procedure.graphable and cuda_graphs_enabled(self.device),
        )

    def _on_device(self) -> AbstractContextManager:
        """The group's own CUDA stream (so that its work overlaps other groups'), or nothing."""
        return nullcontext() if self.stream is None else torch.cuda.stream(self.stream)

    @property
    def kl_n(self) -> int:
        """N of the complexity cost's weight B/N (:attr:`ModelSettings.kl_data`)."""
        return self.buffer.seen if self.settings.kl_data == "seen" else self.buffer.size

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """The runs' parameters by the model's names, each ``(n_runs, ...)``."""
        return self.net.named_stack()

    @staticmethod
    def _call(call: _Call, params: dict, x: torch.Tensor, *args):
        """``call`` of every stacked network on its own inputs ``x (K, ...)``."""
        prefixed = {f"model.{name}": p for name, p in params.items()}

        def one(p, xk):
            return functional_call(call, p, (xk, *args))

        return vmap(one, randomness="different")(prefixed, x)

    def _all_actions(self, contexts: torch.Tensor) -> torch.Tensor:
        """Inputs ``(..., A, in)``: every context joined with each one-hot action."""
        lead = contexts.shape[:-1]
        x = contexts.unsqueeze(-2).expand(*lead, self.n_actions, self.context_dim)
        return torch.cat([x, self._eye.expand(*lead, self.n_actions, self.n_actions)], -1)

    def _values(self, params: dict, x: torch.Tensor, generator: torch.Generator):
        """One posterior draw per network: ``x (K, n, in)`` → sampled rewards ``(K, n)``."""
        with drawn_from(generator, cuda=self.device.type == "cuda"):
            return self._call(self._draw, params, x)[..., 0]

    # --- the agent interface ----------------------------------------------------------------

    @torch.no_grad()
    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """Thompson draw (or greedy value) of every action, then the best; ε explores.

        A Thompson decision averages ``thompson_draws`` draws (each seeded from the group's
        generator in turn) before the best is taken.

        Args:
            contexts: ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)``.
        """
        with self._on_device():
            x = self._all_actions(contexts.to(self.device))
            draws = self.thompson_draws
            values = sum(self._values(self.params, x, self.generator) for _ in range(draws))
            actions = (values / draws).argmax(-1).cpu()
        return self._explore(actions)

    def _explore(self, actions: torch.Tensor) -> torch.Tensor:
        """The ε-greedy runs' actions: each replaced by a uniform one with probability ε."""
        if bool((self.epsilon > 0).any()):
            explore = torch.rand(self.n_runs, generator=self.generator, dtype=torch.float64)
            uniform = torch.randint(self.n_actions, (self.n_runs,), generator=self.generator)
            actions = torch.where(explore < self.epsilon, uniform, actions)
        return actions

    def loss(
        self,
        contexts: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        kl_factor: torch.Tensor | float = 1.0,
    ):
        """The summed training loss of all networks on one minibatch each.

        The minibatch ELBO ``Σ_b (r_b − f(x_b))²/(2σ²) + c·β·(B/N)·KL(q‖p)`` averaged over the
        model's training passes (an ensemble's members), N the interactions in the buffer
        (the KL weighting of one minibatch of an epoch over the buffer; or every interaction
        seen, :attr:`ModelSettings.kl_data`; read from a device scalar so that a CUDA graph
        sees it change); without a weight posterior the KL is 0
        and the loss is the summed squared error.

        Args:
            contexts: ``(K, B, context_dim)``.
            actions: ``(K, B)``.
            rewards: ``(K, B)`` divided by the reward scale.
            kl_factor: c, the update's share of the step's complexity cost (:func:`kl_factors`).

        Returns:
            A scalar.
        """
        x = torch.cat([contexts, F.one_hot(actions, self.n_actions).float()], -1)
        out, kl = self._call(self._training, self.params, x, 1)  # (K, P, B, 1), (K, P)
        sigma = self.settings.noise_sigma
        nll = ((out[..., 0] - rewards[:, None]) ** 2).sum(-1) / (2 * sigma**2)
        weight = kl_factor * self.settings.kl_beta * actions.shape[1] / self._n_data
        return (nll + weight * kl).mean(-1).sum()

    def _update(self, u: int, positions: torch.Tensor) -> None:
        """Update u of a step: one optimiser step of every network on its minibatch.

        Args:
            u: The update's index in the step (its share of the complexity cost).
            positions: ``(K, B)`` positions in the replay buffer.
        """
        self._loss(*self.buffer.gather(positions), self._kl_factors[u]).backward()
        self.procedure.step()

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Store the interactions, then ``updates_per_step`` steps on fresh minibatches.

        The minibatches' positions (uniform with replacement) and one seed of the networks'
        noise for the whole step come from the group's generator.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)`` (reward units).
        """
        s = self.settings
        shape = (s.updates_per_step, self.n_runs, s.batch_size)
        with self._on_device():
            self.buffer.add(
                contexts.to(self.device),
                actions.to(self.device),
                self.targets(rewards).to(self.device),
            )
            self.procedure.resize(self.buffer.size)
            self._n_data.fill_(self.kl_n)
            positions = torch.randint(self.buffer.size, shape, generator=self.generator)
            with drawn_from(self.generator, cuda=self.device.type == "cuda"):
                self.updates(positions.to(self.device))

    def state_dict(self) -> dict:
        """The generator, the networks, the procedure's optimiser state and the buffer.

        Returns:
            Tensors (on the CPU, wherever the networks are) and plain values.
        """
        if self.stream is not None:
            self.stream.synchronize()
        state = {
            "net": self.net.state_dict(),
            "procedure": self.procedure.state_dict(),
            "buffer": self.buffer.state_dict(),
        }
        return super().state_dict() | tree_map(
            lambda v: v.cpu() if isinstance(v, torch.Tensor) else v, state
        )

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict` (parameters copied in place: the optimiser keeps them).

        Args:
            state: What :meth:`state_dict` returned.
        """
        super().load_state_dict(state)
        with self._on_device():
            self.net.load_state_dict(state["net"])
            self.procedure.load_state_dict(state["procedure"])
            for optimizer in self.procedure.optimizers:  # a capturable Adam's rate is a tensor
                for group in optimizer.param_groups:
                    if isinstance(group["lr"], torch.Tensor):
                        group["lr"] = group["lr"].to(self.device)
            self.buffer.load_state_dict(state["buffer"])
            self._n_data.fill_(self.kl_n)

    @torch.no_grad()
    def weight_sigma(self) -> torch.Tensor | None:
        """Each run's mean posterior standard deviation of its weights, softplus(ρ).

        Returns:
            ``(n_runs,)`` float64, the mean over every layer's weight matrix (not the biases),
            or None for a network without a weight posterior.
        """
        rhos = [p for name, p in self.params.items() if name.endswith("weight_rho")]
        if not rhos:
            return None
        with self._on_device():
            total = sum(F.softplus(r.double()).flatten(1).sum(1) for r in rhos)
            count = sum(r[0].numel() for r in rhos)
            return (total / count).cpu()

    @torch.no_grad()
    def sample_rewards(self, run, contexts, n_samples, generator):
        """Sampled rewards of every action for one run's reward model.

        Args:
            run: Which run (agent-major index).
            contexts: ``(n_inputs, context_dim)``.
            n_samples: Number of posterior draws.
            generator: Randomness for the draws.

        Returns:
            ``(n_samples, n_inputs, n_actions)`` in reward units.
        """
        params = {name: p[run].expand(n_samples, *p.shape[1:]) for name, p in self.params.items()}
        n_inputs = contexts.shape[0]
        with self._on_device():
            x = self._all_actions(contexts.to(self.device))
            x = x.reshape(1, n_inputs * self.n_actions, -1).expand(n_samples, -1, -1)
            values = self._values(params, x, generator).cpu()
        values = values.view(n_samples, n_inputs, self.n_actions)
        return values * self.reward_scale + self.reward_shift


class LinearGroup(AgentGroup):
    """Exact linear Thompson sampling: Bayesian linear regression per arm (float64).

    Features are the context and a constant 1. Sufficient statistics ``XᵀX``, ``Xᵀy``, ``yᵀy``
    and counts are kept per run and arm, over the whole history (no buffer).
    """

    family = "linear"

    def __init__(self, specs, n_seeds, env, settings, seed, device="cpu", compile=False) -> None:
        """Start every arm at the prior.

        Args:
            specs: The linear agent.
            n_seeds: Runs per agent.
            env: The environment.
            settings: The prior's λ, a₀, b₀.
            seed: Seed of the group's generators.
            device: Ignored: exact linear Thompson sampling computes on the CPU in float64.
            compile: Ignored (no network).
        """
        super().__init__(specs, n_seeds, env, settings, seed)
        p = self.context_dim + 1
        shape = (self.n_runs, self.n_actions)
        self.xtx = torch.zeros(*shape, p, p, dtype=torch.float64)
        self.xty = torch.zeros(*shape, p, dtype=torch.float64)
        self.yty = torch.zeros(*shape, dtype=torch.float64)
        self.count = torch.zeros(*shape, dtype=torch.float64)
        self.rng = np.random.default_rng(seed)

    def state_dict(self) -> dict:
        """The generators and every arm's sufficient statistics.

        Returns:
            Tensors and plain values (the NumPy generator's state is a dict of ints).
        """
        return super().state_dict() | {
            "xtx": self.xtx,
            "xty": self.xty,
            "yty": self.yty,
            "count": self.count,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`.

        Args:
            state: What :meth:`state_dict` returned.
        """
        super().load_state_dict(state)
        for name in ("xtx", "xty", "yty", "count"):
            getattr(self, name).copy_(state[name])
        self.rng.bit_generator.state = state["rng"]

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
    **dict.fromkeys(METHODS, NeuralGroup),
    "random": RandomGroup,
    "linear": LinearGroup,
}
"""Family → the group class that runs it (every method's network is a :class:`NeuralGroup`)."""

FAMILIES = tuple(dict.fromkeys(spec.family for spec in AGENTS.values()))
"""The families of :data:`AGENTS`, in the order their groups run."""


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
