"""Upkeep of a local-disk store: temp files a killed writer left, and the inode generation.

Nothing here runs on the write or read path; ``docbinder gc`` and ``doctor``
call it (through :class:`~docbinder.adapters.localdisk.LocalDiskBlobStore`).
"""

from __future__ import annotations

import logging
import os
import stat as stat_mod
import time
from pathlib import Path

from docbinder.adapters.localdisk.durable import TEMP_NAME
from docbinder.adapters.localdisk.errors import storage_error
from docbinder.adapters.localdisk.tree import StoreTree

log = logging.getLogger(__name__)

DEFAULT_STALE_AFTER = 24 * 3600.0
"""Seconds without a write after which a temp file counts as abandoned (24 hours)."""


def stale_temp_files(tree: StoreTree, older_than_seconds: float) -> list[Path]:
    """Temp files under the root not written to for at least ``older_than_seconds`` seconds, sorted.

    Only names a write makes (:data:`~docbinder.adapters.localdisk.durable.TEMP_NAME`)
    and only regular files count. A running write touches its temp file with
    every ``write``, so an old one was left by a process that was killed.
    :class:`StorageError` when a directory or a file cannot be read.
    """
    cutoff = time.time() - older_than_seconds
    found: list[Path] = []
    for _relative, entry in tree.walk(include_hidden=True):
        if not TEMP_NAME.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error("stat", entry.path, exc) from exc
        if stat_mod.S_ISREG(info.st_mode) and info.st_mtime <= cutoff:
            found.append(Path(entry.path))
    return sorted(found)


def remove_stale_temp_files(tree: StoreTree, older_than_seconds: float) -> list[Path]:
    """Delete what :func:`stale_temp_files` finds; return the paths actually removed."""
    removed: list[Path] = []
    for path in stale_temp_files(tree, older_than_seconds):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error("delete temp file", path, exc) from exc
        log.info("local disk removed stale temp file %s", path)
        removed.append(path)
    return removed


def inode_generation(path: Path) -> int | None:
    """The inode generation number of ``path`` (Linux ``FS_IOC_GETVERSION``), or ``None``.

    ext4, btrfs and some other Linux file systems give every inode a
    generation when it is allocated, so an inode number used again gets a new
    one; it is kept on disk, survives remounts, and ``chown``/``chmod``/
    ``touch`` do not change it (ioctl_iflags(2), NFS file handles rely on
    it). ``None`` where the platform or the file system has none (tmpfs,
    macOS, Windows). Never raises.
    """
    try:
        import fcntl
        import struct
    except ImportError:  # not a POSIX platform
        return None
    size = struct.calcsize("l")
    request = (2 << 30) | (size << 16) | (ord("v") << 8) | 1  # _IOR('v', 1, long)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        answer = fcntl.ioctl(fd, request, bytes(size))
    except OSError:
        return None
    finally:
        os.close(fd)
    return int(struct.unpack("I", answer[:4])[0])  # the kernel writes a 32-bit value
