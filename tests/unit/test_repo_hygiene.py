"""The repository tracks source, not the state of the machine that committed it.

A tracked ``.venv`` link once made every fresh clone fail at set-up while CI passed on the machine
whose temporary folder it pointed to. These tests read the index (``git ls-files -s``), so they
catch such files the moment they are staged, before any clone can break.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MACHINE_STATE_DIRS = (".venv", "data", ".cache")
MAX_TRACKED_BYTES = 5 * 1024 * 1024
LARGE_FILES_ALLOWED_UNDER = ("checkpoints/",)
SYMLINK_MODE = "120000"


def tracked_entries(root: Path) -> list[tuple[str, str]]:
    """``(mode, path)`` of every file in the git index of ``root``; skips outside a checkout."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot read the index")
    result = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-s", "-z"], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"{root} is not a git checkout: {result.stderr.strip()}")
    entries = []
    for record in result.stdout.split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            entries.append((meta.split()[0], path))
    return entries


def machine_state_problems(root: Path) -> list[str]:
    """One line per tracked file that belongs to a machine rather than to the project."""
    problems = []
    for mode, path in tracked_entries(root):
        if mode == SYMLINK_MODE:
            problems.append(f"{path}: symbolic link")
        if path.split("/")[0] in MACHINE_STATE_DIRS:
            problems.append(f"{path}: under {path.split('/')[0]}/, which is machine state")
        file = root / path
        if (
            not path.startswith(LARGE_FILES_ALLOWED_UNDER)
            and file.is_file()
            and not file.is_symlink()
            and file.stat().st_size > MAX_TRACKED_BYTES
        ):
            problems.append(f"{path}: {file.stat().st_size / 2**20:.1f} MB outside checkpoints/")
    return problems


def test_repository_tracks_no_machine_state():
    assert machine_state_problems(ROOT) == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def scratch_repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q")
    (tmp_path / "README.md").write_text("ok\n")
    _git(tmp_path, "add", "README.md")
    return tmp_path


def test_check_flags_a_staged_link(scratch_repo):
    assert machine_state_problems(scratch_repo) == []
    (scratch_repo / ".venv").symlink_to("/tmp/some-venv-of-another-machine")
    _git(scratch_repo, "add", ".venv")
    problems = machine_state_problems(scratch_repo)
    assert any(".venv: symbolic link" in p for p in problems)
    assert any("machine state" in p for p in problems)


def test_check_flags_data_cache_and_large_files(scratch_repo):
    (scratch_repo / "data").mkdir()
    (scratch_repo / "data" / "x.idx").write_bytes(b"1")
    (scratch_repo / ".cache").mkdir()
    (scratch_repo / ".cache" / "r.json").write_text("{}")
    (scratch_repo / "big.bin").write_bytes(b"\0" * (MAX_TRACKED_BYTES + 1))
    (scratch_repo / "checkpoints").mkdir()
    (scratch_repo / "checkpoints" / "model.pt").write_bytes(b"\0" * (MAX_TRACKED_BYTES + 1))
    _git(scratch_repo, "add", "-f", ".")
    problems = machine_state_problems(scratch_repo)
    assert sorted(p.split(":")[0] for p in problems) == [".cache/r.json", "big.bin", "data/x.idx"]
