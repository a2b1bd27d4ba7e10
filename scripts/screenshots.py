"""Presenter-mode screenshots of every page of the lab, for the documentation.

Starts the app on a free loopback port, opens each page of ``app.main.PAGES`` with
``?present=1`` in headless Chromium at 1920×1080, waits until the page's script has finished,
its first chart (or, on a page without one, its title) is shown and its controls are drawn, and
saves a viewport screenshot as ``<out>/<page>.png`` (``home`` for the Home page, else the
page's address, e.g. ``draw``). Prints, per page, the seconds from navigation to that moment:
with an empty evaluation cache (``.cache/``) that is the first-visit computation time. A page
not ready within ``--timeout`` seconds (300) is reported and skipped; the exit status is then 1.
The server's output goes to ``.pytest_cache/streamlit-<port>.log``.

Run from the repository root (extra datasets through ``BNN_DATA_PATH``, as for the app)::

    BNN_DATA_PATH=../shared/datasets .venv/bin/python scripts/screenshots.py
    .venv/bin/python scripts/screenshots.py --pages draw,ood --out /tmp/shots

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

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from app.main import PAGES  # noqa: E402
from tests.browser_util import chromium_page, serve_app  # noqa: E402

WIDTH, HEIGHT = 1920, 1080
PAGE_TIMEOUT_S = 300.0
SETTLE_S = 1.0  # the script must still be idle this long after it first looks idle
PNG_BUDGET = 4_000_000  # bytes of PNGs in all, above which --format auto writes JPEGs
JPEG_QUALITY = 80
APP = "[data-testid='stApp']"
IDLE = f"{APP}[data-test-script-state='notRunning']"
TITLE = "[data-testid='stMain'] h1"
CHART = "[data-testid='stPlotlyChart']"
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


def capture(page, base: str, name: str, timeout_s: float) -> tuple[float, str, bytes, bytes]:
    """Open one page and wait for it; seconds to its main figure, notes, PNG and JPEG."""
    start = time.monotonic()
    deadline = start + timeout_s
    page.goto(page_url(base, name), wait_until="domcontentloaded")
    page.locator(TITLE).first.wait_for(state="visible", timeout=timeout_s * 1000)
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
    seconds = ready - start
    page.wait_for_timeout(500)  # plotly's and the fonts' last layout pass
    notes = [main] + [
        f"{n}× {what}" for what, sel in PROBLEMS.items() if (n := page.locator(sel).count())
    ]
    png = page.screenshot(type="png")
    jpeg = page.screenshot(type="jpeg", quality=JPEG_QUALITY)
    return seconds, ", ".join(notes), png, jpeg


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

    shots: dict[str, tuple[bytes, bytes]] = {}
    rows = []
    with serve_app(timeout=120) as base, chromium_page(WIDTH, HEIGHT) as page:
        for name in chosen:
            try:
                seconds, notes, png, jpeg = capture(page, base, name, args.timeout)
            except Exception as exc:  # a page that never gets ready: note it, go on
                rows.append((name, None, f"FAILED: {type(exc).__name__}: {exc}".split("\n")[0]))
                print(f"{name}: failed", file=sys.stderr, flush=True)
                continue
            shots[name] = (png, jpeg)
            rows.append((name, seconds, notes))
            print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)

    png_total = sum(len(png) for png, _ in shots.values())
    use_jpeg = args.format == "jpeg" or (args.format == "auto" and png_total > PNG_BUDGET)
    ext = "jpg" if use_jpeg else "png"
    sizes = {}
    for name, (png, jpeg) in shots.items():
        data = jpeg if use_jpeg else png
        (args.out / f"{name}.{ext}").write_bytes(data)
        sizes[name] = len(data)

    print("\n| page | seconds to main figure | size (KB) | shown |\n|---|---:|---:|---|")
    for name, seconds, notes in rows:
        time_text = "–" if seconds is None else f"{seconds:.1f}"
        size_text = f"{sizes[name] / 1000:.0f}" if name in sizes else "–"
        print(f"| {name} | {time_text} | {size_text} | {notes} |")
    print(
        f"\n{len(sizes)} {ext.upper()} file(s) in {args.out}, {sum(sizes.values()) / 1e6:.2f} MB "
        f"(PNGs would be {png_total / 1e6:.2f} MB)"
    )
    return 0 if len(sizes) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
