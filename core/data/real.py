"""Loaders of the file-backed datasets, as compact uint8 ``(N, 28, 28)`` images + int64 labels.

MNIST and FashionMNIST are read through torchvision's dataset classes from
``<folder>/<Name>/raw/`` (uncompressed IDX files, as torchvision's download leaves them);
KMNIST and notMNIST test splits are read as IDX files directly (``.gz`` or plain), because
torchvision refuses a folder without the training files. Results are cached per file location.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import torch

from core.data.idx import read_idx
from core.data.locate import find_any, find_folder
from core.data.sources import IDX_FILES

TEST_IDX_FILES = (
    ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
)


def torchvision_folder(cls_name: str) -> Path | None:
    """Find the first ``<search folder>/<cls_name>/raw`` with all four IDX files.

    Args:
        cls_name: The ``torchvision.datasets`` class name, e.g. ``"MNIST"``.

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
def load_torchvision(cls_name: str, train: bool, root: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Load a split via ``torchvision.datasets`` (cached per file location).

    Args:
        cls_name: The ``torchvision.datasets`` class name, e.g. ``"MNIST"``.
        train: True for the training split, False for the test split.
        root: The folder holding ``<cls_name>/raw/``.

    Returns:
        Images uint8 ``(N, 28, 28)`` and labels int64 ``(N,)``.
    """
    import torchvision.datasets  # deferred: importing torchvision takes about a second

    dataset = getattr(torchvision.datasets, cls_name)(str(root), train=train, download=False)
    return dataset.data, dataset.targets.long()


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
    if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
        raise ValueError(f"{folder}: unexpected IDX shapes {images.shape} / {labels.shape}")
    return torch.from_numpy(images), torch.from_numpy(labels).long()
