"""Contextual bandit environments, each with its oracle and the exact expected regret per step.

Every environment draws steps in blocks (:meth:`Environment.draw`): the contexts the agents see,
the *mean* reward of every action in each context and one realised reward of every action. The
expected regret of choosing action a in context x is ``max_b μ(x, b) − μ(x, a)`` (the oracle
knows μ), so a regret curve carries no reward noise; the agents learn from the realised rewards.

* :class:`MushroomBandit` (Blundell et al. 2015, §5.3): one random mushroom of the UCI set per
  step (its 22 attributes one-hot encoded); eat or pass. Eating an edible mushroom pays +5, a
  poisonous one +5 or −35 with probability ½ each (mean −15), passing 0. Expected regret: 5 for
  passing an edible mushroom, 15 for eating a poisonous one, 0 otherwise.
* :class:`WheelBandit` (Riquelme, Tucker & Snoek 2018): the context is uniform in the unit disk,
  5 arms. Arm 0 ("safe") always pays N(1.2, 0.01²). Inside radius δ the other arms pay
  N(1.0, 0.01²); outside it, the arm of the context's quadrant pays N(50, 0.01²) and the rest
  N(1.0, 0.01²).

The mushroom file ships in ``core/bandits/data/`` and is checked against its SHA-256 when read.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch

from core.data import DatasetUnavailable

MUSHROOM_FILE = Path(__file__).resolve().parent / "data" / "agaricus-lepiota.data.gz"
MUSHROOM_SHA256 = "bf2157cb0f7aca0b2ce5537471c6b9636380b20e322a5aa97af985ba45affffa"
MUSHROOM_ROWS = 8124
EAT, PASS = 0, 1
EDIBLE_REWARD = 5.0
POISON_REWARDS = (5.0, -35.0)  # each with probability ½
WHEEL_ARMS = ("safe", "NE", "SE", "SW", "NW")
WHEEL_SAFE_MEAN, WHEEL_OTHER_MEAN, WHEEL_LARGE_MEAN, WHEEL_NOISE = 1.2, 1.0, 50.0, 0.01
ENVIRONMENTS = ("mushroom", "wheel")


@dataclass(frozen=True)
class Steps:
    """A block of ``n_steps`` consecutive bandit steps.

    Attributes:
        contexts: What the agents see, ``(n_steps, context_dim)`` float32.
        mean_rewards: Expected reward of every action, ``(n_steps, n_actions)`` float64.
        rewards: One realised reward of every action, ``(n_steps, n_actions)`` float64 (an agent
            receives the entry of the action it chose).
        info: Per step what pages show, ``(n_steps, info_dim)`` float64: the mushroom's row and
            edibility (1 edible) or the wheel's point (x₁, x₂).
    """

    contexts: torch.Tensor
    mean_rewards: torch.Tensor
    rewards: torch.Tensor
    info: torch.Tensor

    def __len__(self) -> int:
        return self.contexts.shape[0]


def expected_regret(mean_rewards: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Exact expected regret ``max_b μ(x, b) − μ(x, a)`` of each chosen action.

    Args:
        mean_rewards: Mean reward of every action, ``(..., n_actions)``.
        actions: Chosen action indices, shaped like ``mean_rewards[..., 0]``.

    Returns:
        The regrets, shaped like ``actions`` (reward units, ≥ 0).
    """
    chosen = mean_rewards.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    return mean_rewards.max(-1).values - chosen


def oracle_actions(mean_rewards: torch.Tensor) -> torch.Tensor:
    """The oracle's choice: an action of highest mean reward in each context.

    Args:
        mean_rewards: Mean reward of every action, ``(..., n_actions)``.

    Returns:
        Action indices ``(...)`` (int64); their expected regret is 0.
    """
    return mean_rewards.argmax(-1)


