"""The Bandits page's words: what the papers found, a run's title, and what its regret says.

Changed reward-model settings in a student's words, the title of a stored or live run, the one
line to read first and the verdict on the featured agent (:data:`core.catalogue.BANDIT_FEATURED`,
Blundell et al.'s BBB Thompson) against the ε-greedy agents.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from core.bandits.agents import AGENTS
from core.bandits.environments import MushroomBandit
from core.bandits.protocols import PROTOCOLS, protocol_ablation
from core.bandits.runner import RunConfig
from core.bandits.store import changed_settings
from core.catalogue import BANDIT_FEATURED

FINDINGS = {
    "mushroom": (
        "Blundell et al. (2015, §5.3, Figure 5) ran this bandit for 50,000 steps: the "
        "cumulative regret of Thompson sampling with a BBB reward model stayed far below that "
        "of greedy and ε-greedy (1 %, 5 %) agents built on the same network. ε-greedy pays for "
        "its random exploration forever (ε·4.91 per step here); greedy can stop exploring too "
        "early; Thompson sampling explores where its posterior is unsure and stops once it is "
        "sure."
    ),
    "wheel": (
        "Riquelme, Tucker & Snoek (2018, Deep Bayesian Bandits Showdown) built this bandit so "
        "that exploration matters more as δ → 1: outside radius δ the quadrant's arm pays 50, "
        "but that region is only 1 − δ² of the disk, so an agent that settles on the safe arm "
        "(1.2) early never finds out. They found that several posterior approximations that "
        "work in supervised learning, mean-field variational inference (BBB) among them, "
        "explore poorly online because their uncertainty converges slowly, while exact linear "
        "Thompson sampling was a strong, cheap baseline."
    ),
}
"""What the papers found on each environment, shown beside the stored runs."""


SETTING_WORDS: dict[str, Callable[[Any, RunConfig], str]] = {
    "lrt": lambda v, c: "local reparameterisation" if v else "weight sampling",
    "prior": lambda v, c: "a Gaussian prior" if v == "gaussian" else "the scale-mixture prior",
    "prior_sigma1": lambda v, c: f"a prior whose wide part has σ1 = {power_of_e(v)}",
    "init_sigma": lambda v, c: f"an initial posterior σ of {v:g}",
    "kl_beta": lambda v, c: f"the complexity cost × {v:g}",
    "kl_data": lambda v, c: (
        "the complexity cost weighed by "
        + ("every interaction seen" if v == "seen" else "the interactions in the buffer")
    ),
    "kl_schedule": lambda v, c: (
        "most of each step's complexity cost in its first updates (Blundell et al.'s re-weighting)"
        if v == "geometric"
        else "each step's complexity cost spread evenly over its updates"
    ),
    "buffer_size": lambda v, c: f"a buffer of the last {v:,} interactions",
    "updates_per_step": lambda v, c: f"{v} update{'' if v == 1 else 's'} per step",
    "optimizer": lambda v, c: "plain gradient steps (SGD)" if v == "sgd" else "Adam",
    "lr": lambda v, c: f"a learning rate of {v:.0e}".replace("e-0", "e-"),
    "reward_scale": lambda v, c: (
        "the rewards as they are" if v == 1 else f"the rewards divided by {v:g}"
    ),
    "standardise_rewards": lambda v, c: (
        "the rewards standardised (their mean subtracted, divided by their spread)"
        if v
        else "the rewards divided by a fixed scale"
    ),
    "noise_sigma": lambda v, c: likelihood_words(v, c),
    "thompson_draws": lambda v, c: (
        f"each decision averaging {v} posterior draws" if v > 1 else "one posterior draw a decision"
    ),
}
"""Reward-model setting → its changed value (in the run's settings) in a student's words."""


def likelihood_words(noise_sigma: float, config: RunConfig) -> str:
    """BBB's likelihood σ in reward units.

    The networks see rewards divided by the scale, or standardised: divided by their spread.

    Args:
        noise_sigma: σ in the networks' units.
        config: The run.

    Returns:
        E.g. ``"a likelihood σ of 5 reward units"``.
    """
    if config.env != "mushroom":
        return f"noise_sigma = {noise_sigma}"
    if config.model.standardise_rewards:
        scale = MushroomBandit().reward_moments()[1]
    else:
        scale = config.model.reward_scale or MushroomBandit.reward_scale
    sigma = noise_sigma * scale
    return f"a likelihood σ of {sigma:.3g} reward unit{'' if sigma == 1 else 's'}"


def power_of_e(value: float) -> str:
    """``e⁻¹ ≈ 0.368`` for a value that is a whole power of e, else the value (``0.5``)."""
    exponent = math.log(value)
    if value == 1.0 or abs(exponent - round(exponent)) > 1e-6:
        return f"{value:g}"
    digits = str(abs(round(exponent))).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"e{'⁻' if exponent < 0 else ''}{digits} ≈ {value:.3g}"


def setting_words(key: str, value: Any, config: RunConfig) -> str:
    """A changed reward-model setting of the run ``config`` in a student's words.

    Args:
        key: The setting's flat name.
        value: Its value.
        config: The run.

    Returns:
        The words, or ``key = value`` for a setting without words.
    """
    words = SETTING_WORDS.get(key)
    return words(value, config) if words else f"{key} = {value}"


def in_word_order(changed: dict) -> list[tuple[str, Any]]:
    """Changed settings in the order of :data:`SETTING_WORDS` (the others after them)."""
    order = list(SETTING_WORDS)
    return sorted(changed.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)


def run_title(result: dict) -> str:
    """A run's title: ``Mushroom, 50,000 steps × 2 seeds`` and what it changed.

    Any non-default model setting, or the paper whose experiment it is; an unfinished run says
    how far it got.

    Args:
        result: A stored or live run's result.

    Returns:
        The title.
    """
    s = result["settings"]
    done = result.get("steps_done", s["steps"])
    steps = f"{s['steps']:,}" if done >= s["steps"] else f"{done:,} of {s['steps']:,}"
    seeds = f"{s['seeds']} seed{'' if s['seeds'] == 1 else 's'}"
    title = f"{result['env']['title']}, {steps} steps × {seeds}"
    config = RunConfig.from_dict(s)
    if (ablation := protocol_ablation(config)) is not None:
        protocol, changed = ablation
        title += f": the experiment of {PROTOCOLS[protocol].title.split(':')[0]}"
        agents = changed.pop("agents", None)
        changed.pop("engine", None)  # who computes, not what: the same estimator
        words = [setting_words(k, v, config) for k, v in in_word_order(changed)]
        if words:
            title += " with " + ", ".join(words)
        if agents:
            title += " (" + ", ".join(AGENTS[n].title for n in agents) + " only)"
        return title
    changed = changed_settings(config)
    if changed:
        words = [setting_words(k, v, config) for k, v in in_word_order(changed)]
        title += " (" + ", ".join(words) + ")"
    return title


def bbb_verdict(result: dict) -> str:
    """Whether BBB Thompson beat the ε-greedy agents in this result, in one sentence.

    Args:
        result: A run's result.

    Returns:
        The sentence and what to look at when it did not beat them ("" if either is missing).
    """
    agents = result["agents"]
    others = [agents[n] for n in ("eps1", "eps5", "greedy") if n in agents]
    if BANDIT_FEATURED not in agents or not others:
        return ""
    bbb = agents[BANDIT_FEATURED]["mean"]
    beaten = [a["title"] for a in others if bbb < a["mean"]]
    lost = [a["title"] for a in others if bbb >= a["mean"]]
    text = f"Here BBB Thompson ({bbb:,.0f}) "
    text += f"beat {', '.join(beaten)}" if beaten else ""
    text += " but " if beaten and lost else ""
    text += f"did not beat {', '.join(lost)}" if lost else ""
    text += "."
    model = result["settings"]["model"]
    if not lost or result["settings"]["env"] != "mushroom":
        return text
    if model.get("kl_beta", 1.0) != 1.0:
        return text + " The greedy network needed no explicit exploration on this bandit."
    of_the_paper = protocol_ablation(RunConfig.from_dict(result["settings"])) is not None
    if not of_the_paper or model.get("updates_per_step", 1) == 1:
        return text
    random = result["env"].get("random_regret_per_step")
    runs = [run for run in result["agents"][BANDIT_FEATURED].get("sigma", []) if run]
    per_step = agents[BANDIT_FEATURED]["per_step"]
    if random and per_step > 0.5 * random:
        text += (
            f" It hardly learned which mushrooms to eat: {per_step:.2f} regret "
            f"a step over the whole run, against {random:.2f} for picking at random."
        )
    elif runs:  # a run too short to have recorded σ says nothing of it
        first, last = (sum(run[at] for run in runs) / len(runs) for at in (0, -1))
        text += sigma_words(first, last, model["updates_per_step"])
    return text + (
        " Compare the stored run of this experiment with one update per step for every "
        "agent, where BBB Thompson has the least regret of the four, as in the paper."
    )


def sigma_words(first: float, last: float, updates: int) -> str:
    """What BBB's posterior σ did over a run (mean over weights and seeds), or ""."""
    if last > 1.5 * first:
        return (
            f" With {updates} updates per step its posterior widens as the run goes on "
            f"(σ {first:.3f} → {last:.3f}): the complexity cost pulls every weight the data do "
            "not pin down back to the prior, and the agent keeps exploring."
        )
    if last < 1.1 * first:
        return (
            f" Its posterior's widths hardly moved in the whole run (σ {first:.3f} → "
            f"{last:.3f}): it explored with the weight noise it started with, not with what "
            "the data left uncertain."
        )
    return ""


def lead(result: dict) -> str:
    """One line to read first: who had the least regret, and where BBB Thompson came."""
    agents = sorted(result["agents"].items(), key=lambda item: item[1]["mean"])
    best = agents[0][1]
    where = (
        "This run changed BBB Thompson only; the other agents are from the experiment's own "
        "run at the paper's settings. Least regret"
        if result.get("beside")
        else "Least regret in this run"
    )
    text = f"{where}: **{best['title']}** ({best['mean']:,.0f})."
    places = [name for name, _ in agents]
    if BANDIT_FEATURED in places and places[0] != BANDIT_FEATURED:
        bbb = result["agents"][BANDIT_FEATURED]
        text += (
            f" BBB Thompson came {places.index(BANDIT_FEATURED) + 1} of {len(places)} "
            f"({bbb['mean']:,.0f}); why, below."
        )
    return text


def ranking(result: dict) -> str:
    """One sentence ranking the agents of a result by final cumulative regret."""
    agents = sorted(result["agents"].values(), key=lambda a: a["mean"])
    parts = [f"{a['title']} {a['mean']:,.0f}" for a in agents]
    done = result["steps_done"]
    when = "Final" if done >= result["settings"]["steps"] else f"After {done:,} steps, the"
    return (
        f"{when} cumulative regret, mean over seeds, lowest first: {'; '.join(parts)}. "
        "The uniformly random agent would expect "
        f"{result['env']['random_regret_per_step'] * result['steps_done']:,.0f}."
    )
