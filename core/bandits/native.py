"""Reward networks trained by the compiled kernel: the MLP and BBB families at paper scale.

Blundell et al.'s protocol takes 64 minibatch updates per step for 50,000 steps: 3.2 million
updates of 20 tiny networks. Through PyTorch each update is hundreds of small operations
(about 40 hours on a 2-core CPU); :class:`NativeGroup` runs each step's updates of all its
networks in one call of :class:`~core.bandits.kernel.tiny.TinyNetworks`. It is the
:class:`~core.bandits.neural.NeuralGroup` of its family in everything else — the same initial
networks (built by the method's own model), buffer, minibatch positions and ε-greedy
exploration, all drawn from the group's generator — and it shows its parameters to the rest of
the lab (posterior σ, the page's snapshots) by the method's own names, so those read the
networks through the method's model as before.
"""

from __future__ import annotations

import time

import torch

from core.bandits.agents import GROUPS
from core.bandits.groups import AgentGroup
from core.bandits.kernel.tiny import Hyper, TinyNetworks
from core.bandits.neural import NeuralGroup
from core.bandits.settings import ModelSettings
from core.engine.priors import prior_from_dict
from core.methods import METHODS, model_class
from core.methods.base import prior_config
from core.training import TrainConfig

STRIDE = 8
"""A ring row's room grows in steps of this many non-zero columns (64 bytes)."""