class Environment(Protocol):
    """What the runner and the agents need from an environment.

    Attributes:
        name: ``"mushroom"`` or ``"wheel"``.
        title: Human title, e.g. ``"Wheel, δ = 0.95"``.
        n_actions: Number of actions A.
        context_dim: Width of a context vector.
        action_names: A name per action.
        reward_scale: Rewards are divided by it before the reward models see them (so that
            the networks' targets are of order 1); it does not change any decision.
    """

    name: str
    title: str
    n_actions: int
    context_dim: int
    action_names: tuple[str, ...]
    reward_scale: float

    def draw(self, n_steps: int, generator: torch.Generator) -> Steps:
        """Draw ``n_steps`` fresh steps.

        Args:
            n_steps: Number of steps.
            generator: The source of randomness (never the global one).

        Returns:
            The block of steps.
        """
        ...

    def random_regret(self) -> float:
        """Closed-form expected regret per step of the uniformly random agent.

        Returns:
            The regret (reward units).
        """
        ...

    def reward_moments(self) -> tuple[float, float]:
        """Closed-form mean and standard deviation of a reward under uniformly random actions.

        Returns:
            ``(mean, std)`` of the realised reward of a fresh context and a uniform action
            (reward units; what standardised rewards subtract and divide by).
        """
        ...

    def settings(self) -> dict:
        """The parameters that define the environment, JSON-serialisable.

        Returns:
            ``{"env": name, ...}``.
        """
        ...


@dataclass(frozen=True)
class MushroomData:
    """The UCI mushroom set, one-hot encoded (read-only: shared by every run and session).

    Attributes:
        features: One-hot attributes ``(8124, n_features)`` float32; each of the 22 attributes
            contributes one column per value seen in the file (``?`` counts as a value).
        edible: ``(8124,)`` bool, True for edible.
        columns: ``(attribute index, value)`` of every feature column.
    """

    features: torch.Tensor
    edible: torch.Tensor
    columns: tuple[tuple[int, str], ...]


