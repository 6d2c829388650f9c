"""Local-disk blob store (``file:///...``): one file per blob under a root directory (SPEC C13).

Layout: the blob under key ``ab/1234`` is the file ``<root>/ab/1234``. Keys are
checked by :func:`~docbinder.ports.blobs.check_blob_key` (no ``..``, no absolute
paths, no hidden names), and every path is additionally resolved and verified to
lie inside the root, so neither a key nor a symlink planted inside the root can
make the store read or write elsewhere.

Writes are atomic: ``put`` streams into a temp file in the target's directory,
``fsync``s it, renames it over the target with :func:`os.replace` (atomic on
POSIX, see rename(2)) and ``fsync``s the directory so the rename survives a crash.
Temp files are named ``.tmp-<32 hex digits>.part``; their leading dot keeps them
out of :meth:`LocalDiskBlobStore.keys` (no key segment may start with ``.``), and
:meth:`LocalDiskBlobStore.stale_temp_files` finds the ones a killed process left.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import stat as stat_mod
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from docbinder.adapters.streams import ClosingChunks, iter_chunks
from docbinder.domain.errors import BlobMissing, InvalidInput, StorageError
from docbinder.ports.blobs import (
    BlobStat,
    Chunks,
    check_blob_key,
    compact_blob_origin,
    is_blob_key,
)

log = logging.getLogger(__name__)

TEMP_PREFIX = ".tmp-"
"""Name prefix of the temp files ``put`` writes before the atomic rename."""

TEMP_SUFFIX = ".part"
"""Name suffix of the temp files ``put`` writes before the atomic rename."""

IDENTITY_FILE = ".docbinder-store"
"""File under the root holding the store's identity (a UUID); hidden, so never a key."""

LOCATION_DIR = ".docbinder-location"
"""Empty directory under the root whose device and inode number are the store's location (ADR 0030).

A directory, unlike the identity file, cannot be hard-linked: a hard-link
snapshot (``cp -al``, ``rsync --link-dest``) makes a new one, as do ``cp -a``
and a restore; ``mv`` of the root on one file system keeps it.
"""

DATABASES_DIR = ".docbinder-databases"
"""Directory under the root with one empty file per metadata database writing here."""

ORIGIN_XATTR = "user.docbinder.origin"
"""Extended attribute holding a blob's provenance mark, in its compact form (ADR 0036).

Written as :func:`~docbinder.ports.blobs.compact_blob_origin` (``v2 <mac>``, 15
bytes): with :data:`COMMITTED_XATTR` (2 bytes) both attributes fit inside an ext4
inode of 256 bytes (about 92 bytes of room), so no blob needs a 4 KiB attribute
block of its own. It names neither the store nor the database: ``stat`` returns
it as found, and :func:`~docbinder.ports.blobs.read_origin` verifies it against
the store identity and the databases the caller knows. Blobs written before
carry the full form (:func:`~docbinder.ports.blobs.blob_origin`, ``v1 ...``, 109
bytes with UUID ids), which is still read.

Set on the temp file before the rename, so a blob never appears without it
where the file system keeps user extended attributes (Linux ext4, XFS, Btrfs,
tmpfs since 6.6). Where it does not (or on systems without ``os.setxattr``),
blobs carry no mark and ``gc`` never removes them as orphans. Copies keep it
only when told to (``cp --preserve=xattr``, ``rsync -X``, ``tar --xattrs``).
"""

COMMITTED_XATTR = "user.docbinder.committed"
"""Extended attribute recording that a FileItem naming the blob committed (ADR 0031).

Set after the commit by :meth:`LocalDiskBlobStore.mark_committed` with one
``fsetxattr`` on the blob file; a replaced blob is a new file and starts without it.
``gc`` never removes an unnamed blob that carries it. Writing a ``user.``
attribute needs write permission on the file (xattr(7)): a blob file its owner
made read-only is given the owner's write bit for that one call and gets its
mode back; a process that neither may write the file nor owns it records
nothing (logged once).
"""

COMMITTED_VALUE = b"v1"
"""Value of :data:`COMMITTED_XATTR` (any value counts when reading)."""

DEFAULT_STALE_AFTER = 24 * 3600.0
"""Seconds without a write after which a temp file counts as abandoned (24 hours)."""

_TEMP_NAME = re.compile(r"\A\.tmp-[0-9a-f]{32}\.part\Z")
_COALESCE = 1 << 16  # input chunks smaller than 64 KiB are gathered before one write(2)
_CREATE_ATTEMPTS = 5  # a concurrent delete may prune the directory between mkdir and open
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC
_MARK_FLAGS = os.O_RDONLY | _O_CLOEXEC | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
"""How :meth:`LocalDiskBlobStore.mark_committed` opens a blob: never through a link, never blocking on a FIFO."""
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_BINARY
_BENEATH = (
    bool(_O_DIRECTORY and _O_NOFOLLOW)
    and {os.open, os.mkdir, os.rename, os.stat, os.unlink} <= os.supports_dir_fd
)  # os.replace takes the same dir_fd arguments as os.rename (it is not listed separately)
"""Whether ``put`` can work relative to an open directory (``openat``, ``renameat``: POSIX)."""
_SLASH_SEP = os.sep == "/"
_ENOATTR = getattr(errno, "ENODATA", getattr(errno, "ENOATTR", -1))  # no such attribute
_HOLDS_BLOBS = _BENEATH and getattr(os, "setxattr", None) is not None
"""Whether ``put`` keeps the new blob open for :meth:`LocalDiskBlobStore.mark_committed`."""

HELD_BLOBS = 32
"""How many blobs one store keeps open after ``put`` for its ``mark_committed`` (oldest closed first)."""


