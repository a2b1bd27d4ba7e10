"""Classroom load test: simulated students in real headless Chromium against one lab server.

Each student opens the Draw page with the class code in the URL, draws a digit on the canvas,
sends it to the class with the digit they meant, then opens the out-of-distribution explorer.
Students arrive spread over ``--ramp`` seconds (a class does not click in the same
millisecond). The script counts errors (exceptions or error boxes on a page, timeouts) and
measures the time from the mouse-up that ends the drawing to the end of the rerun it starts
(median and 95th percentile), the time from opening the OOD explorer to
its finished first run, the server process's peak resident memory (``VmHWM``) and the CPU time
it spent on the class (per student: what a server needs per visit, independent of the
browsers). On one machine the simulated browsers share the cores with the server, so the
latencies include their own rendering; students' laptops do that work in a real class.

A department runs several replicas on one PostgreSQL database and trains on Ray:
``--replicas N`` serves N app processes (student i uses replica i mod N), ``--database
postgresql`` starts a throw-away PostgreSQL cluster for them, and ``--jobs K`` then has K more
browser sessions press "Start training" at once (one-epoch jobs on 1,000 images), with
``--ray`` trained as Ray tasks on a one-CPU head started for the run. While the jobs run, the
job table is read every 0.25 s and checked: the queued jobs hold positions 1, 2, … without gap
or repeat, and no job's progress goes back.

Run by hand (not a test)::

    .venv/bin/python -m benchmarks.load_test --students 30 \
        --json notebook/classroom/classroom-load-30.json
    .venv/bin/python -m benchmarks.load_test --students 30 --replicas 2 --database postgresql \
        --jobs 10 --ray --json notebook/classroom/department-load.json

It serves ``app/main.py`` on free loopback ports with a scratch class database, models folder
and cache (a fresh server's first class), so it never touches the user's own data. ``--warm``
first sends one untimed student to each replica in turn, as a teacher would before class.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from playwright.async_api import TimeoutError as PlaywrightTimeout

from harness.browser import (
    _TIMING_SCRIPT,
    CHROMIUM,
    CHROMIUM_ARGS,
    serve_app_process,
)
from harness.cluster import new_database, postgres_cluster, ray_head

REPO_ROOT = Path(__file__).resolve().parent.parent

IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
FAILURE = "[data-testid='stException'], [data-testid='stAlertContentError']"
STROKES = {
    1: [[(0.5, 0.15), (0.5, 0.85)]],
    0: [
        [
            (0.5 + 0.22 * math.sin(t), 0.5 - 0.33 * math.cos(t))
            for t in (2 * math.pi * k / 40 for k in range(42))
        ]
    ],
    7: [[(0.25, 0.2), (0.75, 0.2), (0.45, 0.85)]],
}


async def draw(page, strokes) -> None:
    """Draw polylines given in canvas fractions with the mouse (a move about every 8 px)."""
    box = await page.locator("canvas.upper-canvas").bounding_box()
    for stroke in strokes:
        points = [
            (box["x"] + fx * box["width"], box["y"] + fy * box["height"]) for fx, fy in stroke
        ]
        await page.mouse.move(*points[0])
        await page.mouse.down()
        for (x0, y0), (x, y) in zip(points, points[1:], strict=False):
            await page.mouse.move(x, y, steps=max(2, int(math.dist((x0, y0), (x, y)) / 8)))
        await page.mouse.up()


async def idle(page, timeout_ms: float) -> None:
    """Wait until the app's script run has finished."""
    await page.wait_for_selector(IDLE, timeout=timeout_ms)


