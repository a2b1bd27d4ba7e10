"""The teacher's guide (docs/teaching.md), played in real browsers: one test per lesson, with the
teacher on the projector (presenter mode) and six students in their own browser contexts (the
last one a phone that draws with a finger).

Every link comes from the guide itself (:func:`guide_lesson`), so a link changed in the guide
changes the test; ``http://localhost:8501`` (the teacher's) and ``http://<address>:8501`` (the
students') become the test server's address. Each step is timed and must fit in the minutes the
guide's table gives it (:meth:`Lesson.step`). The waits follow the page's state, never a fixed
sleep.

The visible texts the tests look for are gathered in the constants below, so a page that words
something differently is adjusted here, in one place.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
from PIL import Image

from core.classroom.store import ClassStore
from harness.browser import (
    REPO_ROOT,
    chromium_browsers,
    clear_drawing,
    draw_on_canvas,
    network_address,
    page_text,
    press,
    record_timings,
    require_chromium,
    scored_default_models,
    send_to_class,
    serve_app,
    sign_in_as_teacher,
    wait_for_polled_text,
    wait_for_script,
    wait_for_text,
)
from harness.classroom import students_send
from tests.conftest import TEACHER_KEY

pytestmark = [pytest.mark.browser, require_chromium()]

GUIDE = REPO_ROOT / "docs" / "teaching.md"
TEACHER_HOST = "http://localhost:8501"
STUDENT_HOST = "http://<address>:8501"
STUDENTS = 6

# --- what the pages show (visible texts), in one place -------------------------------------

CONFIDENT = "{}, confident"
MUTUAL_INFORMATION = "Mutual information"
SWEEP_TITLE = "Turn it: the rotated-digit experiment"
AUROC_HEADING = "AUROC (1 = perfect, 0.5 = chance)"
OOD_DEFAULTS = {"n_samples": 50, "n_inputs": 2000}
"""The OOD page's default samples per input and inputs per dataset (the AUROC table's)."""
STUDENTS_JOIN = "Students join by scanning the code or typing the link"
PROJECTOR = (1920, 1080)
"""The teacher's screen: a projector's full HD."""
CLASS_COUNT = "{} drawing(s) in class {}"
CLASS_RESULTS = "How the models do on the class's drawings"
TEACHER_PANEL = "Teacher: export or clear"
DOWNLOAD = "Download CSV + PNG (zip)"
HOME_TABLE = "Every method on one evaluation"
START_TRAINING = "Start training"
TRAINED = "Saved: test error"
PRUNING_CURVE = "Error against the pruning ratio"
REGRESSION_NUMBERS = "Numbers"
BANDIT_START = "Start"
ACTIVE_START = "Start a new run"
ACTIVE_LIVE = "Watch it live"


# --- the guide --------------------------------------------------------------------------------


@dataclass
class Step:
    """One row of a lesson's table, with the links of its section."""

    start: int
    end: int
    title: str
    page: str
    links: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """The step's length in the guide, in seconds."""
        return 60.0 * (self.end - self.start)

    def teacher_links(self) -> list[str]:
        return [link for link in self.links if link.startswith(TEACHER_HOST)]

    def student_links(self) -> list[str]:
        return [link for link in self.links if link.startswith(STUDENT_HOST)]


def guide_lesson(number: int) -> dict[int, Step]:
    """The steps of lesson ``number`` of the guide, by their first minute."""
    text = GUIDE.read_text(encoding="utf-8")
    section = re.split(r"^## ", text, flags=re.M)
    (lesson,) = [s for s in section if s.startswith(f"Lesson {number} ")]
    steps = {
        int(a): Step(int(a), int(b), title.strip(), page.strip())
        for a, b, title, page in re.findall(
            r"^\| (\d+)–(\d+) \| ([^|]+) \| ([^|]+) \|$", lesson, flags=re.M
        )
    }
    for part in re.split(r"^### ", lesson, flags=re.M)[1:]:
        head = re.match(r"(\d+)–(\d+) min", part)
        if head:
            steps[int(head[1])].links = re.findall(r"`(http://[^`\s]+)`", part)
    return steps


