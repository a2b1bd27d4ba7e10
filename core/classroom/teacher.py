"""What only the teacher does with a class's drawings: export them and clear them.

Both refuse a student with one line (:func:`core.roles.require_teacher`) before they touch the
database, whatever a page shows; the command line uses :class:`~core.classroom.store.ClassStore`
directly, with the operator's full rights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.classroom.drawings import Drawing
from core.classroom.store import ClassStore
from core.roles import Actor, require_teacher


def export_class(
    actor: Actor, class_code: str, pack: Callable[[Sequence[Drawing]], bytes], url: str | None
) -> bytes:
    """Pack a class's drawings for the teacher to download.

    Args:
        actor: Who asks.
        class_code: The class.
        pack: Builds the file, e.g. :func:`core.classroom.export.csv_png_zip`.
        url: The database; None for the configured one.

    Returns:
        The packed file's bytes, with the drawings stored now.

    Raises:
        PermissionError: If ``actor`` is not the teacher.
        DatabaseError: If the database cannot be read.
    """
    require_teacher(actor, "export_class")
    return pack(ClassStore(url).records(class_code))


def clear_class(actor: Actor, class_code: str, up_to: int | None, url: str | None) -> int:
    """Delete a class's drawings (:meth:`~core.classroom.store.ClassStore.clear`).

    Args:
        actor: Who asks.
        class_code: The class.
        up_to: Delete only the drawings numbered ``up_to`` or lower (the newest one the teacher
            counted); None for all.
        url: The database; None for the configured one.

    Returns:
        How many drawings were deleted.

    Raises:
        PermissionError: If ``actor`` is not the teacher (nothing is deleted).
        DatabaseError: If the database cannot be written.
    """
    require_teacher(actor, "clear_class")
    return ClassStore(url).clear(class_code, up_to)
