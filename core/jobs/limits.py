"""How much of the class's training queue one student may take, and where a student connects from.

Three limits hold on every server (a laptop included), checked when a job is added, in the same
database transaction as the insert (:meth:`core.jobs.store.JobStore.add`), so that students
submitting at the same moment on several replicas never pass them together:

* **per student**: at most ``BNN_JOBS_PER_VISITOR`` (3) jobs queued or running. A student is
  counted by browser (:attr:`~core.jobs.owners.Visitor.id`) *and* by network address
  (:attr:`~core.jobs.owners.Visitor.address`), whichever gives more jobs: a private window is
  another browser, but not another address.
* **per class**: at most ``BNN_QUEUE_JOBS`` (12) students' jobs queued or running in all.
* **per job**: at most ``BNN_JOB_IMAGES`` (1,000,000) images trained on (epochs × training images).

The teacher may set other values for the class (:meth:`core.jobs.store.JobStore.set_limits`,
kept in the database and shared by every replica; the settings are the defaults). No limit
applies to the teacher's own jobs, which are not counted either and go first in the queue.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from core import settings

JOBS_ENV = "BNN_JOBS_PER_VISITOR"
QUEUE_ENV = "BNN_QUEUE_JOBS"
IMAGES_ENV = "BNN_JOB_IMAGES"
PROXY_ENV = "BNN_TRUSTED_PROXY"
DEFAULT_JOBS = 3
DEFAULT_QUEUE = 12  # 4 students' full allowance; about 12 min of waiting for default jobs
DEFAULT_IMAGES = 1_000_000  # the shipped MLP's recipe (16 epochs × 60,000) fits
TRAIN_IMAGES = 60_000  # a request for "all" training images
IPV6_PREFIX = 64  # one IPv6 network: a device picks new addresses within it at will


class LimitError(ValueError):
    """A job refused by the queue's limits; its message is one sentence, with no user text."""


@dataclass(frozen=True)
class Limits:
    """The class's limits (see the module's description).

    Attributes:
        student_jobs: Jobs one student may have queued or running.
        class_jobs: Students' jobs the queue holds, queued or running.
        job_images: Images one job may train on (epochs × training images).
    """

    student_jobs: int
    class_jobs: int
    job_images: int

    @classmethod
    def defaults(cls) -> Limits:
        """The limits of the server's settings, before the teacher changes any.

        Returns:
            ``BNN_JOBS_PER_VISITOR``, ``BNN_QUEUE_JOBS`` and ``BNN_JOB_IMAGES`` (3, 12 and
            1,000,000 when unset).
        """
        return cls(
            student_jobs=settings.positive_int(JOBS_ENV, DEFAULT_JOBS),
            class_jobs=settings.positive_int(QUEUE_ENV, DEFAULT_QUEUE),
            job_images=settings.positive_int(IMAGES_ENV, DEFAULT_IMAGES),
        )


@dataclass(frozen=True)
class Room:
    """How full the queue is for one visitor.

    Attributes:
        mine: The visitor's jobs queued or running: the more of those of its browser and those
            of its network address.
        students: All students' jobs queued or running (the teacher's are not counted).
        limits: The class's limits now.
    """

    mine: int
    students: int
    limits: Limits

    @property
    def free(self) -> int:
        """Students' jobs the queue can still take."""
        return max(self.limits.class_jobs - self.students, 0)

    def describe(self, teacher: bool) -> str:
        """One sentence for the Train page.

        Args:
            teacher: Whether the visitor entered the teacher key.

        Returns:
            The visitor's jobs and the class's room left, or, for the teacher, the students'.
        """
        limits = self.limits
        if teacher:
            return (
                f"Teacher: your jobs go first and no limit applies to them. Students have "
                f"{self.students} of {limits.class_jobs} jobs queued or running."
            )
        return (
            f"You have {self.mine} of {limits.student_jobs} jobs queued or running; the class's "
            f"queue has room for {self.free} more of {limits.class_jobs}. One job trains on at "
            f"most {limits.job_images:,} images (epochs × training images)."
        )


def job_images(n_train: int | None, epochs: int) -> int:
    """Images a job trains on in all.

    Args:
        n_train: Training images of the request (None: all 60,000).
        epochs: Its epochs.

    Returns:
        Epochs × training images.
    """
    return epochs * (n_train or TRAIN_IMAGES)


def check_request(images: int, teacher: bool, room: Room) -> None:
    """Refuse a job over the limits, in one sentence (nothing is refused to the teacher).

    Args:
        images: Images the job trains on (:func:`job_images`).
        teacher: Whether the teacher asks.
        room: The queue as the asking visitor finds it.

    Raises:
        LimitError: If the student has the most jobs allowed, the class's queue is full or the
            job is too large.
    """
    if teacher:
        return
    limits = room.limits
    if room.mine >= limits.student_jobs:
        raise LimitError(
            f"You have {room.mine} jobs queued or running (from this browser or this "
            "computer), the most one student may have: wait for one to finish or cancel one."
        )
    if room.students >= limits.class_jobs:
        raise LimitError(
            f"The class's queue is full ({room.students} jobs queued or running, the most it "
            "holds): wait for one to finish."
        )
    if images > limits.job_images:
        raise LimitError(
            f"This job would train on {images:,} images in all (epochs × training images); one "
            f"job may train on at most {limits.job_images:,}: use fewer epochs or images."
        )


def client_address(peer: str | None, forwarded_for: str = "") -> str:
    """The network address a student's limit is counted by.

    Args:
        peer: The address of the connection's other end (None for loopback or unknown).
        forwarded_for: The request's ``X-Forwarded-For`` values, comma-separated. Used only
            with ``BNN_TRUSTED_PROXY=1``, when the app is reached through a reverse proxy: its
            last hop is the address the proxy saw (the earlier ones are the client's to write).

    Returns:
        The address (an IPv6 address as its /64 network, which one device may fill); "" when
        it is unknown, unreadable or loopback (a laptop's own browser), and the browser alone
        counts.
    """
    hop = peer or ""
    if settings.text(PROXY_ENV) == "1" and forwarded_for.strip():
        hop = forwarded_for.split(",")[-1].strip()
    try:
        address = ipaddress.ip_address(hop)
    except ValueError:
        return ""
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_unspecified:
        return ""
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)