def at(url: str, link: str, drop: tuple[str, ...] = (), **changes: str | int) -> str:
    """The guide's ``link`` on the server at ``url``, without the query parameters ``drop``
    and with ``changes`` set."""
    for host in (TEACHER_HOST, STUDENT_HOST):
        link = link.replace(host, url)
    parts = urlsplit(link)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query = {key: value for key, value in query.items() if key not in drop}
    query.update({key: str(value) for key, value in changes.items()})
    return urlunsplit(parts._replace(query=urlencode(query, safe=",")))


def link_setting(link: str, key: str) -> str:
    """One query parameter of a link."""
    return dict(parse_qsl(urlsplit(link).query))[key]


class Lesson:
    """A lesson being played: its steps from the guide and the server's URL."""

    def __init__(self, number: int, url: str) -> None:
        self.number = number
        self.url = url
        self.steps = guide_lesson(number)

    def link(self, start: int, i: int = 0, **changes: str | int) -> str:
        """The teacher's ``i``-th link of the step that starts at minute ``start``."""
        return at(self.url, self.steps[start].teacher_links()[i], **changes)

    def student_link(self, start: int, **changes: str | int) -> str:
        """The students' link of the step that starts at minute ``start``."""
        (link,) = self.steps[start].student_links()
        return at(self.url, link, **changes)

    @contextmanager
    def step(self, start: int) -> Iterator[Step]:
        """Time the step that starts at minute ``start``: it must fit in its minutes."""
        step = self.steps[start]
        began = time.monotonic()
        yield step
        took = time.monotonic() - began
        print(f"lesson {self.number}, {step.title}: {took:.1f} s of {step.seconds:.0f} s")
        assert took <= step.seconds, f"{step.title}: {took:.0f} s, the guide gives {step.seconds}"


def test_the_guide_gives_every_step_of_each_lesson_its_links():
    """The guide's structure the lesson tests rely on."""
    for number, steps in ((1, 6), (2, 5), (3, 6), (4, 6)):
        lesson = guide_lesson(number)
        assert len(lesson) == steps
        assert all(s.teacher_links() for s in lesson.values() if s.page != "—")
        for s in lesson.values():
            assert all("present=1" in link for link in s.teacher_links())
            assert not any("present=1" in link for link in s.student_links())
    assert guide_lesson(1)[5].student_links()


# --- drawing -------------------------------------------------------------------------------------

THREE = [[(0.3, 0.2), (0.5, 0.13), (0.68, 0.22), (0.66, 0.38), (0.45, 0.5), (0.68, 0.6),
          (0.7, 0.78), (0.5, 0.88), (0.3, 0.8)]]  # fmt: skip
ONE = [[(0.5, 0.12), (0.5, 0.88)]]
DIGITS = {
    1: ONE,
    7: [[(0.25, 0.18), (0.75, 0.18), (0.45, 0.88)]],
    0: [
        [(0.5, 0.12), (0.7, 0.25), (0.72, 0.7), (0.5, 0.88), (0.3, 0.7), (0.3, 0.25), (0.5, 0.12)]
    ],  # fmt: skip
    4: [[(0.35, 0.12), (0.28, 0.6), (0.75, 0.6)], [(0.62, 0.3), (0.62, 0.9)]],
    2: [[(0.3, 0.3), (0.45, 0.15), (0.65, 0.2), (0.68, 0.38), (0.3, 0.85), (0.75, 0.85)]],
    3: THREE,
}
SCRIBBLE = [[(0.2, 0.3), (0.8, 0.35), (0.2, 0.5), (0.8, 0.55), (0.2, 0.7), (0.8, 0.75)]]
SCRIBBLERS = 2  # students who also send a scribble (as the closest digit, a 3)


def verdict_of(page, model: str) -> str:
    return page.locator(f"[class*='st-key-prediction_{model}']").inner_text()


def metric_values(page, label: str) -> list[str]:
    """The values of the page's metrics labelled ``label``, in the page's order, once there is
    one."""
    return page.wait_for_function(
        """(label) => {
            const values = [...document.querySelectorAll("[data-testid='stMetric']")]
                .filter(m => m.querySelector("[data-testid='stMetricLabel']").textContent.trim()
                             === label)
                .map(m => m.querySelector("[data-testid='stMetricValue']").textContent.trim());
            return values.length ? values : null;
        }""",
        arg=label,
        timeout=60_000,
    ).json_value()


