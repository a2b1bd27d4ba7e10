"""The shipped Bayes-by-Backprop network tells MNIST digits from uniform noise by its mutual
information (the sampled networks disagree on noise)."""

from __future__ import annotations

import pytest

from core.data import DatasetUnavailable
from core.storage.checkpoints import checkpoint_path
from core.studies.ood import ood_result

CHECKPOINT = "bbb_mixture"


def test_mutual_information_separates_mnist_from_uniform_noise(tmp_path, monkeypatch):
    if not checkpoint_path(CHECKPOINT).is_file():
        pytest.skip(
            f"{checkpoint_path(CHECKPOINT)} is absent: train it with "
            f"`python -m core train {CHECKPOINT}`"
        )
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path))
    try:
        metrics = ood_result(CHECKPOINT, "uniform_noise", n_samples=20, n_inputs=500).metrics
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    assert metrics["mutual_information"]["auroc"] > 0.95
