"""Shared fixtures. Tests read the shared datasets through BNN_DATA_PATH, never a copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if SHARED_DATASETS.is_dir() and not os.environ.get("BNN_DATA_PATH"):
    os.environ["BNN_DATA_PATH"] = str(SHARED_DATASETS)


def pytest_configure(config):
    """Under pytest-xdist, one torch thread per test process: two processes with torch's default
    of one thread per core would oversubscribe the cores (OpenMP threads spin while waiting)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


def pytest_itemcollected(item):
    """Under ``--dist loadgroup``, the browser tests share one worker (one served app and one
    Chromium at a time, beside the other worker's computations), except those already in a
    group of their own (the one on the session's Ray head). Marked as each test is collected,
    before pytest-xdist reads the groups."""
    if item.get_closest_marker("browser") and not item.get_closest_marker("xdist_group"):
        item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture(scope="session")
def mnist_small():
    """(train (2000 images, labels), test (1000 images, labels)) of MNIST; skips if absent."""
    from core.data import DatasetUnavailable, load_dataset

    try:
        xtr, ytr = load_dataset("mnist", "train")
        xte, yte = load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    return (xtr[:2000], ytr[:2000]), (xte[:1000], yte[:1000])


@pytest.fixture(autouse=True)
def _empty_user_models(tmp_path_factory, monkeypatch):
    """Every test starts with an empty user-model folder (models trained on this machine must
    not leak into the sidebar a test inspects)."""
    monkeypatch.setenv("BNN_MODELS_DIR", str(tmp_path_factory.mktemp("user_models")))


TEACHER_KEY = "test-teacher-key"


@pytest.fixture(autouse=True)
def _teacher_key(monkeypatch):
    """Every test's server has a known teacher key (never one made in the data folder); tests
    of the made key unset it and use a temporary data folder."""
    monkeypatch.setenv("BNN_TEACHER_KEY", TEACHER_KEY)


@pytest.fixture(autouse=True)
def _class_db_in_tmp(tmp_path_factory, monkeypatch):
    """Every test gets its own class-drawings database (never the data folder's)."""
    db = tmp_path_factory.mktemp("class_db") / "class.sqlite"
    monkeypatch.setenv("BNN_CLASS_DB", f"sqlite:///{db}")


@pytest.fixture(scope="session")
def postgres_server():
    """A throw-away PostgreSQL cluster for the session (base URL); see harness/cluster.py."""
    from harness.cluster import postgres_cluster

    with postgres_cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def lab_db(request, tmp_path) -> str:
    """An empty lab database: a SQLite file, then a PostgreSQL database of a real server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lab.sqlite'}"
    from harness.cluster import new_database

    return new_database(request.getfixturevalue("postgres_server"))


@pytest.fixture(scope="session")
def ray_cluster():
    """A one-CPU Ray head for the session (its addresses and folder); see harness/cluster.py."""
    from harness.cluster import ray_head

    with ray_head() as addresses:
        yield addresses


@pytest.fixture
def ray_temp_dir(ray_cluster) -> Path:
    """The session's Ray head's temporary folder (its sessions' logs)."""
    return ray_cluster.temp_dir


@pytest.fixture
def ray_address(ray_cluster) -> str:
    """The session's Ray head as a process on its node connects to it (``host:port``)."""
    return ray_cluster[0]


@pytest.fixture
def ray_client_address(ray_cluster) -> str:
    """The session's Ray head through its Ray Client server (``ray://host:port``)."""
    return ray_cluster[1]