def table_rows(page, heading: str) -> dict[str, list[str]]:
    """The first static table after the text (or title) that starts with ``heading``, once
    drawn: its rows by their first cell (the header's first cell may be empty)."""
    return page.wait_for_function(
        """(heading) => {
            const start = [...document.querySelectorAll(
                "[data-testid='stMarkdownContainer'], [data-testid='stHeading']")]
                .find(e => e.innerText.trim().startsWith(heading));
            const table = start && [...document.querySelectorAll("table")]
                .find(t => start.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING);
            if (!table) return null;
            const cells = r => [...r.querySelectorAll("th, td")].map(c => c.innerText.trim());
            return Object.fromEntries([...table.querySelectorAll("tr")].map(r => {
                const row = cells(r);
                return [row[0], row.slice(1)];
            }));
        }""",
        arg=heading,
        timeout=60_000,
    ).json_value()


# --- lesson 1 ----------------------------------------------------------------------------------


def test_lesson_1_what_does_a_network_not_know(tmp_path, monkeypatch):
    """A teacher and six students (one on a phone) play lesson 1: the teacher's clean 3, the
    class's drawings and scribbles, the rotation sweep, the OOD tables and the Class drawings
    page with its teacher-only controls."""
    from app.ui import model_title
    from core.evaluation.uncertainty import SCORES
    from core.studies.ood import ood_result

    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    scored_default_models()
    # On a network address, as the guide's lab (`--server.address 0.0.0.0`): the Class page
    # then shows the students' link with it.
    address = network_address()
    with (
        serve_app(address=address) as url,
        chromium_browsers(1 + STUDENTS, *PROJECTOR, phones=1) as pages,
    ):
        lesson = Lesson(1, url)
        teacher, students = pages[0], pages[1:]
        for page in pages:
            record_timings(page)

        with lesson.step(0):  # a clean digit
            link = lesson.link(0)
            models = link_setting(link, "sidebar_models").split(",")
            teacher.goto(link)
            teacher.wait_for_selector("canvas.upper-canvas")
            draw_on_canvas(teacher, THREE)
            for model in models:
                teacher.locator(f"[class*='st-key-prediction_{model}']").wait_for()
            wait_for_script(teacher)
            for model in models:
                assert CONFIDENT.format(3) in verdict_of(teacher, model), page_text(teacher)
            values = metric_values(teacher, MUTUAL_INFORMATION)
            mutual_information = dict(zip(models, values, strict=True))
            assert mutual_information["mlp"] == "0.000", mutual_information

        with lesson.step(5):  # students draw and send their drawings
            code = link_setting(lesson.steps[5].student_links()[0], "class")
            teacher.goto(lesson.link(5))  # the join link on the projector
            wait_for_text(teacher, STUDENTS_JOIN)
            wait_for_text(teacher, lesson.student_link(5))
            # the QR code on the projector's screen reads back as the students' link
            zxingcpp = pytest.importorskip("zxingcpp", reason="zxing-cpp (requirements-dev.txt)")
            teacher.locator("img[alt^='QR code of the link']").wait_for()
            screen = Image.open(io.BytesIO(teacher.screenshot())).convert("L")
            assert screen.size == PROJECTOR
            codes = [(r.format, r.text) for r in zxingcpp.read_barcodes(screen)]
            assert codes == [(zxingcpp.BarcodeFormat.QRCode, lesson.student_link(5))], codes
            phone = students[-1]
            drawings = [(strokes, label) for label, strokes in DIGITS.items()]
            students_send(students, lesson.student_link(5), drawings, code, phones=(phone,))
            for page in (students[0], phone)[:SCRIBBLERS]:
                clear_drawing(page, tap=page is phone)
                send_to_class(page, SCRIBBLE, 3, code, tap=page is phone)
            sent = STUDENTS + SCRIBBLERS
            assert ClassStore().count(code) == sent

        with lesson.step(17):  # the rotation sweep
            link = lesson.link(17)
            models = link_setting(link, "sidebar_models").split(",")
            steps = int(link_setting(link, "draw_sweep_steps"))
            teacher.goto(link)
            teacher.wait_for_selector("canvas.upper-canvas")
            draw_on_canvas(teacher, ONE)
            wait_for_text(teacher, SWEEP_TITLE)
            for model in models:
                teacher.locator(f".st-key-{model}_sweep .js-plotly-plot").wait_for()
            angles = teacher.get_by_text("The input at ").inner_text()
            assert angles.count("°") == steps and "180°" in angles, angles

        with lesson.step(24):  # clothes and letters it never saw
            for i, link in enumerate(lesson.steps[24].teacher_links()):
                models = link_setting(link, "sidebar_models").split(",")
                dataset, score = link_setting(link, "ood_dataset"), link_setting(link, "ood_score")
                teacher.goto(lesson.link(24, i))
                wait_for_text(teacher, AUROC_HEADING, deadline_s=lesson.steps[24].seconds)
                wait_for_script(teacher)
                shown = table_rows(teacher, AUROC_HEADING)
                for model in models:
                    row = shown[model_title(model)]
                    metrics = ood_result(model, dataset, **OOD_DEFAULTS).metrics
                    assert row == [f"{metrics[key]['auroc']:.3f}" for key in SCORES], (model, row)
                if score == "mutual_information":  # one network cannot disagree with itself
                    mlp = shown[model_title("mlp")]
                    assert mlp[list(SCORES).index("mutual_information")] == "0.500", shown

        with lesson.step(38):  # the class's own drawings
            teacher.goto(lesson.link(38))
            wait_for_text(teacher, CLASS_COUNT.format(sent, code))
            gallery = teacher.locator("[class*='st-key-class_gallery'] img")
            gallery.first.wait_for()
            assert gallery.count() == sent
            wait_for_text(teacher, CLASS_RESULTS)
            student = students[0]
            student.goto(at(url, lesson.steps[38].teacher_links()[0], drop=("present",)))
            wait_for_text(student, CLASS_COUNT.format(sent, code))
            wait_for_script(teacher)
            accuracy = table_rows(teacher, CLASS_RESULTS)
            for model in models:
                row = accuracy[model_title(model)]
                assert row[0] == str(sent) and re.fullmatch(r"\d+\.\d%", row[1]), accuracy
            assert student.get_by_text(TEACHER_PANEL).count() == 0
            assert teacher.get_by_text(TEACHER_PANEL).count() == 0
            sign_in_as_teacher(teacher, TEACHER_KEY)
            teacher.get_by_text(TEACHER_PANEL).click()
            teacher.get_by_role("button", name=DOWNLOAD).wait_for()
            assert student.get_by_text(TEACHER_PANEL).count() == 0


