"""``python -m core adapt``: the class's drawings from the store or the teacher's IDX zip, before
and after per checkpoint, the adapted model saved, bad input in one line."""

from __future__ import annotations

import json
import uuid

import pytest
import torch

from core.classroom.export import idx_zip, read_idx_zip
from core.classroom.store import ClassStore, submit
from core.cli import main
from core.storage.checkpoints import load_checkpoint


def send(code: str, n: int) -> None:
    g = torch.Generator().manual_seed(0)
    for i in range(n):
        submit(torch.rand(28, 28, generator=g), i % 10, code, str(uuid.uuid4()))


def test_the_idx_zip_reads_back():
    send("zipclass", 7)
    records = ClassStore().records("zipclass")
    images, labels = read_idx_zip(idx_zip(records))
    stored = ClassStore().drawings("zipclass")
    assert torch.equal(labels, stored.labels) and torch.equal(images, stored.images)
    with pytest.raises(ValueError, match="not a class's IDX zip"):
        read_idx_zip(b"not a zip")


def test_adapt_a_class_and_save(capsys, mnist_small):
    send("cli7", 12)
    code = main(
        [
            "adapt",
            "--class",
            "cli7",
            "--checkpoint",
            "mlp",
            "--steps",
            "3",
            "--samples",
            "1",
            "--pull",
            "100",
            "--save",
            "ours",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    (model,) = out["models"]
    assert model["learned"] == 6 and model["kept_aside"] == 6
    assert set(model["before"]) == {"accuracy", "nll", "ece", "dont_know", "mnist_error"}
    assert model["saved"] == "user:ours-mlp"
    _, meta = load_checkpoint("user:ours-mlp")
    assert meta["adaptation"]["options"] == {"pull": 100.0}
    assert meta["adaptation"]["drawings"] == 6


def test_adapt_from_a_file(tmp_path, capsys, mnist_small):
    send("file7", 10)
    path = tmp_path / "class.zip"
    path.write_bytes(idx_zip(ClassStore().records("file7")))
    assert (
        main(
            [
                "adapt",
                "--from",
                str(path),
                "--checkpoint",
                "laplace",
                "--steps",
                "2",
                "--samples",
                "1",
                "--split",
                "random",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "laplace: learned 5 drawings, 5 kept aside" in out and "MNIST err" in out


@pytest.mark.parametrize(
    ("drawn", "checkpoint", "words"),
    [(0, "mlp", "sent 0 drawing"), (10, "swag", "swag cannot learn")],
)
def test_bad_input_is_one_line(drawn, checkpoint, words, capsys):
    send("bad", drawn)
    assert main(["adapt", "--class", "bad", "--checkpoint", checkpoint]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and words in err[0], err
