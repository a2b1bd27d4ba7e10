"""The papers' bandit experiments as :class:`~core.protocols.Protocol` presets.

``python -m core bandit --protocol NAME`` runs one and prints its settings and their sources
first.
"""

from __future__ import annotations

import dataclasses

from core.bandits.environments import MushroomBandit
from core.bandits.runner import RunConfig
from core.bandits.settings import ModelSettings
from core.protocols import Protocol

BLUNDELL = "Blundell et al. 2015, §5.3"

PROTOCOLS: dict[str, Protocol] = {
    "blundell2015": Protocol(
        name="blundell2015",
        title="Blundell et al. (2015), §5.3 and Figure 5: the mushroom bandit",
        config=RunConfig(
            env="mushroom",
            agents=("bbb", "greedy", "eps1", "eps5"),
            steps=50_000,
            seeds=5,
            model=ModelSettings().replace(
                hidden=(100, 100),
                buffer_size=4096,
                batch_size=64,
                updates_per_step=64,
                noise_sigma=1.0 / MushroomBandit.reward_scale,
                prior="mixture",
                lrt=False,
                engine="native",
            ),
        ),
        sources={
            "env": f"{BLUNDELL}: the UCI mushrooms; eat or not; +5 for an edible one, +5 or "
            "−35 with equal odds for a poisonous one, 0 for not eating",
            "agents": f"{BLUNDELL}, Figure 5: Thompson sampling with Bayes by Backprop against "
            "greedy, 1 % and 5 % ε-greedy agents on the same network",
            "steps": f"{BLUNDELL}, Figure 5: 50,000 steps",
            "seeds": "not given in the paper: 5 runs per agent",
            "model.hidden": f"{BLUNDELL}: two hidden layers of 100 rectified linear units",
            "model.buffer_size": f"{BLUNDELL}: the last 4,096 interactions",
            "model.batch_size": f"{BLUNDELL}: minibatches of 64",
            "model.updates_per_step": f"{BLUNDELL}: 64 minibatch updates per interaction",
            "model.prior": f"{BLUNDELL.split(',')[0]}, §3.3: the scale-mixture prior",
            "model.prior_pi": "not given for this experiment: the lab's MNIST mixture, π = 1/2",
            "model.prior_sigma1": "not given for this experiment: the lab's MNIST mixture, σ1 = 1",
            "model.prior_sigma2": "not given for this experiment: the lab's MNIST mixture, "
            "σ2 = e^-6",
            "model.reward_scale": "not given in the paper: the networks learn the rewards "
            "divided by the environment's 5 (+5, −35 and 0 become 1, −7 and 0), the lab's; "
            "reward_scale=1 is the rewards as they are",
            "model.noise_sigma": "not given in the paper: σ = 1 reward unit (0.2 of the "
            "rewards divided by 5 that the network sees)",
            "model.optimizer": "not given for this experiment: the lab's Adam (the paper's §3.2 "
            "writes plain gradient steps; optimizer=sgd is that ablation)",
            "model.lr": "not given in the paper: Adam, the lab's 0.001",
            "model.kl_beta": "the ELBO (β = 1), as in the paper's objective",
            "model.kl_data": f"{BLUNDELL.split(',')[0]}, §3.4, read for a buffer: a minibatch "
            "weighs the complexity cost by B/N with N the interactions trained on (the "
            "buffer's); the paper does not say which N this experiment used",
            "model.kl_schedule": f"{BLUNDELL.split(',')[0]}, §3.4 gives two: every minibatch "
            "of an epoch weighing the complexity cost alike (the preset's), or its re-weighting "
            "π_i = 2^(M−i)/(2^M − 1); the paper does not say which this experiment used "
            "(kl_schedule=geometric is the other, over a step's 64 updates)",
            "model.lrt": f"{BLUNDELL.split(',')[0]}, §3.2: one weight sample w = μ + σ·ε per "
            "minibatch (local reparameterisation, Kingma et al. 2015, came later)",
            "model.engine": "not a setting of the paper: the lab's compiled kernel for these "
            "tiny networks (the same estimator and optimisers as the PyTorch models, tested "
            "against them), so that the protocol runs on a laptop's CPU",
        },
    ),
}
"""Protocol name → protocol."""

PAPER_FINDINGS: dict[str, tuple[str, dict[str, str]]] = {
    "blundell2015": (
        "Blundell et al. (2015), Figure 5",
        {
            "bbb": "least regret of the four, far below the others",
            "greedy": "more regret than BBB Thompson",
            "eps1": "more regret than BBB Thompson",
            "eps5": "more regret than BBB Thompson",
        },
    ),
}
"""Protocol name → (the paper's figure, what it found of each agent), to show beside a run."""


def protocol_of(config: RunConfig) -> str | None:
    """The preset whose settings a run has, if any.

    Args:
        config: A run's settings.

    Returns:
        The protocol's name (a key of :data:`PROTOCOLS`), or None.
    """
    return next((name for name, p in PROTOCOLS.items() if p.config == config), None)


def protocol_ablation(config: RunConfig) -> tuple[str, dict] | None:
    """The preset a run is an ablation of: its settings but for reward-model settings.

    A run of some of the preset's agents is one too (their runs are the preset's own runs of
    them: the same seeds).

    Args:
        config: A run's settings.

    Returns:
        ``(name, changed)``: the protocol's name and what differs from it — ``agents`` (the
        run's, a list) when a subset runs, and each reward-model setting that differs (name →
        the run's value); empty for the protocol itself. None when the run differs in anything
        else (environment, steps, seeds, other agents).
    """
    for name, protocol in PROTOCOLS.items():
        base = dataclasses.replace(protocol.config, model=config.model, agents=config.agents)
        if base == config and set(config.agents) <= set(protocol.config.agents):
            changed: dict = {}
            if config.agents != protocol.config.agents:
                changed["agents"] = list(config.agents)
            ours, theirs = config.model.to_dict(), protocol.config.model.to_dict()
            return name, changed | {k: v for k, v in ours.items() if v != theirs[k]}
    return None


def paper_findings(config: RunConfig) -> tuple[str, dict[str, str]] | None:
    """What the paper found of each agent, for a run of its protocol or an ablation of it.

    Args:
        config: A run's settings.

    Returns:
        ``(source, agent name → finding)``, or None for a run of no protocol.
    """
    ablation = protocol_ablation(config)
    return None if ablation is None else PAPER_FINDINGS.get(ablation[0])
