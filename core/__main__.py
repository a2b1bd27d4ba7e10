"""Entry point of ``python -m core``: runs :func:`core.cli.main` and exits with its code."""

from core.cli import main

raise SystemExit(main())