class _HeldBlobs:
    """The open descriptors of blobs ``put`` just stored, by key, until ``mark_committed`` takes them.

    At most ``limit`` are held; keeping one more closes the oldest. Safe to use
    from several threads: one lock guards the dict, and no system call is made
    while it is held (descriptors are closed after it is released). A forked
    child closes the descriptors it inherited and starts empty
    (:func:`_forget_held_blobs`). Closing a held descriptor never raises
    :class:`OSError`: every held blob was ``fsync``ed before its rename.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._held: dict[str, tuple[int, str]] = {}  # insertion order: oldest first
        _ALL_HELD.add(self)

    def keep(self, key: str, fd: int, path: str) -> None:
        """Hold ``fd`` (the blob now at ``path``) for ``key``; close the one it replaces or the oldest."""
        with self._lock:
            gone = self._held.pop(key, None)
            self._held[key] = (fd, path)
            if gone is None and len(self._held) > self._limit:
                gone = self._held.pop(next(iter(self._held)))
        if gone is not None:
            _close_quietly(gone[0])

    def take(self, key: str) -> tuple[int, str] | None:
        """``(fd, path)`` held for ``key``, now the caller's to close; ``None`` if none is held."""
        with self._lock:
            return self._held.pop(key, None)

    def drop(self, key: str) -> None:
        """Close the descriptor held for ``key``, if any (its blob is about to be removed or replaced)."""
        with self._lock:
            gone = self._held.pop(key, None)
        if gone is not None:
            _close_quietly(gone[0])

    def close(self) -> None:
        """Close every held descriptor."""
        with self._lock:
            gone, self._held = list(self._held.values()), {}
        _close_all([fd for fd, _path in gone])

    def _forget(self) -> None:
        # The child of a fork inherits the descriptors and perhaps a lock some other
        # thread of the parent held: a fresh lock, and the inherited copies closed.
        self._lock = threading.Lock()
        gone, self._held = list(self._held.values()), {}
        _close_all([fd for fd, _path in gone])


_ALL_HELD: weakref.WeakSet[_HeldBlobs] = weakref.WeakSet()


def _forget_held_blobs() -> None:
    for held in list(_ALL_HELD):
        held._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_blobs)


class _DirectoryPruned(StorageError):
    """A directory ``put`` had open was removed while it walked (a concurrent delete pruned it)."""


def _storage_error(action: str, path: Path | str, exc: OSError) -> StorageError:
    """Translate ``exc`` into a :class:`StorageError` that keeps its ``errno`` and names the path."""
    reason = exc.strerror or str(exc)
    code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    detail = f"{reason} ({code})" if code else reason
    message = f"local disk: cannot {action} {os.fspath(path)}: {detail}"
    if exc.errno is None:
        return StorageError(message)
    return StorageError(exc.errno, message)  # OSError's (errno, strerror) form keeps .errno


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


