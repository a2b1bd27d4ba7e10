"""Datasets of the lab: MNIST-like images ``(N, 1, 28, 28)`` in [0, 1], white ink on black.

Public API: :func:`load_dataset`, :func:`class_examples`, :func:`list_datasets`,
:class:`DatasetInfo`, :class:`DatasetUnavailable`, :func:`prepare_data`;
:func:`core.data.preprocess.mnist_style` normalises a single drawing the MNIST way.
"""

from core.data.locate import DatasetUnavailable
from core.data.prepare import prepare_data
from core.data.registry import (
    DatasetInfo,
    class_examples,
    dataset_info,
    list_datasets,
    load_dataset,
)

__all__ = [
    "DatasetInfo",
    "DatasetUnavailable",
    "class_examples",
    "dataset_info",
    "list_datasets",
    "load_dataset",
    "prepare_data",
]
