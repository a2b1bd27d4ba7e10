"""Device selection (CUDA when present, CPU otherwise) and the machine facts stored with results."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

import torch


def default_device() -> torch.device:
    """The device to compute on.

    Returns:
        ``cuda`` when a GPU is visible, else ``cpu``.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_name(device: torch.device | None = None) -> str:
    """Human-readable name of a device.

    Args:
        device: The device; None for :func:`default_device`.

    Returns:
        E.g. ``'NVIDIA H100'`` or ``'cpu (2 threads)'``.
    """
    device = device or default_device()
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"cpu ({threads} thread{'s' if threads != 1 else ''})"


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work so wall-clock timings are honest.

    Args:
        device: The device whose work to wait for; nothing happens for the CPU.
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def processor(cpuinfo: str | None = None) -> str:
    """The CPU as ``/proc/cpuinfo`` names it, stored with timings.

    Machines of the same core count can differ several times in speed (the bandits' compiled
    kernel ran 7× slower on a first-generation EPYC than where it was first timed).

    Args:
        cpuinfo: The text of ``/proc/cpuinfo``; None reads this machine's.

    Returns:
        E.g. ``'AMD EPYC (family 23, model 1; AVX2)'``: the first processor's model name, its
        family and model numbers and the widest vector instructions it has, as far as the text
        gives them; ``platform.processor()`` (or ``'unknown'``) where there is no such text.
    """
    if cpuinfo is None:
        cpuinfo = _cpuinfo()
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    details = []
    if "cpu family" in fields and "model" in fields:
        details.append(f"family {fields['cpu family']}, model {fields['model']}")
    if flags:
        details.append(next((name for flag, name in VECTOR_FLAGS if flag in flags), "no AVX"))
    name = fields.get("model name") or platform.processor() or "unknown"
    return f"{name} ({'; '.join(details)})" if details else name


@functools.cache
def _cpuinfo() -> str:
    """This machine's ``/proc/cpuinfo`` (read once a process: results are saved often)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


VECTOR_FLAGS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"))
"""``/proc/cpuinfo`` flag → name, widest first."""


def library_versions() -> dict:
    """Versions recorded with results, so runs from different machines can be compared.

    Returns:
        ``{"python", "torch", "torchvision", "numpy"}``: version strings.
    """
    import numpy
    import torchvision

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "numpy": numpy.__version__,
    }