async def student(
    browser, url: str, index: int, delay: float, timeout_ms: float, class_code: str = "loadtest"
) -> dict:
    """One student's visit; returns its timings and errors."""
    await asyncio.sleep(delay)
    result: dict = {"student": index, "errors": []}
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(timeout_ms)
    context.set_default_navigation_timeout(timeout_ms)
    page = await context.new_page()
    await page.add_init_script(_TIMING_SCRIPT)  # counts the messages the page sends
    digit = random.Random(index).choice(sorted(STROKES))
    try:
        start = time.monotonic()
        await page.goto(f"{url}/draw?class={class_code}")
        await page.locator("canvas.upper-canvas").wait_for(timeout=timeout_ms)
        await idle(page, timeout_ms)
        result["draw_page_open_s"] = time.monotonic() - start
        # The mouse-up sends the canvas to the server: the first message after ``sent``. A
        # browser starved of CPU may take the strokes before the canvas is live; a student then
        # draws again, and so does this one (counted as a retry, not an error).
        for attempt in range(3):
            sent = await page.evaluate("window.__sent.length")
            await draw(page, STROKES[digit])
            drawn = time.monotonic()  # the mouse-up that sends the drawing
            try:
                await page.wait_for_function(f"window.__sent.length > {sent}", timeout=30_000)
                break
            except PlaywrightTimeout:
                result["retries"] = attempt + 1
        else:
            raise TimeoutError("three drawings sent nothing to the server")
        # The predictions exist only once the drawing's rerun has made them (a blank canvas
        # has none); the run has finished when the app is idle after that.
        await page.wait_for_selector("[class*='st-key-prediction_']", timeout=timeout_ms)
        await idle(page, timeout_ms)
        result["draw_rerun_ms"] = 1000 * (time.monotonic() - drawn)
        await page.get_by_text("Send my drawing to the class").click()
        digits = page.locator("[class*='st-key-class_label']")
        await digits.get_by_text(str(digit), exact=True).click()
        await idle(page, timeout_ms)
        submitted = time.monotonic()
        await page.get_by_role("button", name="Submit").click()
        await page.get_by_text(f"Sent as a {digit}").wait_for(timeout=timeout_ms)
        await idle(page, timeout_ms)
        result["submit_s"] = time.monotonic() - submitted
        if await page.locator(FAILURE).count():
            result["errors"].append("draw page: " + await page.locator(FAILURE).first.inner_text())
        opened = time.monotonic()
        await page.goto(f"{url}/ood?class={class_code}")
        await page.get_by_text("Out-of-distribution").first.wait_for(timeout=timeout_ms)
        await idle(page, timeout_ms)
        await page.locator(".js-plotly-plot").first.wait_for(timeout=timeout_ms)
        result["ood_open_s"] = time.monotonic() - opened
        if await page.locator(FAILURE).count():
            result["errors"].append("ood page: " + await page.locator(FAILURE).first.inner_text())
    except Exception as exc:  # a load test counts failures instead of stopping at the first
        result["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        await context.close()
    return result


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set size (``VmHWM``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) the process has used so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(values: list[float]) -> dict:
    """Median, 95th percentile and maximum of ``values`` (empty: no keys)."""
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "max": round(ordered[-1], 3),
    }


