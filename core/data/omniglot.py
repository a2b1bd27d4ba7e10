"""Omniglot characters read straight from the official ``images_background_small*.zip`` files.

The 105x105 PNGs (black strokes on white) are inverted and normalised MNIST-style
(:func:`core.data.preprocess.mnist_style`, which thickens the thin pen strokes before
downscaling). Greek and Latin appear in both zips; each image is kept once. Processing takes
seconds, so the result is also kept in ``data_dir()/omniglot/`` under a name derived from the
zips' names, sizes and dates (and :data:`VERSION`).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from functools import cache
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from core.atomic import atomic_write
from core.data import locate
from core.data.preprocess import mnist_style
from core.paths import data_dir

VERSION = 1  # bump when the processing changes, so stale processed files are not used
ZIPS = ("images_background_small1.zip", "images_background_small2.zip")
ALPHABETS = (
    "Balinese",
    "Early_Aramaic",
    "Greek",
    "Japanese_(katakana)",
    "Korean",
    "Latin",
    "Sanskrit",
    "Tagalog",
)


def find_zips() -> tuple[Path, ...]:
    """Find each known zip in the first search folder's ``omniglot/`` that holds it.

    Returns:
        The paths of the zips found (none, one or both of :data:`ZIPS`).
    """
    found = (locate.find_folder("omniglot", (name,)) for name in ZIPS)
    return tuple(folder / name for folder, name in zip(found, ZIPS, strict=True) if folder)


def find_folder() -> Path | None:
    """Find the folder of the first Omniglot zip.

    Returns:
        The folder, or None when neither zip is anywhere on the search path.
    """
    zips = find_zips()
    return zips[0].parent if zips else None


def _process(zips: tuple[Path, ...]) -> tuple[np.ndarray, np.ndarray]:
    images, labels, seen = [], [], set()
    for path in zips:
        with zipfile.ZipFile(path) as archive:
            for entry in sorted(archive.namelist()):
                parts = entry.split("/")  # images_background_small1/<alphabet>/<char>/<file>.png
                if not entry.endswith(".png") or len(parts) != 4 or tuple(parts[1:]) in seen:
                    continue
                seen.add(tuple(parts[1:]))
                with Image.open(io.BytesIO(archive.read(entry))) as png:
                    ink = 1.0 - np.asarray(png.convert("L"), dtype=np.float32) / 255.0
                images.append(np.rint(mnist_style(ink) * 255.0).astype(np.uint8))
                labels.append(ALPHABETS.index(parts[1]))
    return np.stack(images), np.array(labels, dtype=np.int64)


def _processed_path(zips: tuple[Path, ...]) -> Path:
    """Where the processed characters of these zips are kept (in the writable data folder)."""
    key = hashlib.sha1(repr(VERSION).encode())
    for path in zips:
        stat = path.stat()
        key.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return data_dir() / "omniglot" / f"processed-{key.hexdigest()[:12]}.npz"


def _store(cache: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """Keep the processed arrays; where the data folder is read-only, the next run re-processes."""
    try:  # atomically: data folders may be shared by hosts whose PIDs coincide
        atomic_write(cache, lambda f: np.savez(f, images=images, labels=labels))
    except OSError:
        pass


@cache
def load_omniglot(zips: tuple[Path, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Load the processed characters of ``zips``, processing and keeping them on first use.

    Args:
        zips: The Omniglot zips to read (see :func:`find_zips`).

    Returns:
        uint8 ``(N, 28, 28)`` white-on-black characters and int64 ``(N,)`` alphabet labels
        (indices into :data:`ALPHABETS`).
    """
    cache = _processed_path(zips)
    try:
        with np.load(cache) as stored:
            images, labels = stored["images"], stored["labels"]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # not there yet, or unreadable
        images, labels = _process(zips)
        _store(cache, images, labels)
    return torch.from_numpy(images), torch.from_numpy(labels)
