"""How students join a class: the address chosen for their link (each case), and the Class
page's QR code and link text, the QR code decoded back to the link as a phone would read it."""

from __future__ import annotations

import base64
import io
import re
import socket

import pytest
import streamlit
from PIL import Image
from streamlit.testing.v1 import AppTest

import app.classroom
from app.share import CLASS_PARAM
from app.ui import SAMPLES_KEY, TEACHER_FLAG
from core.classroom import join
from core.classroom.join import is_loopback, join_link, public_base, students_base
from core.storage.database_errors import DB_ENV

PAGE = "../../pages/classroom.py"
PUBLIC = "http://10.0.0.5:8501"
LINK = f"{PUBLIC}/draw?class=physics1"
QR_SRC = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)" width="(\d+)"')

# --- the address (pure) --------------------------------------------------------------------


def test_the_public_address_wins_over_everything_else():
    for browser in ("http://localhost:8501/classroom", "http://192.168.1.20:8501/classroom", None):
        base = students_base(PUBLIC, browser, "127.0.0.1", 8501, "192.168.1.20")
        assert base == PUBLIC
    assert students_base(" https://lab.example.edu/bnn/ ", None, None, 8501, None) == (
        "https://lab.example.edu/bnn"
    )
    assert public_base("10.0.0.5:8501") == PUBLIC  # http:// assumed
    assert public_base("http://10.0.0.5:8501/?x=1#top") == PUBLIC


@pytest.mark.parametrize("text", ["ftp://lab.example.edu", "http://", "http:///draw"])
def test_a_public_address_that_is_not_http_is_refused(text):
    with pytest.raises(ValueError, match="BNN_PUBLIC_URL"):
        students_base(text, "http://192.168.1.20:8501/", None, 8501, None)


@pytest.mark.parametrize(
    ("browser", "expected"),
    [
        ("http://192.168.1.20:8501/classroom?class=physics1", "http://192.168.1.20:8501"),
        ("https://lab.example.edu/classroom", "https://lab.example.edu"),
        ("http://[fd00::5]:8501/classroom", "http://[fd00::5]:8501"),
        ("http://teacher-pc.local:8502/", "http://teacher-pc.local:8502"),
    ],
)
def test_a_browser_address_that_is_not_loopback_is_used(browser, expected):
    assert students_base("", browser, "127.0.0.1", 8501, "10.9.9.9") == expected


@pytest.mark.parametrize("browser", ["http://localhost:8501/classroom", "http://127.0.0.1:8501/"])
@pytest.mark.parametrize("server_address", [None, "", "0.0.0.0", "::"])
def test_loopback_on_a_server_that_listens_everywhere_gives_the_machines_address(
    browser, server_address
):
    assert students_base("", browser, server_address, 8502, "192.168.1.20") == (
        "http://192.168.1.20:8502"
    )
    assert students_base("", browser, server_address, 8501, "fd00::5") == "http://[fd00::5]:8501"


@pytest.mark.parametrize(
    ("browser", "server_address", "machine"),
    [
        ("http://localhost:8501/classroom", "127.0.0.1", "192.168.1.20"),  # listens on loopback
        ("http://127.0.0.1:8501/", "localhost", "192.168.1.20"),
        ("http://[::1]:8501/", "0.0.0.0", None),  # everywhere, but no network address
        ("http://localhost:8501/", "0.0.0.0", "127.0.1.1"),  # the host name's loopback alias
        (None, "127.0.0.1", "192.168.1.20"),  # the browser's address unknown
    ],
)
def test_loopback_only_gives_no_address(browser, server_address, machine):
    assert students_base("", browser, server_address, 8501, machine) is None


def test_loopback_names():
    for host in ("localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "127.0.1.1", "[::1]"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::"):
        assert is_loopback(host), host  # a browser opens its own machine for these too
    for host in ("192.168.1.20", "10.0.0.5", "lab.example.edu", "[fd00::5]", "localhost.edu"):
        assert not is_loopback(host), host


def test_the_link_opens_the_draw_page_with_the_class_code():
    assert join_link(PUBLIC, "physics1") == LINK
    assert join_link("https://lab.example.edu/bnn/", "a_b-1") == (
        "https://lab.example.edu/bnn/draw?class=a_b-1"
    )
    assert join.CLASS_PARAM == CLASS_PARAM  # the parameter the Draw page reads


def test_the_machines_address_is_never_loopback(monkeypatch):
    found = join.machine_address()
    assert found is None or not is_loopback(found)

    class NoRoute(socket.socket):
        def connect(self, address):
            raise OSError("network is unreachable")

    monkeypatch.setattr(join.socket, "socket", NoRoute)
    monkeypatch.setattr(join.socket, "gethostbyname", lambda name: "127.0.1.1")
    assert join.machine_address() is None
    monkeypatch.setattr(join.socket, "gethostbyname", lambda name: "192.168.1.20")
    assert join.machine_address() == "192.168.1.20"


