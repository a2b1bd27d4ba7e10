"""The class's drawings: the SQLite store (round trip, exactly-once under concurrency, corrupt
and locked files, bad input), the exports (IDX read back by the project's reader) and the
report against direct computations."""

from __future__ import annotations

import csv
import io
import sqlite3
import struct
import sys
import threading
import uuid
import zipfile
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import torch
from PIL import Image

from core.classroom import export
from core.classroom.drawings import check_class_code
from core.classroom.report import class_report, confusion_matrix, model_report
from core.classroom.store import ClassStore
from core.classroom.store import clear as clear_class
from core.classroom.store import count as count_class
from core.classroom.store import submit as submit_drawing
from core.data.idx import read_idx
from core.data.real import load_test_idx
from core.engine.interface import ModelConfig
from core.engine.sampler import predictive_samples
from core.evaluation.metrics import calibration
from core.evaluation.uncertainty import SCORES, rejection_limits, summarize
from core.methods import build_model
from core.storage.database_errors import DB_ENV, DatabaseError
from core.storage.database_url import DEFAULT_FILE, database_url, describe
from tests.support.class_writer import run_threads


@pytest.fixture(autouse=True)
def class_db(tmp_path, monkeypatch):
    """Every test writes to its own database file."""
    path = tmp_path / "db" / "class.sqlite"
    monkeypatch.setenv(DB_ENV, f"sqlite:///{path}")
    return path


def digit(seed: int) -> torch.Tensor:
    """A (28, 28) drawing in [0, 1] with ink."""
    g = torch.Generator().manual_seed(seed)
    image = torch.zeros(28, 28)
    image[4:24, 10:18] = torch.rand(20, 8, generator=g)
    image[10, 12] = 1.0
    return image


def new_id() -> str:
    return str(uuid.uuid4())


def test_round_trip_of_drawings_labels_ids_and_times(class_db):
    assert not class_db.exists()
    assert count_class() == 0 and ClassStore().classes() == {}
    assert not class_db.exists()  # reading creates nothing
    start = datetime.now(UTC)
    images = [digit(i) for i in range(3)]
    ids = [
        submit_drawing(images[0], 3, "lecture-1", new_id()),
        submit_drawing(images[1][None], 7, "lecture-1", new_id()),  # (1, 28, 28) too
        submit_drawing(images[2], 0, "lecture-2", new_id()),
    ]
    assert ids == sorted(ids) and len(set(ids)) == 3
    got, labels, got_ids, times = ClassStore().drawings("lecture-1")
    assert got.shape == (2, 1, 28, 28) and got.dtype == torch.float32
    assert labels.tolist() == [3, 7] and labels.dtype == torch.long
    assert got_ids == ids[:2]
    expected = torch.stack(images[:2])[:, None]
    assert (got - expected).abs().max() <= 0.5 / 255 + 1e-6  # quantised to uint8
    assert torch.equal(got * 255, (expected * 255).round())
    assert all(start - timedelta(seconds=1) <= t <= datetime.now(UTC) for t in times)
    assert all(t.tzinfo is not None and t.utcoffset() == timedelta(0) for t in times)
    assert ClassStore().classes() == {"lecture-1": 2, "lecture-2": 1}
    assert count_class("lecture-1") == 2 and count_class() == 3
    assert [r.id for r in ClassStore().records("lecture-1", limit=1)] == [ids[1]]
    assert clear_class("lecture-1", up_to=ids[1] - 1) == 1  # the newer drawing is kept
    assert ClassStore().drawings("lecture-1").ids == [ids[1]]
    assert clear_class("lecture-1") == 1
    assert ClassStore().classes() == {"lecture-2": 1}  # other classes are kept
    assert len(ClassStore().drawings("lecture-1").labels) == 0


