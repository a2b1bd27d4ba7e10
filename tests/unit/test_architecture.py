"""The layout holds: core never imports streamlit, only the CLI imports the CLI, pages keep no
caches and write no bare strings, no core module imports a layer above it, core modules form no
import cycle, every model kind follows the one interface, the examples run."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from core.catalogue import REGISTRY
from core.engine.interface import LabModel, ModelConfig
from core.engine.sampler import predictive_samples
from core.methods import METHODS, build_model, model_class
from core.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


CORE = {module_name(p): p for p in (ROOT / "core").rglob("*.py")}


def imports_of(path: Path) -> set[str]:
    """Modules imported by a file: ``from a import b`` counts the submodule a.b when there is
    one, else a."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in CORE else node.module)
    return names


def test_core_never_imports_streamlit():
    offenders = [
        m for m, p in CORE.items() if any(i.split(".")[0] == "streamlit" for i in imports_of(p))
    ]
    assert offenders == []


def test_only_the_cli_imports_the_cli():
    sources = [*ROOT.glob("app/**/*.py"), *ROOT.glob("pages/*.py"), *CORE.values()]
    offenders = [
        str(p.relative_to(ROOT))
        for p in sources
        # the command lines: python -m core and the installed bnn-lab command
        if not module_name(p).startswith(("core.cli", "core.__main__", "app.cli"))
        and any(i == "core.cli" or i.startswith("core.cli.") for i in imports_of(p))
    ]
    assert offenders == []


def test_pages_keep_no_caches_of_their_own():
    """Pages are widgets, core calls and figures: what a rerun needs again is kept by the one
    in-memory helper (``app.ui.kept``) or stored by core's disk cache, not by a page."""
    offenders = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p in sorted(ROOT.glob("pages/*.py"))
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Attribute) and node.attr.startswith("cache_")
    ]
    assert offenders == []


def environment_reads(path: Path) -> list[str]:
    """The ``BNN_*`` variables a file reads from the environment itself (``os.environ.get``,
    ``os.getenv``, ``os.environ[...]``), by literal or by a module-level constant; a read of a
    name computed at run time counts as ``"<computed>"`` (it could be any setting)."""
    tree = ast.parse(path.read_text())
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }

    def named(node: ast.AST) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id, "") if isinstance(node, ast.Name) else ""

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    read = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            func = node.func
            if (func.attr == "get" and is_environ(func.value)) or func.attr == "getenv":
                read.append(named(node.args[0]) or "<computed>")
        elif isinstance(node, ast.Subscript) and is_environ(node.value):
            read.append(named(node.slice) or "<computed>")
    return [name for name in read if name.startswith(("BNN_", "<computed>"))]


def test_page_scripts_have_no_bare_strings_that_streamlit_would_show():
    # Streamlit's magic writes every bare expression of a script it runs on the page: an
    # attribute docstring in a page script is shown to the students (the module's own
    # docstring, the first statement, is not).
    scripts = [*ROOT.glob("pages/*.py"), ROOT / "app" / "main.py"]
    shown = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p in scripts
        for node in ast.parse(p.read_text()).body[1:]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    ]
    assert not shown, shown


def test_settings_are_read_in_one_module_and_all_declared():
    from core.settings import SETTINGS

    sources = [*ROOT.glob("app/**/*.py"), *ROOT.glob("pages/*.py"), *CORE.values()]
    offenders = {
        str(p.relative_to(ROOT)): environment_reads(p)
        for p in sources
        if p != ROOT / "core" / "settings.py" and environment_reads(p)
    }
    assert offenders == {}
    mentioned = {name for p in sources for name in re.findall(r"BNN_[A-Z_]+", p.read_text())}
    assert mentioned <= set(SETTINGS), mentioned - set(SETTINGS)


