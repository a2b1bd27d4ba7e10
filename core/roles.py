"""Teacher and students: the teacher key, teacher-only actions and how fast keys may be guessed.

**The key.** Every server has a teacher key, so owners and teacher-only actions are always
enforced (a class's drawings must not be cleared by whoever opens the page). It is
``BNN_TEACHER_KEY`` when set (several replicas share one key this way); otherwise it is made at
the first start, kept in the data folder (:data:`KEY_FILE`, readable by the server's user only,
written atomically) and reused at later starts, so a key the teacher noted stays valid. The
server prints it once when it starts (``python -m app.serve``). The command line is the operator
at the machine and keeps full rights (it acts as the teacher).

**Teacher-only actions** (:data:`TEACHER_ONLY`): :func:`require_teacher` refuses them to a
student with one line, whatever the page shows.

**Guesses** (:class:`KeyThrottle`): after a few wrong keys from one browser, or many from all
browsers of the server together, further tries are refused for a delay that doubles with each
wrong key; a private window (a new browser identity) therefore does not start afresh.
"""

from __future__ import annotations

import fcntl
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from core import settings
from core.atomic import atomic_write
from core.paths import data_dir

KEY_ENV = "BNN_TEACHER_KEY"
KEY_FILE = "teacher_key"
"""The generated key's file in the data folder (mode 0600)."""
KEY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: easy to copy from a screen
KEY_GROUPS, GROUP_LENGTH = 4, 5  # 20 symbols of 31: about 99 bits
TEACHER_ONLY: dict[str, str] = {
    "clear_class": "clear a class's drawings",
    "export_class": "export a class's drawings",
    "save_results": "save a run into the lab's results",
    "prepare_class": "prepare the lab for class",
    "adapt_class": "teach the networks the class's handwriting",
}
"""Action → what it does, in words: the shared-state changes only the teacher may make (acting
on another student's job or model is :meth:`core.jobs.owners.Visitor.may_act_on`'s)."""


class Actor(Protocol):
    """Whoever asks for an action (a :class:`core.jobs.owners.Visitor`)."""

    teacher: bool


class TeacherKeyUnavailable(RuntimeError):
    """No teacher key is set and none can be kept in the data folder."""


@dataclass(frozen=True)
class TeacherKey:
    """The server's teacher key and where it comes from.

    Attributes:
        value: The key.
        source: ``BNN_TEACHER_KEY``, or the file that keeps the generated key.
    """

    value: str
    source: str

    @property
    def generated(self) -> bool:
        """Whether the lab made the key (no ``BNN_TEACHER_KEY``)."""
        return self.source != KEY_ENV


def new_key() -> str:
    """Make a random key that is easy to read and type.

    Returns:
        Four groups of five lower-case letters and digits, e.g. ``"k7mqa-x3vdp-9htre-2wfak"``.
    """
    return "-".join(
        "".join(secrets.choice(KEY_ALPHABET) for _ in range(GROUP_LENGTH))
        for _ in range(KEY_GROUPS)
    )


def key_file() -> Path:
    """Give where a generated key is kept.

    Returns:
        :data:`KEY_FILE` in the data folder (:func:`core.paths.data_dir`).
    """
    return data_dir() / KEY_FILE


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold a lock on ``path``'s lock file: one process makes the key at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_private(text: str) -> Callable[[BinaryIO], None]:
    """A writer for :func:`~core.atomic.atomic_write` that makes the file 0600 first."""

    def write(f: BinaryIO) -> None:
        os.fchmod(f.fileno(), 0o600)
        f.write(text.encode())

    return write