# --- lesson 2 ----------------------------------------------------------------------------------

QUICK_TRAINING = {"train_subset": 1000, "train_test_subset": 500, "train_eval_samples": 1}
"""Overrides of the guide's Train link that keep the test short: 1,000 training images (the
guide: 10,000), the curves on 500 test images and the saved test error with one pass."""
STUDENT_EPOCHS = 1


def header(rows: dict[str, list[str]]) -> list[str]:
    """The first row of :func:`table_rows`'s table (its header), in full."""
    first = next(iter(rows))
    return [first, *rows[first]]


def start_training(page, link: str, job: int | None = None, tries: int = 3) -> None:
    """Open the Train page's ``link`` (settings in it), press Start training and wait until
    the page shows the new job (``Job #job`` when given).

    A polling page sends messages of its own, so a press can look sent and still be lost: it
    is pressed again only while the job store has no job of the link's model name."""
    from core.jobs import JobStore

    name = link_setting(link, "train_name")
    store = JobStore()
    page.goto(link)
    wait_for_text(page, START_TRAINING)
    wait_for_script(page)
    for _ in range(tries):
        press(page, page.get_by_role("button", name=START_TRAINING))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(j.request.name == name for j in store.jobs()):
            time.sleep(0.5)
        if any(j.request.name == name for j in store.jobs()):
            break
    wait_for_polled_text(page, f"Job #{job}" if job else "Job #")


