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

Run by hand (not a test)::

    .venv/bin/python benchmarks/load_test.py --students 30 --json benchmarks/load-30.json

It serves ``app/main.py`` on a free loopback port with a scratch class database and models
folder, so it never touches the user's own data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from tests.browser_util import (  # noqa: E402
    _TIMING_SCRIPT,
    CHROMIUM,
    CHROMIUM_ARGS,
    serve_app_process,
)

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


async def student(browser, url: str, index: int, delay: float, timeout_ms: float) -> dict:
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
        await page.goto(f"{url}/draw?class=loadtest")
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
        await page.goto(f"{url}/ood?class=loadtest")
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


async def run(students: int, ramp: float, timeout_s: float, url: str) -> list[dict]:
    """All students against ``url`` in one Chromium (one context each)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            delays = [ramp * i / max(students - 1, 1) for i in range(students)]
            return await asyncio.gather(
                *(student(browser, url, i, d, timeout_s * 1000) for i, d in enumerate(delays))
            )
        finally:
            await browser.close()


def main() -> None:
    """Parse arguments, serve the app, run the class, print and optionally save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--ramp", type=float, default=30.0, help="arrivals spread over (s)")
    parser.add_argument("--timeout", type=float, default=180.0, help="per step (s)")
    parser.add_argument("--json", type=Path, help="save the figures to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {
            "BNN_CLASS_DB": f"sqlite:///{scratch}/class.sqlite",
            "BNN_MODELS_DIR": f"{scratch}/models",
        }
        started = time.monotonic()
        with serve_app_process(env=env) as (url, proc):
            idle_cpu = cpu_seconds(proc.pid)
            results = asyncio.run(run(args.students, args.ramp, args.timeout, url))
            rss, server_cpu = peak_rss_mb(proc.pid), cpu_seconds(proc.pid) - idle_cpu
        wall = time.monotonic() - started
        from core.classroom.store import ClassStore

        stored = ClassStore(env["BNN_CLASS_DB"]).count("loadtest")
    errors = [f"student {r['student']}: {e}" for r in results for e in r["errors"]]
    report = {
        "students": args.students,
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
        "server_peak_rss_mb": round(rss),
        "server_cpu_s": round(server_cpu, 1),
        "server_cpu_s_per_student": round(server_cpu / max(args.students, 1), 2),
        "wall_s": round(wall, 1),
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
