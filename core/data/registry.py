"""The catalogue of datasets (:func:`list_datasets`) and the one loader (:func:`load_dataset`).

Every dataset yields float32 images ``(N, 1, 28, 28)`` in [0, 1], white strokes on black like
MNIST, and int64 labels ``(N,)`` (None for sets without labels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.data import omniglot, real, synthetic
from core.data.locate import DatasetUnavailable, searched
from core.data.sources import supply_hint

Batch = tuple[torch.Tensor, torch.Tensor | None]
Loader = Callable[[str, int | None, int], Batch]  # (split, n_inputs, seed) -> batch
Check = Callable[[], tuple[bool, str]]
NOISE_SIZE = 10_000  # default number of images of the noise sets
FONT_LETTERS_SIZE = 2_600  # default number of rendered letters (rendering takes ~1 ms each)
DIGITS = tuple(str(d) for d in range(10))
MNIST_LICENSE = "Yann LeCun, Corinna Cortes and Christopher J. C. Burges; CC BY-SA 3.0"


@dataclass(frozen=True, kw_only=True)
class DatasetInfo:
    """What the app needs to know about one dataset; :meth:`availability` is a cheap file check.

    Attributes:
        name: Stable key for :func:`load_dataset`.
        title: Human-readable name.
        description: One paragraph on what the images are and how many there are.
        license: License and attribution.
        has_labels: Whether :func:`load_dataset` returns labels.
        num_classes: Number of label classes (0 for unlabelled sets).
        synthetic: Whether the set is generated or derived in code rather than read from files.
        splits: The splits that can be loaded, e.g. ``("train", "test")``.
        class_names: Name of each class, indexed by label.
    """

    name: str  # stable key for load_dataset
    title: str
    description: str
    license: str  # license and attribution
    has_labels: bool
    num_classes: int
    synthetic: bool
    splits: tuple[str, ...] = ("test",)
    class_names: tuple[str, ...] = ()
    _availability: Check = field(repr=False, compare=False)
    _load: Loader = field(repr=False, compare=False)

    def availability(self) -> tuple[bool, str]:
        """Check cheaply whether the dataset can be loaded.

        Returns:
            (available, reason): where the files are, or what is missing and how to supply it.
        """
        return self._availability()


def _finish(images: torch.Tensor, labels: torch.Tensor, n_inputs: int | None, seed: int) -> Batch:
    """Cached uint8 ``(N, 28, 28)`` -> fresh float32 ``(n_inputs, 1, 28, 28)``, cache intact."""
    if n_inputs is not None:
        order = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))[
            :n_inputs
        ]
        images, labels = images[order], labels[order]
    return images.unsqueeze(1).float().div_(255.0), labels.clone()


def _found(title: str, name: str, find: Callable[[], Path | None]) -> Check:
    def check() -> tuple[bool, str]:
        where = find()
        if where is not None:
            return True, f"found in {where}"
        hint = supply_hint(name)
        return False, f"{title}: not found in the data folders (searched: {searched()}); {hint}"

    return check


def _require(check: Check) -> None:
    available, reason = check()
    if not available:
        raise DatasetUnavailable(reason)


def _raw_idx_set(cls_name: str, check: Check) -> Loader:
    def load(split: str, n_inputs: int | None, seed: int) -> Batch:
        _require(check)
        return _finish(
            *real.load_raw_idx(real.raw_folder(cls_name), split == "train"), n_inputs, seed
        )

    return load


def _test_idx_set(subdir: str, check: Check) -> Loader:
    def load(split: str, n_inputs: int | None, seed: int) -> Batch:
        _require(check)
        return _finish(*real.load_test_idx(real.test_idx_folder(subdir)), n_inputs, seed)

    return load


def _load_omniglot(split: str, n_inputs: int | None, seed: int) -> Batch:
    _require(_omniglot_check)
    return _finish(*omniglot.load_omniglot(omniglot.find_zips()), n_inputs, seed)


def _load_font_letters(split: str, n_inputs: int | None, seed: int) -> Batch:
    _require(synthetic.font_available)
    images, labels = synthetic.font_letters(
        FONT_LETTERS_SIZE if n_inputs is None else n_inputs, seed
    )
    return _finish(images, labels, None, seed)


def _mnist_derived(check: Check) -> Check:
    def derived() -> tuple[bool, str]:
        available, reason = check()
        return available, f"derived from MNIST, {reason}" if available else f"needs {reason}"

    return derived


def _mnist_variant(
    name: str, title: str, what: str, change: Callable[[torch.Tensor, int], torch.Tensor]
) -> DatasetInfo:
    """A labelled set of MNIST's test digits, each changed by ``change(images, seed)``."""

    def load(split: str, n_inputs: int | None, seed: int) -> Batch:
        images, labels = load_dataset("mnist", "test", n_inputs=n_inputs, seed=seed)
        return change(images, seed), labels

    return DatasetInfo(
        name=name,
        title=title,
        description=f"{what} Labels kept.",
        license=f"derived from MNIST ({MNIST_LICENSE})",
        has_labels=True,
        num_classes=10,
        synthetic=True,
        class_names=DIGITS,
        _availability=_mnist_derived(_mnist_check),
        _load=load,
    )


