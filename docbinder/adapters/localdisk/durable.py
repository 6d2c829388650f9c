"""The local-disk store's durable write: a temp file, ``fsync``, rename, ``fsync`` of the directory.

:func:`write_blob` streams into a temp file in the target's directory, sets
the provenance mark on it (:func:`~docbinder.adapters.localdisk.marks.set_origin`),
``fsync``s it, renames it over the target with :func:`os.replace` (atomic on
POSIX, rename(2)) and ``fsync``s the directory so the rename survives a crash.
The directory is opened once and the temp file's creation, the rename and the
directory's ``fsync`` all go through that descriptor (``openat``,
``renameat``; ADR 0034). Temp files are named ``.tmp-<32 hex digits>.part``:
their leading dot keeps them out of the store's keys (no key segment may start
with ``.``), and :mod:`~docbinder.adapters.localdisk.maintenance` finds the
ones a killed process left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import stat as stat_mod
from collections.abc import Iterator
from pathlib import Path

from docbinder.adapters.localdisk.errors import DirectoryPruned, close_quietly, storage_error
from docbinder.adapters.localdisk.marks import set_origin
from docbinder.adapters.localdisk.tree import BENEATH, StoreTree, fsync_dir, fsync_directory
from docbinder.domain.errors import StorageError

log = logging.getLogger(__name__)

TEMP_PREFIX = ".tmp-"
"""Name prefix of the temp files a write makes before the atomic rename."""

TEMP_SUFFIX = ".part"
"""Name suffix of the temp files a write makes before the atomic rename."""

TEMP_NAME = re.compile(r"\A\.tmp-[0-9a-f]{32}\.part\Z")
"""The whole name of a temp file :func:`write_blob` makes (and nothing else)."""

_COALESCE = 1 << 16  # input chunks smaller than 64 KiB are gathered before one write(2)
_CREATE_ATTEMPTS = 5  # a concurrent delete may prune the directory between walk and create
_O_BINARY = getattr(os, "O_BINARY", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | _O_BINARY


def write_blob(
    tree: StoreTree, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool
) -> int:
    """Stream ``chunks`` into the file of ``name`` atomically and durably; the bytes written.

    ``mark`` (if any) is set on the temp file before it gets its name, so the
    blob never appears without it. With ``replace`` the temp file is renamed
    over whatever is at the name (a symlink there is replaced, never
    followed); without it, it is hard-linked to the name, which fails when
    something is there already (that one stays: two writers agree on the
    first), and then removed. Either the complete file appears or nothing
    changes: on any exception (from the input, from the disk, or a
    ``KeyboardInterrupt``) the temp file is removed and the exception
    propagates; an exception raised by the input itself propagates unchanged,
    disk faults become :class:`StorageError`. A rename whose directory
    ``fsync`` fails is taken back. Memory use is bounded by the largest input
    chunk plus 64 KiB.
    """
    if not BENEATH:  # pragma: no cover - platforms without dir_fd (Windows)
        return _write_by_path(tree, name, chunks, mark, replace=replace)
    parts = name.split("/")
    leaf = parts[-1]
    directory, where, fd, temp = _open_temp(tree, name, parts)
    temp_path = f"{where}{os.sep}{temp}"
    path = f"{where}{os.sep}{leaf}"
    try:
        size = _fill_temp(fd, chunks, mark, temp_path)
        if replace:
            try:
                os.replace(temp, leaf, src_dir_fd=directory, dst_dir_fd=directory)
            except OSError as exc:
                raise _rename_failed(name, path, exc, _is_directory_at(directory, leaf)) from exc
        else:
            _link_if_absent(directory, temp, leaf, path)
            _discard_at(directory, temp, temp_path)
    except BaseException:
        _discard_at(directory, temp, temp_path)
        close_quietly(directory)
        raise
    try:
        fsync_directory(directory, where)
    except BaseException:
        if replace:
            # The rename is not durable, and the caller is told the write failed:
            # take the blob back so that a failed put leaves nothing visible.
            _discard_at(directory, leaf, path)
        close_quietly(directory)
        raise
    close_quietly(directory)
    return size


def _open_temp(tree: StoreTree, name: str, parts: list[str]) -> tuple[int, str, int, str]:
    """Open the blob's directory and create a temp file in it: ``(dir fd, dir, fd, temp name)``."""
    for attempt in range(_CREATE_ATTEMPTS):
        try:
            directory, where = tree.open_parent(name, parts)
        except DirectoryPruned:
            if attempt == _CREATE_ATTEMPTS - 1:
                raise
            continue  # a concurrent delete pruned a directory on the way: walk again
        temp = f"{TEMP_PREFIX}{os.urandom(16).hex()}{TEMP_SUFFIX}"
        try:
            return directory, where, os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=directory), temp
        except BaseException as exc:
            close_quietly(directory)
            if not isinstance(exc, OSError):
                raise
            # FileNotFoundError: a concurrent delete pruned the (empty) directory
            # after it was opened; FileExistsError: the random name was taken.
            if attempt == _CREATE_ATTEMPTS - 1 or not isinstance(
                exc, FileNotFoundError | FileExistsError
            ):
                raise storage_error("create temp file", f"{where}{os.sep}{temp}", exc) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _fill_temp(fd: int, chunks: Iterator[bytes], mark: str | None, temp: str | Path) -> int:
    """Write ``chunks`` and ``mark`` into the temp file ``fd``, ``fsync`` and close it.

    Returns the bytes written. ``fd`` is closed whatever happens; errors are
    those of :func:`_write_all`, :func:`~docbinder.adapters.localdisk.marks.set_origin`
    and ``fsync``/``close`` (:class:`StorageError` naming ``temp``), or the
    exception ``chunks`` raised.
    """
    try:
        size = _write_all(fd, chunks, temp)
        if mark is not None:
            set_origin(fd, mark, os.fspath(temp))
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    _flush_and_close(fd, temp)
    return size


