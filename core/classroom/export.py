"""Export a class's drawings: CSV + PNG files in a zip, or an MNIST-format IDX pair.

* :func:`csv_png_zip`: ``drawings.csv`` (``id,label,class,created,file``) and one 28×28
  greyscale PNG per drawing under ``png/`` (white ink on black, as the models saw it).
* :func:`idx_pair`: the images as ``idx3-ubyte`` (magic 2051, big-endian header N, 28, 28, then
  N·784 uint8 pixels) and the labels as ``idx1-ubyte`` (magic 2049, N, then N uint8 labels),
  MNIST's own format. :func:`idx_zip` puts them in a zip under MNIST's test-split names
  (``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``), so a folder holding the unzipped
  pair reads back with :func:`core.data.real.load_test_idx` (or any MNIST reader), and the zip
  itself with :func:`read_idx_zip`.

Everything is built in memory and returned as bytes (for a download button).
"""

from __future__ import annotations

import csv
import io
import struct
import zipfile
from collections.abc import Sequence

import numpy as np
import torch
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


def read_idx_zip(data: bytes) -> tuple[torch.Tensor, torch.Tensor]:
    """Read back the drawings of an :func:`idx_zip` file (the teacher's download).

    Args:
        data: The zip file's bytes.

    Returns:
        Images float32 ``(N, 1, 28, 28)`` in [0, 1] and labels int64 ``(N,)``.

    Raises:
        ValueError: One line, if it is not such a zip or its two files disagree.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            images, labels = (archive.read(name) for name in IDX_NAMES)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ValueError(f"not a class's IDX zip ({' and '.join(IDX_NAMES)}): {exc}") from None
    magic, n, rows, cols = struct.unpack(">IIII", images[:16])
    label_magic, n_labels = struct.unpack(">II", labels[:8])
    if (magic, rows, cols, label_magic) != (IDX_IMAGES_MAGIC, SIDE, SIDE, IDX_LABELS_MAGIC) or (
        n != n_labels or len(images) != 16 + n * PIXELS or len(labels) != 8 + n
    ):
        raise ValueError("the IDX zip's images and labels do not match MNIST's format")
    pixels = np.frombuffer(images, np.uint8, offset=16).reshape(n, 1, SIDE, SIDE)
    digits = np.frombuffer(labels, np.uint8, offset=8)
    return torch.from_numpy(pixels.astype(np.float32) / 255.0), torch.from_numpy(
        digits.astype(np.int64)
    )


def _zip(files: dict[str, str | bytes]) -> bytes:
    """The bytes of a deflated zip holding ``files`` (name → content), in their order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
