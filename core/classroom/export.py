"""Export a class's drawings: CSV + PNG files in a zip, or an MNIST-format IDX pair.

* :func:`csv_png_zip`: ``drawings.csv`` (``id,label,class,created,file``) and one 28×28
  greyscale PNG per drawing under ``png/`` (white ink on black, as the models saw it).
* :func:`idx_pair`: the images as ``idx3-ubyte`` (magic 2051, big-endian header N, 28, 28, then
  N·784 uint8 pixels) and the labels as ``idx1-ubyte`` (magic 2049, N, then N uint8 labels),
  MNIST's own format. :func:`idx_zip` puts them in a zip under MNIST's test-split names
  (``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``), so a folder holding the unzipped
  pair reads back with :func:`core.data.real.load_test_idx` (or any MNIST reader).

Everything is built in memory and returned as bytes (for a download button).
"""

from __future__ import annotations

import csv
import io
import struct
import zipfile
from collections.abc import Sequence

import numpy as np
from PIL import Image

from core.classroom.drawings import PIXELS, SIDE, Drawing

IDX_IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
IDX_LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
IDX_NAMES = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CSV_COLUMNS = ("id", "label", "class", "created", "file")


def png_name(drawing: Drawing) -> str:
    """Name a drawing's PNG file inside the zip.

    Args:
        drawing: The drawing.

    Returns:
        ``png/<class>-<id>-<label>.png`` (the id zero-padded to 6 digits).
    """
    return f"png/{drawing.class_code}-{drawing.id:06d}-{drawing.label}.png"


def png_bytes(drawing: Drawing) -> bytes:
    """Encode one drawing as a 28×28 8-bit greyscale PNG.

    Args:
        drawing: The drawing.

    Returns:
        The PNG file's bytes.
    """
    buffer = io.BytesIO()
    Image.fromarray(drawing.image()).save(buffer, "PNG")  # uint8 (28, 28): mode "L"
    return buffer.getvalue()


def csv_text(drawings: Sequence[Drawing]) -> str:
    """Tabulate drawings as CSV (header ``id,label,class,created,file``; times in ISO 8601 UTC).

    Args:
        drawings: The drawings, in the order wanted.

    Returns:
        The CSV text, one row per drawing.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for d in drawings:
        writer.writerow([d.id, d.label, d.class_code, d.created.isoformat(), png_name(d)])
    return out.getvalue()


def csv_png_zip(drawings: Sequence[Drawing]) -> bytes:
    """Pack drawings as ``drawings.csv`` plus one PNG each (:func:`png_name`) in a zip.

    Args:
        drawings: The drawings, in the order wanted.

    Returns:
        The zip file's bytes.
    """
    pngs = {png_name(d): png_bytes(d) for d in drawings}
    return _zip({"drawings.csv": csv_text(drawings), **pngs})


def idx_pair(drawings: Sequence[Drawing]) -> tuple[bytes, bytes]:
    """Encode drawings in MNIST's IDX format.

    Args:
        drawings: The drawings, in the order wanted (N of them, possibly none).

    Returns:
        ``(images, labels)``: the ``idx3-ubyte`` file (magic 2051, dimensions N, 28, 28, then
        the pixels row-major) and the ``idx1-ubyte`` file (magic 2049, N, then the labels), all
        header integers big-endian 32-bit.

    Raises:
        ValueError: If a drawing does not hold 784 pixels.
    """
    size = len(drawings)
    if any(len(d.pixels) != PIXELS for d in drawings):
        raise ValueError(f"every drawing must hold {PIXELS} pixels")
    pixels = b"".join(d.pixels for d in drawings)
    labels = np.array([d.label for d in drawings], dtype=np.uint8).tobytes()
    images = struct.pack(">IIII", IDX_IMAGES_MAGIC, size, SIDE, SIDE) + pixels
    return images, struct.pack(">II", IDX_LABELS_MAGIC, size) + labels


def idx_zip(drawings: Sequence[Drawing]) -> bytes:
    """Pack :func:`idx_pair` in a zip under MNIST's test-split file names (:data:`IDX_NAMES`).

    Args:
        drawings: The drawings, in the order wanted.

    Returns:
        The zip file's bytes.
    """
    return _zip(dict(zip(IDX_NAMES, idx_pair(drawings), strict=True)))


def _zip(files: dict[str, str | bytes]) -> bytes:
    """The bytes of a deflated zip holding ``files`` (name → content), in their order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
