"""Reader for the IDX format of MNIST-like datasets (plain or gzip-compressed)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: Path) -> np.ndarray:
    """Read the array stored in an IDX file.

    Args:
        path: The IDX file, plain or gzip-compressed (``.gz`` suffix).

    Returns:
        The stored array in native byte order, e.g. uint8 ``(N, 28, 28)`` for images.

    Raises:
        ValueError: If the magic number is wrong or the data size disagrees with the header.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    ndim = data[3]
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", count=ndim, offset=4))
    dtype = np.dtype(_DTYPES[data[2]])
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(f"{path}: IDX header says {shape} but holds {len(data) - offset} bytes")
    return np.frombuffer(data, dtype, offset=offset).reshape(shape).astype(dtype.newbyteorder("="))
