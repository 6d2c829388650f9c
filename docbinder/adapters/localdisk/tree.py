"""Where the local-disk store's names live under its root, and how they are reached safely.

The blob under key ``ab/1234`` is the file ``<root>/ab/1234``; the store's own
records (``.docbinder-store``, ``.docbinder-databases/<id>``) are files under
the same root whose hidden names no key can take. Keys were checked by
:func:`~docbinder.ports.blobs.check_blob_key` before they get here (no ``..``,
no absolute paths); what this module adds is that no symlink planted below the
root can make the store read or write elsewhere: paths are checked against the
root when a link is on them, and writes open each directory relative to its
parent with ``O_NOFOLLOW`` (ADR 0034).
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from pathlib import Path

from docbinder.adapters.localdisk.errors import DirectoryPruned, close_quietly, storage_error
from docbinder.domain.errors import BlobMissing, StorageError

_CREATE_ATTEMPTS = 5  # a concurrent delete may prune the directory between mkdir and open
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC
"""How a directory is opened to work relative to it (``openat``) or to ``fsync`` it."""
BENEATH = (
    bool(_O_DIRECTORY and O_NOFOLLOW)
    and {os.open, os.mkdir, os.rename, os.stat, os.unlink, os.link} <= os.supports_dir_fd
)  # os.replace takes the same dir_fd arguments as os.rename (it is not listed separately)
"""Whether names can be reached relative to an open directory (``openat``, ``renameat``: POSIX)."""
_SLASH_SEP = os.sep == "/"


class StoreTree:
    """The directory tree under one resolved ``root``: paths, safe opens, new directories, listing.

    ``root`` must already be absolute and symlink-resolved (the store does it
    once). Errors: :class:`StorageError` keeping the ``errno`` of the
    underlying :class:`OSError` (chained) for disk faults and for a path that
    leads out of the root; :class:`BlobMissing` where a blob should be.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_text = os.fspath(root)
        self.prefix = os.path.join(self.root_text, "")  # the root and one separator
        self.url = root.as_uri()

    def missing(self, name: str) -> BlobMissing:
        """The :class:`BlobMissing` for ``name``."""
        return BlobMissing(f"blob {name} is missing from {self.url}")

    # -- paths ----------------------------------------------------------------------

    def path(self, name: str, *, final: bool = True) -> str:
        """The file for ``name`` (a checked key or a record name); :class:`StorageError` outside the root.

        The root was resolved when the store was made, so only the entries
        below it can be symlinks: each existing one is ``lstat``-ed (two
        system calls for docbinder's own keys, one without ``final``: for a
        caller whose system call never follows the last component, such as
        ``lgetxattr``), and only when one of them is a symlink is the whole
        path resolved and checked against the root.
        """
        path = self.prefix + (name if _SLASH_SEP else name.replace("/", os.sep))
        end = name.find("/")
        while end >= 0 or final:
            try:
                mode = os.lstat(path if end < 0 else self.prefix + name[:end]).st_mode
            except OSError:
                break  # absent (or unreadable) here: nothing below it to follow
            if stat_mod.S_ISLNK(mode):
                return self._checked_real_path(name, path)
            if end < 0:
                break
            end = name.find("/", end + 1)
        return path

    def _checked_real_path(self, name: str, path: str) -> str:
        """``path`` if, symlinks resolved, it stays inside the root; else :class:`StorageError`."""
        real = real_path(name, path)
        root = self.root_text
        if real != path and os.path.commonpath([real, root]) != root:
            raise StorageError(
                f"local disk: blob path for key {name!r} resolves to {real}, outside {root}; "
                "refusing to follow a symlink out of the store"
            )
        return path

    @staticmethod
    def lookup(path: str) -> os.stat_result | None:
        """``stat`` of the regular file at ``path``, ``None`` if there is none."""
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise storage_error("stat", path, exc) from exc
        return info if stat_mod.S_ISREG(info.st_mode) else None

    # -- directories reached relative to their parents (ADR 0034) ----------------------

    def open_parent(self, name: str, parts: list[str]) -> tuple[int, str]:
        """Open the directory holding ``name`` (``parts``: its segments); ``(fd, path)``.

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
            where = self.prefix + parts[0]
            try:
                return os.open(where, DIR_FLAGS | O_NOFOLLOW), where
            except OSError:
                pass  # missing, a symlink or a file: the walk below tells which
        return self._open_beneath(name, parts[:-1], resolved=False)

    def open_existing_parent(self, name: str, parts: list[str]) -> tuple[int, str]:
        """:meth:`open_parent` for a blob that should exist: :class:`BlobMissing` if its directory does not."""
        if len(parts) == 2:  # docbinder's own keys: one open, as put's
            where = self.prefix + parts[0]
            try:
                return os.open(where, DIR_FLAGS | O_NOFOLLOW), where
            except FileNotFoundError as exc:
                raise self.missing(name) from exc
            except OSError:
                pass  # a symlink or a file: the walk below tells which, and where it leads
        if not os.path.lexists(self.prefix + os.sep.join(parts[:-1])):
            raise self.missing(name)
        return self.open_parent(name, parts)

    def _open_beneath(self, name: str, dirs: list[str], *, resolved: bool) -> tuple[int, str]:
        """Open ``<root>/<dirs...>`` one directory at a time, making missing ones."""
        fd = self._open_root()
        where = self.root_text
        try:
            for part in dirs:
                child_where = os.path.join(where, part)
                child = self._open_child(fd, where, part, child_where, name, resolved=resolved)
                # The child is held before the parent is closed: should the close be
                # interrupted as it returns, only the child is left to close.
                fd, parent = child, fd
                close_quietly(parent)
                if child < 0:  # a symlink: resolve it and walk the real directories instead
                    return self._open_resolved(name, dirs)
                where = child_where
        except BaseException:
            if fd >= 0:
                close_quietly(fd)
            raise
        return fd, where

    def _open_root(self) -> int:
        """Open the root directory (following the root's own path), making it if it is missing."""
        root = self.root_text
        try:
            return os.open(root, DIR_FLAGS)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise storage_error("open directory", root, exc) from exc
        try:
            self.makedirs(self.root)
            return os.open(root, DIR_FLAGS)
        except OSError as exc:
            raise storage_error("create directory", root, exc) from exc

    def _open_child(
        self, parent: int, parent_where: str, part: str, where: str, name: str, *, resolved: bool
    ) -> int:
        """Open (making it if missing) the directory ``part`` in ``parent``; -1 for a symlink."""
        for _attempt in range(_CREATE_ATTEMPTS):
            try:
                return os.open(part, DIR_FLAGS | O_NOFOLLOW, dir_fd=parent)
            except FileNotFoundError:
                pass
            except OSError as exc:
                return _not_a_directory(parent, part, where, name, exc, resolved=resolved)
            try:
                os.mkdir(part, 0o777, dir_fd=parent)
            except FileExistsError:
                continue  # made meanwhile by another writer
            except FileNotFoundError as exc:
                # The open parent itself was removed (a delete pruned it once empty).
                error = storage_error("create directory", where, exc)
                raise DirectoryPruned(*error.args) from exc
            except OSError as exc:
                raise storage_error("create directory", where, exc) from exc
            fsync_directory(parent, parent_where)
        # A concurrent delete pruned it every time it was made.
        raise StorageError(errno.ENOENT, f"local disk: cannot create directory {where}")

    def _open_resolved(self, name: str, dirs: list[str]) -> tuple[int, str]:
        """Open the blob's directory through a symlink only if its real path is inside the root."""
        root = self.root_text
        real = real_path(name, os.path.join(root, *dirs))
        if os.path.commonpath([real, root]) != root:
            raise StorageError(
                f"local disk: blob path for key {name!r} resolves to {real}, outside {root}; "
                "refusing to follow a symlink out of the store"
            )
        relative = os.path.relpath(real, root)
        inside = [] if relative == os.curdir else relative.split(os.sep)
        return self._open_beneath(name, inside, resolved=True)

    def makedirs(self, directory: Path) -> None:
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
            fsync_dir(new.parent)

    # -- listing ----------------------------------------------------------------------

    def walk(self, *, include_hidden: bool) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Yield ``(relative path, entry)`` for every non-directory entry below the root.

        Hidden names (a leading ``.``) and what is below them are skipped
        unless ``include_hidden``. A missing root, or a directory pruned
        meanwhile, is empty; :class:`StorageError` (while iterating) when a
        directory cannot be read.
        """
        stack: list[tuple[str, str]] = [(self.root_text, "")]
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
                raise storage_error("list", directory, exc) from exc

    def names_in(self, directory: str) -> set[str]:
        """The names of every entry of ``<root>/<directory>`` (empty when it is missing)."""
        path = self.prefix + directory
        try:
            with os.scandir(path) as entries:
                return {entry.name for entry in entries}
        except (FileNotFoundError, NotADirectoryError):
            return set()
        except OSError as exc:
            raise storage_error("list", path, exc) from exc


def fsync_dir(directory: Path | str) -> None:
    """Make entries added to ``directory`` durable (POSIX; a no-op where unsupported)."""
    if os.name == "nt":  # pragma: no cover - Windows cannot open a directory
        return
    try:
        fd = os.open(directory, DIR_FLAGS)
    except OSError as exc:
        raise storage_error("open directory", directory, exc) from exc
    try:
        fsync_directory(fd, directory)
    finally:
        os.close(fd)


def fsync_directory(fd: int, directory: Path | str) -> None:
    """``fsync`` the open directory ``fd``; file systems that cannot are let be."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise storage_error("flush directory", directory, exc) from exc


def _not_a_directory(
    parent: int, part: str, where: str, name: str, refused: OSError, *, resolved: bool
) -> int:
    """-1 when ``part`` in ``parent`` is a symlink to resolve; raise why it cannot be opened."""
    try:
        info = os.stat(part, dir_fd=parent, follow_symlinks=False)
    except OSError:
        raise storage_error("open directory", where, refused) from refused
    if stat_mod.S_ISLNK(info.st_mode):
        if not resolved:
            return -1
        raise StorageError(
            f"local disk: {where} became a symlink while storing blob {name!r}; "
            "refusing to follow it"
        ) from refused
    if not stat_mod.S_ISDIR(info.st_mode):
        raise StorageError(
            f"local disk: cannot store blob {name!r}: a blob occupies the directory name "
            f"{where} (a key cannot be both a blob and the directory of other blobs)"
        ) from refused
    raise storage_error("open directory", where, refused) from refused


def real_path(name: str, path: str) -> str:
    """``os.path.realpath(path)``; :class:`StorageError` if a link on it changes meanwhile.

    ``realpath`` ``lstat``s a component, then ``readlink``s it: a symlink
    removed or replaced between the two raises the bare ``OSError`` of
    ``readlink`` (Python 3.11, 3.12).
    """
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise storage_error(f"resolve the path of blob {name!r}:", path, exc) from exc
