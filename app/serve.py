"""Start the lab's server warm: ``python -m app.serve [streamlit options]``.

Prints the teacher key once (:func:`announce_teacher_key`), prepares the process
(:func:`app.warmup.warm_up`: the pages' imports, the checkpoint listing, the models compared by
default and the MNIST test set) and starts its training workers, then runs ``streamlit run
app/main.py`` with the given options in the same process, so the first visitor of a fresh
server does not wait for that work, and jobs queued before a restart train without waiting for
one. ``scripts/run_app.sh`` starts the lab this way.
"""

from __future__ import annotations

import sys

from app.main import PAGES, REPO_ROOT
from app.warmup import warm_up
from core.roles import KEY_ENV, TeacherKeyUnavailable, teacher_key

MAIN_SCRIPT = REPO_ROOT / "app" / "main.py"


def announce_teacher_key() -> None:
    """Print the teacher key in the server's console, once per process start.

    A key the lab made (no ``BNN_TEACHER_KEY``) is printed with where it is kept; one set by
    the operator is not echoed.
    """
    where = "enter it on the Class drawings, Train or Training speed page"
    try:
        key = teacher_key()
    except TeacherKeyUnavailable as exc:
        print(f"Teacher key: none, nobody can sign in as the teacher ({exc}).", flush=True)
        return
    if key.generated:
        print(f"Teacher key: {key.value} ({where}; kept in {key.source})", flush=True)
    else:
        print(f"Teacher key: the one set in {KEY_ENV} ({where})", flush=True)


def main(options: list[str]) -> None:
    """Warm up, then hand the process to Streamlit's command line.

    Args:
        options: ``streamlit run`` options, e.g. ``["--server.port=8502"]``.
    """
    announce_teacher_key()
    print("Preparing the lab's pages…", flush=True)
    seconds = warm_up([MAIN_SCRIPT, *(page.path for page in PAGES)])
    print(
        "Prepared in " + ", ".join(f"{step} {s:.1f} s" for step, s in seconds.items()) + ".",
        flush=True,
    )
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(MAIN_SCRIPT), *options]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
