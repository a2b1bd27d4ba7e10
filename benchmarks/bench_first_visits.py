"""First visits of every link of the teacher's guide, after ``python -m core prepare``.

On an empty evaluation cache (a new ``BNN_CACHE_DIR``, unless ``--cache`` names one), runs
``python -m core prepare`` on the guide, then starts a fresh server as ``scripts/run_app.sh``
does and opens each link of the guide once, from its address, in headless Chromium at
1920×1080 (``scripts/screenshots.py``'s measure), in ``--passes`` passes (3), each on a fresh
server in a fresh browser: seconds to the page's **main figure** (its first chart drawn; on a
page without charts, its script done) and until it is **complete**, median and slowest. On a
link that sets up a live bandit run it then presses **Start** and times the stored result's
figure. The median over passes is what a link costs; the slowest shows the noise of a shared
machine. Writes ``notebook/classroom/teaching-first-visits.json``; ``--write-guide`` also writes the
table into ``docs/teaching.md`` between its ``first-visits`` markers::

    export BNN_DATA_PATH=/path/to/datasets
    .venv/bin/python -m benchmarks.bench_first_visits --write-guide      # about 12 minutes
    .venv/bin/python -m benchmarks.bench_first_visits --no-prepare       # the times without it

Needs Debian's Chromium (``/usr/bin/chromium``) and the test requirements (Playwright).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.prepare import guide_url, read_guide
from core.stated.guide import GUIDE, GuideLink
from harness.browser import chromium_page, serve_app
from scripts.screenshots import (
    CHART,
    HEIGHT,
    IDLE,
    MAIN_FIGURE_JS,
    TITLE,
    WIDTH,
    wait_idle,
)

REPO_ROOT = Path(__file__).resolve().parents[1]

OUT = REPO_ROOT / "notebook" / "classroom" / "teaching-first-visits.json"
BEGIN, END = "<!-- first-visits:begin -->", "<!-- first-visits:end -->"
TARGET_S = 3.0
LIVE_DONE = "text=Lines: mean over seeds"  # the caption under a live run's result


def run_prepare(guide: Path) -> dict:
    """``python -m core prepare --json`` in its own process; its report and seconds."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "core", "prepare", "--guide", str(guide), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - start
    if not done.stdout.strip():
        raise RuntimeError(f"prepare failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout) | {"seconds": seconds, "exit": done.returncode}


def visit(page, base: str, link: GuideLink, timeout_s: float) -> dict:
    """Open one link from its address; seconds to its main figure and to complete."""
    address = base + guide_url(link).removeprefix("http://localhost:8501")
    start = time.monotonic()
    page.goto(address, wait_until="domcontentloaded")
    page.locator(TITLE).first.wait_for(state="visible", timeout=timeout_s * 1000)
    page.wait_for_function(MAIN_FIGURE_JS, arg=[CHART, IDLE], timeout=timeout_s * 1000)
    main_figure = time.monotonic() - start
    complete = wait_idle(page, start + timeout_s) - start
    times = {"main_figure_s": round(main_figure, 2), "complete_s": round(max(complete, 0), 2)}
    if "bandit_steps" in link.query:  # the live run: press Start, wait for its result
        clicked = time.monotonic()
        page.get_by_role("button", name="Start", exact=True).click()
        page.locator(LIVE_DONE).first.wait_for(state="visible", timeout=timeout_s * 1000)
        times["start_to_result_s"] = round(time.monotonic() - clicked, 2)
    return times


def short(url: str) -> str:
    """The link without ``http://localhost:8501`` and without ``present=1``."""
    text = url.removeprefix("http://localhost:8501")
    return re.sub(r"(\?|&)present=1(&|$)", lambda m: m.group(1) if m.group(2) else "", text)


def table(result: dict) -> str:
    """The Markdown table of a run: one row per link, the median and the slowest of the passes."""
    prepared = {link["url"]: link for link in result.get("prepare", {}).get("links", [])}
    passes = result["passes"]
    lines = [
        "| link (all with `present=1`) | prepare (s) | main figure (s), median "
        f"| slowest of {passes} | complete (s), median |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["links"]:
        done = prepared.get(row["url"])
        before = "–" if done is None else ("cached" if done["cached"] else f"{done['seconds']:.0f}")
        if not row["main_figure_s"]:
            cells = [row.get("error", "failed"), "–", "–"]
        else:
            cells = [
                f"{statistics.median(row['main_figure_s']):.1f}",
                f"{max(row['main_figure_s']):.1f}",
                f"{statistics.median(row['complete_s']):.1f}",
            ]
        if row.get("start_to_result_s"):
            cells[0] += f" (Start → result {max(row['start_to_result_s']):.1f})"
        lines.append(f"| `{short(row['url'])}` | {before} | {' | '.join(cells)} |")
    return "\n".join(lines)


def write_guide(guide: Path, text: str) -> None:
    """Replace what lies between the guide's markers by ``text``."""
    content = guide.read_text(encoding="utf-8")
    if BEGIN not in content or END not in content:
        raise SystemExit(f"{guide} has no {BEGIN} … {END} markers")
    head, rest = content.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    guide.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> int:
    """Prepare, visit every link and store the times; 1 if a link failed or its median is slow."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guide", type=Path, default=GUIDE)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, help="the evaluation cache (default: a new one)")
    parser.add_argument("--no-prepare", action="store_true", help="visit without preparing")
    parser.add_argument("--write-guide", action="store_true", help="write the table into it")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for one link")
    parser.add_argument("--passes", type=int, default=3, help="visits of every link, each pass")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bnn-first-visits-"))
    os.environ["BNN_CACHE_DIR"] = str(cache)
    links = read_guide(args.guide)
    result: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "guide": str(args.guide.resolve()).removeprefix(f"{REPO_ROOT}/"),
        "target_s": TARGET_S,
        "passes": args.passes,
        "load_average": os.getloadavg()[0],
    }
    if not args.no_prepare:
        result["prepare"] = run_prepare(args.guide)
        print(f"prepare: {result['prepare']['seconds']:.1f} s", file=sys.stderr, flush=True)
    rows = [
        {"url": guide_url(link), "main_figure_s": [], "complete_s": [], "start_to_result_s": []}
        for link in links
    ]
    for _ in range(args.passes):  # each pass on a fresh server, in a fresh browser
        with serve_app(timeout=120) as base, chromium_page(WIDTH, HEIGHT) as page:
            for link, row in zip(links, rows, strict=True):
                try:
                    times = visit(page, base, link, args.timeout)
                except Exception as exc:  # note it and go on
                    row["error"] = type(exc).__name__
                    continue
                for key, value in times.items():
                    row[key].append(value)
                print(f"{times['main_figure_s']:5.2f} s  {short(guide_url(link))}", file=sys.stderr)
    result["links"] = rows
    result["load_average_end"] = os.getloadavg()[0]
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    text = table(result)
    print(text)
    if args.write_guide:
        write_guide(args.guide, text)
    slow = [
        r["url"]
        for r in rows
        if "error" in r
        or statistics.median(r["main_figure_s"]) > TARGET_S
        or any(t > TARGET_S for t in r["start_to_result_s"])
    ]
    for url in slow:
        print(f"over {TARGET_S:.0f} s or failed: {url}", file=sys.stderr)
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