class LocalDiskBlobStore:
    """:class:`~docbinder.ports.blobs.BlobStore` over files under ``root``.

    ``root`` (a path; made absolute and symlink-resolved once, here) need not
    exist yet: ``put`` creates it and any missing parent directories, ``keys``
    of a missing root is empty. Files and directories are created with the
    process umask applied to ``0o666``/``0o777``, like any ordinary file.

    Limitation of a file tree: a key cannot be both a blob and the directory of
    other blobs (``a`` and ``a/b``); storing the second raises
    :class:`StorageError`. ``delete`` removes directories it leaves empty.

    Errors: :class:`InvalidInput` for a malformed key, :class:`BlobMissing`
    for an absent blob, :class:`StorageError` (with the ``errno`` of the
    underlying :class:`OSError`, which is chained) for disk faults such as
    ``ENOSPC`` or ``EACCES``.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(os.path.realpath(os.fspath(root)))
        self._root_text = os.fspath(self._root)
        self._prefix = os.path.join(self._root_text, "")  # the root and one separator
        self._identity: str | None = None
        self._writers: set[str] = set()
        self._writer: str | None = None  # the one database registered here, named in marks
        self._unconfirmable_told = False
        self._held = _HeldBlobs(HELD_BLOBS)
        weakref.finalize(self, self._held.close)

    def close(self) -> None:
        """Close the blobs :meth:`put` kept open for :meth:`mark_committed`; the store stays usable.

        The binder calls it when it closes; a store that is collected closes
        them too. Later puts keep their blobs open again.
        """
        self._held.close()

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
        return self._root

    @property
    def url(self) -> str:
        """``file:///absolute/root``."""
        return self._root.as_uri()

    def __repr__(self) -> str:
        return f"LocalDiskBlobStore({str(self._root)!r})"

    # -- identity -----------------------------------------------------------

    def identity(self, *, create: bool = False) -> str | None:
        """The UUID in ``<root>/.docbinder-store``; made on first use when ``create``.

        Creation writes a temp file and hard-links it to the final name, which
        fails if another process got there first; both then read the winner's
        identity. Without ``create`` a missing root or file gives ``None`` and
        nothing is created. :class:`StorageError` for an unreadable file.
        """
        if self._identity is not None:
            return self._identity
        path = self._root / IDENTITY_FILE
        found = self._read_identity(path)
        if found is None and create:
            self._makedirs(self._root)
            fd, temp = self._create_temp(self._root)
            try:
                _write_fully(fd, f"{uuid.uuid4()}\n".encode(), temp)
                os.fsync(fd)
                os.close(fd)
                fd = -1
                with contextlib.suppress(FileExistsError):  # another writer made it first
                    os.link(temp, path)
                self._fsync_dir(self._root)
            except OSError as exc:
                raise _storage_error("create store identity", path, exc) from exc
            finally:
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                _discard(temp)
            found = self._read_identity(path)
        self._identity = found
        return found

    def location(self, *, create: bool = False) -> str | None:
        """``file device <st_dev> inode <st_ino>[ generation <n>]`` of ``<root>/.docbinder-location``.

        Made (``mkdir``, which only one of two racing writers wins; both then
        read the same directory) when missing and ``create``; without it a
        missing root or directory gives ``None``. A copy or restore of the root
        (``cp -a``, ``rsync``, ``tar``, a backup tool, a hard-link snapshot)
        makes a new directory, so another inode; a file-system snapshot or
        volume clone mounted elsewhere is another device; renaming or moving
        the root within one file system keeps both. The inode generation
        (:func:`inode_generation`) is part of it where the file system has
        one, because a file system may give a directory made again the inode
        number of a removed one (ext4 does, for ``rm -r root && cp -a backup
        root``) but always with a new generation; ``chown`` or ``chmod`` of
        the store leave it alone. The device number of some
        file systems (NFS, device-mapper volumes) can change when they are
        mounted again: then the location differs although the bytes did not
        move, and ``gc`` refuses until ``docbinder store adopt`` (a refusal,
        never a loss). :class:`StorageError` when the entry is not a plain
        directory or cannot be read or made.
        """
        path = self._root / LOCATION_DIR
        info = self._stat_location(path)
        if info is None and create:
            try:
                self._makedirs(self._root)
                with contextlib.suppress(FileExistsError):  # another writer made it first
                    os.mkdir(path)
                self._fsync_dir(self._root)
            except OSError as exc:
                raise _storage_error("create store location", path, exc) from exc
            info = self._stat_location(path)
        if info is None:
            return None
        generation = inode_generation(path)
        text = f"file device {info.st_dev} inode {info.st_ino}"
        return text if generation is None else f"{text} generation {generation}"

    @staticmethod
    def _stat_location(path: Path) -> os.stat_result | None:
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _storage_error("stat", path, exc) from exc
        if not stat_mod.S_ISDIR(info.st_mode):
            raise StorageError(
                f"local disk: {path} is not a directory: the store location marker was replaced"
            )
        return info

    def register_database(self, database_id: str) -> None:
        """Create ``<root>/.docbinder-databases/<database_id>`` (empty) if it is not there."""
        check_blob_key(database_id)
        if "/" in database_id:
            raise InvalidInput(f"invalid database id {database_id!r}")
        self._writers.add(database_id)
        self._writer = database_id if self._writers == {database_id} else None
        directory = self._root / DATABASES_DIR
        path = directory / database_id
        if path.is_file():
            return
        try:
            self._makedirs(directory)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | _O_CLOEXEC, 0o666)
            os.close(fd)
            self._fsync_dir(directory)
        except OSError as exc:
            raise _storage_error("register database in", path, exc) from exc

    def databases(self) -> set[str]:
        """Names of the files in ``<root>/.docbinder-databases`` (empty if there is none)."""
        try:
            with os.scandir(self._root / DATABASES_DIR) as entries:
                return {e.name for e in entries if is_blob_key(e.name)}
        except (FileNotFoundError, NotADirectoryError):
            return set()
        except OSError as exc:
            raise _storage_error("list", self._root / DATABASES_DIR, exc) from exc

    # -- commit records (ADR 0031) --------------------------------------------

    def mark_committed(self, key: str) -> bool:
        """Set :data:`COMMITTED_XATTR` on the blob file; ``False`` where it cannot be kept.

        For a blob this store's :meth:`put` wrote and still holds open (the
        last :data:`HELD_BLOBS` ones, neither deleted nor stored again since),
        the record is set on that descriptor and it is closed, once
        ``lstat`` of the key's path and ``fstat`` of the descriptor show the
        same file (device and inode): four system calls instead of five, on
        the path of every attach (ADR 0039). A blob removed at the key
        meanwhile (by another process, a ``gc`` run with too short a grace)
        gives :class:`BlobMissing`, and one replaced there (the store's
        directory moved or restored while a writer ran) is recorded by name
        as below, so the record always lands on the file the key names.

        Otherwise the blob's directory is opened as :meth:`put` opens it (never through
        a symlink leading out of the root), the blob relative to it with
        ``O_NOFOLLOW``, and the record is set on that open file
        (``fsetxattr``), so no path is looked up again between the check and
        the write: a directory swapped for a symlink meanwhile makes the open
        fail instead of recording on a file elsewhere. When the file is
        read-only for this process (``EACCES``/``EPERM``) and the process owns
        it, the owner's write bit is added for the call and the mode put back
        (the modification time does not change). ``False``, logged once per
        store object, on file systems or platforms without user extended
        attributes, for a symlink at the key, and for files this process may
        neither write nor chmod: ``gc`` then treats the blob as unconfirmed.
        :class:`BlobMissing` for an absent blob, :class:`StorageError` for
        other disk faults.
        """
        parts = check_blob_key(key).split("/")
        if getattr(os, "setxattr", None) is None or not _BENEATH:  # pragma: no cover - not Linux
            self._unconfirmable(self._root_text, "this platform has no extended attributes")
            return False
        held = self._held.take(key)
        if held is not None:
            fd, path = held
            same = False
            try:
                same = os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
            except (FileNotFoundError, NotADirectoryError) as exc:
                _close_quietly(fd)
                raise BlobMissing(f"blob {key} is missing from {self.url}") from exc
            except OSError:
                pass  # the way by name below tells what is wrong, and where
            except BaseException:
                _close_quietly(fd)
                raise
            if same:
                return self._record_commit(fd, path, held=True)
            _close_quietly(fd)  # the key names another file now: record on that one, by name
        directory, where = self._open_existing_parent(key, parts)
        path = f"{where}{os.sep}{parts[-1]}"
        try:
            fd = os.open(parts[-1], _MARK_FLAGS, dir_fd=directory)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise BlobMissing(f"blob {key} is missing from {self.url}") from exc
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._unconfirmable(path, "the blob's name is a symlink")
                return False
            if exc.errno in (errno.EACCES, errno.EPERM):
                self._unconfirmable(path, f"no permission to open the file ({exc.strerror})")
                return False
            raise _storage_error("record the commit of", path, exc) from exc
        finally:
            _close_directory(directory)
        return self._record_commit(fd, path, held=False)

    def _record_commit(self, fd: int, path: str, *, held: bool) -> bool:
        """Set :data:`COMMITTED_XATTR` on the open blob ``fd`` and close it (see :meth:`mark_committed`).

        A failing close of a ``held`` descriptor is ignored: :meth:`put`
        ``fsync``ed the blob before it renamed it.
        """
        try:
            try:
                os.setxattr(fd, COMMITTED_XATTR, COMMITTED_VALUE)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM):
                    return self._mark_as_owner(fd, path, exc)
                if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                    self._unconfirmable(path, "the file system keeps no user extended attributes")
                    return False
                raise _storage_error("record the commit of", path, exc) from exc
        finally:
            if held:
                _close_quietly(fd)
            else:
                os.close(fd)
        return True

    def _open_existing_parent(self, key: str, parts: list[str]) -> tuple[int, str]:
        """:meth:`_open_parent` for a blob that should exist: :class:`BlobMissing` if its directory does not."""
        if len(parts) == 2:  # docbinder's own keys: one open, as put's
            where = self._prefix + parts[0]
            try:
                return os.open(where, _DIR_FLAGS | _O_NOFOLLOW), where
            except FileNotFoundError as exc:
                raise BlobMissing(f"blob {key} is missing from {self.url}") from exc
            except OSError:
                pass  # a symlink or a file: the walk below tells which, and where it leads
        if not os.path.lexists(self._prefix + os.sep.join(parts[:-1])):
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return self._open_parent(key, parts)

    def _mark_as_owner(self, fd: int, path: str, refused: OSError) -> bool:
        """Set the record on ``fd``, read-only for its owner, this process; ``False`` otherwise."""
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or not stat_mod.S_ISREG(info.st_mode):
                self._unconfirmable(
                    path, f"the file belongs to another user and is not writable ({refused})"
                )
                return False
            mode = stat_mod.S_IMODE(info.st_mode)
            os.fchmod(fd, mode | stat_mod.S_IWUSR)
            try:
                os.setxattr(fd, COMMITTED_XATTR, COMMITTED_VALUE)
            finally:
                os.fchmod(fd, mode)
        except OSError as exc:
            self._unconfirmable(path, f"could not make the file writable for the record ({exc})")
            return False
        return True

    def _unconfirmable(self, path: str, reason: str) -> None:
        if self._unconfirmable_told:
            log.debug("local disk keeps no commit record on %s: %s", path, reason)
            return
        self._unconfirmable_told = True
        log.warning(
            "local disk cannot record committed blobs under %s (%s, first seen on %s): gc "
            "treats their orphans as unconfirmed, so a database restored from a backup in "
            "place can lose files stored after the backup to gc --apply (docs/security.md)",
            self._root,
            reason,
            path,
        )

    def is_committed(self, key: str) -> bool:
        """Whether the blob file carries :data:`COMMITTED_XATTR` (one ``getxattr``).

        ``False`` without the attribute, or where the platform or file system
        has none. :class:`BlobMissing` for an absent blob, :class:`StorageError`
        for other disk faults (an unreadable file).
        """
        path = self._path(key)
        getxattr = getattr(os, "getxattr", None)
        if getxattr is None:
            if self._lookup(path) is None:
                raise BlobMissing(f"blob {key} is missing from {self.url}")
            return False
        try:
            getxattr(path, COMMITTED_XATTR, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise BlobMissing(f"blob {key} is missing from {self.url}") from exc
        except OSError as exc:
            if exc.errno in (_ENOATTR, errno.ENOTSUP, errno.EOPNOTSUPP):
                return False
            raise _storage_error("read the commit record of", path, exc) from exc
        return True

    @staticmethod
    def _read_identity(path: Path) -> str | None:
        try:
            text = path.read_text(encoding="ascii").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise StorageError(f"local disk: cannot read store identity {path}: {exc}") from exc
        if not text:
            return None
        return text

    # -- paths --------------------------------------------------------------

    def _path(self, key: str, *, final: bool = True) -> str:
        """The file for ``key``; :class:`StorageError` if it resolves outside the root.

        The root was resolved when the store was made, so only the entries
        below it can be symlinks: each existing one is ``lstat``-ed (two
        system calls for docbinder's own keys, one without ``final``: for a
        caller whose system call never follows the last component, such as
        ``lsetxattr``), and only when one of them is a symlink is the whole
        path resolved and checked against the root.
        """
        check_blob_key(key)
        path = self._prefix + (key if _SLASH_SEP else key.replace("/", os.sep))
        end = key.find("/")
        while end >= 0 or final:
            try:
                mode = os.lstat(path if end < 0 else self._prefix + key[:end]).st_mode
            except OSError:
                break  # absent (or unreadable) here: nothing below it to follow
            if stat_mod.S_ISLNK(mode):
                return self._checked_real_path(key, path)
            if end < 0:
                break
            end = key.find("/", end + 1)
        return path

    def _checked_real_path(self, key: str, path: str) -> str:
        """``path`` if, symlinks resolved, it stays inside the root; else :class:`StorageError`."""
        real = _real_path(key, path)
        root = self._root_text
        if real != path and os.path.commonpath([real, root]) != root:
            raise StorageError(
                f"local disk: blob path for key {key!r} resolves to {real}, outside {root}; "
                "refusing to follow a symlink out of the store"
            )
        return path

    def _open_parent(self, key: str, parts: list[str]) -> tuple[int, str]:
        """Open the directory holding the blob ``key`` (``parts``: its segments); ``(fd, path)``.

        Missing directories are made (and their parents ``fsync``ed). No
        symlink below the root is ever followed unchecked: each directory is
        opened relative to its parent with ``O_NOFOLLOW|O_DIRECTORY``, so a
        component that is, or becomes at any moment, a link makes the open
        fail instead of leading elsewhere; docbinder's own keys (``ab/<id>``)
        need one ``open``. A link met on the way is resolved and followed only
        when it stays inside the root (:class:`StorageError` otherwise), as
        reading does. The caller closes the descriptor.
        """
        if len(parts) == 2:  # one directory below the root, as all of docbinder's keys
            where = self._prefix + parts[0]
            try:
                return os.open(where, _DIR_FLAGS | _O_NOFOLLOW), where
            except OSError:
                pass  # missing, a symlink or a file: the walk below tells which
        return self._open_beneath(key, parts[:-1], resolved=False)

    def _open_beneath(self, key: str, dirs: list[str], *, resolved: bool) -> tuple[int, str]:
        """Open ``<root>/<dirs...>`` one directory at a time, making missing ones."""
        fd = self._open_root()
        where = self._root_text
        try:
            for name in dirs:
                child_where = os.path.join(where, name)
                child = self._open_child(fd, where, name, child_where, key, resolved=resolved)
                # The child is held before the parent is closed: should the close be
                # interrupted as it returns, only the child is left to close.
                fd, parent = child, fd
                _close_directory(parent)
                if child < 0:  # a symlink: resolve it and walk the real directories instead
                    return self._open_resolved(key, dirs)
                where = child_where
        except BaseException:
            if fd >= 0:
                _close_directory(fd)
            raise
        return fd, where

    def _open_root(self) -> int:
        """Open the root directory (following the root's own path), making it if it is missing."""
        root = self._root_text
        try:
            return os.open(root, _DIR_FLAGS)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _storage_error("open directory", root, exc) from exc
        try:
            self._makedirs(self._root)
            return os.open(root, _DIR_FLAGS)
        except OSError as exc:
            raise _storage_error("create directory", root, exc) from exc

    def _open_child(
        self, parent: int, parent_where: str, name: str, where: str, key: str, *, resolved: bool
    ) -> int:
        """Open (making it if missing) the directory ``name`` in ``parent``; -1 for a symlink."""
        for _attempt in range(_CREATE_ATTEMPTS):
            try:
                return os.open(name, _DIR_FLAGS | _O_NOFOLLOW, dir_fd=parent)
            except FileNotFoundError:
                pass
            except OSError as exc:
                return self._not_a_directory(parent, name, where, key, exc, resolved=resolved)
            try:
                os.mkdir(name, 0o777, dir_fd=parent)
            except FileExistsError:
                continue  # made meanwhile by another writer
            except FileNotFoundError as exc:
                # The open parent itself was removed (a delete pruned it once empty).
                error = _storage_error("create directory", where, exc)
                raise _DirectoryPruned(*error.args) from exc
            except OSError as exc:
                raise _storage_error("create directory", where, exc) from exc
            self._fsync_directory(parent, parent_where)
        # A concurrent delete pruned it every time it was made.
        raise StorageError(errno.ENOENT, f"local disk: cannot create directory {where}")

    @staticmethod
    def _not_a_directory(
        parent: int, name: str, where: str, key: str, refused: OSError, *, resolved: bool
    ) -> int:
        """-1 when ``name`` in ``parent`` is a symlink to resolve; raise why it cannot be opened."""
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            raise _storage_error("open directory", where, refused) from refused
        if stat_mod.S_ISLNK(info.st_mode):
            if not resolved:
                return -1
            raise StorageError(
                f"local disk: {where} became a symlink while storing blob {key!r}; "
                "refusing to follow it"
            ) from refused
        if not stat_mod.S_ISDIR(info.st_mode):
            raise StorageError(
                f"local disk: cannot store blob {key!r}: a blob occupies the directory name "
                f"{where} (a key cannot be both a blob and the directory of other blobs)"
            ) from refused
        raise _storage_error("open directory", where, refused) from refused

    def _open_resolved(self, key: str, dirs: list[str]) -> tuple[int, str]:
        """Open the blob's directory through a symlink only if its real path is inside the root."""
        root = self._root_text
        real = _real_path(key, os.path.join(root, *dirs))
        if os.path.commonpath([real, root]) != root:
            raise StorageError(
                f"local disk: blob path for key {key!r} resolves to {real}, outside {root}; "
                "refusing to follow a symlink out of the store"
            )
        relative = os.path.relpath(real, root)
        inside = [] if relative == os.curdir else relative.split(os.sep)
        return self._open_beneath(key, inside, resolved=True)

    # -- writing ------------------------------------------------------------

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        """Stream ``data`` into the blob ``key`` atomically; return the bytes written.

        The blob carries its provenance mark (:data:`ORIGIN_XATTR`) once the
        store knows its identity. Either the complete blob replaces any
        previous one or nothing changes:
        on any exception (from the input, from the disk, or a
        ``KeyboardInterrupt``) the temp file is removed and the exception
        propagates; an exception raised by the input itself propagates
        unchanged, disk faults become :class:`StorageError`. Memory use is
        bounded by the largest input chunk plus 64 KiB.

        The directory is opened once (:meth:`_open_parent`, never through a
        symlink leading out of the root) and the temp file's creation, the
        rename and the directory's ``fsync`` all go through that descriptor
        (``openat``, ``renameat``). A symlink at the key's own name is
        replaced, never followed (rename(2)).

        Where extended attributes exist, the new blob's descriptor (``fsync``ed
        before the rename, like the directory after it) is not closed but kept
        for :meth:`mark_committed`, which then records the commit with two
        system calls instead of five. At most :data:`HELD_BLOBS` are kept per
        store (the oldest is closed); :meth:`delete` and a later ``put`` of
        the same key close theirs, :meth:`close` closes them all. A put that
        fails keeps nothing.
        """
        if not _BENEATH:  # pragma: no cover - platforms without dir_fd (Windows)
            return self._put_by_path(key, data)
        parts = check_blob_key(key).split("/")
        self._held.drop(key)  # the blob at the key is about to be replaced
        name = parts[-1]
        directory, where, fd, temp = self._open_temp(key, parts)
        temp_path = f"{where}{os.sep}{temp}"
        path = f"{where}{os.sep}{name}"
        written = -1  # the temp file's descriptor once it is written and fsynced, still open
        try:
            size = self._fill_temp(fd, data, key, temp_path, keep_open=_HOLDS_BLOBS)
            if _HOLDS_BLOBS:
                written = fd
            try:
                os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
            except OSError as exc:
                raise _rename_failed(key, path, exc, _is_directory_at(directory, name)) from exc
        except BaseException:
            if written >= 0:
                _close_quietly(written)
            _discard_at(directory, temp, temp_path)
            _close_directory(directory)
            raise
        try:
            self._fsync_directory(directory, where)
        except BaseException:
            # The rename is not durable, and the caller is told the put failed:
            # take the blob back so that a failed put leaves nothing visible.
            if written >= 0:
                _close_quietly(written)
            _discard_at(directory, name, path)
            _close_directory(directory)
            raise
        try:
            if written >= 0:
                self._held.keep(key, written, path)
        finally:
            _close_directory(directory)
        log.debug("local disk stored blob %s (%d bytes)", key, size)
        return size

    def _open_temp(self, key: str, parts: list[str]) -> tuple[int, str, int, str]:
        """Open the blob's directory and create a temp file in it: ``(dir fd, dir, fd, temp name)``."""
        for attempt in range(_CREATE_ATTEMPTS):
            try:
                directory, where = self._open_parent(key, parts)
            except _DirectoryPruned:
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
                continue  # a concurrent delete pruned a directory on the way: walk again
            temp = f"{TEMP_PREFIX}{os.urandom(16).hex()}{TEMP_SUFFIX}"
            try:
                return directory, where, os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=directory), temp
            except BaseException as exc:
                _close_directory(directory)
                if not isinstance(exc, OSError):
                    raise
                # FileNotFoundError: a concurrent delete pruned the (empty) directory
                # after it was opened; FileExistsError: the random name was taken.
                if attempt == _CREATE_ATTEMPTS - 1 or not isinstance(
                    exc, FileNotFoundError | FileExistsError
                ):
                    raise _storage_error("create temp file", f"{where}{os.sep}{temp}", exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _put_by_path(self, key: str, data: Chunks | BinaryIO) -> int:  # pragma: no cover
        """:meth:`put` by path names, where ``os`` has no ``dir_fd`` (Windows)."""
        path = self._path(key)
        parent = Path(os.path.dirname(path))
        fd, temp = self._create_temp(parent)
        try:
            size = self._fill_temp(fd, data, key, temp)
            try:
                os.replace(temp, path)
            except OSError as exc:
                raise _rename_failed(key, path, exc, os.path.isdir(path)) from exc
        except BaseException:
            _discard(temp)
            raise
        try:
            self._fsync_dir(parent)
        except BaseException:
            _discard(path)
            raise
        return size

    def _fill_temp(
        self,
        fd: int,
        data: Chunks | BinaryIO,
        key: str,
        temp: Path | str,
        *,
        keep_open: bool = False,
    ) -> int:
        """Write ``data`` and the mark of ``key`` into the temp file ``fd``, ``fsync`` and close it.

        Returns the bytes written. ``fd`` is closed whatever happens, except
        after a successful ``fsync`` when ``keep_open`` (the caller closes it
        then); errors are those of :meth:`_write_all`, :meth:`_mark` and
        ``fsync``/``close`` (:class:`StorageError` naming ``temp``), or the
        exception ``data`` raised.
        """
        try:
            size = self._write_all(fd, data, temp)
            self._mark(fd, key, temp)
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        if keep_open:
            _flush(fd, temp)
        else:
            _flush_and_close(fd, temp)
        return size

    def _mark(self, fd: int, key: str, temp: Path | str) -> None:
        """Set the compact provenance mark of ``key`` on the open temp file (nothing if unsupported)."""
        setxattr = getattr(os, "setxattr", None)
        if self._identity is None or setxattr is None:
            return
        mark = compact_blob_origin(self._identity, self._writer, key).encode("ascii")
        try:
            setxattr(fd, ORIGIN_XATTR, mark)
        except OSError as exc:
            if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
                log.debug("local disk keeps no extended attributes at %s: %s", temp, exc)
                return
            raise _storage_error("mark", temp, exc) from exc

    def _create_temp(self, directory: Path) -> tuple[int, Path]:
        """Create the directory chain and an exclusive temp file in it; return (fd, path)."""
        for attempt in range(_CREATE_ATTEMPTS):
            temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(16)}{TEMP_SUFFIX}"
            try:
                self._makedirs(directory)
                return os.open(temp, _TEMP_FLAGS, 0o666), temp
            except StorageError:
                raise
            except FileNotFoundError as exc:
                # A concurrent delete pruned the (empty) directory; create it again.
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise _storage_error("create temp file", temp, exc) from exc
            except (FileExistsError, NotADirectoryError) as exc:
                raise StorageError(
                    f"local disk: cannot create {temp}: a blob occupies a directory name "
                    "on its path (a key cannot be both a blob and the directory of other blobs)"
                ) from exc
            except OSError as exc:
                raise _storage_error("create temp file", temp, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _makedirs(self, directory: Path) -> None:
        """Create ``directory`` and missing ancestors, ``fsync``ing each new entry's parent."""
        missing: list[Path] = []
        current = directory
        while not current.is_dir():
            missing.append(current)
            if current.parent == current:
                break
            current = current.parent
        for new in reversed(missing):
            try:
                os.mkdir(new)
            except FileExistsError:
                if not new.is_dir():
                    raise
                continue
            self._fsync_dir(new.parent)

    @staticmethod
    def _write_all(fd: int, data: Chunks | BinaryIO, temp: Path | str) -> int:
        """Write every chunk of ``data`` to ``fd``; small chunks are gathered into 64 KiB writes."""
        size = 0
        pending = bytearray()
        for chunk in iter_chunks(data):
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

    @classmethod
    def _fsync_dir(cls, directory: Path | str) -> None:
        """Make entries added to ``directory`` durable (POSIX; a no-op where unsupported)."""
        if os.name == "nt":  # pragma: no cover - Windows cannot open a directory
            return
        try:
            fd = os.open(directory, _DIR_FLAGS)
        except OSError as exc:
            raise _storage_error("open directory", directory, exc) from exc
        try:
            cls._fsync_directory(fd, directory)
        finally:
            os.close(fd)

    @staticmethod
    def _fsync_directory(fd: int, directory: Path | str) -> None:
        """``fsync`` the open directory ``fd``; file systems that cannot are let be."""
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
                raise _storage_error("flush directory", directory, exc) from exc

    # -- reading ------------------------------------------------------------

    def open(self, key: str, chunk_size: int = 1 << 20) -> FileChunks:
        """Open the blob now and return an iterator of chunks of at most ``chunk_size`` bytes.

        Raises :class:`BlobMissing` at call time if ``key`` is absent,
        :class:`InvalidInput` for ``chunk_size < 1``. The file stays open until
        the iterator is exhausted, closed (``close()`` or ``with``) or collected.
        Read faults while iterating raise :class:`StorageError`.
        """
        path = self._path(key)
        if chunk_size < 1:
            raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size}")
        try:
            fd = os.open(path, os.O_RDONLY | _O_CLOEXEC | _O_BINARY)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise BlobMissing(f"blob {key} is missing from {self.url}") from exc
        except OSError as exc:
            raise _storage_error("open", path, exc) from exc
        try:
            info = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise _storage_error("stat", path, exc) from exc
        if not stat_mod.S_ISREG(info.st_mode):
            os.close(fd)
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return FileChunks(fd, chunk_size, path)

    def stat(self, key: str) -> BlobStat:
        """Size in bytes, modification time (UTC, the file's mtime) and mark of the blob.

        The mark is the :data:`ORIGIN_XATTR` attribute, ``None`` when the file
        has none or it cannot be read.
        """
        path = self._path(key)
        info = self._lookup(path)
        if info is None:
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        modified = datetime.fromtimestamp(info.st_mtime_ns / 1e9, UTC)
        return BlobStat(size=info.st_size, modified_at=modified, origin=_read_mark(path))

    def exists(self, key: str) -> bool:
        """Whether a regular file is stored under ``key``."""
        return self._lookup(self._path(key)) is not None

    @staticmethod
    def _lookup(path: str) -> os.stat_result | None:
        """``stat`` of the regular file at ``path``, ``None`` if there is none."""
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _storage_error("stat", path, exc) from exc
        return info if stat_mod.S_ISREG(info.st_mode) else None

    # -- removing -----------------------------------------------------------

    def delete(self, key: str) -> None:
        """Remove the blob (absent is fine) and then any directories it leaves empty.

        A descriptor :meth:`put` kept open for the key is closed first.
        """
        path = self._path(key)
        self._held.drop(key)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            if os.path.isdir(path):  # a directory of other blobs, not a blob
                return
            raise _storage_error("delete", path, exc) from exc
        parent = os.path.dirname(path)
        while parent != self._root_text and parent.startswith(self._prefix):
            try:
                os.rmdir(parent)
            except OSError:
                break  # not empty (or already gone): stop pruning
            parent = os.path.dirname(parent)

    # -- listing ------------------------------------------------------------

    def keys(self) -> Iterator[str]:
        """Every stored key, depth first, in no particular order.

        Skips temp files, hidden names, symlinks and file names that are not
        valid keys. Raises :class:`StorageError` (while iterating) when a
        directory cannot be read.
        """
        for relative, entry in self._walk(include_hidden=False):
            if entry.is_file(follow_symlinks=False) and is_blob_key(relative):
                yield relative

    def _walk(self, *, include_hidden: bool) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Yield ``(relative path, entry)`` for every non-directory entry below the root."""
        stack: list[tuple[str, str]] = [(os.fspath(self._root), "")]
        while stack:
            directory, prefix = stack.pop()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.name.startswith(".") and not include_hidden:
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, f"{prefix}{entry.name}/"))
                        else:
                            yield prefix + entry.name, entry
            except (FileNotFoundError, NotADirectoryError):
                continue  # missing root, or a directory pruned by a concurrent delete
            except OSError as exc:
                raise _storage_error("list", directory, exc) from exc

    # -- maintenance --------------------------------------------------------

    def stale_temp_files(self, older_than_seconds: float = DEFAULT_STALE_AFTER) -> list[Path]:
        """Temp files not written to for at least ``older_than_seconds`` seconds, sorted.

        A running ``put`` touches its temp file with every write, so an old one
        was left by a process that was killed. A writer whose input stalls for
        longer than the threshold would lose its temp file to
        :meth:`remove_stale_temp_files` and fail with :class:`StorageError`.
        """
        cutoff = time.time() - older_than_seconds
        found: list[Path] = []
        for _relative, entry in self._walk(include_hidden=True):
            if not _TEMP_NAME.match(entry.name):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _storage_error("stat", entry.path, exc) from exc
            if stat_mod.S_ISREG(info.st_mode) and info.st_mtime <= cutoff:
                found.append(Path(entry.path))
        return sorted(found)

    def remove_stale_temp_files(
        self, older_than_seconds: float = DEFAULT_STALE_AFTER
    ) -> list[Path]:
        """Delete what :meth:`stale_temp_files` finds; return the paths actually removed."""
        removed: list[Path] = []
        for path in self.stale_temp_files(older_than_seconds):
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _storage_error("delete temp file", path, exc) from exc
            log.info("local disk removed stale temp file %s", path)
            removed.append(path)
        return removed

    def check_writable(self) -> None:
        """Write, read back and delete a small probe blob; :class:`StorageError` if any step fails.

        The probe key is ``docbinder-probe-<32 hex digits>``; a probe left by a
        crash is an ordinary orphan blob that ``gc`` removes.
        """
        key = f"docbinder-probe-{secrets.token_hex(16)}"
        payload = f"docbinder write probe {key}\n".encode()
        self.put(key, [payload])
        try:
            with self.open(key) as chunks:
                echoed = b"".join(chunks)
            if echoed != payload:
                raise StorageError(
                    f"local disk: probe blob read back different bytes at {self.url}"
                )
        finally:
            self.delete(key)


class FileChunks(ClosingChunks):
    """Iterator over an open file descriptor in chunks of at most ``chunk_size`` bytes.

    Owns ``fd``: closes it at end of file, on :meth:`close`, on leaving a
    ``with`` block, or when collected. Read faults raise :class:`StorageError`.
    """

    def __init__(self, fd: int, chunk_size: int, path: Path | str) -> None:
        self._fd = fd
        self._chunk_size = chunk_size
        self._path = path

    def __next__(self) -> bytes:
        if self._fd < 0:
            raise StopIteration
        try:
            chunk = os.read(self._fd, self._chunk_size)
        except OSError as exc:
            self.close()
            raise _storage_error("read", self._path, exc) from exc
        if not chunk:
            self.close()
            raise StopIteration
        return chunk

    def close(self) -> None:
        """Close the file; further iteration yields nothing."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def _rename_failed(key: str, path: str, exc: OSError, is_directory: bool) -> StorageError:
    """The error of a failed rename of ``put``'s temp file to ``path`` (a directory there, or ``exc``)."""
    if is_directory:
        return StorageError(
            f"local disk: cannot store blob {key!r}: {path} is a directory holding other blobs"
        )
    return _storage_error("rename temp file to", path, exc)


