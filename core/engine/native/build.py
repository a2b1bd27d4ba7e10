"""Build and load the C kernels of :mod:`core.engine.native` (first use compiles, ~1 s).

A kernel is one C source (this folder's own, or another package's such as the bandits' tiny
networks) that may include this folder's shared ``common.h``, optionally specialised by
preprocessor definitions (the bandits' ``tiny_mlp.c`` is compiled per network shape). It is
compiled with the system C compiler (``CC``, default ``cc``) into the cache folder
(:func:`core.paths.cache_dir` ``/native``), under a name keyed by the sources, the
definitions, the flags, the compiler's version and the machine, so an edited kernel or a new
compiler rebuilds and a second process loads the first one's library. Object files are compiled with
``-ffast-math`` (for libmvec's vector ``expf``/``logf``) but linked without it: linking with it
would add ``crtfastmath.o``, which switches the whole process to flush-to-zero.

A missing compiler, a failed build or ``BNN_NATIVE=0`` leaves the kernels unavailable and the
callers on their pure-PyTorch paths; :func:`load` then returns None and :func:`unavailable_reason`
says why in one line (:func:`load_kernel` and :func:`kernel_reason` for the other kernels).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from core import settings
from core.paths import cache_dir

SOURCE = Path(__file__).with_name("sample_kl.c")
HEADERS = (Path(__file__).with_name("common.h"),)
INCLUDE = f"-I{Path(__file__).parent}"  # other packages' kernels include common.h too
COMPILE_FLAGS = ("-O3", "-march=native", "-ffast-math", "-fopenmp", "-fPIC", "-std=c11")
LINK_FLAGS = ("-shared", "-fopenmp")
BUILD_TIMEOUT_S = 120

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_reason: str | None = None
_kernels: dict[tuple, ctypes.CDLL | str] = {}  # (source, defines) → library, or why it failed
Defines = tuple[tuple[str, int], ...]


def _compiler_version(cc: str) -> str:
    result = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    return result.stdout.splitlines()[0] if result.stdout else cc


def _define_flags(defines: Defines) -> list[str]:
    return [f"-D{name}={value}" for name, value in defines]


def library_path(cc: str, source: Path = SOURCE, defines: Defines = ()) -> Path:
    """Where the library built from the current source with ``cc`` lives in the cache.

    Args:
        cc: The compiler's command.
        source: The kernel's C file.
        defines: Preprocessor definitions ``(name, value)`` it is specialised by.

    Returns:
        ``<cache>/native/<source name>-<key>.so``.
    """
    key = hashlib.sha256()
    for part in (
        source.read_bytes(),
        *(h.read_bytes() for h in HEADERS),
        " ".join(_define_flags(defines)).encode(),
        " ".join(COMPILE_FLAGS + LINK_FLAGS).encode(),
        _compiler_version(cc).encode(),
        platform.machine().encode(),
        platform.node().encode(),  # -march=native: a shared cache folder may see other CPUs
    ):
        key.update(part)
    return cache_dir() / "native" / f"{source.stem}-{key.hexdigest()[:16]}.so"


def _build(cc: str, target: Path, source: Path = SOURCE, defines: Defines = ()) -> None:
    """Compile and link the source into ``target`` (atomically: a temporary name, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        obj, lib = Path(tmp) / f"{source.stem}.o", Path(tmp) / f"{source.stem}.so"
        compile_args = [*COMPILE_FLAGS, *_define_flags(defines), INCLUDE, "-c", str(source)]
        for command in (
            [cc, *compile_args, "-o", str(obj)],
            [cc, *LINK_FLAGS, str(obj), "-o", str(lib), "-lm"],
        ):
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
            )
            if result.returncode:
                message = (result.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"{command[0]} failed: {message}")
        os.replace(lib, target)


def load() -> ctypes.CDLL | None:
    """The compiled kernels, building them on first use; None when they are unavailable.

    Thread-safe; the outcome (library or reason) is kept for the life of the process.

    Returns:
        The loaded library, or None (see :func:`unavailable_reason`).
    """
    global _library, _reason
    with _lock:
        if _library is not None or _reason is not None:
            return _library
        try:
            _library = _load()
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            _reason = str(exc)
        return _library


def _load(source: Path = SOURCE, defines: Defines = ()) -> ctypes.CDLL:
    if not settings.enabled("BNN_NATIVE"):
        raise RuntimeError("disabled by BNN_NATIVE=0")
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise RuntimeError(f"no C compiler ({cc!r} not found)")
    target = library_path(cc, source, defines)
    if not target.exists():
        _build(cc, target, source, defines)
    return ctypes.CDLL(str(target))


def load_kernel(source: Path, defines: Defines = ()) -> ctypes.CDLL | None:
    """The kernel of the C file ``source`` built with ``defines``; None when unavailable.

    Thread-safe; the outcome is kept for the life of the process (per source and definitions).

    Args:
        source: The kernel's C file, which may include this folder's ``common.h``.
        defines: Preprocessor definitions ``(name, value)``.

    Returns:
        The loaded library, or None (see :func:`kernel_reason`).
    """
    key = (source, tuple(defines))
    with _lock:
        if key not in _kernels:
            try:
                _kernels[key] = _load(source, key[1])
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                _kernels[key] = str(exc)
        found = _kernels[key]
    return found if isinstance(found, ctypes.CDLL) else None


def kernel_reason(source: Path, defines: Defines = ()) -> str | None:
    """Why :func:`load_kernel` returned None for these arguments, in one line.

    Args:
        source: The kernel's C file.
        defines: Its definitions.

    Returns:
        The reason, or None (not tried, or loaded).
    """
    found = _kernels.get((source, tuple(defines)))
    return found if isinstance(found, str) else None


def unavailable_reason() -> str | None:
    """Why :func:`load` returned None, in one line (None if it has not failed).

    Returns:
        The reason, or None.
    """
    return _reason


def reset() -> None:
    """Forget the loaded library or the failure, so that the next :func:`load` tries again."""
    global _library, _reason
    with _lock:
        _library, _reason = None, None
        _kernels.clear()