def test_lesson_2_bayes_by_backprop_from_prior_to_posterior(tmp_path, monkeypatch):
    """A teacher and six students play lesson 2: the Home table; the Train link, where each
    student and then the signed-in teacher press Start training (the teacher's job goes first
    in the queue) and the curves grow; the Pruning and Regression links draw their figures.

    Shorter training than the guide, so that the test takes minutes (:data:`QUICK_TRAINING`):
    the teacher keeps the guide's epochs on 1,000 images, the students train one epoch."""
    from app.ui import model_title
    from core.jobs import JobStatus, JobStore

    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    scored_default_models()
    # On loopback, each browser is its own student (on a network address the class's
    # computers are told apart by address too, and six browsers of one machine are one).
    with serve_app() as url, chromium_browsers(1 + STUDENTS, phones=1) as pages:
        lesson = Lesson(2, url)
        teacher, students = pages[0], pages[1:]
        for page in pages:
            record_timings(page)

        with lesson.step(0):  # every method on one evaluation
            teacher.goto(lesson.link(0))
            wait_for_text(teacher, HOME_TABLE)
            rows = table_rows(teacher, HOME_TABLE)
            columns = header(rows)
            assert any("notMNIST" in c for c in columns) and "test error (%)" in columns, columns
            for title in (model_title(m) for m in ("bbb_mixture", "mlp", "dropout_mlp")):
                assert re.fullmatch(r"\d\.\d\d", rows[title][0]), rows[title]

        with lesson.step(7):  # train a small BBB network live
            link = lesson.steps[7].teacher_links()[0]
            name = link_setting(link, "train_name")
            store = JobStore()
            for i, page in enumerate(students):
                student = at(
                    url,
                    link,
                    drop=("present",),
                    train_epochs=STUDENT_EPOCHS,
                    train_name=f"{name}_student{i}",
                    **QUICK_TRAINING,
                )
                start_training(page, student, i + 1)
            waiting = {job.id for job in store.jobs() if job.status is JobStatus.QUEUED}
            teacher.goto(lesson.link(7, **QUICK_TRAINING))
            wait_for_polled_text(teacher, START_TRAINING)
            sign_in_as_teacher(teacher, TEACHER_KEY, polled=True)
            press(teacher, teacher.get_by_role("button", name=START_TRAINING))
            job = STUDENTS + 1
            wait_for_polled_text(teacher, f"Job #{job}")
            # "Saved" of a student's job watched before can stay on screen for a moment
            # after the page switched to the teacher's: wait for the job itself to end.
            deadline = time.monotonic() + lesson.steps[7].seconds
            while store.get(job).status.active and time.monotonic() < deadline:
                time.sleep(1)
            wait_for_polled_text(teacher, TRAINED)
            for chart in ("loss", "error", "kl"):
                teacher.locator(f".st-key-train_{chart}_{job} .js-plotly-plot").wait_for()
            mine = store.get(job)
            assert mine.teacher and mine.status is JobStatus.DONE
            assert len(mine.history) == int(link_setting(link, "train_epochs"))
            # The teacher's job went before every student's job still queued when the teacher
            # pressed (on a quick machine none may be left by then: the order itself is tested
            # in tests/cluster/test_job_limits.py).
            later = [
                other
                for other in (store.get(i) for i in waiting)
                if other.started is None or other.started > mine.submitted
            ]
            assert all(o.started is None or o.started >= mine.started for o in later), later
            students[0].locator(".st-key-train_loss_1 .js-plotly-plot").wait_for()

        with lesson.step(22):  # prune it by signal-to-noise ratio
            for i, link in enumerate(lesson.steps[22].teacher_links()):
                percent = link_setting(link, "pruning_percent")
                teacher.goto(lesson.link(22, i))
                wait_for_text(teacher, PRUNING_CURVE, deadline_s=lesson.steps[22].seconds)
                removed = metric_values(teacher, f"Test error, {percent}% removed")
                assert len(removed) == 1 and re.fullmatch(r"\d+\.\d\d%", removed[0]), removed
                teacher.locator(".st-key-pruning_curves .js-plotly-plot").wait_for()
                columns = header(table_rows(teacher, "Test error after pruning"))
                compared = f"Test error, {model_title('mlp')}"
                wanted = link_setting(link, "pruning_compare") if "compare" in link else "0"
                assert any(c.startswith(compared) for c in columns) == (wanted == "1"), columns

        with lesson.step(32):  # BBB, MC dropout, an ensemble and the exact posterior
            for i, link in enumerate(lesson.steps[32].teacher_links()):
                methods = link_setting(link, "reg_methods").split(",")
                teacher.goto(lesson.link(32, i))
                wait_for_text(teacher, REGRESSION_NUMBERS)
                rows = table_rows(teacher, REGRESSION_NUMBERS)
                assert len(rows) == 1 + len(methods), rows
                charts = teacher.locator("[data-testid='stPlotlyChart'] .js-plotly-plot")
                charts.nth(1).wait_for()  # the fits' figures, at least two, as they are drawn


