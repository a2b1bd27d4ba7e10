"""Decoding a user's uploaded picture of a digit into a 2-D grey image, with bounded memory.

A small compressed file can hold a huge image (a 4000×4000 RGBA PNG is 62 KB), so the pixel
count is checked from the header before anything is decoded, JPEGs are reduced while decoding
(``draft``), and every image is reduced to at most :data:`DECODED_SIDE` pixels per side with
one or two 8-bit channels (grey, opacity) before any float conversion. Accepted uploads cost a
few tens of MB at most: the largest accepted RGBA image decodes to 4 bytes × :data:`MAX_PIXELS`.

Every failure of the decoder (Pillow's plug-ins raise a zoo of exception types for truncated,
corrupt or hostile files: ``OSError``, ``SyntaxError``, ``struct.error``, ``EOFError``,
``DecompressionBombError`` ...) becomes one :class:`ImageError` line for the user.
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image

MAX_UPLOAD_MB = 5
MAX_PIXELS = 4_000_000  # e.g. 2000 × 2000
DECODED_SIDE = 640  # images are reduced to at most this many pixels per side before use
FORMATS = ("PNG", "JPEG")
EXIF_ORIENTATION = 0x0112
ORIENTATIONS = {  # EXIF orientation → the transpose that shows the picture upright
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


class ImageError(ValueError):
    """An upload that is not a usable image; the message is meant for the user."""


UNREADABLE = "This file is not a readable PNG or JPEG image."


def _too_many_pixels(description: str) -> ImageError:
    return ImageError(
        f"The image is {description}; at most {MAX_PIXELS / 1e6:.0f} megapixels are accepted. "
        "Scale it down first."
    )


def _open(data: bytes) -> Image.Image:
    """The image with its header read and checked (format, pixel count); nothing decoded."""
    try:
        img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:  # Pillow's own limit, far above ours
        limit = 2 * Image.MAX_IMAGE_PIXELS / 1e6
        raise _too_many_pixels(f"over {limit:.0f} megapixels") from exc
    except Exception as exc:  # not an image, or a plug-in's parser failed on a damaged header
        raise ImageError(UNREADABLE) from exc
    if img.format not in FORMATS:
        raise ImageError(f"Expected a PNG or JPEG image, got {img.format}.")
    width, height = img.size
    if width * height > MAX_PIXELS:
        raise _too_many_pixels(f"{width}×{height} pixels ({width * height / 1e6:.1f} megapixels)")
    return img


def _small_channels(img: Image.Image) -> tuple[np.ndarray, np.ndarray | None]:
    """Grey and opacity (None if opaque) as float32 in [0, 1], at most DECODED_SIDE px a side."""
    orientation = img.getexif().get(EXIF_ORIENTATION)
    if img.format == "JPEG":
        img.draft("L", (DECODED_SIDE, DECODED_SIDE))  # decode at a reduced scale
    has_alpha = img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info
    if img.mode not in ("L", "LA", "RGB", "RGBA"):  # palette, 16-bit, CMYK ...: 8-bit first
        img = img.convert("RGBA" if has_alpha else "L")
    factor = math.ceil(max(img.size) / DECODED_SIDE)
    if factor > 1:
        img = img.reduce(factor)  # box average in the decoded mode, before any conversion
    img = img.convert("LA" if has_alpha else "L")
    if orientation in ORIENTATIONS:  # after reducing: transposing a full image copies it
        img = img.transpose(ORIENTATIONS[orientation])
    channels = np.asarray(img, dtype=np.uint8)
    if has_alpha:
        return channels[..., 0].astype(np.float32) / 255.0, channels[..., 1] / np.float32(255.0)
    return channels.astype(np.float32) / 255.0, None


def read_image(data: bytes) -> np.ndarray:
    """Decode a PNG/JPEG upload into a 2-D grey image, white ink on black.

    Transparent images use opacity as ink; opaque dark-ink-on-light images (judged from the
    border) are inverted; the background level is subtracted and the ink stretched to 1.

    Args:
        data: The uploaded file's bytes.

    Returns:
        float32 2-D image in [0, 1], at most :data:`DECODED_SIDE` pixels per side.

    Raises:
        ImageError: For files over :data:`MAX_UPLOAD_MB` or :data:`MAX_PIXELS`, or unreadable
            ones.
    """
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise ImageError(f"The file is larger than {MAX_UPLOAD_MB} MB.")
    img = _open(data)
    try:
        grey, alpha = _small_channels(img)
    except Exception as exc:  # truncated, corrupt or hostile data: any decoder error
        raise ImageError(UNREADABLE) from exc
    if alpha is not None and alpha.min() < 1.0:
        return alpha
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    if np.median(border) > 0.5:
        grey, border = 1.0 - grey, 1.0 - border
    background = float(np.median(border))
    span = float(grey.max()) - background
    if span < 0.1:
        return np.zeros_like(grey)
    return np.clip((grey - background) / span, 0.0, 1.0)