# --- the Class page ------------------------------------------------------------------------


@pytest.fixture
def class_db(tmp_path, monkeypatch):
    monkeypatch.setenv(DB_ENV, f"sqlite:///{tmp_path / 'class.sqlite'}")
    monkeypatch.setattr(app.classroom.join, "machine_address", lambda: "192.168.1.20")


def class_page(
    monkeypatch: pytest.MonkeyPatch, teacher: bool = False, present: bool = False, **options
) -> AppTest:
    """The page for class ``physics1`` in a new session, run once, with these server options
    (``server.address`` 127.0.0.1 and ``server.port`` 8501 unless given)."""
    options = {"server.address": "127.0.0.1", "server.port": 8501, **options}
    get_option = streamlit.get_option
    monkeypatch.setattr(
        streamlit, "get_option", lambda name: options[name] if name in options else get_option(name)
    )
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[TEACHER_FLAG] = teacher
    at.session_state[SAMPLES_KEY] = 2
    at.query_params["class"] = "physics1"
    if present:
        at.query_params["present"] = "1"
    at.run()
    assert not at.exception, at.exception
    return at


def shown_qr(at: AppTest) -> tuple[Image.Image, int]:
    """The QR code the page shows: the PNG in its image tag, and the tag's width in pixels."""
    found = [m for m in (QR_SRC.search(md.value) for md in at.markdown) if m]
    assert len(found) == 1, [md.value[:80] for md in at.markdown]
    data, width = found[0].groups()
    return Image.open(io.BytesIO(base64.b64decode(data))), int(width)


def markdown_text(at: AppTest) -> str:
    return " ".join(md.value for md in at.markdown)


def test_the_page_shows_the_public_link_as_a_qr_code_and_text(class_db, monkeypatch):
    monkeypatch.setenv(join.PUBLIC_URL_ENV, PUBLIC)
    at = class_page(monkeypatch)
    image, width = shown_qr(at)
    assert width == app.classroom.QR_WIDTH
    assert image.width >= width  # drawn at least as large as shown: sharp edges
    assert f">{LINK}</p>" in markdown_text(at)  # the link in large text, under the code
    assert "localhost" not in " ".join(i.value for i in at.info)


def test_the_qr_code_on_the_page_reads_back_as_the_link(class_db, monkeypatch):
    zxingcpp = pytest.importorskip("zxingcpp", reason="zxing-cpp (requirements-dev.txt) decodes")
    monkeypatch.setenv(join.PUBLIC_URL_ENV, PUBLIC)
    image, _ = shown_qr(class_page(monkeypatch))
    read = zxingcpp.read_barcodes(image.convert("L"))
    assert [(r.format, r.text) for r in read] == [(zxingcpp.BarcodeFormat.QRCode, LINK)]


def test_presenter_mode_shows_the_code_for_the_back_row(class_db, monkeypatch):
    monkeypatch.setenv(join.PUBLIC_URL_ENV, PUBLIC)
    image, width = shown_qr(class_page(monkeypatch, present=True))
    assert width == app.classroom.QR_PRESENTER_WIDTH >= 600
    assert image.width >= width


def test_a_server_on_all_interfaces_gives_the_machines_address(class_db, monkeypatch):
    monkeypatch.delenv(join.PUBLIC_URL_ENV, raising=False)
    at = class_page(monkeypatch, **{"server.address": "0.0.0.0", "server.port": 8502})
    shown_qr(at)
    assert ">http://192.168.1.20:8502/draw?class=physics1</p>" in markdown_text(at)


def test_a_loopback_only_server_says_what_to_do_and_tells_only_the_teacher_how(
    class_db, monkeypatch
):
    monkeypatch.delenv(join.PUBLIC_URL_ENV, raising=False)
    for teacher in (False, True):
        at = class_page(monkeypatch, teacher=teacher)
        assert not QR_SRC.search(markdown_text(at))
        info = " ".join(i.value for i in at.info)
        assert "network address" in info and "/draw?class=physics1" in info
        how = " ".join(c.value for c in at.caption)
        assert ("--server.address 0.0.0.0" in how) is teacher
        assert (join.PUBLIC_URL_ENV in how) is teacher


def test_a_malformed_public_address_is_reported(class_db, monkeypatch):
    monkeypatch.setenv(join.PUBLIC_URL_ENV, "ftp://lab")
    at = class_page(monkeypatch)
    assert "public address" in " ".join(w.value for w in at.warning)
    assert not QR_SRC.search(markdown_text(at))
