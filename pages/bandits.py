"""Bandits page: an agent that must decide, exploring by Thompson sampling with a BBB reward
model, against greedy and ε-greedy networks, on Blundell's mushroom bandit and Riquelme's wheel.
Stored long runs open at once; short runs grow live, with pause and stop."""

import math
from collections.abc import Callable
from typing import Any

import streamlit as st
import torch

from app import share
from app.figures import show_figure, show_table
from app.figures.bandits import (
    final_rows,
    format_seconds,
    mushroom_decisions_figure,
    regret_figure,
    sigma_figure,
    wheel_decisions_figure,
    wheel_uncertainty_figure,
)
from core.bandits.agents import AGENTS
from core.bandits.environments import MushroomBandit
from core.bandits.live import LIVE_AGENTS, LIVE_DELTA, LIVE_SEED, LIVE_SEEDS, LIVE_STEPS
from core.bandits.protocols import PROTOCOLS, protocol_ablation
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.store import (
    beside_protocol,
    cached_result,
    changed_settings,
    load_references,
    store_result,
)
from core.data import DatasetUnavailable
from core.progress import compute_slot

RUN_KEY = "bandit_run"  # this session's BanditRun in progress
STATE_KEY = "bandit_state"  # "running", "paused", "stopped" or "done"
RESULT_KEY = "bandit_result"  # the result shown below the controls
MAX_STEPS = 3000
MAX_SEEDS = 3
CHUNK_STEPS = 25  # steps between redraws (about 0.2-0.5 s on a 2-core CPU)
SNAPSHOT_EVERY = 4  # chunks between snapshots (the wheel's map costs ~0.2 s)
LIVE_SLOTS = 2  # live runs computing at once on this server

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


# Reward-model setting → its changed value (in the run's settings) in a student's words. (A
# comment, not a docstring: Streamlit's magic writes a page script's bare strings on the page.)
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


def likelihood_words(noise_sigma: float, config: RunConfig) -> str:
    """BBB's likelihood σ in reward units (the networks see rewards divided by the scale, or
    standardised: divided by their spread)."""
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
    """A changed reward-model setting of the run ``config`` in a student's words (``key =
    value`` for the rest)."""
    words = SETTING_WORDS.get(key)
    return words(value, config) if words else f"{key} = {value}"


def in_word_order(changed: dict) -> list[tuple[str, Any]]:
    """Changed settings in the order of :data:`SETTING_WORDS` (the others after them)."""
    order = list(SETTING_WORDS)
    return sorted(changed.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)


