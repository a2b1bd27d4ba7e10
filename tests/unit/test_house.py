"""The house keeps product, stored results, lab notebook and tools apart: the lab never reads
the notebook, the tools never import the tests, and benchmarks/ holds tools only."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = ("core", "app", "pages")
TOOLS = ("benchmarks", "scripts", "examples", "harness")
NOTEBOOK = ROOT / "notebook"


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def names_folder(text: str, folder: str) -> bool:
    """Whether a source names a top-level folder: as a path (``notebook/...``) or as a name in
    quotes (``"notebook"``, ``/ "notebook" /``)."""
    return re.search(rf"""\b{folder}[/\\]|["']{folder}["']""", text) is not None


def test_the_check_finds_a_module_that_names_the_notebook():
    assert names_folder('PATH = REPO_ROOT / "notebook" / "active"', "notebook")
    assert names_folder("json.loads(Path('notebook/bandits/x.json').read_text())", "notebook")
    assert not names_folder("a lab notebook of ablations is never read", "notebook")


def test_no_module_of_the_lab_names_the_notebook_or_reads_from_the_tools():
    """The lab reads stored results through core.storage.results, never the notebook, and
    benchmarks/ holds only the tools."""
    offenders = [
        f"{p.relative_to(ROOT)}: {folder}"
        for p in sources(*LAB)
        for folder in ("notebook", "benchmarks")
        if names_folder(p.read_text(), folder)
    ]
    assert offenders == []


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_tool_imports_the_tests():
    offenders = [
        str(p.relative_to(ROOT))
        for p in sources(*TOOLS, *LAB)
        if any(m == "tests" or m.startswith("tests.") for m in imported_modules(p))
    ]
    assert offenders == []


def test_benchmarks_holds_tools_and_the_notebook_says_what_its_runs_are():
    kept = [p for p in (ROOT / "benchmarks").iterdir() if p.name != "__pycache__"]
    assert kept and [p.name for p in kept if not (p.is_file() and p.suffix == ".py")] == []
    folders = [NOTEBOOK, *(p for p in NOTEBOOK.iterdir() if p.is_dir())]
    assert len(folders) > 1
    for folder in folders:
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.relative_to(ROOT)} has no README"
        assert len(readme.read_text().split()) > 20


@pytest.mark.parametrize(
    "script",
    sources("benchmarks", "scripts"),
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_every_tool_still_imports_what_it_uses(script):
    """A tool that names a moved or renamed function fails here, not when someone runs it."""
    spec = importlib.util.spec_from_file_location(f"tool_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the tools run their work under __main__ only
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