class NativeGroup(NeuralGroup):
    """A family's networks (MLP or BBB with weight sampling) trained by the compiled kernel.

    Attributes:
        kernel: The kernel of the networks' shape.
        bayesian: Whether the networks are weight posteriors (BBB).
        theta: ``(n_runs, S)`` packed parameters (``[μ | ρ]`` for BBB).
        moments: Adam's first and second moments, each like ``theta`` (zero under SGD).
        steps: Optimiser steps taken.
        inputs: The buffer's contexts as the kernel reads them: their non-zero columns
            ``(n_runs, capacity, stride, 2)`` and counts ``(n_runs, capacity)``.
        stride: Room of a row of ``inputs``: the most non-zeros of a context seen, rounded up
            to :data:`STRIDE` (24 for the mushroom's 22 one-hot attributes).
        pending: The step's updates, prepared by :meth:`update` and not run yet.
    """

    def _setup_training(self, train_config: TrainConfig, compile: bool) -> None:
        """Pack the built networks for the kernel (``compile`` does not apply)."""
        if self.device.type != "cpu":
            raise ValueError("the native engine computes on the CPU: use engine=torch on a GPU")
        if train_config.weight_decay or train_config.lr_decay != 1.0:
            raise ValueError("the native engine has no weight decay or learning-rate decay")
        self.kernel = TinyNetworks(
            self.context_dim + self.n_actions, self.n_actions, self.settings.hidden
        )
        self.bayesian = model_class(self.family).weight_posterior
        self.theta = self._pack(self.net.named_stack())
        self.moments = (torch.zeros_like(self.theta), torch.zeros_like(self.theta))
        self.steps = 0
        self.pending = None  # the step's updates, prepared by update() and not run yet
        self._compact_buffer(STRIDE)
        self._lr, self._optimizer = train_config.lr, train_config.optimizer
        self._prior = prior_from_dict(prior_config(self.config.params)) if self.bayesian else None
        del self.net  # the packed vectors are the parameters from here on

    def _compact_buffer(self, least: int) -> None:
        """The kernel's form of the whole buffer, rows of room for ``least`` non-zeros or more.

        Args:
            least: Non-zero columns a row must have room for (rounded up to 8 pairs, a cache
                line, and widened to the buffer's most).
        """
        k, capacity, width = self.buffer.contexts.shape
        flat = self.buffer.contexts.view(k * capacity, width)
        most = int((flat != 0).sum(1).max()) if flat.numel() else 0
        self.stride = -(-max(least, most, 1) // STRIDE) * STRIDE
        inputs, count, _ = self.kernel.compact(flat, self.stride)
        self.inputs = (inputs.view(k, capacity, self.stride, 2), count.view(k, capacity))

    def _names(self) -> list[tuple[str, str]]:
        """The model's (weight, bias) names per layer, for each packed half (μ then ρ for BBB)."""
        halves = ("_mu", "_rho") if self.bayesian else ("",)
        return [
            (f"layers.{i}.weight{half}", f"layers.{i}.bias{half}")
            for half in halves
            for i in range(3)
        ]

    def _pack(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        groups = self._names()
        halves = [
            self.kernel.pack([(params[w], params[b]) for w, b in groups[j : j + 3]])
            for j in range(0, len(groups), 3)
        ]
        return torch.cat(halves, 1).contiguous()

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """The runs' parameters by the method's names, each ``(n_runs, ...)`` (copies)."""
        self.flush()
        n = self.kernel.n_params
        halves = [self.theta[:, j : j + n] for j in range(0, self.theta.shape[1], n)]
        groups = self._names()
        out = {}
        for h, half in enumerate(halves):
            for (w, b), (weight, bias) in zip(
                groups[3 * h : 3 * h + 3], self.kernel.unpack(half), strict=True
            ):
                out[w], out[b] = weight, bias
        return out

    @torch.no_grad()
    def act(self, contexts: torch.Tensor) -> torch.Tensor:
        """One posterior draw (BBB) or the weights (MLP) per run, the best action; ε explores.

        BBB's decision averages ``thompson_draws`` weight draws, draw j seeded by the
        decision's seed + j (one seed from the group's generator, as for one draw).

        Args:
            contexts: ``(n_runs, context_dim)``.

        Returns:
            Actions ``(n_runs,)``.
        """
        self.flush()
        seed = int(torch.randint(2**62, (), generator=self.generator))
        draws = self.thompson_draws
        values = sum(
            self.kernel.values(
                self.theta, contexts, seed + j, self.bayesian, torch.get_num_threads()
            )
            for j in range(draws)
        )
        return self._explore((values / draws).argmax(-1))

    def update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor):
        """Store the interactions and prepare the step's ``updates_per_step`` updates.

        The updates run at the next use of the networks, or with other groups' in one call
        (:func:`run_pending`, which the runner calls at the end of every step).

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)`` (reward units).
        """
        self.flush()
        s = self.settings
        slot = self.buffer.next_slot
        self.buffer.add(contexts, actions, self.targets(rewards))
        inputs, count, most = self.kernel.compact(contexts, self.stride)
        if most > self.stride:  # a context with more non-zeros than the rows have room for
            self._compact_buffer(most)
        else:
            self.inputs[0][:, slot], self.inputs[1][:, slot] = inputs, count
        shape = (s.updates_per_step, self.n_runs, s.batch_size)
        positions = torch.randint(self.buffer.size, shape, generator=self.generator)
        seed = int(torch.randint(2**62, (), generator=self.generator))
        hyper = Hyper(
            lr=self._lr,
            optimizer=self._optimizer,
            noise_sigma=s.noise_sigma,
            kl_weight=self.kl_beta * s.batch_size / self.kl_n if self.bayesian else 0.0,
            kl_schedule=self.kl_schedule,
            **({"prior": self._prior} if self.bayesian else {}),
        )
        buffer = (*self.inputs, self.buffer.actions, self.buffer.rewards)
        self.pending = self.kernel.job(
            self.theta, self.moments, self.steps, buffer, positions, hyper, seed, self.bayesian
        )
        self.steps += s.updates_per_step

    @property
    def cost(self) -> int:
        """Relative compute of a step: networks × parameter vectors (μ and ρ for BBB)."""
        return self.n_runs * (2 if self.bayesian else 1)

    def flush(self) -> None:
        """Run the prepared step's updates now, if any."""
        if self.pending is not None:
            job, self.pending = self.pending, None
            self.kernel.run([job], torch.get_num_threads())

    def state_dict(self) -> dict:
        """The generator, the packed networks, the optimiser's state and the buffer.

        Returns:
            Tensors and plain values.
        """
        self.flush()
        return AgentGroup.state_dict(self) | {
            "theta": self.theta,
            "moments": list(self.moments),
            "steps": self.steps,
            "buffer": self.buffer.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict`.

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.pending = None
        AgentGroup.load_state_dict(self, state)
        self.theta.copy_(state["theta"])
        for mine, saved in zip(self.moments, state["moments"], strict=True):
            mine.copy_(saved)
        self.steps = state["steps"]
        self.buffer.load_state_dict(state["buffer"])
        self._compact_buffer(STRIDE)


def run_pending(groups: list[AgentGroup]) -> dict[str, float]:
    """Run the prepared steps of the natively trained groups in one call per kernel.

    Each network is one task for the threads, the costliest groups' first, so that BBB's few
    networks and the MLPs' many share the cores evenly.

    Args:
        groups: A run's groups (others are ignored).

    Returns:
        Seconds of the call by family, shared in proportion to the groups' :attr:`cost`.
    """
    pending = sorted(
        (g for g in groups if isinstance(g, NativeGroup) and g.pending is not None),
        key=lambda g: -g.cost,
    )
    if not pending:
        return {}
    start = time.perf_counter()
    kernels: dict[int, list[NativeGroup]] = {}
    for group in pending:
        kernels.setdefault(id(group.kernel), []).append(group)
    for members in kernels.values():
        jobs = [g.pending for g in members]
        for g in members:
            g.pending = None
        members[0].kernel.run(jobs, torch.get_num_threads())
    seconds = time.perf_counter() - start
    total = sum(g.cost for g in pending)
    return {g.family: seconds * g.cost / total for g in pending}


def group_class(family: str, settings: ModelSettings) -> type[AgentGroup]:
    """The group that runs a family's agents under these settings.

    Args:
        family: A key of :data:`~core.bandits.agents.GROUPS`.
        settings: The reward models' settings (their ``engine``).

    Returns:
        :class:`NativeGroup` for the methods it trains
        (:attr:`~core.methods.base.BanditRole.native`) when ``engine="native"``, else the
        family's own group.
    """
    role = METHODS[family].bandit if family in METHODS else None
    if settings.engine == "native" and role is not None and role.native:
        return NativeGroup
    return GROUPS[family]