def _generated() -> tuple[bool, str]:
    return True, "generated in code"


def _noise_set(
    name: str, title: str, what: str, generate: Callable[[int, int], torch.Tensor]
) -> DatasetInfo:
    """An unlabelled synthetic set of ``generate(n_inputs, seed)`` images."""
    return DatasetInfo(
        name=name,
        title=title,
        description=f"{what}; {NOISE_SIZE:,} images unless a number is asked for.",
        license="generated in code; no external data",
        has_labels=False,
        num_classes=0,
        synthetic=True,
        _availability=_generated,
        _load=lambda split, n_inputs, seed: (
            generate(NOISE_SIZE if n_inputs is None else n_inputs, seed),
            None,
        ),
    )


_mnist_check = _found("MNIST", "mnist", lambda: real.raw_folder("MNIST"))
_fashion_check = _found("FashionMNIST", "fashion_mnist", lambda: real.raw_folder("FashionMNIST"))
_kmnist_check = _found("KMNIST", "kmnist", lambda: real.test_idx_folder("KMNIST/raw"))
_notmnist_check = _found("notMNIST", "notmnist", lambda: real.test_idx_folder("notMNIST/raw"))
_omniglot_check = _found("Omniglot", "omniglot", omniglot.find_folder)

_DATASETS = (
    DatasetInfo(
        name="mnist",
        title="MNIST",
        description="Handwritten digits 0-9: 60,000 training and 10,000 test images, "
        "size-normalised to 20x20 and centred by centre of mass. The in-distribution data.",
        license=MNIST_LICENSE,
        has_labels=True,
        num_classes=10,
        synthetic=False,
        splits=("train", "test"),
        class_names=DIGITS,
        _availability=_mnist_check,
        _load=_raw_idx_set("MNIST", _mnist_check),
    ),
    DatasetInfo(
        name="fashion_mnist",
        title="Fashion-MNIST",
        description="Zalando article images in 10 clothing classes, in MNIST's format: 60,000 "
        "training and 10,000 test images. Far from digits; also a second classification task.",
        license="MIT License, (c) 2017 Zalando SE (Xiao, Rasul & Vollgraf, 2017)",
        has_labels=True,
        num_classes=10,
        synthetic=False,
        splits=("train", "test"),
        class_names=(
            "T-shirt/top",
            "Trouser",
            "Pullover",
            "Dress",
            "Coat",
            "Sandal",
            "Shirt",
            "Sneaker",
            "Bag",
            "Ankle boot",
        ),
        _availability=_fashion_check,
        _load=_raw_idx_set("FashionMNIST", _fashion_check),
    ),
    DatasetInfo(
        name="kmnist",
        title="Kuzushiji-MNIST",
        description="Cursive Japanese (Kuzushiji) hiragana in 10 classes, in MNIST's format: "
        "test split, 10,000 images (1,000 per class). Handwritten strokes, but not digits.",
        license="CC BY-SA 4.0: KMNIST Dataset (created by CODH), adapted from Kuzushiji Dataset "
        "(NIJL), doi:10.20676/00000341",
        has_labels=True,
        num_classes=10,
        synthetic=False,
        class_names=("お", "き", "す", "つ", "な", "は", "ま", "や", "れ", "を"),
        _availability=_kmnist_check,
        _load=_test_idx_set("KMNIST/raw", _kmnist_check),
    ),
    DatasetInfo(
        name="notmnist",
        title="notMNIST",
        description="Letters A-J rendered in many fonts: 10,000 test images (1,000 per letter). "
        "The glyphs fill the whole 28x28 frame, unlike MNIST's centred 20x20 digits.",
        license="notMNIST by Yaroslav Bulatov, published with the author's permission; "
        "no explicit license",
        has_labels=True,
        num_classes=10,
        synthetic=False,
        class_names=tuple("ABCDEFGHIJ"),
        _availability=_notmnist_check,
        _load=_test_idx_set("notMNIST/raw", _notmnist_check),
    ),
    DatasetInfo(
        name="omniglot",
        title="Omniglot",
        description="Handwritten characters of 8 alphabets (the two small background sets, "
        "4,840 distinct images), inverted to white on black and centred MNIST-style. "
        "Label = alphabet.",
        license="MIT License; Omniglot by Brenden Lake, Ruslan Salakhutdinov and Joshua "
        "Tenenbaum (Science, 2015)",
        has_labels=True,
        num_classes=len(omniglot.ALPHABETS),
        synthetic=False,
        class_names=omniglot.ALPHABETS,
        _availability=_omniglot_check,
        _load=_load_omniglot,
    ),
    _noise_set(
        "gaussian_noise",
        "Gaussian noise",
        "Independent Gaussian pixels with MNIST's pixel mean (0.13) and standard deviation "
        "(0.31), clipped to [0, 1]",
        synthetic.gaussian_noise,
    ),
    _noise_set(
        "uniform_noise",
        "Uniform noise",
        "Independent uniform pixels in [0, 1]",
        synthetic.uniform_noise,
    ),
    _mnist_variant(
        "inverted_mnist",
        "Inverted MNIST",
        "MNIST test digits with inverted pixels (1 - x): black strokes on white. Same shapes, "
        "opposite intensities.",
        lambda images, seed: 1.0 - images,
    ),
    _mnist_variant(
        "rotated_mnist",
        "Rotated MNIST",
        "MNIST test digits each rotated by a seeded random angle of 60-120 degrees, either way.",
        synthetic.rotate,
    ),
    DatasetInfo(
        name="font_letters",
        title="Font letters",
        description="Random capitals A-Z rendered from a font with size, stroke and slant "
        "jitter, then size-normalised and centred like MNIST digits; "
        f"{FONT_LETTERS_SIZE:,} images unless a number is asked for. Label = letter (A=0).",
        license="generated in code from Pillow's built-in font, Aileron Regular by Sora "
        "Sagano (dotcolon.net, CC0)",
        has_labels=True,
        num_classes=len(synthetic.LETTERS),
        synthetic=True,
        class_names=synthetic.LETTERS,
        _availability=synthetic.font_available,
        _load=_load_font_letters,
    ),
)
_BY_NAME = {info.name: info for info in _DATASETS}


