"""Presenter-mode screenshots of every page, and each page's time to its main figure.

Starts the app as ``scripts/run_app.sh`` does (warm, ``python -m app.serve``) on a free
loopback port and opens each page of ``app.main.PAGES`` with ``?present=1`` in headless
Chromium at 1920×1080, twice, each time on a fresh server:

* **in the app**: the Home page from its address, then every other page by its link in the
  app's navigation, as a class moves through the lab;
* **from a link**: every page from its address (a shared link: the browser loads the whole app
  each time). The screenshots are taken then.

A page is ready when its script has finished, its first visible chart (or, on a page without
one, its title) is shown and its controls are drawn; the seconds from the click or the
navigation to that moment are printed per page, in a Markdown table. With an empty evaluation
cache (``BNN_CACHE_DIR`` set to a new folder) they are first-visit times. Each screenshot is
saved as ``<out>/<page>.png`` (``home`` for the Home page, else the page's address, e.g.
``draw``). A page not ready within ``--timeout`` seconds (300) is reported and skipped; the exit
status is then 1. The servers' output goes to ``.pytest_cache/streamlit-<port>.log``.

Run from the repository root (extra datasets through ``BNN_DATA_PATH``, as for the app)::

    export BNN_CACHE_DIR=$(mktemp -d) BNN_DATA_PATH=../shared/datasets
    .venv/bin/python -m scripts.screenshots
    .venv/bin/python -m scripts.screenshots --pages draw,ood --out /tmp/shots

``--format auto`` (the default) saves PNGs unless they add up to more than 4 MB, and JPEGs of
quality 80 then (``docs/teaching.md`` and ``docs/index.md`` link the ``.png`` files); ``png`` or
``jpeg`` forces one. Needs Debian's Chromium (``/usr/bin/chromium``)
and the test requirements (Playwright).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.main import PAGES
from harness.browser import chromium_page, serve_app

REPO_ROOT = Path(__file__).resolve().parent.parent

WIDTH, HEIGHT = 1920, 1080
PAGE_TIMEOUT_S = 300.0
SETTLE_S = 1.0  # the script must still be idle this long after it first looks idle
PNG_BUDGET = 4_000_000  # bytes of PNGs in all, above which --format auto writes JPEGs
JPEG_QUALITY = 80
APP = "[data-testid='stApp']"
IDLE = f"{APP}[data-test-script-state='notRunning']"
TITLE = "[data-testid='stMain'] h1"
CHART = "[data-testid='stPlotlyChart']"
NAV_LINK = "[data-testid='stSidebarNavLink']"
SKELETONS = "[data-testid='stSkeleton'], [data-testid='stSkeletonElement']"  # widgets loading
PROBLEMS = {
    "exception": "[data-testid='stException']",
    "error box": "[data-testid='stAlertContentError']",
    "warning box": "[data-testid='stAlertContentWarning']",
}


def page_names() -> list[str]:
    """The output name of every page, in PAGES' order: ``home``, then the addresses."""
    return ["home" if i == 0 else Path(p.file).stem for i, p in enumerate(PAGES)]


def page_url(base: str, name: str) -> str:
    """The page's address in presenter mode."""
    return f"{base}/{'' if name == 'home' else name}?present=1"


def wait_idle(page, deadline: float) -> float:
    """Wait until the script is idle and stays so for SETTLE_S; the time it first was."""
    while True:
        left_ms = max((deadline - time.monotonic()) * 1000, 1)
        page.wait_for_selector(IDLE, timeout=left_ms)
        idle_at = time.monotonic()
        page.wait_for_timeout(SETTLE_S * 1000)
        if page.locator(IDLE).count():
            return idle_at


def navigate(page, base: str, name: str, in_app: bool, timeout_s: float) -> None:
    """Open a page: by its link in the app's navigation, or from its address."""
    if not in_app:
        page.goto(page_url(base, name), wait_until="domcontentloaded")
        return
    old = page.locator(TITLE).first.inner_text()
    # the sidebar is collapsed in presenter mode: the click goes to the hidden link itself
    page.locator(f"{NAV_LINK}[href$='/{name}']").dispatch_event("click")
    page.wait_for_function(
        "([sel, old]) => (h => h && h.innerText !== old)(document.querySelector(sel))",
        arg=[TITLE, old],
        timeout=timeout_s * 1000,
    )


MAIN_FIGURE_JS = """([chart, idle]) => {
  const svg = document.querySelector(chart + ' .main-svg');
  if (svg && svg.getBoundingClientRect().height > 0) return true;
  return !!document.querySelector(idle) && !document.querySelector(chart);
}"""
"""True once the page's first chart is drawn, or its script has ended without a chart."""


