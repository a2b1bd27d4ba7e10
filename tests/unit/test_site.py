"""The documentation site builds with ``--strict`` (no broken link, no page outside the nav, no
docstring griffe cannot read), and its API reference is generated from core's docstrings: a page
per package of ``core``, each in the nav, with each function's arguments and returns."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.docstring_roles import plain

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
UNDOCUMENTED = {"cli"}  # the command line has its own page, docs/cli.md


def nav_files(entries: list) -> list[str]:
    """Every page file of a nav (mkdocs.yml), depth first."""
    files = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            files += nav_files(value) if isinstance(value, list) else [value]
    return files


def text_of(page: Path) -> str:
    """A built page's visible text, one space between words."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


def test_every_package_of_core_has_an_api_page_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = nav_files(config["nav"])
    packages = {p.parent.name for p in (ROOT / "core").glob("*/__init__.py")} - UNDOCUMENTED
    assert {p.stem for p in API.glob("*.md")} == packages | {"index", "core"}
    for name in packages:
        assert f"::: core.{name}" in (API / f"{name}.md").read_text()
        assert f"api/{name}.md" in nav
        assert f"({name}.md)" in (API / "index.md").read_text()


def test_sphinx_roles_read_as_code():
    text = "Calls :func:`~core.data.load_dataset` on a :class:`Tensor` (:data:`X`)."
    assert plain(text) == "Calls `load_dataset` on a `Tensor` (`X`)."


@pytest.mark.slow
def test_the_site_builds_strictly_with_the_api_reference(tmp_path):
    if importlib.util.find_spec("mkdocstrings") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocstrings is missing; CI must install requirements-docs.txt")
        pytest.skip("mkdocstrings is missing: pip install -r requirements-docs.txt")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    storage = text_of(site / "api" / "storage" / "index.html")
    # a class, its method, its arguments and returns, as the docstring states them
    assert "StoredResults" in storage and "load_all" in storage
    assert "A glob pattern of file names" in storage
    assert "File name → decoded JSON, by name" in storage
    assert ":func:" not in storage and ":class:" not in storage  # roles shown as code
    data = text_of(site / "api" / "data" / "index.html")
    assert "load_dataset" in data and "DatasetUnavailable" in data
