"""What the local-disk store keeps in a blob's inode: its provenance mark and its commit record.

Both are user extended attributes (xattr(7)) of the blob file, so they go
with the file: a blob stored again under its key is a new file and starts
without them, a removed one takes them along, and neither changes the bytes,
the size or the modification time.
"""

from __future__ import annotations

import errno
import logging
import os
import stat as stat_mod

from docbinder.adapters.localdisk.errors import close_quietly, storage_error
from docbinder.adapters.localdisk.tree import BENEATH, O_NOFOLLOW, StoreTree

log = logging.getLogger(__name__)

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

Set after the commit by :func:`record_commit` with one ``fsetxattr`` on the
blob file; a replaced blob is a new file and starts without it. ``gc`` never
removes an unnamed blob that carries it. Writing a ``user.`` attribute needs
write permission on the file (xattr(7)): a blob file its owner made read-only
is given the owner's write bit for that one call and gets its mode back; a
process that neither may write the file nor owns it records nothing.
"""

COMMITTED_VALUE = b"v1"
"""Value of :data:`COMMITTED_XATTR` (any value counts when reading)."""

_ENOATTR = getattr(errno, "ENODATA", getattr(errno, "ENOATTR", -1))  # no such attribute
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MARK_FLAGS = os.O_RDONLY | _O_CLOEXEC | O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
"""How :func:`record_commit` opens a blob: never through a link, never blocking on a FIFO."""


def set_origin(fd: int, mark: str, temp: str) -> None:
    """Set :data:`ORIGIN_XATTR` to ``mark`` on the open temp file ``fd`` (nothing if unsupported).

    A file system or platform without user extended attributes keeps no
    mark (logged at debug level); other faults raise :class:`StorageError`
    naming ``temp``.
    """
    setxattr = getattr(os, "setxattr", None)
    if setxattr is None:
        return
    try:
        setxattr(fd, ORIGIN_XATTR, mark.encode("ascii"))
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
            log.debug("local disk keeps no extended attributes at %s: %s", temp, exc)
            return
        raise storage_error("mark", temp, exc) from exc


def read_origin_mark(path: str) -> str | None:
    """The :data:`ORIGIN_XATTR` of ``path`` as text; ``None`` if absent, unreadable or unsupported."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        raw: bytes = getxattr(path, ORIGIN_XATTR, follow_symlinks=False)
    except OSError:
        return None
    return raw.decode("ascii", "replace")


def record_commit(tree: StoreTree, name: str) -> str | None:
    """Set :data:`COMMITTED_XATTR` on the blob file of ``name``; ``None``, or why it cannot be kept.

    The blob's directory is opened as a write opens it (never through a
    symlink leading out of the root), the blob relative to it with
    ``O_NOFOLLOW``, and the record is set on that open file (``fsetxattr``),
    so no path is looked up again between the check and the write: a
    directory swapped for a symlink meanwhile makes the open fail instead of
    recording on a file elsewhere. Five system calls: open the directory,
    open the blob, close the directory, ``fsetxattr``, close the blob. When
    the file is read-only for this process (``EACCES``/``EPERM``) and the
    process owns it, the owner's write bit is added for the call and the mode
    put back (the modification time does not change).

    A reason (the caller logs it) on file systems or platforms without user
    extended attributes, for a symlink at the key, and for files this
    process may neither write nor chmod. :class:`BlobMissing` for an absent
    blob, :class:`StorageError` for other disk faults.
    """
    if getattr(os, "setxattr", None) is None or not BENEATH:  # pragma: no cover - not Linux
        return "this platform has no extended attributes"
    parts = name.split("/")
    directory, where = tree.open_existing_parent(name, parts)
    path = f"{where}{os.sep}{parts[-1]}"
    try:
        fd = os.open(parts[-1], _MARK_FLAGS, dir_fd=directory)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise tree.missing(name) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "the blob's name is a symlink"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return f"no permission to open {path} ({exc.strerror})"
        raise storage_error("record the commit of", path, exc) from exc
    finally:
        close_quietly(directory)
    try:
        try:
            os.setxattr(fd, COMMITTED_XATTR, COMMITTED_VALUE)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                return _record_as_owner(fd, path, exc)
            if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                return "the file system keeps no user extended attributes"
            raise storage_error("record the commit of", path, exc) from exc
    finally:
        os.close(fd)
    return None


def _record_as_owner(fd: int, path: str, refused: OSError) -> str | None:
    """Set the record on ``fd``, read-only for its owner, this process; why not otherwise."""
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or not stat_mod.S_ISREG(info.st_mode):
            return f"{path} belongs to another user and is not writable ({refused})"
        mode = stat_mod.S_IMODE(info.st_mode)
        os.fchmod(fd, mode | stat_mod.S_IWUSR)
        try:
            os.setxattr(fd, COMMITTED_XATTR, COMMITTED_VALUE)
        finally:
            os.fchmod(fd, mode)
    except OSError as exc:
        return f"could not make {path} writable for the record ({exc})"
    return None


def has_commit_record(tree: StoreTree, name: str) -> bool:
    """Whether the blob file of ``name`` carries :data:`COMMITTED_XATTR` (one ``getxattr``).

    ``False`` without the attribute, or where the platform or file system
    has none. :class:`BlobMissing` for an absent blob, :class:`StorageError`
    for other disk faults (an unreadable file).
    """
    path = tree.path(name)
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        if tree.lookup(path) is None:
            raise tree.missing(name)
        return False
    try:
        getxattr(path, COMMITTED_XATTR, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise tree.missing(name) from exc
    except OSError as exc:
        if exc.errno in (_ENOATTR, errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise storage_error("read the commit record of", path, exc) from exc
    return True