def _read_key(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def stored_key(path: Path) -> str:
    """Read the key kept in a file, making and keeping one when the file is missing or empty.

    Several processes starting at once agree on one key (a lock file beside it). The file is
    written atomically and readable by its owner only (mode 0600).

    Args:
        path: The key's file, e.g. :func:`key_file`.

    Returns:
        The key.

    Raises:
        OSError: If the file cannot be read or written.
    """
    value = _read_key(path)
    if value:
        return value
    with _exclusive(path):
        value = _read_key(path)  # another process may have made it meanwhile
        if not value:
            value = new_key()
            atomic_write(path, _write_private(value + "\n"))
    return value


_keys: dict[Path, str] = {}  # key file → the key this process read or made there
_keys_lock = threading.Lock()


def teacher_key() -> TeacherKey:
    """Give the server's teacher key.

    A key the lab makes is read (or made) once per process and key file, when first needed
    (``python -m app.serve`` asks at its start), and kept for the life of the process.

    Returns:
        ``BNN_TEACHER_KEY`` when set; else the key kept in :func:`key_file`
        (:func:`stored_key`).

    Raises:
        TeacherKeyUnavailable: If the key file cannot be read or written.
    """
    value = settings.text(KEY_ENV)
    if value:
        return TeacherKey(value, KEY_ENV)
    path = key_file()
    with _keys_lock:
        if path not in _keys:
            try:
                _keys[path] = stored_key(path)
            except OSError as exc:
                raise TeacherKeyUnavailable(
                    f"no teacher key: {KEY_ENV} is not set and {path} cannot be kept "
                    f"({exc.strerror or exc}); set {KEY_ENV}"
                ) from exc
        return TeacherKey(_keys[path], str(path))


def is_teacher_key(typed: str) -> bool:
    """Tell whether ``typed`` is the server's teacher key (surrounding spaces ignored).

    Args:
        typed: What the visitor typed.

    Returns:
        True only for the key itself.

    Raises:
        TeacherKeyUnavailable: If there is no key (see :func:`teacher_key`).
    """
    expected = teacher_key().value
    return hmac.compare_digest(typed.strip().encode(), expected.encode())


def require_teacher(actor: Actor, action: str) -> None:
    """Refuse a teacher-only action to a student.

    Args:
        actor: Who asks; the command line acts as the teacher.
        action: A key of :data:`TEACHER_ONLY`.

    Raises:
        PermissionError: One line, if ``actor`` is not the teacher.
        KeyError: If ``action`` is not a teacher-only action.
    """
    what = TEACHER_ONLY[action]
    if not actor.teacher:
        raise PermissionError(f"only the teacher can {what}")


# --- guesses -------------------------------------------------------------------------------


class TooManyGuesses(PermissionError):
    """Too many wrong keys lately: this try was not checked.

    Args:
        wait_s: Seconds until the next try is taken.
    """

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        super().__init__(f"too many wrong keys: try again in {wait_text(wait_s)}")


def wait_text(seconds: float) -> str:
    """Say a wait in words.

    Args:
        seconds: The wait, ≥ 0.

    Returns:
        ``"12 s"`` under two minutes, else ``"3 min"`` (rounded up).
    """
    whole = max(1, int(-(-seconds // 1)))
    return f"{whole} s" if whole < 120 else f"{-(-whole // 60)} min"


@dataclass
class _Failures:
    count: int = 0
    last: float = 0.0  # clock time of the last wrong key


class KeyThrottle:
    """Wrong teacher keys, counted per browser identity and for the whole server process.

    After ``free`` wrong keys from one identity, its next try waits ``first_wait_s`` after the
    last wrong one, and each further wrong key doubles the wait, up to ``longest_wait_s``; the
    same holds for all identities together with ``overall_free`` and ``overall_longest_s``. A
    right key forgets its identity's wrong ones; wrong keys older than ``forget_s`` are
    forgotten. One instance per server process (the pages keep it); thread-safe.

    Args:
        free: Wrong keys one identity may type before it waits.
        overall_free: Wrong keys all identities together may type before every try waits.
        first_wait_s: The first wait, in seconds.
        longest_wait_s: The longest wait of one identity, in seconds.
        overall_longest_s: The longest wait for everyone, in seconds.
        forget_s: Seconds after its last wrong key that an identity starts afresh.
        most_identities: Identities remembered at most (the oldest are dropped).
        clock: Seconds, increasing (a fake one in tests).
    """

    def __init__(
        self,
        free: int = 3,
        overall_free: int = 20,
        first_wait_s: float = 5.0,
        longest_wait_s: float = 900.0,
        overall_longest_s: float = 300.0,
        forget_s: float = 3600.0,
        most_identities: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free, self.overall_free = free, overall_free
        self.first_wait_s = first_wait_s
        self.longest_wait_s, self.overall_longest_s = longest_wait_s, overall_longest_s
        self.forget_s, self.most_identities, self.clock = forget_s, most_identities, clock
        self._lock = threading.Lock()
        self._by_identity: dict[str, _Failures] = {}
        self._overall = _Failures()

    def _remaining(self, failures: _Failures, free: int, longest: float, now: float) -> float:
        if failures.count < free or now - failures.last > self.forget_s:
            return 0.0
        wait = min(longest, self.first_wait_s * 2 ** (failures.count - free))
        return max(0.0, failures.last + wait - now)

    def wait_s(self, identity: str) -> float:
        """Give how long ``identity`` must wait before its next try is taken.

        Args:
            identity: The browser (:attr:`core.jobs.owners.Visitor.id`).

        Returns:
            Seconds; 0 when it may try now.
        """
        with self._lock:
            return self._wait_locked(identity, self.clock())

    def _wait_locked(self, identity: str, now: float) -> float:
        mine = self._by_identity.get(identity, _Failures())
        return max(
            self._remaining(mine, self.free, self.longest_wait_s, now),
            self._remaining(self._overall, self.overall_free, self.overall_longest_s, now),
        )

    def guess(self, identity: str, check: Callable[[], bool]) -> bool:
        """Take one try at the key, unless ``identity`` must wait.

        Args:
            identity: The browser (:attr:`core.jobs.owners.Visitor.id`).
            check: Tells whether the typed key is right (e.g. a call of
                :func:`is_teacher_key`); not called while the identity must wait.

        Returns:
            Whether the key was right.

        Raises:
            TooManyGuesses: If the identity must wait; the try is not counted.
        """
        with self._lock:
            now = self.clock()
            wait = self._wait_locked(identity, now)
            if wait > 0:
                raise TooManyGuesses(wait)
            right = check()
            if right:
                self._by_identity.pop(identity, None)
                return True
            self._count(self._overall, now)
            mine = self._by_identity.pop(identity, _Failures())  # re-inserted as the newest
            self._count(mine, now)
            self._by_identity[identity] = mine
            while len(self._by_identity) > self.most_identities:
                del self._by_identity[next(iter(self._by_identity))]
            return False

    def _count(self, failures: _Failures, now: float) -> None:
        if now - failures.last > self.forget_s:
            failures.count = 0
        failures.count += 1
        failures.last = now
