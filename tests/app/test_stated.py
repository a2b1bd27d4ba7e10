"""The numbers the documents state are the lab's: markers, the generator, and the screen.

Three layers, each able to fail on its own: the markers' parser and writer; every marked number
of the teacher's guide against what its source computes (``python -m core stated``); and every
marked number of a step of a lesson against what the step's own links show on the page, run
headless (Streamlit's AppTest) with the link's settings.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.data import DatasetUnavailable, load_dataset
from core.jobs import JobQueue, set_training_queue
from core.jobs.training import TrainOutcome
from core.stated import markers, rewrite, sources, stated, value
from core.stated.documents import DOCUMENTS, compare, update
from core.stated.guide import GUIDE, guide_links
from core.stated.registry import _SOURCES, on_opening
from core.stated.training import guide_requests, stored_runs

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: the seeded evaluations are compared across processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One empty cache for the module: the shipped results are read, the rest computed once."""
    path = tmp_path_factory.mktemp("stated-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BNN_CACHE_DIR", str(path))
        value.cache_clear()
        yield path
    value.cache_clear()


# --- markers ---------------------------------------------------------------------------------


def test_markers_are_found_with_their_source_arguments_value_and_line():
    text = "AUROC\n<!--n:ood_auroc notmnist mlp  mutual_information-->0.500<!--/n--> and\n"
    text += "<!--n:comparison_min test_error-->1.42<!--/n--> %"
    found = markers(text)
    assert [(m.source, m.args, m.value, m.line) for m in found] == [
        ("ood_auroc", ("notmnist", "mlp", "mutual_information"), "0.500", 2),
        ("comparison_min", ("test_error",), "1.42", 3),
    ]
    assert found[0].key == "ood_auroc notmnist mlp mutual_information"


def test_rewrite_replaces_only_the_values_it_is_given():
    text = "a <!--n:x 1-->old<!--/n--> b <!--n:y-->kept<!--/n--> c"
    assert rewrite(text, {"x 1": "new"}) == "a <!--n:x 1-->new<!--/n--> b <!--n:y-->kept<!--/n--> c"


def test_a_marker_without_a_source_is_refused():
    with pytest.raises(ValueError, match="line 2"):
        markers("text\n<!--n: -->1<!--/n-->")


def test_sources_have_one_name_each_and_unknown_names_are_refused():
    known = sources()
    assert {"ood_auroc", "pruning_quick", "regression", "bandit_regret", "active_labels"} <= set(
        known
    )
    with pytest.raises(ValueError, match="two sources"):
        stated("ood_auroc")(lambda: "")
    with pytest.raises(KeyError, match="no source"):
        value("no_such_source 1")
    assert _SOURCES == known  # the failed registration left the registry as it was


def test_update_writes_the_computed_values_and_compare_then_agrees(tmp_path, monkeypatch):
    monkeypatch.setitem(_SOURCES, "twice", lambda x: str(2 * int(x)))
    value.cache_clear()
    doc = tmp_path / "doc.md"
    doc.write_text("two <!--n:twice 1-->3<!--/n-->, four <!--n:twice 2-->4<!--/n-->\n")
    stated_numbers = compare(doc)
    assert [s.agrees for s in stated_numbers] == [False, True]
    assert update(doc, stated_numbers) == 1
    assert doc.read_text() == "two <!--n:twice 1-->2<!--/n-->, four <!--n:twice 2-->4<!--/n-->\n"
    assert all(s.agrees for s in compare(doc))
    value.cache_clear()


# --- the guide against the generator ----------------------------------------------------------


def computed(key: str) -> str | None:
    """The lab's value, or None when it needs a dataset this machine lacks."""
    try:
        return value(key)
    except DatasetUnavailable:
        return None


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_every_number_the_documents_state_is_what_the_lab_computes(document, cache_dir):
    found = markers(document.read_text())
    assert len(found) >= (50 if document.name == "teaching.md" else 1)  # marked, not typed
    wrong = []
    for marker in found:
        lab = computed(marker.key)
        if lab is not None and lab != marker.value:
            wrong.append(f"line {marker.line}: {marker.key}: {marker.value!r}, lab {lab!r}")
    assert not wrong, "run `python -m core stated --write`:\n" + "\n".join(wrong)


# --- the guide against the screen -------------------------------------------------------------


def steps(text: str) -> list[tuple[str, list[tuple[str, dict[str, str]]], list]]:
    """The guide's steps (``###`` sections) with their links and the marked numbers their
    pages show as they open."""
    found = []
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        title = section.splitlines()[0]
        links = [(link.route, link.query) for link in guide_links(section)]
        numbers = [m for m in markers(section) if on_opening(m.source)]
        if numbers:
            found.append((title, links, numbers))
    return found


def page_atoms(at: AppTest) -> tuple[set[str], list[float]]:
    """What a page shows: its texts' words and every table cell (texts), and its numbers."""
    words: set[str] = set()
    numbers: list[float] = []
    texts = [
        str(getattr(element, "value", ""))
        for kind in ("markdown", "caption", "info", "warning", "success", "text")
        for element in at.get(kind)
    ]
    texts += [f"{m.label} {m.value}" for m in at.metric]
    for table in [*at.table, *at.dataframe]:
        frame = table.value
        frame = getattr(frame, "data", frame)  # a Styler's data
        cells = [*frame.columns, *frame.index, *frame.to_numpy().ravel()]
        for cell in cells:
            if isinstance(cell, int | float) and not isinstance(cell, bool):
                numbers.append(float(cell))
            words.add(str(cell).strip())
    for text in texts:
        words.update(w.strip(".*") for w in re.split(r"[\s(),;:—]+", text) if w)
    return words, numbers


