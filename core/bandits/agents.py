"""The bandit's agents by name, and who runs each family's agents.

An agent's *family* is the group that runs it, vectorised over its runs (agents × seeds in
lockstep, :class:`~core.bandits.groups.AgentGroup`): the reward network of one inference method
(:mod:`core.methods`, run by :class:`~core.bandits.neural.NeuralGroup`), the uniform random
agent or exact linear Thompson sampling (:class:`~core.bandits.linear.LinearGroup`).

* **Thompson agents**, one per method whose package declares a
  :class:`~core.methods.base.BanditRole` with an agent (a new method package is an agent with
  no edit here; removing the folder removes it): each decision acts on one posterior draw —
  BBB's weights, computed with local reparameterisation; MC dropout's mask (Gal & Ghahramani
  2016); one of the ensemble's members; the SGLD chain's current weights, which follow Langevin
  dynamics on the buffer's posterior (Welling & Teh 2011; as "SGLD" in Riquelme et al. 2018) —
  and takes the action of highest sampled reward.
* **Greedy / ε-greedy**: the plain MLP's best action; with probability ε a uniformly random one.
* **Uniform random**, and **linear Thompson** (Riquelme et al. 2018): per arm, Bayesian linear
  regression of the reward on (context, 1) with its exact normal-inverse-gamma posterior.
"""

from __future__ import annotations

from core.bandits.groups import AgentGroup, AgentSpec, RandomGroup
from core.bandits.linear import LinearGroup
from core.bandits.neural import NeuralGroup
from core.bandits.settings import REWARD_MODELS
from core.methods import METHODS

DECLARED = (
    AgentSpec("greedy", "Greedy MLP", "mlp"),
    AgentSpec("eps1", "ε-greedy MLP, ε = 1 %", "mlp", 0.01),
    AgentSpec("eps5", "ε-greedy MLP, ε = 5 %", "mlp", 0.05),
    AgentSpec("random", "Uniform random", "random"),
    AgentSpec("lints", "Linear Thompson (exact)", "linear"),
)
"""The agents that are not a method's Thompson agent: the plain MLP's greedy and ε-greedy
agents, and the baselines."""

AGENTS = {
    spec.name: spec
    for spec in (
        *(
            AgentSpec(kind, m.bandit.agent, kind)
            for kind, m in METHODS.items()
            if m.bandit is not None and m.bandit.agent is not None
        ),
        *DECLARED,
    )
}
"""Agent name → spec, in display order: every method's Thompson agent (named by its kind), in
the methods' order, then :data:`DECLARED`."""

GROUPS: dict[str, type[AgentGroup]] = {
    **dict.fromkeys(REWARD_MODELS, NeuralGroup),
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