async def trainee(browser, url: str, index: int, timeout_ms: float) -> dict:
    """One session that asks for a one-epoch MLP job on 1,000 images."""
    result: dict = {"trainee": index, "errors": []}
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(timeout_ms)
    page = await context.new_page()
    query = f"train_kind=mlp&train_epochs=1&train_subset=1000&train_name=load_{index}"
    try:
        await page.goto(f"{url}/train?{query}")
        await page.get_by_role("button", name="Start training").wait_for(timeout=timeout_ms)
        await idle(page, timeout_ms)
        clicked = time.monotonic()
        await page.get_by_role("button", name="Start training").click()
        await page.get_by_text("Job #").first.wait_for(timeout=timeout_ms)
        result["submit_s"] = time.monotonic() - clicked
        if await page.locator(FAILURE).count():
            result["errors"].append("train page: " + await page.locator(FAILURE).first.inner_text())
    except Exception as exc:  # counted, like the students' failures
        result["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        await context.close()
    return result


class JobWatch:
    """Reads the job table every 0.25 s until ``expected`` jobs have ended, checking it."""

    def __init__(self, url: str, expected: int, timeout_s: float) -> None:
        from core.jobs.store import JobStore

        self.store, self.expected, self.timeout_s = JobStore(url), expected, timeout_s
        self.violations: list[str] = []
        self.jobs: list = []
        self.reads = 0
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from core.jobs.records import JobStatus

        fraction: dict[int, float] = {}
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            jobs = self.store.jobs()
            self.reads += 1
            positions = sorted(j.position for j in jobs if j.status is JobStatus.QUEUED)
            if positions != list(range(1, len(positions) + 1)):
                self.violations.append(f"read {self.reads}: queue positions {positions}")
            for j in jobs:
                if j.fraction < fraction.get(j.id, 0.0) - 1e-9:
                    self.violations.append(f"job {j.id}: progress {fraction[j.id]} → {j.fraction}")
                fraction[j.id] = j.fraction
            self.jobs = jobs
            if len(jobs) >= self.expected and not any(j.status.active for j in jobs):
                return
            time.sleep(0.25)
        self.violations.append(f"not all {self.expected} jobs ended within {self.timeout_s} s")

    def report(self) -> dict:
        """Counts by status, the checks, and the jobs' waiting and running times."""
        statuses: dict[str, int] = {}
        for j in self.jobs:
            statuses[j.status.value] = statuses.get(j.status.value, 0) + 1
        started = [j for j in self.jobs if j.started is not None]
        ended = [j for j in started if j.finished is not None]
        first = min((j.submitted for j in self.jobs), default=0.0)
        return {
            "jobs": len(self.jobs),
            "statuses": statuses,
            "table_reads": self.reads,
            "violations": self.violations[:20],
            "executors": sorted({j.device for j in started}),
            "wait_s": summary([j.started - j.submitted for j in started]),
            "run_s": summary([j.finished - j.started for j in ended]),
            "all_done_s": round(max(j.finished for j in ended) - first, 1) if ended else None,
        }


async def run(
    students: int,
    ramp: float,
    timeout_s: float,
    urls: list[str],
    jobs: int = 0,
    watch=None,
    warm: list | None = None,
) -> tuple[list[dict], list[dict]]:
    """All students (student i on ``urls[i % len(urls)]``), then ``jobs`` trainees at once.

    With ``warm`` (a list), one visit per replica first, one after the other, appended to it:
    what a teacher does before class, so that the results every visit reuses (the "I don't
    know" thresholds, the OOD scores) are computed and cached.
    """
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            for k, url in enumerate(urls if warm is not None else ()):  # before class
                visit = await student(browser, url, 1000 + k, 0.0, 3 * timeout_s * 1000, "warmup")
                warm.append(visit)
            delays = [ramp * i / max(students - 1, 1) for i in range(students)]
            visits = await asyncio.gather(
                *(
                    student(browser, urls[i % len(urls)], i, d, timeout_s * 1000)
                    for i, d in enumerate(delays)
                )
            )
            if not jobs:
                return visits, []
            watch.thread.start()
            trainees = await asyncio.gather(
                *(trainee(browser, urls[i % len(urls)], i, timeout_s * 1000) for i in range(jobs))
            )
            await asyncio.to_thread(watch.thread.join)
            return visits, trainees
        finally:
            await browser.close()


def main() -> None:
    """Parse arguments, serve the app, run the class, print and optionally save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--ramp", type=float, default=30.0, help="arrivals spread over (s)")
    parser.add_argument("--timeout", type=float, default=180.0, help="per step (s)")
    parser.add_argument("--json", type=Path, help="save the figures to this file")
    parser.add_argument("--replicas", type=int, default=1, help="app processes")
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--jobs", type=int, default=0, help="training jobs asked for at once")
    parser.add_argument("--ray", action="store_true", help="train the jobs as Ray tasks")
    parser.add_argument(
        "--warm", action="store_true", help="one untimed visit per replica before the class"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        if args.database == "postgresql":
            database = new_database(stack.enter_context(postgres_cluster()))
        else:
            database = f"sqlite:///{scratch}/class.sqlite"
        env = {
            "BNN_CLASS_DB": database,
            "BNN_MODELS_DIR": f"{scratch}/models",
            "BNN_CACHE_DIR": f"{scratch}/cache",  # a fresh server's first class
        }
        if args.ray:
            env["BNN_RAY_ADDRESS"] = stack.enter_context(ray_head()).address
        started = time.monotonic()
        servers = [stack.enter_context(serve_app_process(env=env)) for _ in range(args.replicas)]
        urls = [url for url, _ in servers]
        idle_cpu = [cpu_seconds(proc.pid) for _, proc in servers]
        watch = JobWatch(database, args.jobs, 60 * args.timeout) if args.jobs else None
        warm: list | None = [] if args.warm else None
        results, trainees = asyncio.run(
            run(args.students, args.ramp, args.timeout, urls, args.jobs, watch, warm)
        )
        rss = [peak_rss_mb(proc.pid) for _, proc in servers]
        used = zip(servers, idle_cpu, strict=True)
        server_cpu = sum(cpu_seconds(proc.pid) - idle for (_, proc), idle in used)
        wall = time.monotonic() - started
        from core.classroom.store import ClassStore

        stored = ClassStore(database).count("loadtest")
        stack.close()
    errors = [f"student {r['student']}: {e}" for r in results for e in r["errors"]]
    errors += [f"trainee {r['trainee']}: {e}" for r in trainees for e in r["errors"]]
    report = {
        "students": args.students,
        "replicas": args.replicas,
        "database": args.database,
        "ramp_s": args.ramp,
        "cpu_count": os.cpu_count(),
        "errors": len(errors),
        "error_messages": errors,
        "drawings_stored": stored,
        "drawing_retries": sum(r.get("retries", 0) for r in results),
        "draw_rerun_ms": summary([r["draw_rerun_ms"] for r in results if "draw_rerun_ms" in r]),
        "draw_page_open_s": summary(
            [r["draw_page_open_s"] for r in results if "draw_page_open_s" in r]
        ),
        "submit_s": summary([r["submit_s"] for r in results if "submit_s" in r]),
        "ood_open_s": summary([r["ood_open_s"] for r in results if "ood_open_s" in r]),
        "server_peak_rss_mb": [round(r) for r in rss],
        "server_cpu_s": round(server_cpu, 1),
        "server_cpu_s_per_student": round(server_cpu / max(args.students, 1), 2),
        "wall_s": round(wall, 1),
        "warm_up": None
        if warm is None
        else [
            {k: v for k, v in w.items() if k.endswith(("_s", "_ms")) or k == "errors"}
            | {"replica": i}
            for i, w in enumerate(warm)
        ],
        "training": None
        if watch is None
        else {
            "executor": "ray" if args.ray else "in-process threads",
            "submit_s": summary([r["submit_s"] for r in trainees if "submit_s" in r]),
            **watch.report(),
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
