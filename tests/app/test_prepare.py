"""Prepare for class: the guide's links, the registry that covers them, and a prepared link that
its page then opens without computing (``python -m core prepare``, the teacher's button)."""

from __future__ import annotations

import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import core.studies.evaluations
from app.ui import MODELS_KEY
from core.bandits.live import (
    LIVE_AGENTS,
    LIVE_DELTA,
    LIVE_ENV,
    LIVE_SEED,
    LIVE_SEEDS,
    LIVE_STEPS,
    link_config,
)
from core.bandits.runner import RunConfig
from core.cli import main
from core.jobs.owners import Visitor
from core.paths import REPO_ROOT
from core.prepare import (
    PREPARERS,
    PreparationRun,
    guide_url,
    link_jobs,
    prepare,
    problems,
    read_guide,
)
from core.stated.guide import GUIDE, GuideLink, guide_links

TINY = "http://localhost:8501/ood?sidebar_models=mlp&ood_dataset=font_letters&ood_subset=20&ood_samples=10"
"""A link whose evaluations take a second: one MLP, 20 inputs a side, 10 passes."""


def parse_link(url: str) -> GuideLink:
    """A link as the guide writes it (in backticks), read as the guide's links are."""
    (link,) = guide_links(f"`{url}`")
    return link


def test_a_link_is_split_into_its_page_and_settings_and_written_back_as_it_was():
    url = "http://localhost:8501/ood?present=1&ood_dataset=notmnist&hide=a,b"
    link = parse_link(url)
    assert link.route == "ood"
    assert link.query == {"present": "1", "ood_dataset": "notmnist", "hide": "a,b"}
    assert guide_url(link) == url
    assert guide_url(parse_link("http://localhost:8501/?present=1")) == (
        "http://localhost:8501/?present=1"
    )


def test_the_guide_links_are_read_once_each_in_order(tmp_path):
    links = read_guide()
    urls = [guide_url(link) for link in links]
    assert len(urls) == len(set(urls)) >= 20
    assert urls[0].startswith("http://localhost:8501/draw?present=1")
    routes = {link.route for link in links}
    assert {"home", "draw", "ood", "pruning", "regression", "bandits", "classroom"} <= routes
    guide = tmp_path / "guide.md"
    guide.write_text("`http://localhost:8501/?present=1` twice: `http://localhost:8501/?present=1`")
    assert len(read_guide(guide)) == 1


def test_every_link_of_the_teachers_guide_has_a_preparer_that_understands_it():
    assert problems(read_guide(GUIDE)) == []


def test_a_page_without_preparer_or_an_unknown_setting_is_named(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text(
        "`http://localhost:8501/nowhere?present=1` and\n"
        "`http://localhost:8501/ood?present=1&ood_dataset=notmnist&ood_colour=red`\n"
    )
    found = problems(read_guide(guide))
    assert len(found) == 2
    assert "no preparer for the page 'nowhere'" in found[0]
    assert found[1].endswith("ood_colour not understood")


def test_live_settings_need_nothing_and_stored_views_have_no_work():
    assert link_jobs(parse_link("http://localhost:8501/train?train_epochs=3")) == []
    assert link_jobs(parse_link("http://localhost:8501/bandits?present=1")) == []
    assert set(PREPARERS) >= {"home", "draw", "ood", "pruning", "regression", "bandits"}


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BNN_CACHE_DIR", str(cache))
    st.cache_data.clear()
    st.cache_resource.clear()
    return cache


def test_a_prepared_link_opens_without_computing(empty_cache, monkeypatch):
    link = parse_link(TINY)
    assert len(link_jobs(link)) == 2  # MNIST and font letters, for the MLP
    messages = []
    outcome = prepare([link], progress=lambda f, m: messages.append((f, m)))
    assert [(r.jobs, r.skipped) for r in outcome.links] == [(2, "")]
    assert messages[-1] == (1.0, "done") and not outcome.stopped
    assert link_jobs(link) == []
    assert prepare([link]).links[0].cached

    def computing(*args, **kwargs):
        raise AssertionError("the page computed an evaluation that prepare had stored")

    monkeypatch.setattr(core.studies.evaluations, "_compute", computing)
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "ood.py"), default_timeout=300)
    at.session_state[MODELS_KEY] = ["mlp"]  # the sidebar's (app/main.py draws it)
    for name, value in link.query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, at.exception
    assert "Font letters" in " ".join(s.value for s in at.subheader)


def test_a_stop_ends_the_preparation_before_the_next_piece(empty_cache):
    link = parse_link(TINY)
    outcome = prepare([link], should_stop=lambda: True)
    assert outcome.stopped and outcome.links == []
    assert len(link_jobs(link)) == 2  # nothing computed


def test_the_command_prints_one_line_per_link_and_json(empty_cache, tmp_path, capsys):
    guide = tmp_path / "guide.md"
    guide.write_text(f"Step one: `{TINY}`; again `{TINY}`; and `http://localhost:8501/?present=1`")
    assert main(["prepare", "--guide", str(guide), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["jobs"], r["cached"]) for r in out["links"]] == [(2, False), (0, True)]
    assert main(["prepare", "--guide", str(guide)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "already cached" in lines[0] and lines[-1].startswith("2 links prepared")
    assert main(["prepare", "--guide", str(tmp_path / "missing.md")]) == 1
    assert main(["prepare", "--threads", "-1"]) == 2


def test_the_background_run_is_the_teachers_and_reports_each_link(empty_cache, tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text(f"`{TINY}`")
    run = PreparationRun()
    with pytest.raises(PermissionError, match="only the teacher can prepare the lab for class"):
        run.start(Visitor(id="student"), guide)
    assert run.start(Visitor(teacher=True), guide)
    run.join(120)
    state = run.state()
    assert not state.running and state.fraction == 1.0 and state.total == 1
    assert [link.jobs for link in state.links] == [2] and not state.error


def test_a_links_live_bandit_run_is_the_pages_defaults_with_the_links_settings():
    assert link_config({"bandit_reference": "mushroom-50000.json"}) is None
    assert link_config({"bandit_seed": "0"}) == RunConfig(
        env=LIVE_ENV,
        delta=LIVE_DELTA,
        agents=LIVE_AGENTS,
        steps=LIVE_STEPS,
        seeds=LIVE_SEEDS,
        seed=LIVE_SEED,
    )
    link = {"bandit_agents": "bbb,greedy", "bandit_steps": "100", "present": "1"}
    config = link_config(link)
    assert config.agents == ("bbb", "greedy") and config.steps == 100
    assert config.seeds == LIVE_SEEDS and config.env == LIVE_ENV
