"""Headless tests of the Bandits page: stored runs open at once, a short live run, pause and
resume, results cached by settings, the shared process state left alone."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from app.figures.bandits import format_seconds
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.store import (
    REFERENCES,
    cached_result,
    load_references,
    run_bandit,
    save_reference,
    truncated,
)

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "bandits.py")


@pytest.fixture(autouse=True)
def one_thread():
    """Run on one torch thread, as the CLI does: these networks are tiny, and on a busy
    2-core machine a second thread made each step 10-100× slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """Empty cache and stored-results folders."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path


@pytest.fixture
def stored(folders):
    """Two small stored reference runs: the mushroom and the wheel."""
    for config in (
        RunConfig(env="mushroom", agents=("bbb", "greedy", "random"), steps=40, seeds=2),
        RunConfig(env="wheel", delta=0.9, agents=("bbb", "lints"), steps=30, seeds=1),
    ):
        save_reference(run_bandit(config)[0])
    return folders


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def chart_count(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def test_stored_runs_open_without_computing(stored):
    at = run_page()
    assert at.title[0].value.startswith("Deciding under uncertainty")
    select = at.selectbox(key="bandit_reference")
    assert select.options == ["Mushroom, 40 steps × 2 seeds", "Wheel, δ = 0.9, 30 steps × 1 seed"]
    assert chart_count(at) == 3  # regret curves, BBB's posterior σ, the mushroom decisions
    assert any("mean standard deviation σ" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert set(table["agent"]) == {"BBB Thompson", "Greedy MLP", "Uniform random"}
    assert any("Blundell" in m.value for m in at.markdown)
    first = at.info[0].value  # read first: who won, and BBB's place
    assert first.startswith("Least regret in this run: **")
    assert "BBB Thompson came" in first or "**BBB Thompson**" in first
    assert "bandit_run" not in at.session_state  # nothing runs until Start

    select.set_value("wheel-0.9-30.json").run()
    assert not at.exception, at.exception
    assert chart_count(at) == 4  # regret, posterior σ, disk by arm, uncertainty map
    assert any("Riquelme" in m.value for m in at.markdown)


def test_projected_regret_table_shows_whole_numbers_without_decimals(stored):
    """Presenter mode's static table: regret reads "23", never "23.0000"."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception, at.exception
    assert at.table and not at.dataframe
    shown = at.table[0].proto.arrow_data.styler.display_values
    first = next(iter(load_references().values()))
    regret = round(first["agents"]["random"]["mean"])
    assert f"{regret:,}".encode() in shown
    assert b".0000" not in shown and b"None" not in shown


def test_without_stored_runs_the_page_says_so_without_a_command_line(folders):
    at = run_page()
    info = " ".join(i.value for i in at.info)
    assert "no stored long run" in info and "python -m core" not in info


def test_a_short_live_run_completes_and_is_cached(folders):
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    at = run_page()
    at.radio(key="bandit_env").set_value("wheel").run()
    at.slider(key="bandit_delta").set_value(0.8)
    at.multiselect(key="bandit_agents").set_value(["bbb", "greedy", "lints"])
    at.number_input(key="bandit_steps").set_value(50)
    at.number_input(key="bandit_seeds").set_value(1)
    at.button(key="bandit_start").click().run()
    assert not at.exception, at.exception
    assert at.session_state["bandit_state"] == "done"
    assert "bandit_run" not in at.session_state
    result = at.session_state["bandit_result"]
    assert result["steps_done"] == 50 and list(result["agents"]) == ["bbb", "greedy", "lints"]
    assert result["snapshot"]["agent"] == "bbb"
    config = RunConfig(env="wheel", delta=0.8, agents=("bbb", "greedy", "lints"), steps=50, seeds=1)
    assert cached_result(config) == result  # stored by its settings
    assert chart_count(at) == 4
    assert torch.get_num_threads() == threads  # the server's settings are left alone
    assert torch.equal(torch.get_rng_state(), rng)

    at.button(key="bandit_start").click().run()  # same settings: the stored result, at once
    assert not at.exception, at.exception
    assert at.session_state["bandit_state"] == "done"
    assert "bandit_run" not in at.session_state


