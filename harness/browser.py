"""Real-browser test helpers: serve the app on a free loopback port, launch Debian's Chromium.

Usage in a test module::

    pytestmark = [pytest.mark.browser, require_chromium()]

    def test_page():
        with serve_app() as url, chromium_page() as page:
            page.goto(f"{url}/draw")
            wait_for_script(page)
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 180_000
"""Longest wait for one element or page state: each wait ends as soon as the page is ready, so
the limit only matters on a machine so loaded that the app's runs take minutes."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> pytest.MarkDecorator:
    """Skip marker for when Debian's Chromium is not installed."""
    return pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason=f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`",
    )


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port on ``address`` (an IPv4 address of this machine) that is free right now."""
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def network_address() -> str:
    """An IPv4 address of this machine other than loopback; skips the test without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # a documentation address: nothing is sent
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("this machine has no network address but loopback")
    return address


@contextmanager
def serve_app(
    script: str = "app/main.py",
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    address: str = "127.0.0.1",
) -> Iterator[str]:
    """Serve ``script`` on a free port of ``address`` (loopback by default); yields its base URL.

    The whole app (``app/main.py``) starts as ``scripts/run_app.sh`` starts it, warm
    (``python -m app.serve``); a single page as ``streamlit run script``. Waits until
    ``/_stcore/health`` answers ``ok``; stops the server (by its own PID) on exit.
    """
    with serve_app_process(script, env, timeout, address) as (url, _):
        yield url


@contextmanager
def serve_app_process(
    script: str = "app/main.py",
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    address: str = "127.0.0.1",
) -> Iterator[tuple[str, subprocess.Popen]]:
    """:func:`serve_app` that also yields the server process (e.g. to read its memory)."""
    port = free_port(address)
    start = ["app.serve"] if script == "app/main.py" else ["streamlit", "run", script]
    cmd = [
        sys.executable,
        "-m",
        *start,
        "--server.headless=true",
        f"--server.address={address}",
        f"--server.port={port}",
        "--browser.gatherUsageStats=false",
        "--server.fileWatcherType=none",
    ]
    log = server_log(port)
    log.parent.mkdir(exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env={**os.environ, **(env or {})}, stdout=out, stderr=out
        )
    url = f"http://{address}:{port}"
    try:
        _wait_healthy(url, proc, timeout, log)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_log(port: int) -> Path:
    """Where :func:`serve_app_process` writes the output of the server on ``port``."""
    return REPO_ROOT / ".pytest_cache" / f"streamlit-{port}.log"


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"streamlit did not become healthy in {timeout} s:\n{log.read_text()}")


PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
"""A phone's browser context: 390 × 844 CSS pixels, a touch screen (no mouse, no hover)."""


@contextmanager
def chromium_page(width: int = 1600, height: int = 1200, phone: bool = False) -> Iterator:
    """A fresh headless Chromium page (Playwright sync API); ``phone``: as :data:`PHONE`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            options = PHONE if phone else {"viewport": {"width": width, "height": height}}
            page = browser.new_context(**options).new_page()
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


@contextmanager
def chromium_browsers(
    n: int, width: int = 1600, height: int = 1200, phones: int = 0
) -> Iterator[list]:
    """``n`` pages in separate browser contexts: each its own cookies, as ``n`` students; the
    last ``phones`` of them are phones (:data:`PHONE`).
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            pages = []
            desktop = {"viewport": {"width": width, "height": height}}
            for i in range(n):
                page = browser.new_context(**(PHONE if i >= n - phones else desktop)).new_page()
                page.set_default_timeout(WAIT_MS)
                pages.append(page)
            yield pages
        finally:
            browser.close()


# Timestamps (performance.now()) of every websocket message the page sends and of every time
# the app's script state becomes "notRunning", for rerun_latency_ms().
_TIMING_SCRIPT = """
window.__sent = [];
window.__idle = [];
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  window.__sent.push(performance.now());
  return send.call(this, data);
};
document.addEventListener("DOMContentLoaded", () => {
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      if (m.target.getAttribute("data-test-script-state") === "notRunning") {
        window.__idle.push(performance.now());
      }
    }
  }).observe(document.body, {
    subtree: true, attributes: true, attributeFilter: ["data-test-script-state"],
  });
});
"""


def record_timings(page) -> None:
    """Make the page record message and end-of-run times; call before ``page.goto``."""
    page.add_init_script(_TIMING_SCRIPT)


def messages_sent(page) -> int:
    """How many websocket messages the page has sent so far (see :func:`record_timings`)."""
    return page.evaluate("window.__sent.length")


def rerun_latency_ms(page, message: int) -> float:
    """Milliseconds from the page's ``message``-th websocket message (0-based) to the end of
    the script run that follows, as the browser sees it.
    """
    return page.evaluate(
        "(i) => { const t = window.__sent[i]; return window.__idle.find((u) => u > t) - t; }",
        message,
    )


def wait_for_script(page, timeout_ms: float = WAIT_MS) -> None:
    """Wait until the app's script is not running. Call it once the page shows something that
    only the awaited run produces: right after an interaction the run may not have started.
    """
    page.wait_for_selector(
        "[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout_ms
    )


def wait_for_enabled(page, label: str, timeout_ms: float | None = None) -> None:
    """Wait until the button labelled ``label`` is enabled (the run that enables it is over);
    ``timeout_ms``: Playwright's default when None.
    """
    page.wait_for_function(
        "label => ![...document.querySelectorAll('button')].find("
        "b => b.innerText.trim() === label).disabled",
        arg=label,
        timeout=timeout_ms,
    )


def wait_for_setting(page, key: str, value: str) -> None:
    """Wait until the rerun that a widget's change starts has applied it: the page writes each
    setting into its link (``?key=value``) during that run; then wait for the run to end.
    """
    page.wait_for_function(
        "([key, value]) => new URLSearchParams(location.search).get(key) === value",
        arg=[key, value],
    )
    wait_for_script(page)


def wait_for_text(
    page, text: str, deadline_s: float = 600, idle_s: float = 15, start_s: float = 120
) -> None:
    """Wait until the page shows ``text``, for as long as the app is still working on it.

    A loaded machine only makes the app's script run longer, so the wait follows the page's
    state rather than a fixed time: it fails once the script has been idle for ``idle_s``
    seconds without showing the text (the run that should have shown it is over), or after
    ``deadline_s`` in all. Until a run has been seen, the idle limit is ``start_s``: a page
    just opened on a busy server may take a while to start its first run.
    """
    shown = page.get_by_text(text).filter(visible=True)  # not a table's hidden copy
    running = page.locator("[data-testid='stApp'][data-test-script-state='running']")
    start = idle_since = time.monotonic()
    limit = start_s
    while not shown.count():
        now = time.monotonic()
        if running.count():
            idle_since, limit = now, idle_s
        elif now - idle_since > limit:
            pytest.fail(f"the page stopped working without showing {text!r}:\n{page_text(page)}")
        if now - start > deadline_s:
            pytest.fail(f"waited {deadline_s:g} s for {text!r}:\n{page_text(page)}")
        page.wait_for_timeout(100)


def page_text(page, chars: int = 1500) -> str:
    """The end of the page's visible text, for a failure message."""
    try:
        return page.inner_text("body")[-chars:]
    except Exception as exc:  # the page itself may be gone
        return f"(no text: {exc})"


def wait_for_polled_text(page, text: str, deadline_s: float = 300) -> None:
    """Wait until a page that polls (the Train page's job list, a fragment rerun every second)
    shows ``text``.

    Such a page is never idle for long, but each poll is a run of a few milliseconds that
    :func:`wait_for_text`'s check of the script state can miss many times in a row; so this
    wait only has a deadline. Only visible text counts: a table's cells (``st.dataframe``) are
    drawn on a canvas and also kept as hidden text, which would otherwise match first.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.get_by_text(text).filter(visible=True).first.wait_for(timeout=deadline_s * 1000)
    except PlaywrightTimeout as exc:  # say what the page showed instead
        raise AssertionError(f"no {text!r} on the page, which ends:\n{page_text(page)}") from exc


def until_sent(page, act: Callable[[], None], tries: int, what: str) -> None:
    """Do ``act`` until the page sends a message for it (needs :func:`record_timings`).

    An action that lands while the page is still laying out or mounting a rerun's elements can
    miss them, and then the page sends nothing; it is done again. An action the page did send
    to the server is never repeated, so a lost or doubled action still fails the test.

    Raises:
        AssertionError: ``"{tries} {what} and the page sent nothing"``.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(tries):
        wait_for_script(page)
        sent = messages_sent(page)
        act()
        try:
            page.wait_for_function(f"() => window.__sent.length > {sent}", timeout=30_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"{tries} {what} and the page sent nothing")


def press(
    page, button, *, tap: bool = False, tries: int = 3, timeout_ms: float | None = None
) -> None:
    """Tap (or click) ``button`` until the press leaves the page (:func:`until_sent`).

    ``timeout_ms``: how long one press waits for the button to be visible, enabled and still
    (Playwright's default when None); past it Playwright's ``TimeoutError`` is raised and the
    button was not pressed.
    """
    act = button.tap if tap else button.click
    until_sent(page, lambda: act(timeout=timeout_ms), tries, "presses of the button")


def open_sidebar(page) -> None:
    """Open the sidebar if it is collapsed (presenter mode, ``?present=1``, collapses it)."""
    expand = page.locator("[data-testid='stExpandSidebarButton']")
    if expand.count() and expand.first.is_visible():
        expand.first.click()
        expand.first.wait_for(state="hidden")


def sign_in_as_teacher(page, key: str, polled: bool = False, tries: int = 3) -> None:
    """Open the sidebar's teacher sign-in, type ``key``, press Sign in and wait for teacher
    mode (needs :func:`record_timings`); ``polled``: on a page that polls (the Train page).

    On a loaded server a rerun (the Class page's live refresh, a late run of the page's
    opening) can land between typing the key and the press, so the press never reaches the
    server and the form stays as it was: then the key is typed and pressed again (signing in
    twice is harmless), up to ``tries`` times.
    """
    wait_for_script(page)
    open_sidebar(page)
    for attempt in range(tries):
        field = page.get_by_label("Teacher key").filter(visible=True)
        if not field.count():  # the sign-in expander is closed
            page.get_by_text("Teacher sign-in").click()
        page.get_by_label("Teacher key").fill(key)
        press(page, page.get_by_role("button", name="Sign in"))
        try:
            (wait_for_polled_text if polled else wait_for_text)(page, "Teacher mode")
            return
        except pytest.fail.Exception:
            if attempt == tries - 1:
                raise


def choose(page, box, option: str, tries: int = 10) -> None:
    """Open the drop-down ``box`` (a locator of its combobox) and click ``option`` in it.

    A rerun that lands between the two clicks (a page that polls, or the previous interaction's
    run ending late) re-renders the widget and closes its list; so open it again until the
    option can be clicked, then wait for the run the choice starts.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(tries):
        wait_for_script(page)
        box.click()
        try:
            wanted.click(timeout=10_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            continue
        wait_for_script(page)
        return
    raise AssertionError(f"the option {option!r} never showed in its list")


def draw(page, strokes: list[list[tuple[float, float]]]) -> None:
    """Draw polylines given in canvas fractions on the page's drawing canvas, with the mouse
    (a move event about every 8 pixels, as a hand would give).
    """
    box = page.locator("canvas.upper-canvas").bounding_box()
    for stroke in strokes:
        points = [
            (box["x"] + fx * box["width"], box["y"] + fy * box["height"]) for fx, fy in stroke
        ]
        page.mouse.move(*points[0])
        page.mouse.down()
        for (x0, y0), (x, y) in zip(points, points[1:], strict=False):
            page.mouse.move(x, y, steps=max(2, int(math.dist((x0, y0), (x, y)) / 8)))
        page.mouse.up()


def draw_until_sent(page, strokes: list[list[tuple[float, float]]], tries: int = 3) -> None:
    """:func:`draw` the strokes until the canvas sends them (:func:`until_sent`): strokes drawn
    while a rerun is still mounting the canvas are lost and drawn again.
    """
    until_sent(page, lambda: draw(page, strokes), tries, "drawings on the canvas")


def finger(page, points: list[tuple[float, float]]) -> None:
    """Touch the screen at the first point, slide through the others, lift: real touch events
    (the DevTools protocol's, as a touch screen sends them), a move about every 8 pixels.
    """
    cdp = page.context.new_cdp_session(page)

    def touch(kind: str, *at: tuple[float, float]) -> None:
        cdp.send(
            "Input.dispatchTouchEvent",
            {"type": kind, "touchPoints": [{"x": x, "y": y} for x, y in at]},
        )

    touch("touchStart", points[0])
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        steps = max(2, int(math.dist((x0, y0), (x1, y1)) / 8))
        for k in range(1, steps + 1):
            touch("touchMove", (x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps))
    touch("touchEnd")
    cdp.detach()


def touch_draw(page, strokes: list[list[tuple[float, float]]]) -> None:
    """Draw polylines given in canvas fractions on the page's drawing canvas with a finger."""
    box = page.locator("canvas.upper-canvas").bounding_box()
    for stroke in strokes:
        finger(
            page,
            [(box["x"] + fx * box["width"], box["y"] + fy * box["height"]) for fx, fy in stroke],
        )


def swipe_up(page, x: float, y: float, distance: float) -> None:
    """A finger swipe upwards from (x, y) over ``distance`` CSS pixels (asks the page to scroll
    down, if whatever is under the finger lets it).
    """
    finger(page, [(x, y), (x, y - distance)])


def scored_default_models() -> list[str]:
    """The sidebar's default models, with their "I don't know" thresholds computed beforehand
    (a one-time MNIST scoring per checkpoint, cached on disk), so that a browser test waits for
    the page, not for that. Without MNIST the pages work without verdicts.
    """
    from core.catalogue import default_models, list_checkpoints
    from core.data import DatasetUnavailable
    from core.studies import evaluations

    names = default_models([i.spec.name for i in list_checkpoints() if i.available])
    try:
        for name in names:
            evaluations.rejection_thresholds(name)
    except DatasetUnavailable:
        pass
    return names


def choose_class_label(page, label: str, *, tap: bool = False) -> None:
    """Pick ``label`` among the send panel's digits (a tap on a touch screen), again when a
    click landed while the page reran and was lost.
    """
    choice = page.locator("[class*='st-key-class_label']")
    for _ in range(5):
        option = choice.get_by_text(label, exact=True)
        if tap:
            option.tap()
        else:
            option.click()
        wait_for_script(page)
        if choice.get_by_role("radio", name=label).is_checked():
            break
    assert choice.get_by_role("radio", name=label).is_checked()


CLASS_PANEL = "Send my drawing to the class"
VERDICT = "[class*='st-key-prediction_']"
"""A model's verdict under the Draw page's input (one container per model)."""
DRAW_PROMPT = "Draw a digit on the black square."


def draw_on_canvas(page, strokes: list[list[tuple[float, float]]], *, tap: bool = False) -> None:
    """Draw on the Draw page's canvas with the mouse, or with a finger (``tap``), until the
    canvas sends the strokes (needs :func:`record_timings`).
    """
    if tap:
        until_sent(page, lambda: touch_draw(page, strokes), 3, "drawings with a finger")
    else:
        draw_until_sent(page, strokes)


def send_to_class(
    page, strokes: list[list[tuple[float, float]]], label: int, code: str, *, tap: bool = False
) -> None:
    """On the Draw page opened with ``?class=code`` (and :func:`record_timings`): draw
    ``strokes`` (a finger when ``tap``), wait for the verdicts, open *Send my drawing to the
    class* if it is closed, pick ``label`` and press Submit, until the page says it was sent.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    draw_on_canvas(page, strokes, tap=tap)
    page.wait_for_selector(VERDICT)
    wait_for_script(page)
    in_use = f"Class code in use: {code}"
    submit = page.get_by_role("button", name="Submit")
    for attempt in range(4):
        # A rerun of the whole page can lay the panel out again (closed, or moving while the
        # verdicts beside the canvas settle); a press that never found the button still and
        # visible was not made, so the panel is opened and the digit picked again.
        if not page.get_by_text(in_use).filter(visible=True).count():
            panel = page.get_by_text(CLASS_PANEL)
            if tap:
                panel.tap()
            else:
                panel.click()
        wait_for_text(page, in_use)
        choose_class_label(page, str(label), tap=tap)
        try:  # a late canvas update starts the drawing's panel afresh: no digit picked
            wait_for_enabled(page, "Submit", timeout_ms=30_000)
            press(page, submit, tap=tap, timeout_ms=30_000)
            break
        except PlaywrightTimeout:
            if attempt == 3:
                raise
            # The digit shows picked while the server's panel has none (clicking it again
            # changes nothing): pick another digit, so that the wanted one is a real change.
            wait_for_script(page)
            choose_class_label(page, str((label + 1) % 10), tap=tap)
    wait_for_text(page, f"Sent as a {label}. Class {code} now has")


def clear_drawing(page, *, tap: bool = False) -> None:
    """Press the Draw page's Clear button and wait for the empty canvas's prompt."""
    wait_for_script(page)
    clear = page.locator(".st-key-draw_clear button")
    press(page, clear, tap=tap)
    wait_for_text(page, DRAW_PROMPT)
