"""Local-disk blob store (``file:///...``): one file per blob under a root directory (SPEC C13).

:class:`LocalDiskBlobStore` is a :class:`~docbinder.adapters.blobstore_base.BlobStoreBase`
whose primitives are the modules beside this one:

* :mod:`~docbinder.adapters.localdisk.tree` -- the layout (the blob under key
  ``ab/1234`` is the file ``<root>/ab/1234``) and how paths are reached without
  following a symlink out of the root;
* :mod:`~docbinder.adapters.localdisk.durable` -- the atomic, durable write (temp
  file, ``fsync``, rename, ``fsync`` of the directory, all relative to the open
  directory);
* :mod:`~docbinder.adapters.localdisk.marks` -- the provenance mark and the commit
  record, kept as extended attributes of the blob file;
* :mod:`~docbinder.adapters.localdisk.maintenance` -- stale temp files and the
  inode generation.

The store's identity is the file ``<root>/.docbinder-store``, its registrations
the files ``<root>/.docbinder-databases/<id>``; their leading dot keeps them,
and the temp files, out of :meth:`~LocalDiskBlobStore.keys`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat as stat_mod
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

from docbinder.adapters.blobstore_base import DATABASES_PREFIX, IDENTITY_NAME, BlobStoreBase
from docbinder.adapters.localdisk import maintenance, marks
from docbinder.adapters.localdisk.durable import TEMP_PREFIX, TEMP_SUFFIX, write_blob
from docbinder.adapters.localdisk.errors import storage_error
from docbinder.adapters.localdisk.maintenance import DEFAULT_STALE_AFTER, inode_generation
from docbinder.adapters.localdisk.marks import COMMITTED_VALUE, COMMITTED_XATTR, ORIGIN_XATTR
from docbinder.adapters.localdisk.tree import StoreTree, fsync_dir
from docbinder.adapters.streams import ClosingChunks
from docbinder.domain.errors import InvalidInput, StorageError
from docbinder.ports.blobs import BlobStat

__all__ = [
    "COMMITTED_VALUE",
    "COMMITTED_XATTR",
    "DATABASES_DIR",
    "DEFAULT_STALE_AFTER",
    "IDENTITY_FILE",
    "LOCATION_DIR",
    "ORIGIN_XATTR",
    "TEMP_PREFIX",
    "TEMP_SUFFIX",
    "FileChunks",
    "LocalDiskBlobStore",
    "inode_generation",
]

log = logging.getLogger(__name__)

IDENTITY_FILE = IDENTITY_NAME
"""File under the root holding the store's identity (a UUID); hidden, so never a key."""

DATABASES_DIR = DATABASES_PREFIX.rstrip("/")
"""Directory under the root with one empty file per metadata database writing here."""

