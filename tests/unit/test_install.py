"""The lab installs as a package (``pip install -e .``): the wheel that pyproject.toml describes
holds core and app with core's data files and the ``bnn-lab`` command, and ``bnn-lab`` runs the
lab's command line and starts the app."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import app.serve
from app import cli
from core import cli as core_cli

ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCES = {".git", ".venv", "data", "checkpoints", ".cache", "build", "site", ".pytest_cache"}
"""Top-level folders the wheel's build does not need (large, or made by a run or a build)."""


def ignored(folder: str, names: list[str]) -> set[str]:
    """:func:`shutil.copytree`'s filter: caches anywhere, :data:`NOT_SOURCES` at the top."""
    top = Path(folder) == ROOT
    return {
        n
        for n in names
        if n == "__pycache__" or n.endswith((".pyc", ".egg-info")) or (top and n in NOT_SOURCES)
    }


def setuptools_version() -> tuple[int, ...] | None:
    """The installed setuptools' (major, minor), or None when it is not installed."""
    try:
        return tuple(int(part) for part in metadata.version("setuptools").split(".")[:2])
    except metadata.PackageNotFoundError:
        return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel of a copy of the checkout, built as ``pip wheel --no-deps`` builds it."""
    version = setuptools_version()
    if version is None or version < (70, 1):
        pytest.skip(f"needs setuptools >= 70.1 to build without isolation (found {version})")
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy, so the build's folders stay out of the checkout
    shutil.copytree(ROOT, source, ignore=ignored)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", "-q", "-w", str(tmp / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (path,) = (tmp / "dist").glob("bnn_lab-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_core_and_app_with_core_data_files(wheel):
    names = set(wheel.namelist())
    for package in ("core", "app"):
        files = [p for p in (ROOT / package).rglob("*") if p.is_file()]
        shipped = {
            p.relative_to(ROOT).as_posix()
            for p in files
            if "__pycache__" not in p.parts and p.suffix != ".pyc"
        }
        assert shipped - names == set(), f"{package}: files the wheel lacks"
    data = {n for n in names if n.startswith("core/") and not n.endswith(".py")}
    assert {
        "core/bandits/data/agaricus-lepiota.data.gz",
        "core/bandits/kernel/tiny_mlp.c",
        "core/engine/native/sample_kl.c",
        "core/engine/native/common.h",
    } <= data
    tops = {n.split("/")[0] for n in names if not n.startswith("bnn_lab-")}
    assert tops == {"core", "app"}  # not tests/, pages/, benchmarks/ or scripts/


def test_the_wheel_declares_the_bnn_lab_command_and_the_pinned_requirements(wheel):
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(info).decode())
    assert dict(entry_points["console_scripts"]) == {"bnn-lab": "app.cli:main"}
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    requires = {
        line.removeprefix("Requires-Dist: ")
        for line in wheel.read(meta).decode().splitlines()
        if line.startswith("Requires-Dist: ")
    }
    pins = {
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert requires == pins


def test_bnn_lab_runs_a_command_as_python_m_core_does(capsys):
    assert core_cli.main(["list"]) == 0
    expected = capsys.readouterr().out
    assert cli.main(["list"]) == 0
    assert capsys.readouterr().out == expected
    assert expected.strip()


def test_bnn_lab_names_itself_in_errors_and_help(capsys):
    assert cli.main(["no-such-command"]) == 2
    assert capsys.readouterr().err.startswith("bnn-lab: error: argument command")
    assert cli.main(["--help"]) == 0
    assert "bnn-lab serve" in capsys.readouterr().out


def test_bnn_lab_serve_starts_the_app_with_its_options(monkeypatch, capsys):
    started = []
    monkeypatch.setattr(app.serve, "main", started.append)
    assert cli.main(["serve", "--server.port=8502"]) == 0
    assert started == [["--server.port=8502"]]
    assert cli.main(["serve", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: bnn-lab serve")
    assert len(started) == 1  # help starts nothing
