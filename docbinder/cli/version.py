"""The version line ``docbinder --version`` prints, without loading the command line."""

from __future__ import annotations

import os
import sys


def version_line() -> str:
    """``docbinder <version>``: the version of this package (:data:`docbinder.__version__`)."""
    from docbinder import __version__

    return f"docbinder {__version__}"


def print_version() -> None:
    """Write :func:`version_line` to stdout; a reader that went away is no error."""
    try:
        sys.stdout.write(version_line() + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
