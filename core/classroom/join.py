"""Where students join a class: the address of the lab that students' own machines can reach.

A teacher who opened the lab as ``localhost`` must not hand out that address: on a student's
machine it names the student's own computer. :func:`students_base` picks the address in this
order: the public address set with ``BNN_PUBLIC_URL``; the address the teacher's browser reached
when it is not a loopback address; when it is, this machine's own network address, if the
server listens on all interfaces; otherwise none (the page then says what to do).
:func:`join_link` adds the Draw page and the class code, :func:`qr_png` draws a link as a QR
code. Nothing here imports Streamlit; the page hands in the server's options.
"""

from __future__ import annotations

import io
import ipaddress
import math
import socket
from urllib.parse import urlencode, urlsplit

import segno

from core import settings

PUBLIC_URL_ENV = "BNN_PUBLIC_URL"
ALL_INTERFACES = ("", "0.0.0.0", "::")  # server.address values that listen everywhere
DRAW_PATH = "/draw"
CLASS_PARAM = "class"  # as app.share.CLASS_PARAM (the page's link parameter)
QUIET_ZONE = 4  # modules of white around a QR code, as the standard asks
PROBE = ("10.254.254.254", 1)  # a private address: connecting a UDP socket sends nothing


def is_loopback(host: str) -> bool:
    """Tell whether a host name or address names the machine itself.

    Args:
        host: A host as in a URL (``localhost``, ``127.0.0.1``, ``[::1]``, ``lab.example.edu``).

    Returns:
        True for ``localhost`` (and ``*.localhost``), loopback addresses and the unspecified
        address (``0.0.0.0``, ``::``), which a browser also resolves to itself.
    """
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _host_port(host: str, port: int | None) -> str:
    """``host:port`` as in a URL (an IPv6 address in brackets)."""
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return name if port is None else f"{name}:{port}"


def public_base(text: str) -> str:
    """Read the public address a teacher set, as the start of a link.

    Args:
        text: E.g. ``http://10.0.0.5:8501``, ``https://lab.example.edu/bnn`` or
            ``10.0.0.5:8501`` (``http://`` is then assumed).

    Returns:
        ``scheme://host[:port][/path]`` without a trailing slash, query or fragment.

    Raises:
        ValueError: If it names no host, or its scheme is not http or https.
    """
    url = urlsplit(text.strip() if "://" in text else f"http://{text.strip()}")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(
            f"{PUBLIC_URL_ENV}={text!r} is not an http(s) address such as http://10.0.0.5:8501"
        )
    return f"{url.scheme}://{url.netloc}{url.path.rstrip('/')}"


def students_base(
    public_url: str,
    browser_url: str | None,
    server_address: str | None,
    server_port: int,
    machine_address: str | None,
) -> str | None:
    """Choose the address students' machines reach the lab at.

    Args:
        public_url: The ``BNN_PUBLIC_URL`` setting ("" when unset).
        browser_url: The address the teacher's browser reached (``st.context.url``), or None.
        server_address: Streamlit's ``server.address`` option (None or "" when unset).
        server_port: Streamlit's ``server.port`` option.
        machine_address: This machine's own network address (:func:`machine_address`), or
            None when it has none.

    Returns:
        ``scheme://host[:port]`` (a path too when the public address has one), or None when
        the only address known is this machine's loopback one.

    Raises:
        ValueError: If ``public_url`` is set but is not an http(s) address.
    """
    if public_url.strip():
        return public_base(public_url)
    url = urlsplit(browser_url or "")
    if url.scheme and url.hostname and not is_loopback(url.hostname):
        return f"{url.scheme}://{url.netloc}"
    listens_everywhere = (server_address or "").strip() in ALL_INTERFACES
    if listens_everywhere and machine_address and not is_loopback(machine_address):
        return f"http://{_host_port(machine_address, server_port)}"
    return None


def join_link(base: str, code: str) -> str:
    """Give the Draw page's link for a class.

    Args:
        base: The address, from :func:`students_base`.
        code: A valid class code.

    Returns:
        E.g. ``http://10.0.0.5:8501/draw?class=lesson1``.
    """
    return f"{base.rstrip('/')}{DRAW_PATH}?{urlencode({CLASS_PARAM: code})}"


def machine_address() -> str | None:
    """Find this machine's own address on its network (sends nothing).

    Returns:
        The address of the interface that would carry traffic to a private network (an IPv4
        text), else that of the machine's host name; None when both are loopback or unknown.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(PROBE)
            found = probe.getsockname()[0]
        if found and not is_loopback(found):
            return found
    except OSError:
        pass
    try:
        found = socket.gethostbyname(socket.gethostname())
    except OSError:
        return None
    return None if not found or is_loopback(found) else found


def public_url_setting() -> str:
    """Give the ``BNN_PUBLIC_URL`` setting as written ("" when unset)."""
    return settings.text(PUBLIC_URL_ENV)


def qr_png(text: str, width: int) -> bytes:
    """Draw a text (a link) as a QR code.

    Args:
        text: What the code holds.
        width: The smallest width wanted, in pixels: each module is drawn as a whole number of
            pixels, so that a browser shows it sharp at this width.

    Returns:
        A black-on-white PNG, square, at least ``width`` pixels wide, with the standard
        4-module quiet zone and error correction M or better.
    """
    code = segno.make_qr(text, error="m", boost_error=True)
    modules = code.symbol_size(scale=1, border=QUIET_ZONE)[0]
    buffer = io.BytesIO()
    code.save(buffer, kind="png", scale=max(1, math.ceil(width / modules)), border=QUIET_ZONE)
    return buffer.getvalue()
