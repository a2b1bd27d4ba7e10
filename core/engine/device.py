"""Device selection (CUDA when present, CPU otherwise) and the machine facts stored with results."""

from __future__ import annotations

import platform

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
