"""Agents whose reward model is a network of one inference method: :class:`NeuralGroup`.

**Reward model** (Blundell et al. 2015, §5.3): context ⊕ one-hot action → two hidden layers of
100 ReLU units → reward, built by the method's own model class at these sizes
(:func:`core.methods.build_model`) with the bandit's parameters of it
(:attr:`~core.bandits.settings.ModelSettings.params`). :class:`NeuralGroup` knows no method: it
stacks the runs' parameters, calls the model's own passes vmapped over the runs, and steps with
the method's own :class:`~core.training.Procedure`. The runs' networks are independent: Adam and
the Langevin sampler are element-wise, so training the stack on the sum of the runs' losses is
training each network alone.

Every network is trained online from a buffer of its run's most recent ``buffer_size``
interactions with ``updates_per_step`` minibatch updates of ``batch_size`` per step (uniform
draws with replacement). Its loss per update is the minibatch ELBO
``Σ_b (r_b − f(x_b))²/(2σ²) + β·(B/N)·KL(q‖p)`` with N the number of interactions in the buffer
(the KL weighting of one minibatch of an epoch over the buffer), β and the KL's schedule over a
step's updates the method's own ``beta`` and ``kl_schedule`` (a network without a weight
posterior has no KL: its loss is the summed squared error).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from torch.utils._pytree import tree_map

from core.bandits.buffer import ReplayBuffer
from core.bandits.groups import AgentGroup, drawn_from
from core.bandits.updates import StepUpdates
from core.engine.objective import KL_SCHEDULES
from core.methods import ModelConfig, build_model, check_config
from core.methods import method as lab_method
from core.training import TrainConfig
from core.training.step import cuda_graphs_enabled


def kl_factors(n_updates: int, schedule: str) -> torch.Tensor:
    """Each of a step's updates' weight of the complexity cost, relative to β·B/N.

    ``"uniform"``: 1 for every update, each minibatch of an epoch weighing the KL alike
    (Graves 2011). ``"blundell"``: U·π_i for update i = 1…U with π_i = 2^(U−i)/(2^U − 1), the
    re-weighting of Blundell et al. (2015, §3.4) — the first minibatches mostly the complexity
    cost, the last mostly the data — with a step's U updates read as the M minibatches of an
    epoch over the buffer. Either way the step weighs the complexity cost U·β·B/N in all.

    Args:
        n_updates: U, the updates of a step.
        schedule: One of :data:`~core.engine.objective.KL_SCHEDULES` (BBB's ``kl_schedule``).

    Returns:
        ``(U,)`` float64, summing to U.

    Raises:
        ValueError: For another schedule.
    """
    if schedule not in KL_SCHEDULES:
        raise ValueError(f"KL schedule must be one of {KL_SCHEDULES}, got {schedule!r}")
    if schedule == "uniform":
        return torch.ones(n_updates, dtype=torch.float64)
    i = torch.arange(1, n_updates + 1, dtype=torch.float64)
    return n_updates * torch.exp2(-i) / (1.0 - 2.0**-n_updates)


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
                params=settings.network_params(self.family),
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
        factors = kl_factors(settings.updates_per_step, self.kl_schedule)
        self._kl_factors = factors.to(self.device, torch.float32)  # update u's share of it
        cuda = self.device.type == "cuda"
        self.stream = torch.cuda.Stream(self.device) if cuda else None
        self._setup_training(TrainConfig(batch_size=settings.batch_size, **self.training), compile)

    @property
    def training(self) -> dict:
        """The :class:`~core.training.TrainConfig` fields of the networks' training."""
        return self.settings.training(self.family)

    @property
    def kl_beta(self) -> float:
        """β, the weight of the complexity cost: the method's ``beta`` (1 without one)."""
        return float(self.config.params.get("beta", 1.0))

    @property
    def kl_schedule(self) -> str:
        """How a step's updates share the complexity cost: the method's ``kl_schedule``.

        One of :data:`~core.engine.objective.KL_SCHEDULES` (:func:`kl_factors`), uniform for a
        method without one.
        """
        return self.config.params.get("kl_schedule", "uniform")

    @property
    def thompson_draws(self) -> int:
        """Posterior draws a decision averages.

        :attr:`~core.bandits.settings.ModelSettings.thompson_draws` when the method's decision
        is a posterior draw (:attr:`~core.methods.base.BanditRole.draws`), else 1 (it acts on
        one network).
        """
        draws = lab_method(self.family).bandit.draws
        return self.settings.thompson_draws if draws else 1

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
        weight = kl_factor * self.kl_beta * actions.shape[1] / self._n_data
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