# --- lesson 3 ----------------------------------------------------------------------------------

LIVE_BANDIT_STEPS = 300
"""The live bandit link's steps in the test (the guide's link: 1,000), so that it takes seconds."""
REGRET_COLUMN = "cumulative regret (mean)"
ACTIVE_STORED_COLUMN = "labels to 90 %"
ACTIVE_STRIP = re.compile(r"^(.+) picked these after (\d+) labels")
ACTIVE_LEARNERS = ("BALD (mutual information)", "Random")
ACTIVE_BUDGET = 150


def table_with(page, column: str, after: str | None = None) -> list[list[str]]:
    """The rows (header first) of the first static table with a header cell ``column`` (after
    the element of the CSS selector ``after``, when given), once drawn."""
    return page.wait_for_function(
        """([column, after]) => {
            const cells = r => [...r.querySelectorAll("th, td")].map(c => c.innerText.trim());
            const start = after && document.querySelector(after);
            if (after && !start) return null;
            const table = [...document.querySelectorAll("table")]
                .filter(t => !start || start.compareDocumentPosition(t) & 4)
                .find(t => t.querySelector("tr") && cells(t.querySelector("tr")).includes(column));
            return table ? [...table.querySelectorAll("tr")].map(cells) : null;
        }""",
        arg=[column, after],
        timeout=60_000,
    ).json_value()


def regret_table(page, after: str | None = None) -> dict[str, str]:
    """Each agent's final cumulative regret in the bandit page's result table (the first, or
    the first after the CSS selector ``after``), as shown."""
    rows = table_with(page, REGRET_COLUMN, after)
    column = rows[0].index(REGRET_COLUMN)
    return {row[0]: row[column] for row in rows[1:]}


def watch(page, read: str, done, every_ms: int = 200, deadline_s: float = 600) -> list:
    """Read the page with the script ``read`` (a JS function) until ``done(value)``; the values
    seen, in order, without repeats (a live run's progress, as it grows)."""
    seen: list = []
    start = time.monotonic()
    while True:
        value = page.evaluate(read)
        if value is not None and (not seen or value != seen[-1]):
            seen.append(value)
        if value is not None and done(value):
            return seen
        if time.monotonic() - start > deadline_s:
            pytest.fail(f"waited {deadline_s:g} s; saw {seen}:\n{page_text(page)}")
        page.wait_for_timeout(every_ms)


BANDIT_STEP_JS = """() => {
    const bar = document.querySelector("[data-testid='stProgress']");
    return bar?.innerText.match(/step ([\\d,]+) of/)?.[1] ?? "none";
}"""
ACTIVE_LIVE_JS = """() => {
    const buttons = [...document.querySelectorAll("button")];
    const named = label => buttons.filter(b => b.innerText.trim() === label);
    const runAgain = named("Run again").length > 0;
    const resume = named("Resume");
    return {
        strips: [...document.querySelectorAll("[data-testid='stCaptionContainer']")]
            .map(c => c.innerText).filter(t => t.includes(" picked these after ")),
        run_again: runAgain,
        resume: resume.length > 0,
        finished: runAgain || resume.some(b => b.disabled),
    };
}"""
"""The live active-learning run as the page shows it: the strips' captions, and whether it is
over (a Run again button; a disabled Resume, as the page once left, counts as over too, so that
the assertions below say what is wrong instead of timing out)."""
ACTIVE_CURVES_JS = """() => {
    const plot = document.querySelector(".st-key-active_live_curves .js-plotly-plot");
    const traces = (plot?._fullData ?? []).filter(t => t.name && t.x?.length);
    return traces.length ? Object.fromEntries(traces.map(t => [t.name, Array.from(t.x)])) : null;
}"""
"""The live curves' labelled-image counts, by trace name (as plotly drew them: the figure's
arrays may come base64-encoded, decoded in ``_fullData``)."""


