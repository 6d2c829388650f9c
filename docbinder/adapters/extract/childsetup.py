"""Imported once by the converter fork server (:mod:`~docbinder.adapters.extract.isolation`).

A child started by :mod:`multiprocessing` normally re-imports the host's main
module first (``multiprocessing.spawn.prepare``), which would re-run a host
script without an ``if __name__ == "__main__"`` guard in every converter
process. Converter children need nothing from the main module (their target
lives in this package), so inside the fork server process, and only there
(recognised by :func:`multiprocessing.forkserver.main` on the call stack while
it imports its preload list), the two re-import steps become no-ops.
Importing this module anywhere else changes nothing.
"""

from __future__ import annotations

import sys
from types import FrameType


def _in_fork_server() -> bool:
    forkserver = sys.modules.get("multiprocessing.forkserver")
    main = getattr(forkserver, "main", None)
    code = getattr(main, "__code__", None)
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _skip(_name_or_path: str) -> None:
    """Stand-in for the main-module re-import steps: converter children need no main module."""


if _in_fork_server():  # pragma: no cover - runs in the fork server process only
    import multiprocessing.spawn as _spawn

    _spawn._fixup_main_from_path = _skip  # type: ignore[attr-defined]
    _spawn._fixup_main_from_name = _skip  # type: ignore[attr-defined]
