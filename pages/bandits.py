"""Bandits page: an agent that must decide, exploring by Thompson sampling with a BBB reward
model, against greedy and ε-greedy networks, on Blundell's mushroom bandit and Riquelme's wheel.
Stored long runs open at once; short runs grow live, with pause and stop."""

import streamlit as st
import torch

from app import share
from app.bandit_words import FINDINGS, bbb_verdict, lead, ranking, run_title
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
from core.bandits.live import LIVE_AGENTS, LIVE_DELTA, LIVE_SEED, LIVE_SEEDS, LIVE_STEPS
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.store import (
    beside_protocol,
    cached_result,
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