def check_mushroom_file(path: Path = MUSHROOM_FILE) -> bytes:
    """Read the shipped mushroom file and check its SHA-256.

    Args:
        path: The gzip-compressed ``agaricus-lepiota.data``.

    Returns:
        The file's bytes (compressed).

    Raises:
        DatasetUnavailable: If the file is missing or its checksum differs.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetUnavailable(
            f"{path}: the mushroom data is missing ({exc.strerror}); it ships with the "
            "repository: restore it with `git checkout -- core/bandits/data`"
        ) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MUSHROOM_SHA256:
        raise DatasetUnavailable(
            f"{path}: SHA-256 {digest} differs from the shipped file's {MUSHROOM_SHA256}; "
            "restore it with `git checkout -- core/bandits/data`"
        )
    return raw


@functools.lru_cache(maxsize=2)
def load_mushroom(path: Path = MUSHROOM_FILE) -> MushroomData:
    """Read, check and one-hot encode the mushroom set (once per process).

    Args:
        path: The gzip-compressed ``agaricus-lepiota.data``.

    Returns:
        The encoded data; its tensors are shared, so never modify them.

    Raises:
        DatasetUnavailable: If the file is missing, damaged or not 8,124 rows of 23 fields.
    """
    text = gzip.decompress(check_mushroom_file(path)).decode("ascii")
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    if len(rows) != MUSHROOM_ROWS or any(len(r) != 23 for r in rows):
        raise DatasetUnavailable(f"{path}: expected {MUSHROOM_ROWS} rows of 23 fields")
    columns = tuple((j, value) for j in range(22) for value in sorted({r[j + 1] for r in rows}))
    index = {c: i for i, c in enumerate(columns)}
    features = torch.zeros(len(rows), len(columns))
    hot = torch.tensor([[index[(j, r[j + 1])] for j in range(22)] for r in rows])
    features.scatter_(1, hot, 1.0)
    edible = torch.tensor([r[0] == "e" for r in rows])
    return MushroomData(features, edible, columns)


class MushroomBandit:
    """Blundell et al.'s mushroom bandit: eat (action 0) or pass (action 1).

    Attributes:
        name: ``"mushroom"``.
        title: ``"Mushroom"``.
        n_actions: 2.
        context_dim: Number of one-hot feature columns.
        action_names: ``("eat", "pass")``.
        reward_scale: 5 (the edible reward).
        data: The encoded mushroom set (shared, read-only).
    """

    name = "mushroom"
    title = "Mushroom"
    n_actions = 2
    action_names = ("eat", "pass")
    reward_scale = 5.0

    def __init__(self, data: MushroomData | None = None) -> None:
        """Use the shipped data set, or ``data`` (e.g. a small one in tests).

        Args:
            data: The encoded mushrooms; None loads :func:`load_mushroom`.
        """
        self.data = load_mushroom() if data is None else data
        self.context_dim = self.data.features.shape[1]

    def p_edible(self) -> float:
        """Fraction of edible mushrooms in the set.

        Returns:
            P(edible), 4,208 / 8,124 for the UCI set.
        """
        return float(self.data.edible.double().mean())

    def draw(self, n_steps: int, generator: torch.Generator) -> Steps:
        """Draw ``n_steps`` mushrooms uniformly with replacement, and the coins of poison.

        Args:
            n_steps: Number of steps.
            generator: The source of randomness.

        Returns:
            The steps; ``info`` holds (row, edible).
        """
        rows = torch.randint(len(self.data.edible), (n_steps,), generator=generator)
        lucky = torch.rand(n_steps, generator=generator, dtype=torch.float64) < 0.5
        edible = self.data.edible[rows]
        poison_mean = sum(POISON_REWARDS) / 2
        eat_mean = torch.where(edible, EDIBLE_REWARD, poison_mean).double()
        eat_real = torch.where(
            edible | lucky, EDIBLE_REWARD, POISON_REWARDS[1]
        ).double()  # a poisonous one pays +5 when lucky
        zeros = torch.zeros(n_steps, dtype=torch.float64)
        return Steps(
            contexts=self.data.features[rows].clone(),
            mean_rewards=torch.stack([eat_mean, zeros], 1),
            rewards=torch.stack([eat_real, zeros], 1),
            info=torch.stack([rows.double(), edible.double()], 1),
        )

    def random_regret(self) -> float:
        """Closed form ½·(P(edible)·5 + P(poisonous)·15) (≈ 4.91 on the UCI set).

        Returns:
            Expected regret per step of the uniformly random agent (reward units).
        """
        p = self.p_edible()
        return 0.5 * (p * EDIBLE_REWARD + (1 - p) * (0.0 - sum(POISON_REWARDS) / 2))

    def reward_moments(self) -> tuple[float, float]:
        """Mean and standard deviation of a reward under uniform actions: eat or pass, ½ each.

        Eating pays 5 for an edible mushroom and 5 or −35 with equal odds for a poisonous one;
        passing pays 0. On the UCI set: mean −2.32, standard deviation 12.3.

        Returns:
            ``(mean, std)`` (reward units).
        """
        p = self.p_edible()
        eat = [(p, EDIBLE_REWARD)] + [((1 - p) / len(POISON_REWARDS), r) for r in POISON_REWARDS]
        mean = 0.5 * sum(w * r for w, r in eat)
        second = 0.5 * sum(w * r**2 for w, r in eat)
        return mean, math.sqrt(second - mean**2)

    def settings(self) -> dict:
        """The environment's parameters.

        Returns:
            ``{"env": "mushroom"}``.
        """
        return {"env": self.name}


def wheel_means(points: torch.Tensor, delta: float) -> torch.Tensor:
    """Mean reward of each wheel arm at each point.

    Args:
        points: Contexts ``(n, 2)`` in the unit disk.
        delta: Radius δ of the inner region.

    Returns:
        ``(n, 5)`` float64: 1.2 for the safe arm; outside δ, 50 for the quadrant's arm; 1.0
        otherwise.
    """
    n = points.shape[0]
    means = torch.full((n, 5), WHEEL_OTHER_MEAN, dtype=torch.float64)
    means[:, 0] = WHEEL_SAFE_MEAN
    outside = points.double().norm(dim=1) > delta
    arm = wheel_quadrant_arm(points)
    means[outside, arm[outside]] = WHEEL_LARGE_MEAN
    return means


def wheel_quadrant_arm(points: torch.Tensor) -> torch.Tensor:
    """The arm of each point's quadrant: NE 1, SE 2, SW 3, NW 4 (Riquelme et al.'s order).

    Args:
        points: ``(n, 2)`` points (x₁, x₂); a point on an axis counts as on the positive side.

    Returns:
        Arm indices ``(n,)`` (int64), 1..4.
    """
    east, north = points[:, 0] >= 0, points[:, 1] >= 0
    return torch.where(east, torch.where(north, 1, 2), torch.where(north, 4, 3)).long()


class WheelBandit:
    """Riquelme et al.'s wheel bandit with exploration parameter δ.

    Attributes:
        name: ``"wheel"``.
        title: ``"Wheel, δ = …"``.
        n_actions: 5.
        context_dim: 2.
        action_names: ``("safe", "NE", "SE", "SW", "NW")``.
        reward_scale: 10 (rewards 1, 1.2 and 50 become 0.1, 0.12 and 5).
        delta: Radius δ of the inner region, in (0, 1).
    """

    name = "wheel"
    n_actions = 5
    context_dim = 2
    action_names = WHEEL_ARMS
    reward_scale = 10.0

    def __init__(self, delta: float = 0.95) -> None:
        """Set δ.

        Args:
            delta: Radius of the inner region.

        Raises:
            ValueError: If ``delta`` is not in (0, 1).
        """
        if not 0.0 < delta < 1.0:
            raise ValueError(f"the wheel's δ must be in (0, 1), got {delta}")
        self.delta = float(delta)
        self.title = f"Wheel, δ = {self.delta:g}"

    def draw(self, n_steps: int, generator: torch.Generator) -> Steps:
        """Draw ``n_steps`` points uniformly in the disk and the arms' noisy rewards.

        Args:
            n_steps: Number of steps.
            generator: The source of randomness.

        Returns:
            The steps; ``info`` holds the point (x₁, x₂).
        """
        radius = torch.rand(n_steps, generator=generator, dtype=torch.float64).sqrt()
        angle = 2 * math.pi * torch.rand(n_steps, generator=generator, dtype=torch.float64)
        points = torch.stack([radius * angle.cos(), radius * angle.sin()], 1)
        means = wheel_means(points, self.delta)
        noise = torch.randn(n_steps, 5, generator=generator, dtype=torch.float64)
        return Steps(
            contexts=points.float(),
            mean_rewards=means,
            rewards=means + WHEEL_NOISE * noise,
            info=points,
        )

    def random_regret(self) -> float:
        """Closed form δ²·0.16 + (1 − δ²)·39.16.

        Inside δ (probability δ²) the random agent loses 0.2 on 4 of 5 arms; outside, 48.8 on
        the safe arm, 49 on three and 0 on one.

        Returns:
            Expected regret per step of the uniformly random agent (reward units).
        """
        gap = WHEEL_SAFE_MEAN - WHEEL_OTHER_MEAN
        inside = 4 * gap / 5
        outside = ((WHEEL_LARGE_MEAN - WHEEL_SAFE_MEAN) + 3 * (WHEEL_LARGE_MEAN - 1.0)) / 5
        return self.delta**2 * inside + (1 - self.delta**2) * outside

    def reward_moments(self) -> tuple[float, float]:
        """Mean and standard deviation of a reward under uniform arms, over the disk.

        The safe arm pays 1.2; inside δ (probability δ²) the four others pay 1.0, outside it
        the quadrant's arm pays 50 and three pay 1.0; every reward has noise of σ = 0.01.

        Returns:
            ``(mean, std)`` (reward units).
        """
        inside = [WHEEL_SAFE_MEAN] + [WHEEL_OTHER_MEAN] * 4
        outside = [WHEEL_SAFE_MEAN, WHEEL_LARGE_MEAN] + [WHEEL_OTHER_MEAN] * 3
        p = self.delta**2
        mean = (p * sum(inside) + (1 - p) * sum(outside)) / 5
        second = (p * sum(m**2 for m in inside) + (1 - p) * sum(m**2 for m in outside)) / 5
        return mean, math.sqrt(second - mean**2 + WHEEL_NOISE**2)

    def settings(self) -> dict:
        """The environment's parameters.

        Returns:
            ``{"env": "wheel", "delta": δ}``.
        """
        return {"env": self.name, "delta": self.delta}


def make_environment(name: str, delta: float = 0.95) -> Environment:
    """The environment called ``name``.

    Args:
        name: One of :data:`ENVIRONMENTS`.
        delta: The wheel's δ (ignored for the mushroom).

    Returns:
        The environment.

    Raises:
        ValueError: If ``name`` is unknown or δ is out of range.
        DatasetUnavailable: If the mushroom file is missing or damaged.
    """
    if name == "mushroom":
        return MushroomBandit()
    if name == "wheel":
        return WheelBandit(delta)
    raise ValueError(f"environment must be one of {ENVIRONMENTS}, got {name!r}")
