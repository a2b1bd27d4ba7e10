"""Atomic file writes: a crash or interrupt never leaves a half-written file behind.

The data goes to a temporary file ``.NAME.<writer>.<pid>.<random>.tmp`` beside the target, is
flushed to disk and renamed over the target. A writer killed mid-write (SIGKILL, power loss)
leaves its temporary file behind; :func:`remove_stale_temporaries` deletes those, and every
write calls it for its folder.

Folders may be shared by several hosts (a network file system) and by containers of one host,
each with its own PID namespace, where a PID names another process or none. So ``<writer>``
names where the writer's PID means something: the host's boot id and the writer's PID namespace
(:func:`writer_tag`). A temporary file is removed at once only when its tag is this process's
and its PID is gone; any other (another host's, another namespace's, or one written before the
tag existed) only once it is older than :data:`STALE_SECONDS`.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

STALE_SECONDS = 3600
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
PID_NAMESPACE = Path("/proc/self/ns/pid")
_TEMPORARY = re.compile(r"^\..+\.\d+\.[^.]+\.tmp$")  # either layout: PID, then random
_TAGGED = re.compile(r"^\..+\.(w[0-9a-f]{16}-\d+|r[0-9a-f]{16})\.(\d+)\.[^.]+\.tmp$")


@functools.cache
def _boot_id() -> str | None:
    """The first 16 hex digits of this host's boot id, or None where there is none."""
    try:
        digits = BOOT_ID.read_text().strip().replace("-", "").lower()
    except OSError:
        return None
    return digits[:16] if re.fullmatch(r"[0-9a-f]{16,}", digits) else None


@functools.cache
def _process_token(pid: int) -> str:
    """A random tag of the process ``pid`` (this one), where its host cannot be named."""
    return "r" + secrets.token_hex(8)


def writer_tag() -> str:
    """Name where this process's PID is meaningful, for its temporary files' names.

    Returns:
        ``w<boot id>-<PID namespace inode>`` on Linux: the same for every process of one PID
        namespace of one boot of one host, and for no other. Elsewhere a random token of this
        process (``r<16 hex digits>``), so that no other process takes its files for its own.
    """
    boot = _boot_id()
    try:
        namespace = PID_NAMESPACE.stat().st_ino
    except OSError:
        namespace = None
    if boot is None or namespace is None:
        return _process_token(os.getpid())
    return f"w{boot}-{namespace}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _stale(name: str, age: float, mine: str) -> bool:
    """Whether the temporary file ``name``, ``age`` seconds old, belongs to no running writer.

    Args:
        name: The file's name.
        age: Seconds since it was last written.
        mine: This process's :func:`writer_tag`.
    """
    if age > STALE_SECONDS:
        return True
    tagged = _TAGGED.match(name)
    return tagged is not None and tagged[1] == mine and not _process_alive(int(tagged[2]))


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete left-over temporary files of :func:`atomic_write` in ``folder``.

    A temporary file is removed when it was written in this process's PID namespace of this
    host (:func:`writer_tag`) by a process that is no longer running, or when it is older than
    :data:`STALE_SECONDS` (another host's or namespace's, whose writer cannot be checked). An
    unreadable folder, or a file removed meanwhile by another process, is skipped.

    Args:
        folder: The folder to clean.

    Returns:
        The removed files.
    """
    removed = []
    try:
        candidates = [p for p in folder.iterdir() if _TEMPORARY.match(p.name)]
    except OSError:
        return removed
    mine, now = writer_tag(), time.time()
    for path in candidates:
        try:
            if _stale(path.name, now - path.stat().st_mtime, mine):
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
    prefix = f".{path.name}.{writer_tag()}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
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