def _flush(fd: int, temp: str | Path) -> None:
    """``fsync`` the temp file ``fd``; it is closed only when the ``fsync`` fails or is interrupted.

    Raises :class:`StorageError` naming ``temp`` for a failure.
    """
    try:
        os.fsync(fd)
    except BaseException as exc:  # an interrupt too: the descriptor is closed either way
        with contextlib.suppress(OSError):
            os.close(fd)
        if isinstance(exc, OSError):
            raise _storage_error("flush", temp, exc) from exc
        raise


def _flush_and_close(fd: int, temp: str | Path) -> None:
    """``fsync`` and close the temp file ``fd`` (closed even when the ``fsync`` fails or is interrupted).

    Raises :class:`StorageError` naming ``temp`` for either failure.
    """
    _flush(fd, temp)
    try:
        os.close(fd)
    except OSError as exc:
        raise _storage_error("close", temp, exc) from exc


def _write_fully(fd: int, data: bytes | bytearray, temp: Path | str) -> None:
    """``write(2)`` until all of ``data`` is on ``fd`` (a write may be short)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError as exc:
            raise _storage_error("write", temp, exc) from exc
        if written == len(view):
            return
        view = view[written:]


def _read_mark(path: str) -> str | None:
    """The :data:`ORIGIN_XATTR` of ``path``; ``None`` if absent, unreadable or unsupported."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        raw: bytes = getxattr(path, ORIGIN_XATTR, follow_symlinks=False)
    except OSError:
        return None
    return raw.decode("ascii", "replace")