def test_wal_mode_and_schema(class_db):
    submit_drawing(digit(0), 1, "a", new_id())
    with sqlite3.connect(class_db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [row[1] for row in conn.execute("PRAGMA table_info(drawings)")]
        pixels = conn.execute("SELECT pixels FROM drawings").fetchone()[0]
    assert columns == ["id", "class_code", "label", "pixels", "created", "submission_id"]
    assert isinstance(pixels, bytes) and len(pixels) == 784


def test_a_repeated_submission_id_is_stored_once():
    key = new_id()
    first = submit_drawing(digit(0), 4, "a", key)
    again = submit_drawing(digit(0), 4, "a", key)
    other_label = submit_drawing(digit(0), 5, "a", key.upper())  # the same UUID, other spelling
    assert first == again == other_label
    assert count_class("a") == 1 and ClassStore().drawings("a").labels.tolist() == [4]


def test_concurrent_submissions_are_all_stored_exactly_once(class_db):
    threads, each = 8, 20
    shared = [new_id() for _ in range(5)]  # every thread also sends these (double clicks)
    own = [[new_id() for _ in range(each)] for _ in range(threads)]
    results: dict[str, set[int]] = {key: set() for key in shared + sum(own, [])}
    errors: list[str] = []
    barrier = threading.Barrier(threads)
    lock = threading.Lock()

    def student(t: int) -> None:
        store = ClassStore()
        barrier.wait()
        try:
            for i, key in enumerate(own[t]):
                for k in (key, shared[i % len(shared)]):
                    row = store.submit(digit(t * 100 + i), (t + i) % 10, "race", k)
                    with lock:
                        results[k].add(row)
        except Exception as exc:  # collected: a failure in a thread must fail the test
            errors.append(repr(exc))

    run_threads(student, threads)
    assert errors == []
    assert all(len(rows) == 1 for rows in results.values())  # one row per submission id
    assert len({next(iter(rows)) for rows in results.values()}) == threads * each + len(shared)
    assert count_class("race") == threads * each + len(shared)
    with sqlite3.connect(class_db) as conn:
        keys = [row[0] for row in conn.execute("SELECT submission_id FROM drawings")]
    assert sorted(keys) == sorted(results)


def test_a_corrupt_file_is_reported_and_left_untouched(class_db):
    class_db.parent.mkdir(parents=True)
    garbage = b"these are a teacher's notes, not a database\n" * 50
    class_db.write_bytes(garbage)
    before = sorted(p.name for p in class_db.parent.iterdir())
    for action in (
        lambda: submit_drawing(digit(0), 1, "a", new_id()),
        lambda: ClassStore().drawings("a"),
        lambda: count_class(),
        lambda: clear_class("a"),
    ):
        with pytest.raises(DatabaseError, match="not a SQLite database") as info:
            action()
        assert "\n" not in str(info.value) and "untouched" in str(info.value)
    assert class_db.read_bytes() == garbage
    assert sorted(p.name for p in class_db.parent.iterdir()) == before  # no new file beside it


def test_a_damaged_sqlite_file_is_reported_and_not_replaced(class_db):
    submit_drawing(digit(0), 1, "a", new_id())
    with sqlite3.connect(class_db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(class_db.read_bytes())
    data[16:] = bytes((i * 37 + 11) % 256 for i in range(len(data) - 16))  # header kept
    class_db.write_bytes(bytes(data))
    with pytest.raises(DatabaseError, match="untouched") as info:
        submit_drawing(digit(1), 2, "a", new_id())
    assert "\n" not in str(info.value)
    assert class_db.read_bytes() == bytes(data)


def test_a_locked_database_gives_a_clear_error_and_loses_nothing(class_db):
    kept = submit_drawing(digit(0), 1, "a", new_id())
    holder = sqlite3.connect(class_db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    holder.execute("DELETE FROM drawings")  # ... uncommitted
    try:
        store = ClassStore(timeout=0.2)
        with pytest.raises(DatabaseError, match="busy") as info:
            store.submit(digit(1), 2, "a", new_id())
        assert "\n" not in str(info.value) and "0.2 s" in str(info.value)
        with pytest.raises(DatabaseError, match="busy"):
            store.clear("a")
        assert store.drawings("a").ids == [kept]  # readers never wait in WAL mode
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    later = submit_drawing(digit(1), 2, "a", new_id())
    assert ClassStore().drawings("a").ids == [kept, later]


@pytest.mark.parametrize(
    ("image", "label", "code", "key", "message"),
    [
        (torch.zeros(28, 28), 1, "a", None, "empty drawing"),
        (torch.full((28, 28), 0.04), 1, "a", None, "empty drawing"),
        (digit(0), 10, "a", None, "label out of range"),
        (digit(0), -1, "a", None, "label out of range"),
        (digit(0), 3.0, "a", None, "whole number"),
        (digit(0), True, "a", None, "whole number"),
        (torch.rand(28, 27), 1, "a", None, "wrong shape"),
        (torch.rand(2, 28, 28), 1, "a", None, "wrong shape"),
        (torch.rand(784), 1, "a", None, "wrong shape"),
        (digit(0) * 2, 1, "a", None, r"\[0, 1\]"),
        (digit(0).masked_fill(torch.eye(28, dtype=torch.bool), torch.nan), 1, "a", None, "0, 1"),
        (digit(0), 1, "bad code!", None, "bad class code"),
        (digit(0), 1, "x" * 33, None, "bad class code"),
        (digit(0), 1, "ünïcode", None, "bad class code"),
        (digit(0), 1, "a", "not-a-uuid", "bad submission id"),
    ],
)
def test_bad_input_is_refused_with_one_line_and_stores_nothing(image, label, code, key, message):
    submit_drawing(digit(5), 5, "a", new_id())
    with pytest.raises(ValueError, match=message) as info:
        submit_drawing(image, label, code, key or new_id())
    assert "\n" not in str(info.value)
    assert count_class() == 1


def test_class_codes():
    for missing in (None, "  "):  # no default class: a code nobody chose is guessable
        with pytest.raises(ValueError, match="no class code"):
            check_class_code(missing)
    assert check_class_code(" Physics_101-B ") == "Physics_101-B"
    assert check_class_code("x" * 32) == "x" * 32
    with pytest.raises(ValueError, match="bad class code"):
        check_class_code("a/b")


def test_database_urls(tmp_path, monkeypatch):
    monkeypatch.delenv(DB_ENV)
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "data"))
    assert database_url() == f"sqlite:///{tmp_path / 'data' / DEFAULT_FILE}"
    assert ClassStore().path == tmp_path / "data" / DEFAULT_FILE
    plain = tmp_path / "plain.db"
    assert ClassStore(str(plain)).path == plain
    monkeypatch.chdir(tmp_path)
    assert ClassStore("sqlite:///rel/x.db").path == tmp_path / "rel" / "x.db"
    for url, message in [
        ("mysql://u:p@host/db", "unsupported database"),
        ("sqlite://", "sqlite:///path"),
        ("sqlite:///:memory:", "in-memory"),
    ]:
        with pytest.raises(DatabaseError, match=message):
            ClassStore(url)
    assert describe("postgresql://teacher:secret@db.example/lab") == "postgresql://db.example/lab"


def test_postgresql_without_psycopg_says_so_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as on a laptop without the cluster extras
    monkeypatch.setenv(DB_ENV, "postgresql://teacher:secret@localhost/lab")
    with pytest.raises(DatabaseError, match="needs the psycopg package") as info:
        submit_drawing(digit(0), 1, "a", new_id())
    assert "\n" not in str(info.value) and "secret" not in str(info.value)


# --- exports ------------------------------------------------------------------------------


@pytest.fixture
def stored_records():
    for i, label in enumerate([3, 1, 4, 1, 5]):
        submit_drawing(digit(i), label, "export", new_id())
    submit_drawing(digit(9), 9, "other", new_id())
    return ClassStore().records("export")


def test_idx_pair_reads_back_with_the_projects_idx_readers(stored_records, tmp_path):
    images, labels = export.idx_pair(stored_records)
    assert struct.unpack(">IIII", images[:16]) == (2051, 5, 28, 28)
    assert struct.unpack(">II", labels[:8]) == (2049, 5)
    folder = tmp_path / "idx"
    with zipfile.ZipFile(io.BytesIO(export.idx_zip(stored_records))) as archive:
        assert sorted(archive.namelist()) == sorted(export.IDX_NAMES)
        archive.extractall(folder)
    back_images, back_labels = load_test_idx(folder)
    expected = np.stack([r.image() for r in stored_records])
    assert back_images.dtype == torch.uint8 and np.array_equal(back_images.numpy(), expected)
    assert back_labels.tolist() == [3, 1, 4, 1, 5]
    raw = read_idx(folder / export.IDX_NAMES[0])
    assert raw.shape == (5, 28, 28) and np.array_equal(raw, expected)
    float_images = ClassStore().drawings("export").images
    assert torch.equal(float_images[:, 0] * 255, back_images.float())


def test_empty_idx_pair_is_valid():
    images, labels = export.idx_pair([])
    assert images == struct.pack(">IIII", 2051, 0, 28, 28)
    assert labels == struct.pack(">II", 2049, 0)


def test_csv_png_zip(stored_records):
    with zipfile.ZipFile(io.BytesIO(export.csv_png_zip(stored_records))) as archive:
        rows = list(csv.DictReader(io.StringIO(archive.read("drawings.csv").decode())))
        assert list(rows[0]) == list(export.CSV_COLUMNS)
        assert len(rows) == len(stored_records) == len(archive.namelist()) - 1
        for row, record in zip(rows, stored_records, strict=True):
            assert int(row["id"]) == record.id and int(row["label"]) == record.label
            assert row["class"] == "export"
            assert datetime.fromisoformat(row["created"]) == record.created
            png = Image.open(io.BytesIO(archive.read(row["file"])))
            assert png.mode == "L" and png.size == (28, 28)
            assert np.array_equal(np.asarray(png), record.image())


# --- report -------------------------------------------------------------------------------


def tiny_model(kind: str, seed: int):
    torch.manual_seed(seed)
    model = build_model(ModelConfig(kind=kind, hidden=(16,)))
    return model.eval().requires_grad_(False)


def test_report_accuracy_confusion_and_calibration_equal_direct_computations():
    torch.manual_seed(123)
    n_inputs, n_samples = 60, 7
    images = torch.rand(n_inputs, 1, 28, 28)
    labels = torch.randint(0, 10, (n_inputs,))
    models = [(kind, tiny_model(kind, i)) for i, kind in enumerate(("bbb", "dropout", "mlp"))]
    reports = class_report(models, images, labels, n_samples, seed=3)
    assert [r.name for r in reports] == ["bbb", "dropout", "mlp"]
    for (_, model), report in zip(models, reports, strict=True):
        with torch.random.fork_rng():
            torch.manual_seed(3)
            mean = predictive_samples(model, images, n_samples).mean(0).cpu()
        correct = mean.argmax(-1) == labels
        assert report.accuracy == pytest.approx(correct.double().mean().item(), abs=1e-12)
        assert torch.allclose(report.mean, mean)
        assert report.confusion.shape == (10, 10) and int(report.confusion.sum()) == n_inputs
        assert int(report.confusion.trace()) == int(correct.sum())
        for i, j in zip(labels.tolist(), mean.argmax(-1).tolist(), strict=True):
            assert report.confusion[i, j] >= 1
        assert int(report.reliability.count.sum()) == n_inputs
        assert report.metrics["ece"] == pytest.approx(calibration(mean, labels)["ece"])
        assert report.verdicts is None and report.dont_know == []
        assert len(report) == n_inputs and report.n_samples == n_samples


def test_report_seed_makes_it_reproducible_and_leaves_the_global_generator_alone():
    images, labels = torch.rand(20, 1, 28, 28), torch.randint(0, 10, (20,))
    model = tiny_model("bbb", 0)
    state = torch.get_rng_state()
    a = model_report("bbb", model, images, labels, 5, seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    b = model_report("bbb", model, images, labels, 5, seed=1)
    assert torch.equal(a.mean, b.mean)


def test_dont_know_follows_the_draw_pages_rule():
    torch.manual_seed(0)
    images, labels = torch.rand(40, 1, 28, 28), torch.randint(0, 10, (40,))
    model = tiny_model("dropout", 1)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        summary = summarize(predictive_samples(model, images, 9))
    values = SCORES["predictive_entropy"](summary)
    limits = rejection_limits(values)  # thresholds from these inputs: some lie above p99
    report = model_report("d", model, images, labels, 9, {"predictive_entropy": limits})
    assert report.dont_know == [i for i, v in enumerate(values.tolist()) if v > limits["p99"]]
    assert report.dont_know  # at least one above the 99th percentile of 40 values
    assert len(report.verdicts) == 40
    other = model_report("d", model, images, labels, 9, {"mutual_information": limits})
    assert other.verdicts is None  # no thresholds for the rule's score: no verdicts


def test_confusion_matrix_counts_pairs():
    labels = torch.tensor([0, 0, 1, 9, 9, 9])
    predicted = torch.tensor([0, 1, 1, 9, 9, 0])
    m = confusion_matrix(labels, predicted)
    assert m[0, 0] == 1 and m[0, 1] == 1 and m[1, 1] == 1 and m[9, 9] == 2 and m[9, 0] == 1
    assert int(m.sum()) == 6


def test_report_refuses_no_drawings():
    with pytest.raises(ValueError, match="N ≥ 1"):
        model_report("m", tiny_model("mlp", 0), torch.zeros(0, 1, 28, 28), torch.zeros(0), 3)