def test_a_mushroom_run_shows_recent_decisions(folders):
    at = run_page()
    at.multiselect(key="bandit_agents").set_value(["bbb", "random"])
    at.number_input(key="bandit_steps").set_value(50)
    at.number_input(key="bandit_seeds").set_value(1)
    at.button(key="bandit_start").click().run()
    assert not at.exception, at.exception
    decisions = at.dataframe[-1].value
    assert len(decisions) == 16 and set(decisions["decision"]) <= {"eat", "pass"}
    assert set(decisions["mushroom"]) <= {"edible", "poisonous"}


def test_a_paused_run_shows_its_partial_result_and_resumes(folders):
    config = RunConfig(env="wheel", agents=("greedy", "random"), steps=60, seeds=1)
    run = BanditRun(config)
    run.advance(20)
    at = run_page(bandit_run=run, bandit_state="paused")
    assert any("Paused after 20 of 60 steps" in i.value for i in at.info)
    assert chart_count(at) == 3
    at.button(key="bandit_resume").click().run()
    assert not at.exception, at.exception
    at.run()  # the rerun after the click computes the rest
    assert not at.exception, at.exception
    assert at.session_state["bandit_state"] == "done"
    assert at.session_state["bandit_result"]["steps_done"] == 60

    run = BanditRun(config)
    run.advance(10)
    at = run_page(bandit_run=run, bandit_state="paused")
    at.button(key="bandit_stop").click().run()
    at.run()
    assert not at.exception, at.exception
    assert any("Stopped after 10 of 60 steps" in i.value for i in at.info)
    assert cached_result(config) is not None  # the finished run above; the stopped one is not
    assert at.session_state["bandit_state"] == "stopped"


def test_no_agent_disables_start(folders):
    at = run_page()
    at.multiselect(key="bandit_agents").set_value([]).run()
    assert at.button(key="bandit_start").disabled
    assert any("at least one agent" in w.value for w in at.warning)


def test_a_papers_protocol_is_listed_first_and_says_how_far_it_ran(stored):
    run = BanditRun(PROTOCOLS["blundell2015"].config)
    run.advance(2)
    save_reference(run.result())
    at = run_page()
    select = at.selectbox(key="bandit_reference")
    assert select.options[0] == (
        "Mushroom, 2 of 50,000 steps × 5 seeds: the experiment of Blundell et al. (2015), "
        "§5.3 and Figure 5"
    )
    assert select.value == "mushroom-50000-blundell2015.json"
    assert chart_count(at) == 2  # regret and the mushrooms (σ is recorded every 250 steps)
    table = at.dataframe[0].value  # the final regret beside what the paper found
    paper = dict(zip(table["agent"], table["Blundell et al. (2015), Figure 5"], strict=True))
    assert paper["BBB Thompson"].startswith("least regret of the four")
    assert paper["ε-greedy MLP, ε = 5 %"] == "more regret than BBB Thompson"
    assert any(m.value.startswith("After 2 steps, the cumulative regret") for m in at.markdown)