def capture(
    page, base: str, name: str, timeout_s: float, in_app: bool = False
) -> tuple[float, float, str, bytes, bytes]:
    """Open one page and wait for it.

    Returns:
        Seconds to its main figure (its first chart drawn; on a page without one, its script
        ended), seconds until it is complete (script ended, every chart and control drawn),
        notes, PNG and JPEG.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    navigate(page, base, name, in_app and name != "home", timeout_s)
    page.locator(TITLE).first.wait_for(state="visible", timeout=timeout_s * 1000)
    page.wait_for_function(MAIN_FIGURE_JS, arg=[CHART, IDLE], timeout=timeout_s * 1000)
    main_figure = time.monotonic() - start
    ready = wait_idle(page, deadline)
    charts = page.locator(CHART)
    if charts.count():
        left_ms = max((deadline - time.monotonic()) * 1000, 1)
        charts.first.locator(".main-svg").first.wait_for(state="visible", timeout=left_ms)
        ready = max(ready, time.monotonic())
        main = "chart"
    else:
        main = "title"
    if page.locator(SKELETONS).count():  # the browser may draw widgets after the run ends
        left_ms = max((deadline - time.monotonic()) * 1000, 1)
        page.wait_for_function(
            "(sel) => !document.querySelector(sel)", arg=SKELETONS, timeout=left_ms
        )
        ready = max(ready, time.monotonic())
    complete = ready - start
    page.wait_for_timeout(500)  # plotly's and the fonts' last layout pass
    notes = [main] + [
        f"{n}× {what}" for what, sel in PROBLEMS.items() if (n := page.locator(sel).count())
    ]
    png = page.screenshot(type="png")
    jpeg = page.screenshot(type="jpeg", quality=JPEG_QUALITY)
    return main_figure, complete, ", ".join(notes), png, jpeg


def main() -> int:
    """Take the screenshots and print the table; 1 if some page failed."""
    names = page_names()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "img")
    parser.add_argument("--pages", help=f"comma-separated subset of: {','.join(names)}")
    parser.add_argument("--format", choices=("auto", "png", "jpeg"), default="auto")
    parser.add_argument(
        "--timeout", type=float, default=PAGE_TIMEOUT_S, help="seconds to wait for one page"
    )
    args = parser.parse_args()
    chosen = names
    if args.pages:
        chosen = [p.strip() for p in args.pages.split(",") if p.strip()]
        unknown = [p for p in chosen if p not in names]
        if unknown:
            parser.error(f"unknown page(s) {', '.join(unknown)}; pages: {', '.join(names)}")
    args.out.mkdir(parents=True, exist_ok=True)

    in_app: dict[str, tuple[float, float]] = {}
    with serve_app(timeout=120) as base, chromium_page(WIDTH, HEIGHT) as page:
        if chosen[0] != "home":  # a class starts on the Home page
            page.goto(page_url(base, "home"))
            wait_idle(page, time.monotonic() + args.timeout)
        for name in chosen:
            try:
                in_app[name] = capture(page, base, name, args.timeout, in_app=True)[:2]
            except Exception:  # the link pass reports why
                print(f"{name} in the app: failed", file=sys.stderr, flush=True)
                continue
            print(f"{name} in the app: {in_app[name][0]:.1f} s", file=sys.stderr, flush=True)

    shots: dict[str, tuple[bytes, bytes]] = {}
    rows = []
    with serve_app(timeout=120) as base, chromium_page(WIDTH, HEIGHT) as page:
        for name in chosen:
            try:
                main_figure, complete, notes, png, jpeg = capture(page, base, name, args.timeout)
            except Exception as exc:  # a page that never gets ready: note it, go on
                failure = f"FAILED: {type(exc).__name__}: {exc}".split("\n")[0]
                rows.append((name, (None, None), failure))
                print(f"{name}: failed", file=sys.stderr, flush=True)
                continue
            shots[name] = (png, jpeg)
            rows.append((name, (main_figure, complete), notes))
            print(f"{name} from a link: {main_figure:.1f} s", file=sys.stderr, flush=True)

    png_total = sum(len(png) for png, _ in shots.values())
    use_jpeg = args.format == "jpeg" or (args.format == "auto" and png_total > PNG_BUDGET)
    ext = "jpg" if use_jpeg else "png"
    sizes = {}
    for name, (png, jpeg) in shots.items():
        data = jpeg if use_jpeg else png
        (args.out / f"{name}.{ext}").write_bytes(data)
        sizes[name] = len(data)

    print(
        "\n| page | in the app: main figure | complete | from a link: main figure | complete "
        "| size (KB) | shown |\n|---|---:|---:|---:|---:|---:|---|"
    )

    for name, times, notes in rows:
        cells = [
            f"{t:.1f}" if t is not None else "–" for t in (*in_app.get(name, (None, None)), *times)
        ]
        size_text = f"{sizes[name] / 1000:.0f}" if name in sizes else "–"
        print(f"| {name} | {' | '.join(cells)} | {size_text} | {notes} |")
    print(
        f"\n{len(sizes)} {ext.upper()} file(s) in {args.out}, {sum(sizes.values()) / 1e6:.2f} MB "
        f"(PNGs would be {png_total / 1e6:.2f} MB)"
    )
    return 0 if len(sizes) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