def _write_all(fd: int, chunks: Iterator[bytes], temp: str | Path) -> int:
    """Write every chunk to ``fd``; small chunks are gathered into 64 KiB writes."""
    size = 0
    pending = bytearray()
    for chunk in chunks:
        size += len(chunk)
        if len(chunk) < _COALESCE:
            pending += chunk
            if len(pending) < _COALESCE:
                continue
            _write_fully(fd, pending, temp)
            pending.clear()
        else:
            if pending:
                _write_fully(fd, pending, temp)
                pending.clear()
            _write_fully(fd, chunk, temp)
    if pending:
        _write_fully(fd, pending, temp)
    return size


def _write_fully(fd: int, data: bytes | bytearray, temp: str | Path) -> None:
    """``write(2)`` until all of ``data`` is on ``fd`` (a write may be short)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError as exc:
            raise storage_error("write", temp, exc) from exc
        if written == len(view):
            return
        view = view[written:]


def _flush_and_close(fd: int, temp: str | Path) -> None:
    """``fsync`` and close the temp file ``fd`` (closed even when the ``fsync`` fails or is interrupted).

    Raises :class:`StorageError` naming ``temp`` for either failure.
    """
    try:
        os.fsync(fd)
    except BaseException as exc:  # an interrupt too: the descriptor is closed either way
        with contextlib.suppress(OSError):
            os.close(fd)
        if isinstance(exc, OSError):
            raise storage_error("flush", temp, exc) from exc
        raise
    try:
        os.close(fd)
    except OSError as exc:
        raise storage_error("close", temp, exc) from exc


def _link_if_absent(directory: int, temp: str, leaf: str, path: str) -> None:
    """Give the written temp file the name ``leaf`` unless something has it (then that one stays)."""
    try:
        os.link(temp, leaf, src_dir_fd=directory, dst_dir_fd=directory)
    except FileExistsError:
        pass  # another writer made it first
    except OSError as exc:
        raise storage_error("create", path, exc) from exc


def _rename_failed(name: str, path: str, exc: OSError, is_directory: bool) -> StorageError:
    """The error of a failed rename of the temp file to ``path`` (a directory there, or ``exc``)."""
    if is_directory:
        return StorageError(
            f"local disk: cannot store blob {name!r}: {path} is a directory holding other blobs"
        )
    return storage_error("rename temp file to", path, exc)


def _discard_at(directory: int, name: str, path: str) -> None:
    """Remove ``name`` from the open ``directory`` after a failed write; logged, never raised."""
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("local disk could not remove temp file %s: %s", path, exc)


def _is_directory_at(directory: int, name: str) -> bool:
    """Whether ``name`` in the open ``directory`` is a directory (not following a symlink)."""
    try:
        return stat_mod.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


# -- platforms without dir_fd --------------------------------------------------------


def _write_by_path(  # pragma: no cover - platforms without dir_fd (Windows)
    tree: StoreTree, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool
) -> int:
    """:func:`write_blob` by path names, where ``os`` has no ``dir_fd``."""
    path = tree.path(name)
    parent = Path(os.path.dirname(path))
    fd, temp = _create_temp(tree, parent)
    try:
        size = _fill_temp(fd, chunks, mark, temp)
        if replace:
            try:
                os.replace(temp, path)
            except OSError as exc:
                raise _rename_failed(name, path, exc, os.path.isdir(path)) from exc
        else:
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)
            _discard(temp)
    except BaseException:
        _discard(temp)
        raise
    try:
        fsync_dir(parent)
    except BaseException:
        if replace:
            _discard(path)
        raise
    return size


def _create_temp(tree: StoreTree, directory: Path) -> tuple[int, Path]:  # pragma: no cover
    """Create the directory chain and an exclusive temp file in it; return (fd, path)."""
    for attempt in range(_CREATE_ATTEMPTS):
        temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(16)}{TEMP_SUFFIX}"
        try:
            tree.makedirs(directory)
            return os.open(temp, _TEMP_FLAGS, 0o666), temp
        except StorageError:
            raise
        except FileNotFoundError as exc:
            # A concurrent delete pruned the (empty) directory; create it again.
            if attempt == _CREATE_ATTEMPTS - 1:
                raise storage_error("create temp file", temp, exc) from exc
        except (FileExistsError, NotADirectoryError) as exc:
            raise StorageError(
                f"local disk: cannot create {temp}: a blob occupies a directory name "
                "on its path (a key cannot be both a blob and the directory of other blobs)"
            ) from exc
        except OSError as exc:
            raise storage_error("create temp file", temp, exc) from exc
    raise AssertionError("unreachable")


def _discard(temp: Path | str) -> None:  # pragma: no cover - used by the by-path write only
    """Remove a temp file after a failed write; a failure here is logged, never raised."""
    try:
        os.unlink(temp)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("local disk could not remove temp file %s: %s", temp, exc)