def test_a_bbb_only_ablation_is_shown_beside_the_protocols_other_agents(stored):
    protocol = PROTOCOLS["blundell2015"].config
    ablation = dataclasses.replace(
        protocol,
        agents=("bbb",),
        model=protocol.model.replace(prior_sigma1=0.13533528),
    )
    for config in (protocol, ablation):
        run = BanditRun(config)
        run.advance(2)
        save_reference(run.result())
    at = run_page(
        bandit_reference="mushroom-50000-blundell2015-agentsbbb-prior_sigma10.135335.json"
    )
    first = at.info[0].value
    assert first.startswith("This run changed BBB Thompson only")
    assert "BBB Thompson came" in first or "**BBB Thompson**" in first
    table = at.dataframe[0].value
    assert set(table["agent"]) == {
        "BBB Thompson",
        "Greedy MLP (the paper's settings)",
        "ε-greedy MLP, ε = 1 % (the paper's settings)",
        "ε-greedy MLP, ε = 5 % (the paper's settings)",
    }
    ablated = at.dataframe[0].value.set_index("agent")["cumulative regret (mean)"]["BBB Thompson"]
    bbb_alone = BanditRun(ablation)
    bbb_alone.advance(2)
    assert ablated == round(bbb_alone.result()["agents"]["bbb"]["mean"], 1)

    at.selectbox(key="bandit_reference").set_value("mushroom-50000-blundell2015.json").run()
    assert not at.exception, at.exception
    assert at.info[0].value.startswith("Least regret in this run: **")
    assert "(the paper's settings)" not in " ".join(at.dataframe[0].value["agent"])


def test_an_unfinished_bbb_only_ablation_is_shown_beside_the_protocols_same_steps(folders):
    """A stored ablation stopped at step 10,000 meets the protocol's other agents at 10,000."""

    shipped = ROOT / "checkpoints" / "results" / "bandit_references"
    REFERENCES.folder.mkdir(parents=True)
    shutil.copy(shipped / "mushroom-50000-blundell2015.json", REFERENCES.folder)
    name = "mushroom-50000-blundell2015-agentsbbb-kl_dataseen.json"
    stopped = truncated(json.loads((shipped / name).read_text()), 10_000)
    REFERENCES.save(name, stopped)
    at = run_page(bandit_reference=name)
    select = at.selectbox(key="bandit_reference")
    assert select.value == name
    assert select.options[1].startswith("Mushroom, 10,000 of 50,000 steps × 5 seeds")
    table = at.dataframe[0].value.set_index("agent")["cumulative regret (mean)"]
    protocol = load_references()["mushroom-50000-blundell2015.json"]["agents"]
    greedy = sum(curve[39] for curve in protocol["greedy"]["curves"]) / 5  # step 10,000
    assert table["Greedy MLP (the paper's settings)"] == round(greedy, 1)
    assert round(greedy) == 2_781  # docs/experiments/bandits.md's table at step 10,000
    assert table["BBB Thompson"] == round(stopped["agents"]["bbb"]["mean"], 1)
    assert any(m.value.startswith("After 10,000 steps, the cumulative regret") for m in at.markdown)


def test_a_finished_runs_link_shows_its_result_at_once_with_its_size_and_time(folders):
    config = RunConfig(env="mushroom", agents=("bbb", "greedy", "eps5"), steps=50, seeds=2)
    stored = run_bandit(config)[0]  # run before, e.g. by the teacher before class
    at = AppTest.from_file(PAGE, default_timeout=120)
    link = {"bandit_env": "mushroom", "bandit_agents": "bbb,greedy,eps5", "bandit_steps": "50"}
    at.query_params.update(link)  # a fresh browser opening the link: nothing pressed
    at.run()
    assert not at.exception, at.exception
    assert "bandit_run" not in at.session_state  # nothing computes
    assert chart_count(at) == 3  # the stored run's regret, BBB's σ, the mushroom decisions
    table = at.dataframe[0].value
    assert set(table["agent"]) == {"BBB Thompson", "Greedy MLP", "ε-greedy MLP, ε = 5 %"}
    size = "50 steps × 2 seeds of 3 agents (BBB Thompson; Greedy MLP; ε-greedy MLP, ε = 5 %)"
    took = f"{format_seconds(stored['seconds'])} of compute on 1 CPU thread"
    assert any(c.value.startswith(f"{size}: {took}") for c in at.caption), [
        c.value for c in at.caption
    ]
    assert not any("few seconds" in c.value or "four agents" in c.value for c in at.caption)

    at.query_params["bandit_seed"] = "1"  # a fresh run's link: its size, before Start
    at.run()
    assert chart_count(at) == 0
    assert any(c.value.startswith(f"Press Start: {size}, computed live") for c in at.caption)
