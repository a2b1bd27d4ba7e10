"""Loaders of the file-backed datasets, as compact uint8 ``(N, 28, 28)`` images + int64 labels.

All are IDX files read directly (:func:`core.data.idx.read_idx`): MNIST and FashionMNIST from
``<folder>/<Name>/raw/`` (the four uncompressed files, where torchvision's download leaves them);
KMNIST and notMNIST test splits from their folder (``.gz`` or plain). Reading them directly
rather than through ``torchvision.datasets`` spares a page's first visit the seconds that
importing torchvision's dataset classes takes. Results are cached per file location.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import torch

from core.data.idx import read_idx
from core.data.locate import find_any, find_folder
from core.data.sources import IDX_FILES

TEST_IDX_FILES = (
    ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
)


def raw_folder(cls_name: str) -> Path | None:
    """Find the first ``<search folder>/<cls_name>/raw`` with all four IDX files.

    Args:
        cls_name: The dataset's folder name (torchvision's class name), e.g. ``"MNIST"``.

    Returns:
        The folder, or None.
    """
    return find_folder(f"{cls_name}/raw", IDX_FILES)


def test_idx_folder(subdir: str) -> Path | None:
    """Find the search folder ``<root>/<subdir>`` holding the test-split IDX pair.

    Args:
        subdir: Folder below each search folder, e.g. ``"KMNIST/raw"``.

    Returns:
        The folder, or None.
    """
    return find_any(subdir, TEST_IDX_FILES)


@cache
def load_raw_idx(folder: Path, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Load one split of the four uncompressed IDX files in ``folder`` (cached per folder).

    Args:
        folder: A :func:`raw_folder`, e.g. ``data/MNIST/raw``.
        train: True for the training split (``train-*``), False for the test split (``t10k-*``).

    Returns:
        Images uint8 ``(N, 28, 28)`` and labels int64 ``(N,)``.

    Raises:
        ValueError: If the files do not hold images and labels of matching shapes.
    """
    prefix = "train" if train else "t10k"
    images = read_idx(folder / f"{prefix}-images-idx3-ubyte")
    labels = read_idx(folder / f"{prefix}-labels-idx1-ubyte")
    return _checked(folder, images, labels)


@cache
def load_test_idx(folder: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Load the test-split IDX pair in ``folder`` (cached per folder).

    Args:
        folder: Folder holding ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte``
            (``.gz`` or plain).

    Returns:
        Images uint8 ``(N, 28, 28)`` and labels int64 ``(N,)``.

    Raises:
        FileNotFoundError: If the folder holds no t10k IDX files.
        ValueError: If the arrays do not have the expected shapes.
    """
    for image_file, label_file in TEST_IDX_FILES:
        if (folder / image_file).is_file():
            images = read_idx(folder / image_file)
            labels = read_idx(folder / label_file)
            break
    else:
        raise FileNotFoundError(f"no t10k IDX files in {folder}")
    return _checked(folder, images, labels)


def _checked(
    folder: Path, images: np.ndarray, labels: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
        raise ValueError(f"{folder}: unexpected IDX shapes {images.shape} / {labels.shape}")
    return torch.from_numpy(images), torch.from_numpy(labels).long()
