"""How the local-disk store reports ``OSError``: as :class:`StorageError` keeping the ``errno``."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from docbinder.domain.errors import StorageError


class DirectoryPruned(StorageError):
    """A directory ``put`` had open was removed while it walked (a concurrent delete pruned it)."""


def storage_error(action: str, path: Path | str, exc: OSError) -> StorageError:
    """``exc`` as a :class:`StorageError` that keeps its ``errno`` and names ``path``.

    The message reads ``local disk: cannot <action> <path>: <strerror> (<ERRNO>)``;
    the caller chains ``exc`` (``raise storage_error(...) from exc``).
    """
    reason = exc.strerror or str(exc)
    code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    detail = f"{reason} ({code})" if code else reason
    message = f"local disk: cannot {action} {os.fspath(path)}: {detail}"
    if exc.errno is None:
        return StorageError(message)
    return StorageError(exc.errno, message)  # OSError's (errno, strerror) form keeps .errno


def close_quietly(fd: int) -> None:
    """Close a descriptor nothing was written through since its last ``fsync``; errors are ignored.

    A failing ``close(2)`` then loses no data, and Linux frees the descriptor
    even when it reports an error (close(2)): closing it again could close
    another thread's newly opened file.
    """
    with contextlib.suppress(OSError):
        os.close(fd)
