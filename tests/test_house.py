"""The house keeps product, stored results, lab notebook and tools apart: the lab never reads
the notebook, the tools never import the tests, and benchmarks/ holds tools only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAB = ("core", "app", "pages")
TOOLS = ("benchmarks", "scripts", "examples", "harness")
NOTEBOOK = ROOT / "notebook"


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def names_the_notebook(text: str) -> bool:
    """Whether a source names the notebook folder: as a path (``notebook/...``) or as a name
    in quotes (``"notebook"``, ``/ "notebook" /``)."""
    return re.search(r"""\bnotebook[/\\]|["']notebook["']""", text) is not None


def test_the_check_finds_a_module_that_names_the_notebook():
    assert names_the_notebook('PATH = REPO_ROOT / "notebook" / "active"')
    assert names_the_notebook("json.loads(Path('notebook/bandits/x.json').read_text())")
    assert not names_the_notebook("a lab notebook of ablations is never read")


def test_no_module_of_the_lab_names_the_notebook():
    offenders = [
        str(p.relative_to(ROOT)) for p in sources(*LAB) if names_the_notebook(p.read_text())
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