LAYERS = (
    (
        "core.settings",
        "core.progress",
        "core.processes",
        "core.protocols",
        "core.paths",
        "core.atomic",
        "core.roles",
    ),
    ("core.engine",),
    ("core.evaluation",),
    ("core.data",),
    ("core.training",),
    ("core.methods",),
    ("core.storage.checkpoints", "core.storage.cache", "core.storage"),
    ("core.catalogue",),
    (
        "core.jobs",
        "core.studies",
        "core.regression",
        "core.active",
        "core.bandits",
        "core.classroom",
        "core.adapt",
    ),
    ("core.stated", "core.prepare"),
    ("core.cli", "core.__main__", "core"),
)
"""The packages of core from the bottom up: a module may import its own layer and those below."""


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest prefix named in :data:`LAYERS`."""
    best = max(
        (prefix for layer in LAYERS for prefix in layer if module.startswith(prefix)),
        key=lambda prefix: len(prefix) if module == prefix or module[len(prefix)] == "." else -1,
    )
    return next(i for i, layer in enumerate(LAYERS) if best in layer)


def test_no_core_module_imports_a_layer_above_it():
    offenders = {
        module: sorted(
            f"{imported} (layer {layer_of(imported)})"
            for imported in imports_of(path)
            if imported in CORE and layer_of(imported) > layer_of(module)
        )
        for module, path in CORE.items()
    }
    assert {m: found for m, found in offenders.items() if found} == {}


def test_a_layer_holds_whole_packages():
    """No module is lifted out of its package into a lower layer (as the engine once imported
    ``core.storage.paths``, listed at the bottom while storage sits above the engine): a
    package's place in :data:`LAYERS` says what may import any of its modules."""
    entries = [(prefix, i) for i, layer in enumerate(LAYERS) for prefix in layer]
    assert len({prefix for prefix, _ in entries}) == len(entries), "a prefix listed twice"
    lifted = [
        f"{prefix} (layer {i}) of {package} (layer {j})"
        for prefix, i in entries
        for package, j in entries
        if package != "core" and prefix.startswith(f"{package}.") and i != j
    ]
    assert lifted == []


def test_core_modules_form_no_import_cycle():
    graph = {m: {i for i in imports_of(p) if i in CORE and i != m} for m, p in CORE.items()}
    graph = {m: deps - {"core"} for m, deps in graph.items()}  # the package's re-exports
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for dep in graph[m]:
            if state.get(dep) == 1:
                raise AssertionError(" -> ".join([*path, m, dep]))
            if dep not in state:
                visit(dep, [*path, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


@pytest.mark.parametrize("kind", list(METHODS))
def test_every_kind_is_registered_and_follows_the_interface(kind):
    model = build_model(ModelConfig(kind=kind, hidden=(8,)))
    assert isinstance(model, model_class(kind)) and isinstance(model, LabModel)
    x = torch.rand(3, 1, 28, 28)
    logits, kl = model.forward_with_kl(x)
    assert logits.shape == (3, 10) and kl.dim() == 0 and kl >= 0
    probs = predictive_samples(model.eval().requires_grad_(False), x, 4)
    assert probs.shape == (4, 3, 10)
    assert torch.equal(probs[0], probs[1]) != model.stochastic


def test_every_registered_checkpoint_has_a_known_kind():
    assert {spec.model.kind for spec in REGISTRY.values()} <= set(METHODS)


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_examples_run(example):
    # A reader runs them with the lab installed (pip install -e .); here the checkout is on
    # PYTHONPATH so that they run whether or not this environment has the install.
    result = subprocess.run(
        [sys.executable, str(example)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_configurations_hold_the_network_and_what_every_method_shares():
    """A method's own parameters live in ``ModelConfig.params``, not in fields of their own."""
    assert len(fields(ModelConfig)) <= 7, [f.name for f in fields(ModelConfig)]
    assert len(fields(TrainConfig)) <= 9, [f.name for f in fields(TrainConfig)]


def method_name_uses(path: Path) -> list[int]:
    """Where a file branches on a method's identity or lists methods by hand: a comparison
    with a literal method kind (``kind == "bbb"``, ``kind in ("bbb", "dropout")``), or a
    literal tuple, list, set or dict (keys) of two or more method kinds."""
    kinds = set(METHODS)

    def named(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Dict):
            return [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in kinds]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in kinds]
        return []

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                literal = any(
                    isinstance(side, ast.Constant) and side.value in kinds
                    for side in (node.left, right)
                )
                if (isinstance(op, ast.Eq | ast.NotEq) and literal) or (
                    isinstance(op, ast.In | ast.NotIn) and named(right)
                ):
                    found.append(node.lineno)
        elif len(named(node)) >= 2:
            found.append(node.lineno)
    return found


def test_no_code_outside_the_method_packages_names_a_method():
    sources = [*ROOT.glob("core/**/*.py"), *ROOT.glob("app/**/*.py"), *ROOT.glob("pages/*.py")]
    uses: dict[str, int] = {}
    for path in sources:
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("core/methods/") or relative == "core/catalogue.py":
            continue
        if found := method_name_uses(path):
            uses[relative] = len(found)
    assert uses == {}, "branch on a method's name or list methods: read core.methods instead"


def test_the_method_name_check_finds_a_branch_and_a_list(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('if kind == "bbb":\n    pass\nKINDS = ("mlp", "dropout")\nx = {"a": 1}\n')
    assert sorted(method_name_uses(probe)) == [1, 3]
