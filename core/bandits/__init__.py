"""Contextual bandits: an agent that must decide, exploring by Thompson sampling (issue 23).

* :mod:`core.bandits.environments`: Blundell et al.'s mushroom bandit (the UCI set ships in
  ``core/bandits/data/``, checked by SHA-256) and Riquelme et al.'s wheel, each with its oracle
  and the exact expected regret of every step;
* :mod:`core.bandits.agents`: the agents by name — a Thompson agent for every method with a
  bandit role (BBB, MC dropout, the ensemble, SGLD), greedy and ε-greedy MLPs, uniform random
  and exact linear Thompson sampling — run behind one interface (:mod:`core.bandits.groups`),
  vectorised over the runs (agents × seeds) of each family (:mod:`core.bandits.neural`,
  :mod:`core.bandits.linear`);
* :mod:`core.bandits.settings`: the reward models' settings, each method's parameters by kind;
* :mod:`core.bandits.runner`: :class:`~core.bandits.runner.BanditRun`, every run in lockstep,
  resumable in chunks, reproducible, summarised as JSON;
* :mod:`core.bandits.store`: finished runs cached by their settings, and the stored long
  reference runs among the stored results (:mod:`core.storage.results`).
"""

from core.bandits.agents import AGENTS
from core.bandits.environments import (
    ENVIRONMENTS,
    MushroomBandit,
    WheelBandit,
    expected_regret,
    make_environment,
    oracle_actions,
)
from core.bandits.groups import AgentSpec
from core.bandits.runner import BanditRun, RunConfig, regret_table
from core.bandits.settings import ModelSettings
from core.bandits.store import cached_result, load_references, run_bandit, save_reference

__all__ = [
    "AGENTS",
    "ENVIRONMENTS",
    "AgentSpec",
    "BanditRun",
    "ModelSettings",
    "MushroomBandit",
    "RunConfig",
    "WheelBandit",
    "cached_result",
    "expected_regret",
    "load_references",
    "make_environment",
    "oracle_actions",
    "regret_table",
    "run_bandit",
    "save_reference",
]
