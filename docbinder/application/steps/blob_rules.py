"""Rules the use cases that write blobs share: where a blob goes, its MIME type, discarding one."""

from __future__ import annotations

import itertools
import logging
import mimetypes
from collections.abc import Iterable, Mapping

from docbinder.domain.errors import BlobMissing, DocbinderError
from docbinder.domain.model import FileItem
from docbinder.ports.blobs import (
    BlobStore,
    InliningBlobStore,
    LocatingBlobStore,
    check_blob_key,
    location_fingerprint,
    read_origin,
)
from docbinder.ports.extractor import MimeDetector
from docbinder.ports.metadata import UnitOfWorkFactory, store_location_key

log = logging.getLogger(__name__)


def detect_mime_type(
    detector: MimeDetector | None, head: bytes, file_name: str, declared: str | None
) -> str:
    """The MIME type of a stored file: the detector's answer, else ``declared``, else a guess.

    ``head`` is the file's first bytes; without a detector the guess comes from
    the name's extension (:func:`mimetypes.guess_type`), else
    ``application/octet-stream``.
    """
    if detector is not None:
        return detector.detect(head, file_name, declared)
    if declared:
        return declared
    guessed, _ = mimetypes.guess_type(file_name, strict=False)
    return guessed or "application/octet-stream"


def discard_blob(blobs: BlobStore, key: str) -> None:
    """Remove a blob that no FileItem will name; a failure is logged and left to ``gc``."""
    try:
        blobs.delete(key)
    except DocbinderError as exc:
        log.warning("orphan blob left for gc: %s could not be removed (%s)", key, exc)


def confirm_committed(blobs: BlobStore, key: str) -> bool:
    """Record in the store that a FileItem naming the new blob ``key`` committed (ADR 0031).

    Call it right after the commit of the unit of work that names the blob,
    outside any unit of work (on S3 it is a network request). ``gc`` never
    removes an unnamed blob that carries the record: a database restored from
    a backup or copied no longer names the files stored since, and only the
    store can still tell they were committed. Never raises (the user's call
    already succeeded): a store without
    :meth:`~docbinder.ports.blobs.BlobStore.mark_committed` (written before
    it existed) records nothing, and a failure is logged as a warning; the
    blob is then unconfirmed, which matters only if no FileItem names it any
    more: ``gc`` removes such a blob past the grace period, as it removes a
    crash's leftover. Returns whether the record was kept.
    """
    mark = getattr(blobs, "mark_committed", None)
    if mark is None:
        return False
    try:
        return bool(mark(key))
    except Exception as exc:  # the commit stands whatever happens here
        log.warning(
            "blob %s was stored but could not be recorded as committed (%s); a gc run against "
            "a database restored from a backup would take it for a leftover",
            key,
            exc,
        )
        return False


def is_committed(blobs: BlobStore, key: str) -> bool:
    """Whether the store records the blob ``key`` as committed (ADR 0031).

    ``False`` for a store without
    :meth:`~docbinder.ports.blobs.BlobStore.is_committed` (its orphans are
    treated as before the record existed). Raises :class:`BlobMissing` for an
    absent blob and :class:`~docbinder.domain.errors.StorageError` when the
    store cannot tell (``gc`` then stops rather than guess).
    """
    check = getattr(blobs, "is_committed", None)
    if check is None:
        return False
    return bool(check(key))


