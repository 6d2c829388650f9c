"""Materialize: the files a ``documentList`` names, written into the next sandbox's input directory.

The reverse of :func:`~docbinder.harvest.core.harvest`: a model hands a
``documentList`` in any shape; :func:`materialize` resolves it in the run's
workflow (SPEC C6 + C7, the resolver's access checks included: another
tenant's documents are never found) and writes each file under a safe name
into a directory the next code-execution step mounts, within a size budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import unicodedata
import uuid

import attrs

from docbinder.application.binder import Run
from docbinder.domain.errors import BinderClosed, DocbinderError, StorageError
from docbinder.harvest.sources import has_control_characters

MAX_NAME_BYTES = 255
"""Longest file name written, in UTF-8 bytes (``NAME_MAX`` of Linux file systems)."""

DEFAULT_MAX_TOTAL_BYTES = 256 << 20
"""Default budget of one :func:`materialize` call: bytes written in all."""

WINDOWS_DEVICE_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"COM{i}" for i in "123456789¹²³"]
    + [f"LPT{i}" for i in "123456789¹²³"]
)
"""Names Windows opens as devices whatever the extension (Microsoft, "Naming Files, Paths, and
Namespaces"); refused so an input directory shared with a Windows sandbox stays safe."""


@attrs.frozen
class Written:
    """One file written: its ``name`` in the directory, ``size`` in bytes, ``file_id``, ``reference``."""

    name: str
    size: int
    file_id: str
    reference: str


@attrs.frozen
class NotWritten:
    """A reference or file not written, and why (one sentence)."""

    reference: str
    reason: str
    name: str | None = None


@attrs.frozen
class MaterializeReport:
    """What :func:`materialize` wrote into ``directory`` and what it refused."""

    directory: str
    written: tuple[Written, ...] = ()
    refused: tuple[NotWritten, ...] = ()

    @property
    def total_bytes(self) -> int:
        """Bytes written in all."""
        return sum(w.size for w in self.written)


def safe_name(name: str) -> str | None:
    """``name`` as a file name that stays inside a directory, or ``None`` when none is safe.

    The last path component is kept (both ``/`` and ``\\`` separate), then
    refused: empty, ``.`` and ``..``; control characters; names longer than
    :data:`MAX_NAME_BYTES` in UTF-8; Windows device names (``CON``, ``NUL.txt``,
    ``COM1``...), trailing dots or spaces (Windows drops them) and ``:`` (NTFS
    streams). Characters are NFC-normalised so one name has one spelling.
    """
    base = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    if base in ("", ".", "..") or has_control_characters(base) or ":" in base:
        return None
    if base != base.rstrip(". ") or len(base.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return None
    if base.split(".", 1)[0].upper().rstrip(" ") in WINDOWS_DEVICE_NAMES:
        return None
    return base


def materialize(
    run: Run,
    document_list: object,
    directory: str | os.PathLike[str],
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_file_bytes: int | None = None,
    overwrite: bool = False,
) -> MaterializeReport:
    """Write the files ``document_list`` names into ``directory`` (which must exist).

    ``document_list`` is anything a model sends (a string with ``docItem:``
    references, a list, ``{"documents": [...]}``; SPEC C6), resolved in the
    run's workflow. Each file is written as :func:`safe_name` of its file
    name, created with ``O_EXCL | O_NOFOLLOW`` relative to the directory's
    descriptor (never through a link, never outside it). An existing name is
    refused unless ``overwrite`` (then the file is written beside it and
    renamed over it; a directory or link of that name is still refused).

    Budget: files are taken in reference order while the running total stays
    within ``max_total_bytes``; a file larger than ``max_file_bytes`` (default:
    no per-file limit beyond the budget) is refused. The bytes are checked
    against the FileItem's SHA-256 while written; a mismatch removes the file.
    The files read become parents of what the run produces next (B9).

    Returns a :class:`MaterializeReport`; every reference that did not
    resolve is in ``refused`` with the resolver's reason. Raises
    :class:`NotADirectoryError`/:class:`FileNotFoundError` for a bad
    ``directory``, :class:`~docbinder.domain.errors.StorageError` when the
    backend fails.
    """
    if max_total_bytes < 0 or (max_file_bytes is not None and max_file_bytes < 0):
        raise ValueError("max_total_bytes and max_file_bytes are byte counts, at least 0")
    target = os.path.abspath(os.fspath(directory))
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    dir_fd = os.open(target, flags)
    written: list[Written] = []
    refused: list[NotWritten] = []
    try:
        resolution = run.resolve(document_list)
        for miss in resolution.unresolved:
            refused.append(NotWritten(miss.reference, f"{miss.reason}: {miss.message}"))
        total = 0
        taken: set[str] = set()
        for resolved in resolution.documents:
            item = resolved.file
            name = safe_name(item.file_name)
            ref = resolved.reference
            if name is None:
                refused.append(NotWritten(ref, "the file name is not safe to write", None))
                continue
            if name in taken:
                refused.append(NotWritten(ref, "another file of this list has that name", name))
                continue
            if max_file_bytes is not None and item.size > max_file_bytes:
                refused.append(
                    NotWritten(
                        ref, f"{item.size} bytes, over max_file_bytes ({max_file_bytes})", name
                    )
                )
                continue
            if total + item.size > max_total_bytes:
                refused.append(
                    NotWritten(
                        ref,
                        f"{item.size} bytes would exceed the budget of {max_total_bytes} bytes"
                        f" ({total} already written)",
                        name,
                    )
                )
                continue
            problem = _write(run, dir_fd, name, item.id, item.sha256, item.size, overwrite)
            if problem is not None:
                refused.append(NotWritten(ref, problem, name))
                continue
            taken.add(name)
            total += item.size
            written.append(Written(name, item.size, item.id, f"docItem:{resolved.document.id}"))
    finally:
        os.close(dir_fd)
    return MaterializeReport(target, tuple(written), tuple(refused))


def _write(
    run: Run, dir_fd: int, name: str, file_id: str, sha256: str, size: int, overwrite: bool
) -> str | None:
    """Write one file; ``None`` when done, else why not (nothing is left behind)."""
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if not stat.S_ISREG(existing.st_mode):
            return "something that is not a regular file has that name"
        if not overwrite:
            return "a file of that name is already in the directory (overwrite not asked)"
    # A short temporary name of its own: a name near the 255-byte limit leaves no room
    # for a prefix and a suffix.
    temporary = f".materialize-{uuid.uuid4().hex}.partial" if existing is not None else name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(temporary, flags, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        return "a file of that name is already in the directory"
    except OSError as exc:
        return f"cannot be written: {exc.strerror or exc}"
    digest = hashlib.sha256()
    count = 0
    ok = False
    try:
        with os.fdopen(fd, "wb") as out:
            with run.open_file(file_id) as chunks:
                for chunk in chunks:
                    digest.update(chunk)
                    count += len(chunk)
                    out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if count != size or digest.hexdigest() != sha256:
            return "the stored bytes do not match the FileItem's SHA-256 and size"
        if temporary != name:
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        ok = True
        return None
    except (StorageError, BinderClosed):
        raise
    except DocbinderError as exc:
        return f"cannot be read: {exc}"
    except OSError as exc:
        return f"cannot be written: {exc.strerror or exc}"
    finally:
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
