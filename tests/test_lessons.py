"""The teacher's guide (docs/teaching.md), played in real browsers: one test per lesson, with the
teacher on the projector (presenter mode) and six students in their own browser contexts (the
last one a phone that draws with a finger).

Every link comes from the guide itself (:func:`lesson`), so a link changed in the guide changes
the test; ``http://localhost:8501`` (the teacher's) and ``http://<address>:8501`` (the
students') become the test server's address. Each step is timed and must fit in the minutes the
guide's table gives it (:meth:`Lesson.step`). The waits follow the page's state, never a fixed
sleep.

The visible texts the tests look for are gathered in the constants below, so a page that words
something differently is adjusted here, in one place.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from core.classroom.store import ClassStore
from tests.browser_util import (
    REPO_ROOT,
    chromium_browsers,
    clear_drawing,
    draw_on_canvas,
    network_address,
    page_text,
    record_timings,
    require_chromium,
    scored_default_models,
    send_to_class,
    serve_app,
    sign_in_as_teacher,
    wait_for_script,
    wait_for_text,
)
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
STUDENTS_JOIN = "Students join by scanning the code or typing the link"
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
    """A lesson being played: its steps from the guide, the server's URL, the steps' times."""

    def __init__(self, number: int, url: str) -> None:
        self.number = number
        self.url = url
        self.steps = guide_lesson(number)
        self.times: list[tuple[str, float, float]] = []

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
        self.times.append((f"{step.start}–{step.end} {step.title}", took, step.seconds))
        print(f"lesson {self.number}, {step.title}: {took:.1f} s of {step.seconds:.0f} s")
        assert took <= step.seconds, f"{step.title}: {took:.0f} s, the guide gives {step.seconds}"


def test_the_guide_gives_every_step_of_each_lesson_its_links():
    """The guide's structure the lesson tests rely on."""
    for number, steps in ((1, 6), (2, 5), (3, 6)):
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
    """The values of the page's metrics labelled ``label``, in the page's order."""
    return page.evaluate(
        """(label) => [...document.querySelectorAll("[data-testid='stMetric']")]
            .filter(m => m.querySelector("[data-testid='stMetricLabel']").innerText.trim()
                         === label)
            .map(m => m.querySelector("[data-testid='stMetricValue']").innerText.trim())""",
        label,
    )


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
        chromium_browsers(1 + STUDENTS, phones=1) as pages,
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
            for page in students:
                page.goto(lesson.student_link(5))
            for page in students:
                page.wait_for_selector("canvas.upper-canvas")
            phone = students[-1]
            for page, (label, strokes) in zip(students, DIGITS.items(), strict=True):
                send_to_class(page, strokes, label, code, tap=page is phone)
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
                    metrics = ood_result(model, dataset, n_samples=50, n_inputs=2000).metrics
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
