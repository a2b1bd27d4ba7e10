"""Atomic file writes: a crash or interrupt never leaves a half-written file behind.

The data goes to a temporary file ``.NAME.<pid>.<random>.tmp`` beside the target, is flushed to
disk and renamed over the target. A writer killed mid-write (SIGKILL, power loss) leaves its
temporary file behind; :func:`remove_stale_temporaries` deletes those whose writer process is
gone or that are older than :data:`STALE_SECONDS`, and every write calls it for its folder.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

STALE_SECONDS = 3600
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[^.]+\.tmp$")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete left-over temporary files of :func:`atomic_write` in ``folder``.

    A temporary file is removed when its writer is no longer running or it is older than
    :data:`STALE_SECONDS`. An unreadable folder, or a file removed meanwhile by another process,
    is skipped.

    Args:
        folder: The folder to clean.

    Returns:
        The removed files.
    """
    removed = []
    try:
        candidates = list(folder.iterdir())
    except OSError:
        return removed
    now = time.time()
    for path in candidates:
        match = _TEMPORARY.match(path.name)
        if match is None:
            continue
        try:
            old = now - path.stat().st_mtime > STALE_SECONDS
            if old or not _process_alive(int(match.group(1))):
                path.unlink()
                removed.append(path)
        except OSError:  # removed meanwhile by another process
            continue
    return removed


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` atomically.

    ``write(binary_file)`` writes a temp file beside ``path``, which is fsynced and renamed over
    ``path``. On any exception the temp file is removed and ``path`` is untouched. The folder is
    created if needed and cleaned of stale temporaries first.

    Args:
        path: The target file.
        write: Writes the content to the open binary file it is given.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp"
    )
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; these files are shared
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write` of UTF-8 text.

    Args:
        path: The target file.
        text: The content.
    """
    atomic_write(path, lambda f: f.write(text.encode()))
