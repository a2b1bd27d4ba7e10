"""The ``bnn-lab`` command that ``pip install -e .`` installs.

``bnn-lab serve [streamlit options]`` starts the app as ``python -m app.serve`` (and
``scripts/run_app.sh``) does; ``bnn-lab <command> ...`` runs ``python -m core <command> ...``
(:func:`core.cli.main`), e.g. ``bnn-lab list``.
"""

from __future__ import annotations

import sys

from core import cli

SERVE_USAGE = """usage: bnn-lab serve [streamlit run options]

Start the lab's server warm, as python -m app.serve does: print the teacher key, prepare the
pages and start the training workers, then run `streamlit run app/main.py` with the given
options, e.g. bnn-lab serve --server.port=8502 --server.headless=true
"""

EPILOG = "bnn-lab serve [streamlit run options] starts the app (see bnn-lab serve --help)."


def main(argv: list[str] | None = None) -> int:
    """Run ``bnn-lab``: ``serve`` starts the app, any other command is the lab's command line.

    Args:
        argv: The arguments after ``bnn-lab``; None reads ``sys.argv``.

    Returns:
        The exit code (``serve`` returns only when Streamlit's command line does not exit).
    """
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["serve"]:
        return cli.main(args, prog="bnn-lab", epilog=EPILOG)
    options = args[1:]
    if options[:1] in (["-h"], ["--help"]):
        print(SERVE_USAGE, end="")
        return 0
    from app import serve  # the pages' imports and Streamlit, only when serving

    serve.main(options)
    return 0