def test_lesson_3_deciding_under_uncertainty(tmp_path, monkeypatch):
    """The teacher plays lesson 3 while six students follow on their own devices: the stored
    bandit runs' regret tables, a live bandit run (shorter than the guide's link:
    :data:`LIVE_BANDIT_STEPS` steps) whose curves grow to its final table, the Active learning
    page's stored curves and a live run of BALD against random."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    with serve_app() as url, chromium_browsers(1 + STUDENTS, phones=1) as pages:
        lesson = Lesson(3, url)
        teacher, students = pages[0], pages[1:]
        for page in pages:
            record_timings(page)

        with lesson.step(0):  # the mushroom problem
            teacher.goto(lesson.link(0))
            assert regret_table(teacher)

        for start in (5, 15):  # the stored long runs: mushrooms, then the wheel
            with lesson.step(start):
                for i, link in enumerate(lesson.steps[start].teacher_links()):
                    reference = link_setting(link, "bandit_reference")
                    teacher.goto(lesson.link(start, i))
                    wait_for_text(teacher, "Long runs")
                    regrets = regret_table(teacher)
                    assert len(regrets) >= 4, (reference, regrets)
                    assert all(re.fullmatch(r"[\d,]+", v) for v in regrets.values()), regrets
                    assert any("Greedy" in agent for agent in regrets), regrets
                # the students open the same stored run (without presenter mode)
                for page in students:
                    page.goto(at(url, link, drop=("present",)))
                for page in students:  # a sortable grid there, not a static table
                    page.locator(".st-key-bandit_reference_regret .js-plotly-plot").wait_for()
                    page.locator("[data-testid='stDataFrame']").first.wait_for()

        with lesson.step(20):  # a run live
            link = lesson.link(20, bandit_steps=LIVE_BANDIT_STEPS)
            teacher.goto(link)
            wait_for_text(teacher, "Run it live")
            press(teacher, teacher.get_by_role("button", name=BANDIT_START, exact=True))
            final = teacher.locator(".st-key-bandit_result_regret")
            seen = watch(teacher, BANDIT_STEP_JS, lambda _: final.count() > 0)
            steps = [int(step.replace(",", "")) for step in seen if step != "none"]
            assert len(steps) >= 2 and steps == sorted(steps), seen  # the curves grew
            teacher.locator(".st-key-bandit_result_regret .js-plotly-plot").wait_for()
            regrets = regret_table(teacher, after=".st-key-bandit_result_regret")
            agents = link_setting(lesson.steps[20].teacher_links()[0], "bandit_agents")
            assert len(regrets) == len(agents.split(",")), regrets

        with lesson.step(27):  # BALD against random
            teacher.goto(lesson.link(27))
            rows = table_with(teacher, ACTIVE_STORED_COLUMN)
            assert {"BALD (mutual information)", "Random"} <= {c for row in rows for c in row}
            teacher.locator(".st-key-active_curves .js-plotly-plot").wait_for()
            wait_for_text(teacher, ACTIVE_LIVE)
            press(teacher, teacher.get_by_role("button", name=ACTIVE_START))
            seen = watch(
                teacher,
                ACTIVE_LIVE_JS,
                lambda state: state["finished"],
                every_ms=250,
                deadline_s=lesson.steps[27].seconds,
            )
            labels = [
                {m[1]: int(m[2]) for m in map(ACTIVE_STRIP.match, state["strips"]) if m}
                for state in seen
            ]
            assert any(labels), seen  # the strips of the digits picked last showed
            curves = teacher.wait_for_function(ACTIVE_CURVES_JS).json_value()
            ends = {name: max(curves[name]) for name in ACTIVE_LEARNERS if name in curves}
            assert ends == dict.fromkeys(ACTIVE_LEARNERS, ACTIVE_BUDGET), curves
            # both strips advance together, and at the end "Run again", never a disabled
            # "Resume", stays with the finished run
            assert {name for counts in labels for name in counts} == set(ACTIVE_LEARNERS), seen
            assert len({tuple(sorted(n.items())) for n in labels}) >= 3, seen  # they advanced
            for counts in labels:
                assert len(set(counts.values())) <= 1, labels  # BALD and random in step
            assert seen[-1]["run_again"] and not seen[-1]["resume"], seen[-1]
