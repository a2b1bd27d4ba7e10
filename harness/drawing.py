"""Drawings as the Draw page's canvas sends them: a "1" or a "0" drawn like a mouse would."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image, ImageDraw

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
"""The app's entry script, for Streamlit's AppTest."""


def digit_image(digit: str, size: int = 280, ink=255, paper=0, mode="RGBA") -> Image.Image:
    """A "1" (vertical stroke) or "0" (ellipse), drawn like a mouse would."""
    img = Image.new(mode, (size, size), (paper, paper, paper, 255)[: len(mode)])
    draw, s, colour = ImageDraw.Draw(img), size / 280, (ink, ink, ink, 255)[: len(mode)]
    if digit == "1":
        draw.line([(140 * s, 45 * s), (140 * s, 235 * s)], fill=colour, width=int(18 * s))
    else:
        draw.ellipse([80 * s, 50 * s, 200 * s, 230 * s], outline=colour, width=int(18 * s))
    return img


def png_bytes(img: Image.Image, fmt: str = "PNG") -> bytes:
    """The image encoded in ``fmt``."""
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


def canvas_state(digit: str) -> dict:
    """What the canvas component sends after a drawing (0.13.0: a PNG data URL)."""
    url = "data:image/png;base64," + base64.b64encode(png_bytes(digit_image(digit))).decode()
    return {"drawing": {"raw": {"objects": [{"type": "Path"}]}, "data": url}, "backgroundFit": None}