def list_datasets() -> list[DatasetInfo]:
    """List all datasets, real ones first, whether available or not.

    Returns:
        The :class:`DatasetInfo` of every dataset.
    """
    return list(_DATASETS)


def dataset_info(name: str) -> DatasetInfo:
    """Look up the :class:`DatasetInfo` of a dataset.

    Args:
        name: The dataset's key, e.g. ``"mnist"``.

    Returns:
        Its :class:`DatasetInfo`.

    Raises:
        ValueError: For an unknown name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(_BY_NAME)}") from None


def load_dataset(
    name: str, split: str = "test", *, n_inputs: int | None = None, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Load a dataset as float32 images and int64 labels.

    Files are read once per process and cached; every call returns fresh tensors.

    Args:
        name: The dataset's key (see :func:`list_datasets`).
        split: "train" or "test" (only MNIST and Fashion-MNIST have "train").
        n_inputs: For file-backed and MNIST-derived sets, a random subset of
            ``min(n_inputs, N)`` images: the first ``n_inputs`` of a permutation seeded by
            ``seed``, so a larger ``n_inputs`` extends a smaller one; None gives the whole set in
            file order. Synthetic sets generate ``n_inputs`` images (their default size when
            None) from ``seed``: same seed, identical tensors.
        seed: Seed of the subset permutation or of the generator.

    Returns:
        Images float32 ``(N, 1, 28, 28)`` in [0, 1] and labels int64 ``(N,)`` (None if
        unlabelled).

    Raises:
        DatasetUnavailable: If the files are missing (the message says how to supply them).
        ValueError: For an unknown name or split, or a negative ``n_inputs``.
    """
    info = dataset_info(name)
    if split not in info.splits:
        raise ValueError(f"{info.title} has no {split!r} split (has: {', '.join(info.splits)})")
    if n_inputs is not None and n_inputs < 0:
        raise ValueError(f"n_inputs must be >= 0, got {n_inputs}")
    return info._load(split, n_inputs, seed)


def class_examples(name: str, split: str = "test") -> tuple[torch.Tensor, torch.Tensor]:
    """The first image of each class of a labelled dataset, in class order.

    Args:
        name: The dataset's key (see :func:`list_datasets`).
        split: "train" or "test".

    Returns:
        Images float32 ``(C, 1, 28, 28)`` in [0, 1] and their labels int64 ``(C,)``, one per
        class present.

    Raises:
        DatasetUnavailable: If the files are missing.
        ValueError: For an unlabelled dataset (and as :func:`load_dataset`).
    """
    images, labels = load_dataset(name, split)
    if labels is None:
        raise ValueError(f"{dataset_info(name).title} has no labels")
    first = torch.stack([torch.nonzero(labels == c)[0, 0] for c in torch.unique(labels)])
    return images[first], labels[first]