def _discard(temp: Path | str) -> None:
    """Remove a temp file after a failed ``put``; a failure here is logged, never raised."""
    try:
        os.unlink(temp)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("local disk could not remove temp file %s: %s", temp, exc)


def _discard_at(directory: int, name: str, path: str) -> None:
    """Remove ``name`` from the open ``directory`` after a failed ``put``; logged, never raised."""
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


def _real_path(key: str, path: str) -> str:
    """``os.path.realpath(path)``; :class:`StorageError` if a link on it changes meanwhile.

    ``realpath`` ``lstat``s a component, then ``readlink``s it: a symlink
    removed or replaced between the two raises the bare ``OSError`` of
    ``readlink`` (Python 3.11, 3.12).
    """
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise _storage_error(f"resolve the path of blob {key!r}:", path, exc) from exc


def _close_quietly(fd: int) -> None:
    """Close a blob descriptor :class:`_HeldBlobs` held; an error of ``close(2)`` is ignored.

    The blob was ``fsync``ed before it was renamed to its key, so a failing
    close loses nothing, and Linux frees the descriptor even then (close(2)).
    """
    with contextlib.suppress(OSError):
        os.close(fd)


def _close_all(fds: list[int]) -> None:
    """:func:`_close_quietly` each of ``fds``, all of them even if one close is interrupted."""
    for index, fd in enumerate(fds):
        try:
            _close_quietly(fd)
        except BaseException:
            _close_all(fds[index + 1 :])
            raise


def _close_directory(fd: int) -> None:
    """Close a directory descriptor opened for reading; an error of ``close(2)`` is ignored.

    Nothing written goes through such a descriptor, so a failing close loses
    no data, and Linux frees the descriptor even then (close(2)): closing it
    again could close another thread's newly opened file.
    """
    with contextlib.suppress(OSError):
        os.close(fd)
