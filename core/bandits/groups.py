"""The interface of a bandit's agents: :class:`AgentGroup`, the runs of one family's agents.

Runs are ordered agent-major: run ``r`` is agent ``r // n_seeds`` on seed ``r % n_seeds``. Each
step the runner calls :meth:`AgentGroup.act` with every run's context and
:meth:`AgentGroup.update` with the chosen actions and realised rewards. Randomness comes from
each group's own ``torch.Generator``; a model's draws use torch's generator inside
:func:`torch.random.fork_rng`, seeded from the group's (:func:`drawn_from`), so runs are
reproducible and the caller's random state is unchanged. :class:`AgentSpec` describes one
agent (:data:`core.bandits.agents.AGENTS` lists them); :class:`RandomGroup`, the uniformly
random agent, is the simplest group.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from core.bandits.environments import Environment
from core.bandits.settings import ModelSettings
from core.engine.seeding import seeded


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the command line and the page.

    Attributes:
        name: Its short name (``bbb``, ``eps5`` ...).
        title: Human title.
        family: Who runs it: the kind of its reward network's method (one of
            :data:`~core.bandits.settings.REWARD_MODELS`, run by a
            :class:`~core.bandits.neural.NeuralGroup`), or ``"random"`` or ``"linear"``.
        epsilon: Probability of a uniformly random action.
    """

    name: str
    title: str
    family: str
    epsilon: float = 0.0


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