def shows(atoms: tuple[set[str], list[float]], stated_value: str) -> bool:
    """Whether a page shows a value: as a word or cell, or as a number to the value's digits."""
    words, numbers = atoms
    if stated_value in words:
        return True
    try:
        number = float(stated_value.replace(",", ""))
    except ValueError:
        return False
    decimals = len(stated_value.partition(".")[2])
    return any(
        math.isfinite(n) and f"{n:.{decimals}f}" == f"{number:.{decimals}f}" for n in numbers
    )


def run_link(route: str, query: dict[str, str]) -> AppTest:
    """Run the page of a link headless with the link's settings (the home page in the app)."""
    script = REPO_ROOT / ("app/main.py" if route == "home" else f"pages/{route}.py")
    at = AppTest.from_file(str(script), default_timeout=600)
    for key, item in query.items():
        if key != "present":  # the page's numbers, not presenter mode's table styling
            at.query_params[key] = item
    at.run()
    assert not at.exception, at.exception
    return at


STEPS = steps(GUIDE.read_text())


@pytest.mark.parametrize("step", STEPS, ids=[title.split(":")[0] for title, _, _ in STEPS])
def test_each_lessons_step_shows_the_numbers_the_guide_states(step, cache_dir):
    title, links, numbers = step
    assert links, f"{title}: numbers without a link to see them on"
    if any(computed(m.key) is None for m in numbers):
        pytest.skip(f"{title}: a dataset of this step is not on this machine")
    shown = [page_atoms(run_link(route, query)) for route, query in links]
    missing = [
        f"line {m.line}: {m.key} = {m.value!r}"
        for m in numbers
        if not any(shows(atoms, m.value) for atoms in shown)
    ]
    assert not missing, f"{title}: the guide states what none of its links shows:\n" + "\n".join(
        missing
    )


# --- the guide's training runs ----------------------------------------------------------------


def test_the_guides_training_runs_are_the_requests_its_train_links_start(tmp_path, monkeypatch):
    """Each Train link of the guide, opened headless and started, submits the request the
    stored runs were trained from (a link or a page default changed → re-train them)."""
    monkeypatch.setenv("BNN_MODELS_DIR", str(tmp_path / "models"))
    release = threading.Event()

    def runner(request, **kwargs):  # nothing trains: the test reads what was submitted
        release.wait(60)
        return TrainOutcome(None, True)

    queue = JobQueue(workers=1, threads=1, runner=runner)
    old = set_training_queue(queue)
    try:
        links = [link for link in guide_links(GUIDE.read_text()) if link.route == "train"]
        assert len(links) == 3
        for link in links:
            at = run_link("train", link.query)
            at.button(key="train_start").click().run()
            assert not at.exception, at.exception
        submitted = [job.request for job in queue.jobs()]
    finally:
        release.set()
        queue.shutdown()
        set_training_queue(old)
    stored = {name: run["request"] for name, run in stored_runs().items()}
    guide = {name: request.to_dict() for name, request in guide_requests(GUIDE.read_text()).items()}
    assert stored == guide
    for request in submitted:
        assert request.to_dict() | {"owner": ""} == guide[request.name]
    assert sorted(r.name for r in submitted) == sorted(guide)


# --- the shipped models' own numbers -----------------------------------------------------------


def _evaluate(checkpoint: str, *flags: str, env: dict | None = None) -> dict:
    """``python -m core evaluate --checkpoint CHECKPOINT --json FLAGS`` in its own process."""
    command = [sys.executable, "-m", "core", "evaluate", "--checkpoint", checkpoint, "--json"]
    done = subprocess.run(
        [*command, *flags], capture_output=True, text=True, check=True, cwd=REPO_ROOT, env=env
    )
    return json.loads(done.stdout)


def test_evaluate_is_seeded_across_processes_and_states_the_models_table(tmp_path):
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    runs = []
    for i in range(2):  # each on an empty cache: the passes themselves must be seeded
        env = {**os.environ, "BNN_CACHE_DIR": str(tmp_path / str(i)), "BNN_TORCH_THREADS": "1"}
        runs.append(_evaluate("bbb_mixture", "--samples", "3", env=env))
    assert runs[0] == runs[1] and runs[0]["seed"] == 0
    other = _evaluate("bbb_mixture", "--samples", "3", "--seed", "1", env=env)
    assert other["nll"] != runs[0]["nll"]  # the seed is used
    shipped = _evaluate("bbb_mixture")  # the documented command, on the shipped results
    stated = {m.args: m.value for m in markers((REPO_ROOT / "docs" / "models.md").read_text())}
    assert stated["bbb_mixture", "test_error"] == f"{100 * shipped['test_error']:.2f} %"
    assert stated["bbb_mixture", "nll"] == f"{shipped['nll']:.3f}"
    se = math.sqrt(shipped["test_error"] * (1 - shipped["test_error"]) / 10_000)
    assert shipped["test_error_se"] == pytest.approx(se)
