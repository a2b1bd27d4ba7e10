"""Runs of several agents × seeds on one environment, in lockstep, resumable in chunks.

A :class:`BanditRun` advances every run one step at a time: each seed draws its context (all
agents of a seed see the same mushrooms or points and the same reward noise: common random
numbers), every :class:`~core.bandits.groups.AgentGroup` chooses for all its runs at once, the
exact expected regret of each choice is recorded and the groups learn from the realised
rewards. :meth:`BanditRun.advance` can be called in chunks (a page shows the curves growing;
the result does not depend on the chunking) and :meth:`BanditRun.result` summarises the run so
far as a JSON-serialisable dict: cumulative-regret curves per agent and seed, final means and
standard deviations over seeds, seconds, and a :meth:`BanditRun.snapshot` of one agent's recent
decisions and uncertainty for the page.

Randomness: the environment of seed s and each agent family draw from their own generators,
seeded from ``(config.seed, s)`` and ``(config.seed, family)``, never from the global one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from core.bandits.agents import AGENTS, FAMILIES, parse_agents
from core.bandits.environments import (
    ENVIRONMENTS,
    Environment,
    Steps,
    WheelBandit,
    expected_regret,
    make_environment,
)
from core.bandits.groups import AgentGroup
from core.bandits.native import group_class, run_pending
from core.bandits.settings import ModelSettings
from core.bandits.snapshot import RECENT_MUSHROOMS, RECENT_POINTS, mushroom_decisions, wheel_grid
from core.engine.device import processor
from core.methods import METHODS
from core.progress import ProgressFn, report

BLOCK = 500  # steps drawn at once per seed (always whole blocks: a run is a prefix of a longer one)
RECORD_EVERY = (1, 2, 5, 10, 20, 25, 50, 100, 250, 500, 1000)
MAX_POINTS = 250
SCHEMA = 1


@dataclass(frozen=True)
class RunConfig:
    """What to run.

    Attributes:
        env: ``"mushroom"`` or ``"wheel"``.
        delta: The wheel's δ (ignored for the mushroom).
        agents: Agent names, keys of :data:`core.bandits.agents.AGENTS`.
        steps: Bandit steps per run.
        seeds: Runs per agent (seeds ``seed, seed+1, ...`` of the environment).
        seed: Base seed.
        model: Reward models and training.

    Raises:
        ValueError: If the environment, an agent, δ, ``steps`` or ``seeds`` is invalid.
    """

    env: str = "mushroom"
    delta: float = 0.95
    agents: tuple[str, ...] = ("bbb", "greedy", "eps5", "random")
    steps: int = 1000
    seeds: int = 2
    seed: int = 0
    model: ModelSettings = field(default_factory=ModelSettings)

    def __post_init__(self) -> None:
        if self.env not in ENVIRONMENTS:
            raise ValueError(f"environment must be one of {ENVIRONMENTS}, got {self.env!r}")
        if self.env == "wheel" and not 0.0 < self.delta < 1.0:
            raise ValueError(f"the wheel's δ must be in (0, 1), got {self.delta}")
        object.__setattr__(self, "agents", parse_agents(self.agents))
        if self.steps < 1 or self.seeds < 1:
            raise ValueError(f"steps and seeds must be ≥ 1, got {self.steps} and {self.seeds}")
        if self.env == "mushroom":
            object.__setattr__(self, "delta", None)
        else:
            object.__setattr__(self, "delta", float(self.delta))

    def to_dict(self) -> dict:
        """The configuration as a JSON-serialisable dict (the cache key of a result).

        Returns:
            Every field by name; ``model`` as a dict, ``delta`` None for the mushroom.
        """
        return {
            "env": self.env,
            "delta": self.delta,
            "agents": list(self.agents),
            "steps": self.steps,
            "seeds": self.seeds,
            "seed": self.seed,
            "model": self.model.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        """Inverse of :meth:`to_dict`.

        Args:
            d: Field values by name.

        Returns:
            The validated configuration.
        """
        d = dict(d)
        d["model"] = ModelSettings.from_dict(d.get("model", {}))
        d["agents"] = tuple(d["agents"])
        if d.get("delta") is None:
            d.pop("delta", None)
        return cls(**d)


def derived_seed(*parts: object) -> int:
    """A seed in [0, 2⁶³) that depends only on ``parts``.

    Args:
        *parts: Values whose string forms identify a generator.

    Returns:
        The seed.
    """
    text = ":".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def record_interval(steps: int) -> int:
    """Steps between stored curve points.

    The smallest of :data:`RECORD_EVERY` that gives at most :data:`MAX_POINTS` points.

    Args:
        steps: Length of the run.

    Returns:
        The interval (it divides 1,000 up to 1,000).
    """
    return next((e for e in RECORD_EVERY if steps / e <= MAX_POINTS), RECORD_EVERY[-1])


class BanditRun:
    """Agents × seeds on one environment, advanced in lockstep (see the module docstring).

    Attributes:
        config: What runs.
        env: The environment.
        groups: One :class:`~core.bandits.groups.AgentGroup` per family present.
        step: Steps done.
        regret: Expected regret of every step, agent and seed, ``(steps, n_agents, seeds)``
            float64 (rows beyond ``step`` are zero).
        actions: Chosen actions, ``(steps, n_agents, seeds)`` int8.
        info: What the page shows of each step's context, ``(steps, seeds, info_dim)``.
        seconds: Compute time so far (s).
        group_seconds: Compute time per family (s).
    """

    def __init__(
        self,
        config: RunConfig,
        env: Environment | None = None,
        device: torch.device | str = "cpu",
        compile: bool = False,
    ) -> None:
        """Build the environment's generators and the agent groups.

        Args:
            config: What to run.
            env: The environment; None builds it from ``config`` (a test may pass a small
                one).
            device: Where the reward networks compute (on CUDA each family's step is
                replayed from a CUDA graph, on its own stream; results differ from the CPU's
                only by the noise drawn).
            compile: Compile the networks' training losses (:func:`torch.compile`).

        Raises:
            DatasetUnavailable: If the mushroom file is missing or damaged.
        """
        self.config = config
        self.device = torch.device(device)
        self.env = env if env is not None else make_environment(config.env, config.delta or 0.95)
        self.agent_index = {name: i for i, name in enumerate(config.agents)}
        self.groups: list[tuple[AgentGroup, list[int]]] = []
        for family in FAMILIES:
            names = [n for n in config.agents if AGENTS[n].family == family]
            if names:
                group = group_class(family, config.model)(
                    [AGENTS[n] for n in names],
                    config.seeds,
                    self.env,
                    config.model,
                    derived_seed(config.seed, family, "agents"),
                    device=device,
                    compile=compile,
                )
                self.groups.append((group, [self.agent_index[n] for n in names]))
        self.env_generators = [
            torch.Generator().manual_seed(derived_seed(config.seed + s, "environment"))
            for s in range(config.seeds)
        ]
        shape = (config.steps, len(config.agents), config.seeds)
        self.regret = torch.zeros(shape, dtype=torch.float64)
        self.every = record_interval(config.steps)
        marks = (config.steps // self.every, len(config.agents), config.seeds)
        self.sigma = torch.full(marks, float("nan"), dtype=torch.float64)
        self.actions = torch.zeros(shape, dtype=torch.int8)
        self.info: torch.Tensor | None = None
        self.step = 0
        self.seconds = 0.0
        self.group_seconds = {g.family: 0.0 for g, _ in self.groups}
        self._block: list[Steps] = []
        self._block_start = 0
        self._block_states: list[torch.Tensor] = []  # the environments' generators before it

    @property
    def done(self) -> bool:
        """Whether all ``config.steps`` steps are done."""
        return self.step >= self.config.steps

    def _current_block(self) -> tuple[list[Steps], int]:
        if not self._block or self.step - self._block_start >= BLOCK:
            self._block_states = [g.get_state() for g in self.env_generators]
            self._block = [self.env.draw(BLOCK, g) for g in self.env_generators]
            self._block_start = self.step
            if self.info is None:
                dim = self._block[0].info.shape[1]
                self.info = torch.zeros(self.config.steps, self.config.seeds, dim)
        return self._block, self.step - self._block_start

    def _one_step(self) -> None:
        block, i = self._current_block()
        t = self.step
        contexts = torch.stack([b.contexts[i] for b in block])  # (S, d)
        means = torch.stack([b.mean_rewards[i] for b in block])  # (S, A)
        rewards = torch.stack([b.rewards[i] for b in block])
        self.info[t] = torch.stack([b.info[i] for b in block]).float()
        for group, agent_rows in self.groups:
            start = time.perf_counter()
            seeds = group.seed_index
            actions = group.act(contexts[seeds])
            regret = expected_regret(means[seeds], actions)
            group.update(contexts[seeds], actions, rewards[seeds].gather(1, actions[:, None])[:, 0])
            self.group_seconds[group.family] += time.perf_counter() - start
            shape = (len(agent_rows), self.config.seeds)
            self.regret[t, agent_rows] = regret.view(shape)
            self.actions[t, agent_rows] = actions.view(shape).to(torch.int8)
        for family, seconds in run_pending([group for group, _ in self.groups]).items():
            self.group_seconds[family] += seconds
        if (t + 1) % self.every == 0:
            for group, agent_rows in self.groups:
                if (sigma := group.weight_sigma()) is not None:
                    shape = (len(agent_rows), self.config.seeds)
                    self.sigma[(t + 1) // self.every - 1, agent_rows] = sigma.view(shape)
        self.step += 1

    def advance(
        self,
        n_steps: int | None = None,
        progress: ProgressFn | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Run up to ``n_steps`` more steps (all remaining when None).

        Args:
            n_steps: Steps to run; never beyond ``config.steps``.
            progress: Reports the fraction of *this call's* steps done.
            should_stop: Polled every 10 steps; True ends the call early (the run stays
                consistent and can be advanced again).

        Returns:
            The number of steps run.
        """
        remaining = self.config.steps - self.step
        todo = remaining if n_steps is None else max(0, min(n_steps, remaining))
        every = max(1, todo // 100)
        start = time.perf_counter()
        done = 0
        for done in range(1, todo + 1):
            self._one_step()
            if done % every == 0:
                report(progress, done / todo, f"step {self.step:,} of {self.config.steps:,}")
            if done % 10 == 0 and should_stop is not None and should_stop():
                break
        else:
            done = todo
        self.seconds += time.perf_counter() - start
        return done

    def state_dict(self) -> dict:
        """What continues the run elsewhere: its records, the environments and the groups.

        The environments' generators are kept as they were before the current block of
        contexts was drawn, so that :meth:`load_state_dict` draws the same block again.

        Returns:
            Tensors and plain values (for ``torch.save`` and a ``weights_only`` load).
        """
        return {
            "step": self.step,
            "regret": self.regret,
            "sigma": self.sigma,
            "actions": self.actions,
            "info": self.info,
            "seconds": self.seconds,
            "group_seconds": dict(self.group_seconds),
            "block_start": self._block_start,
            "block_states": self._block_states,
            "environments": [g.get_state() for g in self.env_generators],
            "groups": [group.state_dict() for group, _ in self.groups],
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict` of a run of the same settings.

        The resumed run's steps are those the uninterrupted run would have taken.

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.step, self.seconds = state["step"], state["seconds"]
        self.regret, self.actions, self.info = state["regret"], state["actions"], state["info"]
        self.sigma = state.get("sigma", self.sigma)
        self.group_seconds = dict(state["group_seconds"])
        for (group, _), saved in zip(self.groups, state["groups"], strict=True):
            group.load_state_dict(saved)
        self._block, self._block_start = [], state["block_start"]
        self._block_states = state["block_states"]
        if self._block_states:  # the current block again, leaving the generators past it
            for generator, saved in zip(self.env_generators, self._block_states, strict=True):
                generator.set_state(saved)
            self._block = [self.env.draw(BLOCK, g) for g in self.env_generators]
        for generator, saved in zip(self.env_generators, state["environments"], strict=True):
            generator.set_state(saved)

    def cumulative(self) -> torch.Tensor:
        """Cumulative expected regret of the steps done.

        Returns:
            ``(step, n_agents, seeds)`` float64.
        """
        return self.regret[: self.step].cumsum(0)

    def snapshot_agent(self) -> str | None:
        """The agent the page's snapshot shows.

        The first whose decisions are posterior draws
        (:attr:`~core.methods.base.BanditRole.draws`: BBB in the default runs), else the first
        with a model.

        Returns:
            Its name, or None when only model-free agents run.
        """
        modelled = [n for n in self.config.agents if AGENTS[n].family != "random"]
        drawn = [n for n in modelled if _draws(AGENTS[n].family)]
        return next(iter(drawn + modelled), None)

    def _group_of(self, name: str) -> tuple[AgentGroup, int]:
        for group, rows in self.groups:
            if self.agent_index[name] in rows:
                return group, rows.index(self.agent_index[name]) * self.config.seeds
        raise KeyError(name)

    @torch.no_grad()
    def snapshot(self, agent: str | None = None, seed: int = 0) -> dict | None:
        """What one agent does now: recent decisions and its reward model's spread.

        Uses its own generator: taking a snapshot never changes the run.

        Args:
            agent: Agent name; None for :meth:`snapshot_agent`.
            seed: Which of the agent's runs (0-based seed index).

        Returns:
            None before the first step or without a model-based agent; else a JSON-ready dict
            with ``agent``, ``seed``, ``step`` and, for the wheel, the recent ``points`` and
            chosen ``arms`` and the map ``grid`` (:func:`~core.bandits.snapshot.wheel_grid`);
            for the mushroom, the recent ``decisions``
            (:func:`~core.bandits.snapshot.mushroom_decisions`).
        """
        agent = agent or self.snapshot_agent()
        if agent is None or self.step == 0:
            return None
        group, base = self._group_of(agent)
        run = base + seed
        generator = torch.Generator().manual_seed(derived_seed(self.config.seed, "snapshot"))
        column = self.agent_index[agent]
        out = {"agent": agent, "seed": seed, "step": self.step}
        if isinstance(self.env, WheelBandit):
            lo = max(0, self.step - RECENT_POINTS)
            out["points"] = self.info[lo : self.step, seed].tolist()
            out["arms"] = self.actions[lo : self.step, column, seed].tolist()
            out["grid"] = wheel_grid(group, run, generator)
            return out
        lo = max(0, self.step - RECENT_MUSHROOMS)
        recent = (self.info[lo : self.step, seed], self.actions[lo : self.step, column, seed])
        out["decisions"] = mushroom_decisions(
            group, run, generator, self.env, *recent, self.regret[lo : self.step, column, seed], lo
        )
        return out

    def result(self, with_snapshot: bool = True) -> dict:
        """The run so far as a JSON-serialisable dict.

        Args:
            with_snapshot: Whether to include :meth:`snapshot` (about 0.1-0.5 s on the wheel).

        Returns:
            ``schema``, ``settings`` (:meth:`RunConfig.to_dict`), ``env`` (title, actions,
            random agent's closed-form regret per step), ``steps_done``, ``record_steps`` (the
            steps of the curve points), ``agents`` (name → ``title``, ``curves`` per seed,
            ``final`` per seed, ``mean``, ``std`` over seeds, ``per_step`` = mean / steps,
            ``seconds`` of its family's compute in proportion to its runs; for a network with
            a weight posterior also ``sigma``, per seed its mean posterior σ of the weights at
            the steps ``sigma_steps``), ``seconds`` (all compute), ``threads``, ``device``,
            ``processor`` (:func:`~core.engine.device.processor`) and ``snapshot``.
        """
        cumulative = self.cumulative()
        every = self.every
        marks = list(range(every, self.step + 1, every))
        if self.step and (not marks or marks[-1] != self.step):
            marks.append(self.step)
        picked = cumulative[[m - 1 for m in marks]] if marks else cumulative[:0]
        sigma = self.sigma[: self.step // self.every]
        agents = {}
        for name in self.config.agents:
            column = self.agent_index[name]
            final = cumulative[-1, column] if self.step else torch.zeros(self.config.seeds)
            group, _ = self._group_of(name)
            share = self.config.seeds / group.n_runs
            agents[name] = {
                "title": AGENTS[name].title,
                "curves": [[round(v, 3) for v in c] for c in picked[:, column].T.tolist()],
                "final": final.tolist(),
                "mean": float(final.mean()),
                "std": float(final.std()) if self.config.seeds > 1 else 0.0,
                "per_step": float(final.mean()) / max(self.step, 1),
                "seconds": self.group_seconds[group.family] * share,
            }
            if sigma.numel() and not sigma[:, column].isnan().any():
                agents[name]["sigma"] = [
                    [round(v, 5) for v in c] for c in sigma[:, column].T.tolist()
                ]
        env = {
            "name": self.env.name,
            "title": self.env.title,
            "actions": list(self.env.action_names),
            "random_regret_per_step": self.env.random_regret(),
        }
        return {
            "schema": SCHEMA,
            "settings": self.config.to_dict(),
            "env": env,
            "steps_done": self.step,
            "record_steps": marks,
            "sigma_steps": list(range(self.every, len(sigma) * self.every + 1, self.every)),
            "agents": agents,
            "seconds": self.seconds,
            "threads": torch.get_num_threads(),
            "device": str(self.device),
            "processor": processor(),
            "snapshot": self.snapshot() if with_snapshot else None,
        }


def _draws(family: str) -> bool:
    """Whether a family's decisions are posterior draws (a method's bandit role says so)."""
    role = METHODS[family].bandit if family in METHODS else None
    return role is not None and role.draws


def regret_table(result: dict, every: int = 1000) -> list[dict]:
    """Mean cumulative regret over seeds every ``every`` steps, and at the last step.

    Args:
        result: A result of :meth:`BanditRun.result` (a cached one too).
        every: Interval in steps; only stored curve points are used (the stored interval
            divides 1,000 for runs of up to 250,000 steps).

    Returns:
        Rows ``{"step": t, agent name: mean cumulative regret, ...}``.
    """
    marks = result["record_steps"]
    keep = [i for i, t in enumerate(marks) if t % every == 0 or i == len(marks) - 1]
    rows = []
    for i in keep:
        row = {"step": marks[i]}
        for name, agent in result["agents"].items():
            values = [curve[i] for curve in agent["curves"]]
            row[name] = sum(values) / len(values)
        rows.append(row)
    return rows