LOCATION_DIR = ".docbinder-location"
"""Empty directory under the root whose device and inode number are the store's location (ADR 0030).

A directory, unlike the identity file, cannot be hard-linked: a hard-link
snapshot (``cp -al``, ``rsync --link-dest``) makes a new one, as do ``cp -a``
and a restore; ``mv`` of the root on one file system keeps it.
"""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class LocalDiskBlobStore(BlobStoreBase):
    """:class:`~docbinder.ports.blobs.BlobStore` over files under ``root``.

    ``root`` (a path; made absolute and symlink-resolved once, here) need not
    exist yet: ``put`` creates it and any missing parent directories, ``keys``
    of a missing root is empty. Files and directories are created with the
    process umask applied to ``0o666``/``0o777``, like any ordinary file.
    Blobs carry the compact provenance mark (ADR 0036) in
    :data:`~docbinder.adapters.localdisk.marks.ORIGIN_XATTR` and their commit
    record in :data:`~docbinder.adapters.localdisk.marks.COMMITTED_XATTR`.

    Limitation of a file tree: a key cannot be both a blob and the directory of
    other blobs (``a`` and ``a/b``); storing the second raises
    :class:`StorageError`. ``delete`` removes directories it leaves empty.

    Errors: :class:`InvalidInput` for a malformed key, :class:`BlobMissing`
    for an absent blob, :class:`StorageError` (with the ``errno`` of the
    underlying :class:`OSError`, which is chained) for disk faults such as
    ``ENOSPC`` or ``EACCES``.
    """

    compact_marks: ClassVar[bool] = True

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__()
        self._tree = StoreTree(Path(os.path.realpath(os.fspath(root))))

    @classmethod
    def from_url(cls, url: str) -> LocalDiskBlobStore:
        """Build a store from ``file:///absolute/path`` (host empty or ``localhost``).

        Percent-escapes in the path are decoded (RFC 8089). Raises
        :class:`InvalidInput` for another scheme, a remote host, a query or a
        fragment, or an empty path.
        """
        parts = urlsplit(url)
        if parts.scheme != "file":
            raise InvalidInput(f"not a file:// URL: {url!r}")
        if parts.netloc not in ("", "localhost"):
            raise InvalidInput(f"file URL names a remote host: {url!r}")
        if parts.query or parts.fragment or not parts.path:
            raise InvalidInput(f"file URL must be file:///absolute/path: {url!r}")
        return cls(unquote(parts.path))

    @property
    def root(self) -> Path:
        """The absolute, symlink-resolved root directory."""
        return self._tree.root

    @property
    def url(self) -> str:
        """``file:///absolute/root``."""
        return self._tree.url

    def __repr__(self) -> str:
        return f"LocalDiskBlobStore({self._tree.root_text!r})"

    # -- primitives (BlobStoreBase) ---------------------------------------------------

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        """:func:`~docbinder.adapters.localdisk.durable.write_blob` into this store's tree."""
        size = write_blob(self._tree, name, chunks, mark, replace=replace)
        log.debug("local disk stored blob %s (%d bytes)", name, size)
        return size

    def _open(self, name: str, chunk_size: int) -> FileChunks:
        """The open file of ``name``; it stays open until exhausted, closed or collected."""
        return self._open_range(name, 0, -1, chunk_size)

    def _open_range(self, name: str, offset: int, length: int, chunk_size: int) -> FileChunks:
        """The open file of ``name`` positioned at ``offset`` (``lseek``), ``length`` bytes long.

        ``length`` -1 reads to the end. Nothing before ``offset`` is read.
        """
        path = self._tree.path(name)
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise self._tree.missing(name) from exc
        except OSError as exc:
            raise storage_error("open", path, exc) from exc
        try:
            info = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise storage_error("stat", path, exc) from exc
        if not stat_mod.S_ISREG(info.st_mode):
            os.close(fd)
            raise self._tree.missing(name)
        if offset:
            try:
                os.lseek(fd, offset, os.SEEK_SET)
            except OSError as exc:
                os.close(fd)
                raise storage_error("seek", path, exc) from exc
        return FileChunks(fd, chunk_size, path, length)

    def _stat(self, name: str) -> BlobStat:
        """Size, modification time (UTC, the file's mtime) and :data:`ORIGIN_XATTR` of the file."""
        path = self._tree.path(name)
        info = self._tree.lookup(path)
        if info is None:
            raise self._tree.missing(name)
        modified = datetime.fromtimestamp(info.st_mtime_ns / 1e9, UTC)
        return BlobStat(
            size=info.st_size, modified_at=modified, origin=marks.read_origin_mark(path)
        )

    def _delete(self, name: str) -> None:
        """Remove the file (absent is fine) and then any directories it leaves empty."""
        path = self._tree.path(name)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            if os.path.isdir(path):  # a directory of other blobs, not a blob
                return
            raise storage_error("delete", path, exc) from exc
        root, prefix = self._tree.root_text, self._tree.prefix
        parent = os.path.dirname(path)
        while parent != root and parent.startswith(prefix):
            try:
                os.rmdir(parent)
            except OSError:
                break  # not empty (or already gone): stop pruning
            parent = os.path.dirname(parent)

    def _list(self, prefix: str) -> Iterator[str]:
        """Regular files below the root, depth first; or every entry of a record directory.

        With ``prefix`` ``""`` hidden names, temp files and symlinks are
        skipped (:class:`StorageError` while iterating when a directory
        cannot be read); with a directory prefix (``.docbinder-databases/``)
        every entry of that one directory is named.
        """
        if prefix:
            directory = prefix.rstrip("/")
            return iter([f"{directory}/{entry}" for entry in self._tree.names_in(directory)])
        return (
            relative
            for relative, entry in self._tree.walk(include_hidden=False)
            if entry.is_file(follow_symlinks=False)
        )

    def _record_commit(self, name: str) -> str | None:
        return marks.record_commit(self._tree, name)

    def _has_commit_record(self, name: str) -> bool:
        return marks.has_commit_record(self._tree, name)

    # -- location (ADR 0030) ------------------------------------------------------------

    def location(self, *, create: bool = False) -> str | None:
        """``file device <st_dev> inode <st_ino>[ generation <n>]`` of ``<root>/.docbinder-location``.

        Made (``mkdir``, which only one of two racing writers wins; both then
        read the same directory) when missing and ``create``; without it a
        missing root or directory gives ``None``. A copy or restore of the root
        (``cp -a``, ``rsync``, ``tar``, a backup tool, a hard-link snapshot)
        makes a new directory, so another inode; a file-system snapshot or
        volume clone mounted elsewhere is another device; renaming or moving
        the root within one file system keeps both. The inode generation
        (:func:`~docbinder.adapters.localdisk.maintenance.inode_generation`) is
        part of it where the file system has one, because a file system may
        give a directory made again the inode number of a removed one (ext4
        does, for ``rm -r root && cp -a backup root``) but always with a new
        generation; ``chown`` or ``chmod`` of the store leave it alone. The
        device number of some file systems (NFS, device-mapper volumes) can
        change when they are mounted again: then the location differs
        although the bytes did not move, and ``gc`` refuses until ``docbinder
        store adopt`` (a refusal, never a loss). :class:`StorageError` when
        the entry is not a plain directory or cannot be read or made.
        """
        path = self._tree.root / LOCATION_DIR
        info = _stat_location(path)
        if info is None and create:
            try:
                self._tree.makedirs(self._tree.root)
                with contextlib.suppress(FileExistsError):  # another writer made it first
                    os.mkdir(path)
                fsync_dir(self._tree.root)
            except OSError as exc:
                raise storage_error("create store location", path, exc) from exc
            info = _stat_location(path)
        if info is None:
            return None
        generation = inode_generation(path)
        text = f"file device {info.st_dev} inode {info.st_ino}"
        return text if generation is None else f"{text} generation {generation}"

    # -- maintenance --------------------------------------------------------------------

    def stale_temp_files(self, older_than_seconds: float = DEFAULT_STALE_AFTER) -> list[Path]:
        """Temp files not written to for at least ``older_than_seconds`` seconds, sorted.

        A running ``put`` touches its temp file with every write, so an old one
        was left by a process that was killed. A writer whose input stalls for
        longer than the threshold would lose its temp file to
        :meth:`remove_stale_temp_files` and fail with :class:`StorageError`.
        """
        return maintenance.stale_temp_files(self._tree, older_than_seconds)

    def remove_stale_temp_files(
        self, older_than_seconds: float = DEFAULT_STALE_AFTER
    ) -> list[Path]:
        """Delete what :meth:`stale_temp_files` finds; return the paths actually removed."""
        return maintenance.remove_stale_temp_files(self._tree, older_than_seconds)


