"""A fresh clone's first visit computes nothing: every page's default view reads the results
that ship with the lab (``scripts/ship_results.py``, ``core.storage.cache.SHIPPED_DIR``)."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app.main import PAGES
from core.paths import REPO_ROOT


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.file.removesuffix(".py"))
def test_a_first_visit_computes_nothing(page, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BNN_CACHE_DIR", str(cache))
    st.cache_data.clear()  # results other tests left in memory would hide a missing file
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=300)
    at.run()  # the home page, then the page as a visitor's click opens it
    at.switch_page(f"../pages/{page.file}").run()
    assert not at.exception, at.exception
    computed = sorted(
        str(p.relative_to(cache))
        for p in cache.rglob("*")
        if p.is_file() and "native" not in p.relative_to(cache).parts
    )
    assert computed == [], (
        f"the {page.title} page computed {computed} on a first visit: "
        "run scripts/ship_results.py (after promoting a checkpoint)"
    )
