"""The ``docbinder`` command line (SPEC C15): the driving adapter over the library.

:func:`run` is the console script and ``python -m docbinder``. ``docbinder
--version`` alone is answered before the commands are loaded (ADR 0052); every
other command line goes to the typer app of :mod:`docbinder.cli.main`.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Run the command line with ``sys.argv``; exits with the command's exit code."""
    if sys.argv[1:] == ["--version"]:
        from docbinder.cli.version import print_version

        print_version()
        sys.exit(0)
    from docbinder.cli.main import app

    app(prog_name="docbinder")