def _stat_location(path: Path) -> os.stat_result | None:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise storage_error("stat", path, exc) from exc
    if not stat_mod.S_ISDIR(info.st_mode):
        raise StorageError(
            f"local disk: {path} is not a directory: the store location marker was replaced"
        )
    return info


class FileChunks(ClosingChunks):
    """Iterator over an open file descriptor in chunks of at most ``chunk_size`` bytes.

    ``length`` bytes at most (-1: to the end of the file), read from where ``fd``
    is positioned. Owns ``fd``: closes it at end of file, on :meth:`close`, on leaving a
    ``with`` block, or when collected. Read faults raise :class:`StorageError`.
    """

    def __init__(self, fd: int, chunk_size: int, path: Path | str, length: int = -1) -> None:
        self._fd = fd
        self._chunk_size = chunk_size
        self._path = path
        self._remaining = length  # bytes still to give; -1: to the end of the file

    def __next__(self) -> bytes:
        if self._fd < 0 or self._remaining == 0:
            self.close()
            raise StopIteration
        size = self._chunk_size if self._remaining < 0 else min(self._chunk_size, self._remaining)
        try:
            chunk = os.read(self._fd, size)
        except OSError as exc:
            self.close()
            raise storage_error("read", self._path, exc) from exc
        if not chunk:
            self.close()
            raise StopIteration
        if self._remaining > 0:
            self._remaining -= len(chunk)
        return chunk

    def close(self) -> None:
        """Close the file; further iteration yields nothing."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