def release_blob(
    blobs: BlobStore, key: str, database_id: str | None, locations: Mapping[str, str]
) -> bool:
    """Remove the blob of a FileItem row that is gone or was switched away, if provably ours.

    ``database_id`` is this metadata database's current id
    (:meth:`~docbinder.ports.metadata.MaintenanceRepository.database_id`, read before
    the call; ``None`` when it has none or was copied or moved). A copied
    database (``cp a.db b.db``, one blob directory) holds rows naming the same
    blobs as the original, so the blob is removed only when its provenance
    mark (:func:`~docbinder.ports.blobs.read_origin`) verifies, names the
    store's identity and names ``database_id`` (a compact mark, ADR 0036, is
    verified against exactly these two). Otherwise (no mark: an older
    blob or a file system without extended attributes; another or a former
    database; no id) the blob is left for ``gc``, which keeps blobs it cannot
    prove are this database's: space, not data (ADR 0022). ``locations`` is
    :meth:`~docbinder.ports.metadata.MaintenanceRepository.store_locations`, read
    in the same unit as ``database_id``: when the store can tell its location
    (:class:`~docbinder.ports.blobs.LocatingBlobStore`), the blob is removed
    only if that location is the one recorded for the store's identity, so
    nothing is freed in a copy, a backup or a moved store (ADR 0030); a
    store without location support is treated as before. Returns whether the
    blob was removed. Never raises for store faults: they are logged and the
    blob stays; a blob that was recorded as committed (ADR 0031) is then kept
    and listed by ``gc``, never removed by it, and the warning names it for
    removal by hand. Call it outside any unit of work.
    """
    try:
        store_id = blobs.identity(create=False)
        mark = blobs.stat(key).origin
        where = blobs.location(create=False) if isinstance(blobs, LocatingBlobStore) else None
    except BlobMissing:
        return False
    except DocbinderError as exc:
        log.warning("orphan blob left for gc: %s could not be checked (%s)", key, exc)
        return False
    origin = read_origin(mark, key, store_id, [database_id] if database_id else [])
    if (
        origin is None
        or store_id is None
        or database_id is None
        or origin.store_id != store_id
        or origin.database_id != database_id
    ):
        log.info(
            "blob %s left for gc: its provenance mark does not prove this database (%s) "
            "wrote it, and another database may still name it",
            key,
            database_id or "no id",
        )
        return False
    if isinstance(blobs, LocatingBlobStore) and (
        where is None or locations.get(store_location_key(store_id)) != location_fingerprint(where)
    ):
        log.warning(
            "blob %s left for gc: blob store %s is not at the location recorded for its "
            "identity (a copy, a backup or a moved store; check blob_url)",
            key,
            blobs.url,
        )
        return False
    try:
        blobs.delete(key)
    except DocbinderError as exc:
        # Its FileItem committed once, so the store records it as committed and gc keeps
        # it (ADR 0031): only the operator can tell this case from a restored database.
        log.warning(
            "blob %s of a deleted or replaced file could not be removed (%s); it stays in %s "
            "and gc lists it among the blobs this database committed without removing it: "
            "remove it by hand",
            key,
            exc,
            blobs.url,
        )
        return False
    return True


def blob_key_for(file_id: str) -> str:
    """The blob key of a FileItem: ``<first two characters of the id>/<id>``.

    Made from the id only, never from a file name or a scope string, so no
    user input can steer where a blob lands (SPEC C1/C13).
    """
    return check_blob_key(f"{file_id[:2]}/{file_id}")


def look_up_after_failed_commit(
    uow_factory: UnitOfWorkFactory, file_id: str, blob_key: str, fault: Exception
) -> tuple[bool, FileItem | None]:
    """After a commit that reported ``fault``: ``(known, item)`` for the FileItem ``file_id``.

    A commit can take effect and still report a fault (the connection drops
    before the answer arrives), so the FileItem is looked up again in a
    fresh unit of work. ``(True, item)``: it was stored, the blob
    ``blob_key`` must stay (logged). ``(True, None)``: it is certainly
    absent, the caller may remove the blob. ``(False, None)``: the lookup
    failed too, the outcome is unknown and the blob is left for ``gc``
    (logged): a blob no FileItem names is found by ``gc``, a FileItem
    without its blob would be lost data.
    """
    try:
        with uow_factory() as uow:
            item = uow.files.get(file_id)
    except Exception as lookup_fault:
        log.warning(
            "orphan blob may be left for gc: %s (commit of file %s failed: %s; "
            "could not check whether it was stored: %s)",
            blob_key,
            file_id,
            fault,
            lookup_fault,
        )
        return False, None
    if item is not None:
        log.warning(
            "commit of file %s reported a fault (%s) but the FileItem was stored; keeping it",
            file_id,
            fault,
        )
    return True, item


def inlining(blobs: BlobStore) -> InliningBlobStore | None:
    """``blobs`` when it keeps small blobs inline with a limit above 0 (ADR 0110), else ``None``.

    Asked once when a use case is built: a protocol ``isinstance`` check is
    too slow for every store.
    """
    if isinstance(blobs, InliningBlobStore) and blobs.inline_limit > 0:
        return blobs
    return None


def write_or_hold(
    blobs: BlobStore, key: str, chunks: Iterable[bytes], inline: InliningBlobStore | None
) -> bytes | None:
    """Write ``chunks`` as the blob ``key``, or hold them when the store keeps them inline (ADR 0110).

    With ``inline`` (``blobs`` as :func:`inlining` gives it) the chunks are
    read up to its limit first: when they end there, nothing is
    written and their bytes are returned, for the caller to write in the unit
    of work that records the FileItem naming ``key``
    (:attr:`~docbinder.ports.metadata.UnitOfWork.inline_blobs`). Otherwise
    the chunks read so far and the rest stream to the store as one blob
    (:meth:`~docbinder.ports.blobs.BlobStore.put`) and ``None`` is returned.
    Errors as ``put``; an exception of the input propagates, nothing written.
    """
    if inline is None:
        blobs.put(key, chunks)
        return None
    limit = inline.inline_limit
    stream = iter(chunks)
    head: list[bytes] = []
    size = 0
    for chunk in stream:
        head.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    else:
        return b"".join(head)
    blobs.put(key, itertools.chain(head, stream))
    return None
