"""Every shipped checkpoint predicts bit for bit what it predicted before methods owned their
parameters (the flat metadata of the shipped files is migrated on load).

``checkpoint_predictions.json`` holds, for every shipped model, the logits of a few seeded
Monte-Carlo passes on the first test images of its task on one torch thread, computed by the
code before the move (commit 9480bb1, the same calls as :func:`predictions`; :func:`record`
writes them with today's code).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.engine.sampler import predictive_logits
from core.engine.seeding import seeded
from core.storage.checkpoints import checkpoint_path, load_checkpoint
from core.storage.metadata import migrate

RECORDED = Path(__file__).resolve().parents[1] / "support" / "checkpoint_predictions.json"
N_IMAGES = 2
N_SAMPLES = 3
SEED = 0


def shipped() -> list[str]:
    """The registered names whose checkpoint ships."""
    return [name for name in REGISTRY if checkpoint_path(name).is_file()]


def predictions(name: str) -> list:
    """Logits ``(N_SAMPLES, N_IMAGES, C)`` of a shipped model's seeded passes, as lists.

    The passes use the model's own configuration (``lrt=None``: a BBB model trained with
    local reparameterisation predicts with it), on one torch thread: the noise of dropout and
    of local reparameterisation is drawn per thread's share, so other thread counts draw other
    (equally valid) numbers.
    """
    model, meta = load_checkpoint(name)
    x, _ = load_dataset(meta.get("dataset", "mnist"), "test")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with seeded(SEED, cuda=False), torch.no_grad():
            logits = predictive_logits(model, x[:N_IMAGES], N_SAMPLES, lrt=None)
    finally:
        torch.set_num_threads(threads)
    return logits.tolist()


def record() -> None:
    """Write every shipped model's predictions to :data:`RECORDED`."""
    values = {name: predictions(name) for name in shipped()}
    RECORDED.write_text(json.dumps(values, indent=1) + "\n")


@pytest.mark.parametrize("name", shipped())
def test_shipped_predictions_are_unchanged(name):
    recorded = json.loads(RECORDED.read_text())
    assert name in recorded, f"{name} ships but has no recorded predictions"
    try:
        now = predictions(name)
    except DatasetUnavailable:
        pytest.skip("the test images are not prepared")
    assert torch.equal(torch.tensor(now), torch.tensor(recorded[name]))


def test_every_recorded_model_still_ships():
    assert sorted(json.loads(RECORDED.read_text())) == sorted(shipped())


def test_flat_metadata_moves_into_the_methods_parameters():
    old_model = {
        "kind": "bbb",
        "hidden": [8],
        "prior": {"kind": "mixture", "pi": 0.25, "sigma1": 1.0, "sigma2": 0.01},
        "init_sigma": 0.02,
        "lrt": True,
        "members": 5,
        "laplace_structure": "kron",
        "conv_dropout": None,
    }
    old_training = {"epochs": 3, "beta": 0.3, "temperature": 1.0, "impl": "vmap_lrt", "alpha": 0}
    model, training = migrate(old_model, old_training)
    assert training == {"epochs": 3}
    assert model["hidden"] == [8] and "prior" not in model and "members" not in model
    params = model["params"]
    assert (params["prior"], params["pi"], params["sigma1"], params["sigma2"]) == (
        "mixture",
        0.25,
        1.0,
        0.01,
    )
    assert (params["init_sigma"], params["beta"], params["impl"]) == (0.02, 0.3, "vmap_lrt")
    assert migrate(model, training) == (model, training)  # today's form stays as it is
    laplace, _ = migrate({"kind": "laplace", "laplace_structure": "full"})
    assert laplace["params"] == {"structure": "full"}
    dropout, _ = migrate({"kind": "dropout", "dropout": 0.3, "conv_dropout": None})
    assert dropout["params"]["conv_dropout"] == 0.3  # None meant "as the dense layers"
    bbb, _ = migrate({"kind": "bbb", "lrt": True})  # a weights file without its metadata
    assert bbb["params"]["impl"] == "vmap_lrt"