def run_title(result: dict) -> str:
    """``Mushroom, 50,000 steps × 2 seeds`` and any non-default model setting, or the paper
    whose experiment it is; an unfinished run says how far it got."""
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
    """Whether BBB Thompson beat the ε-greedy agents in this result, in one sentence ("" if
    either is missing), and what to look at when it did not."""
    agents = result["agents"]
    others = [agents[n] for n in ("eps1", "eps5", "greedy") if n in agents]
    if "bbb" not in agents or not others:
        return ""
    bbb = agents["bbb"]["mean"]
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
    runs = [run for run in result["agents"]["bbb"].get("sigma", []) if run]
    if random and agents["bbb"]["per_step"] > 0.5 * random:
        text += (
            f" It hardly learned which mushrooms to eat: {agents['bbb']['per_step']:.2f} regret "
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
    if "bbb" in places and places[0] != "bbb":
        bbb = result["agents"]["bbb"]
        text += (
            f" BBB Thompson came {places.index('bbb') + 1} of {len(places)} "
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


def show_snapshot(result: dict, key: str) -> None:
    """The snapshot of the result's agent: the wheel's disk and map, or recent mushrooms."""
    snapshot = result.get("snapshot")
    if not snapshot:
        return
    agent = AGENTS[snapshot["agent"]].title
    delta = result["settings"].get("delta")
    step = f"after {snapshot['step']:,} steps, seed {snapshot['seed']}"
    st.markdown(f"**{agent}** {step}:")
    if "grid" in snapshot:
        left, right = st.columns(2)
        with left:
            show_figure(
                wheel_decisions_figure(
                    snapshot,
                    result["env"]["actions"],
                    delta,
                    f"last {len(snapshot['points'])} contexts, by chosen arm",
                ),
                key=f"{key}_disk",
            )
        with right:
            show_figure(
                wheel_uncertainty_figure(snapshot, delta, "std", "uncertainty over the disk"),
                key=f"{key}_map",
            )
        st.caption(
            "Left: where the agent's recent contexts fell and which arm it pulled (outside the "
            "dashed circle the quadrant's arm pays 50, inside the safe arm's 1.2 is best). "
            "Right: the standard deviation, over 32 posterior draws, of the reward the agent "
            "predicts for the arm of each point's quadrant — where it is still unsure whether "
            "that arm pays."
        )
        return
    show_figure(
        mushroom_decisions_figure(snapshot, "the last mushrooms"),
        key=f"{key}_mushrooms",
    )
    show_table(
        [
            {
                "step": d["step"],
                "mushroom": "edible" if d["edible"] else "poisonous",
                "decision": d["action"],
                "regret": d["regret"],
                "eat − pass (mean)": round(d["eat_advantage_mean"], 2),
                "eat − pass (std)": round(d["eat_advantage_std"], 2),
                "draws that eat": f"{d['eat_fraction']:.0%}",
            }
            for d in reversed(snapshot["decisions"])
        ]
    )
    st.caption(
        "For each recent mushroom: the agent's decision then, and now the spread over 32 "
        "posterior draws of its predicted reward of eating minus passing. Thompson sampling "
        "eats when one draw says eating pays more, so a wide spread across zero means it "
        "is still exploring that kind of mushroom."
    )


def show_result(result: dict, key: str, title: str = "") -> None:
    """Regret curves, the final table, the posterior's width and the snapshot of one result."""
    show_figure(regret_figure(result, title), key=f"{key}_regret")
    show_table(final_rows(result))
    sigma = sigma_figure(result)
    if sigma is not None:
        show_figure(sigma, key=f"{key}_sigma")
        st.caption(
            "How wide the reward network's posterior is: the mean standard deviation σ of its "
            "weights. Thompson sampling explores as much as this spread lets its draws "
            "disagree; a σ that grows late in the run means the agent explores more, not less."
        )
    show_snapshot(result, key)


def reference_section() -> None:
    st.subheader("Long runs")
    references = load_references()
    if not references:
        st.info(
            "This copy of the lab has no stored long run (the documentation's bandit section "
            "says how to compute them). The live run above works."
        )
        return
    name = share.selectbox(
        "Stored run",
        list(references),
        format_func=lambda n: run_title(references[n]),
        key="bandit_reference",
    )
    result = beside_protocol(references[name], references)
    st.info(lead(result))
    show_result(result, "bandit_reference")
    st.markdown(ranking(result))
    with st.expander("What the papers found, and what this run shows"):
        st.markdown(FINDINGS[result["settings"]["env"]] + " " + bbb_verdict(result))
    st.caption(
        f"Computed in {format_seconds(result['seconds'])} on {computed_on(result)} and stored "
        "with the lab. Lines: mean over seeds; bands: the range over seeds."
    )


def computed_on(result: dict) -> str:
    """Where a result was computed: "a GPU", "1 CPU thread of an Intel Xeon ..."."""
    threads = result.get("threads", "?")
    if result.get("device", "cpu").startswith("cuda"):
        return "a GPU"
    where = f"{threads} CPU thread{'' if threads == 1 else 's'}"
    return where + (f" of an {result['processor']}" if result.get("processor") else "")


def run_words(config: RunConfig) -> str:
    """A live run's size in words: "1,000 steps × 2 seeds of 3 agents (BBB Thompson; ...)"."""
    seeds = f"{config.seeds} seed{'' if config.seeds == 1 else 's'}"
    agents = "; ".join(AGENTS[n].title for n in config.agents)
    count = len(config.agents)
    return (
        f"{config.steps:,} steps × {seeds} of {count} agent{'' if count == 1 else 's'} ({agents})"
    )


def settings_form() -> RunConfig | None:
    """The live run's widgets; the configuration they describe (None if invalid)."""
    cols = st.columns([2, 2, 3])
    env = share.radio(
        "Environment",
        ("mushroom", "wheel"),
        format_func=str.capitalize,
        horizontal=True,
        key="bandit_env",
        container=cols[0],
    )
    delta = share.slider(
        "Wheel's δ",
        0.5,
        0.99,
        LIVE_DELTA,
        0.01,
        key="bandit_delta",
        disabled=env != "wheel",
        help="Radius of the inner region; the quadrant arms pay 50 only outside it.",
        container=cols[1],
    )
    offered = [n for n in AGENTS if env == "wheel" or n != "lints"]
    agents = share.multiselect(
        "Agents",
        offered,
        default=list(LIVE_AGENTS),
        format_func=lambda n: AGENTS[n].title,
        key="bandit_agents",
        container=cols[2],
    )
    cols = st.columns(3)
    steps = share.number_input(
        "Steps", 50, MAX_STEPS, LIVE_STEPS, 50, key="bandit_steps", container=cols[0]
    )
    seeds = share.number_input(
        "Seeds", 1, MAX_SEEDS, LIVE_SEEDS, key="bandit_seeds", container=cols[1]
    )
    seed = share.number_input(
        "Base seed", 0, 1_000_000, LIVE_SEED, key="bandit_seed", container=cols[2]
    )
    if not agents:
        st.warning("Choose at least one agent.")
        return None
    return RunConfig(
        env=env,
        delta=delta,
        agents=tuple(agents),
        steps=int(steps),
        seeds=int(seeds),
        seed=int(seed),
    )


def start(config: RunConfig) -> None:
    """Begin a run with ``config``, or show its cached result at once."""
    st.session_state.pop(RUN_KEY, None)
    cached = cached_result(config)
    if cached is not None:
        st.session_state[RESULT_KEY] = cached
        st.session_state[STATE_KEY] = "done"
        st.toast("These settings were run before: the stored result is shown.")
        return
    try:
        st.session_state[RUN_KEY] = BanditRun(config)
    except DatasetUnavailable as exc:
        st.error("The mushroom data is unavailable.")
        st.text(str(exc))
        return
    st.session_state[STATE_KEY] = "running"
    st.session_state.pop(RESULT_KEY, None)


def controls(config: RunConfig | None) -> None:
    """Start, pause/resume and stop buttons; they set this session's run state."""
    state = st.session_state.get(STATE_KEY)
    run = st.session_state.get(RUN_KEY)
    cols = st.columns(3)
    if cols[0].button("Start", type="primary", disabled=config is None, key="bandit_start"):
        start(config)
        state = st.session_state.get(STATE_KEY)
    change = None
    if state == "running":
        if cols[1].button("Pause", key="bandit_pause"):
            change = "paused"
    elif state == "paused" and run is not None:
        if cols[1].button("Resume", key="bandit_resume"):
            change = "running"
    if state in ("running", "paused") and cols[2].button("Stop", key="bandit_stop"):
        change = "stopped"
    if change is not None:
        st.session_state[STATE_KEY] = change
        st.rerun()  # redraw the buttons for the new state


def live(run: BanditRun) -> None:
    """Advance this session's run chunk by chunk, redrawing as it grows, until it ends, the
    user pauses or stops it (a click interrupts between chunks), or no live slot is free."""
    with compute_slot("live bandit runs", LIVE_SLOTS) as held:
        if not held:
            st.session_state[STATE_KEY] = "paused"
            st.info(
                f"{LIVE_SLOTS} live runs are computing on this server right now; press Resume "
                "in a moment."
            )
            return
        bar = st.progress(run.step / run.config.steps, "Running…")
        area = st.empty()
        snapshot, chunk = None, 0
        while not run.done:
            run.advance(CHUNK_STEPS)
            if chunk % SNAPSHOT_EVERY == 0 or run.done:
                snapshot = run.snapshot()
            chunk += 1
            result = run.result(with_snapshot=False) | {"snapshot": snapshot}
            left = run.seconds * (run.config.steps - run.step) / max(run.step, 1)
            bar.progress(
                run.step / run.config.steps,
                f"step {run.step:,} of {run.config.steps:,} ({format_seconds(run.seconds)}, "
                f"about {format_seconds(left)} left)",
            )
            with area.container():
                show_result(result, f"bandit_live_{run.step}", run_title(result))
    bar.empty()
    area.empty()
    st.session_state[RESULT_KEY] = store_result(run)
    st.session_state[STATE_KEY] = "done"
    st.session_state.pop(RUN_KEY, None)
    st.rerun()  # redraw the controls for the finished run


def live_section() -> None:
    st.subheader("Run it live")
    st.markdown(
        "Each agent chooses with a reward network (context ⊕ one-hot action → 100 → 100 → "
        "reward) trained online on its most recent 4,096 interactions. **BBB Thompson** draws "
        "one network from its posterior per decision, **MC-dropout** one dropout mask, the "
        "**ensemble** one of its 5 members; **greedy** takes the best predicted action, "
        "**ε-greedy** a random one with probability ε; **linear Thompson** (wheel) is exact "
        "Bayesian linear regression per arm. Regret is the exact *expected* regret of each "
        "choice. Runs are short here; the long ones are above."
    )
    config = settings_form()
    threads = torch.get_num_threads()
    if threads > 1:
        st.caption(
            f"This server runs torch with {threads} threads. These networks are tiny: on a "
            "busy machine one thread is several times faster (start the app with "
            "BNN_TORCH_THREADS=1); the page never changes the setting, which all sessions share."
        )
    controls(config)
    state = st.session_state.get(STATE_KEY)
    run: BanditRun | None = st.session_state.get(RUN_KEY)
    if state == "running" and run is not None:
        live(run)
        state = st.session_state.get(STATE_KEY)
    result = st.session_state.get(RESULT_KEY)
    if run is not None and state in ("paused", "stopped"):
        result = run.result()
        word = "Paused" if state == "paused" else "Stopped"
        st.info(f"{word} after {run.step:,} of {run.config.steps:,} steps.")
    elif config is not None and (result is None or result["settings"] != config.to_dict()):
        result = cached_result(config) or result  # these settings' run, finished before
    if result is None:
        st.caption(
            f"Press Start: {run_words(config)}, computed live on this server, the curves "
            f"growing every {CHUNK_STEPS} steps. A finished run is stored by its settings, so "
            "the same settings (and this page's link) show it at once next time."
            if config is not None
            else "Choose the agents, then press Start."
        )
        return
    if config is not None and result["settings"] != config.to_dict():
        st.caption("The run below used other settings than the ones above.")
    show_result(result, "bandit_result", run_title(result))
    shown = RunConfig.from_dict(result["settings"])
    done = result["steps_done"] >= shown.steps
    st.caption(
        f"{run_words(shown)}: {format_seconds(result['seconds'])} of compute on "
        f"{computed_on(result)}"
        + (", stored: these settings show it at once. " if done else ". ")
        + "Lines: mean over seeds; bands: the range over seeds."
    )


st.title("Deciding under uncertainty: contextual bandits")
st.markdown(
    "Why would a network want to be uncertain? Because an agent that **decides** must also "
    "**explore**: it only learns the reward of the actions it tries. *Thompson sampling* "
    "draws one plausible world from the posterior and acts as if it were true, so it tries an "
    "action exactly as often as it might be the best one. With a Bayes-by-Backprop reward "
    "model (Blundell et al. 2015) that posterior is over the network's weights. A greedy "
    "network never doubts itself; ε-greedy explores blindly, forever."
)
reference_section()
live_section()
