"""Rules the use cases that write blobs share: where a blob goes, its MIME type, discarding one."""

from __future__ import annotations

import logging
import mimetypes
from collections.abc import Mapping

from docbinder.domain.errors import BlobMissing, DocbinderError
from docbinder.ports.blobs import (
    BlobStore,
    LocatingBlobStore,
    check_blob_key,
    location_fingerprint,
    read_origin,
)
from docbinder.ports.extractor import MimeDetector

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


def release_blob(
    blobs: BlobStore, key: str, database_id: str | None, locations: Mapping[str, str]
) -> bool:
    """Remove the blob of a FileItem row that is gone or was switched away, if provably ours.

    ``database_id`` is this metadata database's current id
    (:meth:`~docbinder.ports.metadata.FileRepository.database_id`, read before
    the call; ``None`` when it has none or was copied or moved). A copied
    database (``cp a.db b.db``, one blob directory) holds rows naming the same
    blobs as the original, so the blob is removed only when its provenance
    mark (:func:`~docbinder.ports.blobs.read_origin`) verifies, names the
    store's identity and names ``database_id``. Otherwise (no mark: an older
    blob or a file system without extended attributes; another or a former
    database; no id) the blob is left for ``gc``, which keeps blobs it cannot
    prove are this database's: space, not data (ADR 0022). ``locations`` is
    :meth:`~docbinder.ports.metadata.FileRepository.store_locations`, read
    in the same unit as ``database_id``: when the store can tell its location
    (:class:`~docbinder.ports.blobs.LocatingBlobStore`), the blob is removed
    only if that location is the one recorded for the store's identity, so
    nothing is freed in a copy, a backup or a moved store (ADR 0030); a
    store without location support is treated as before. Returns whether the
    blob was removed. Never raises for store faults: they are logged and the
    blob is left for ``gc``. Call it outside any unit of work.
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
    origin = read_origin(mark, key)
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
        where is None or locations.get(store_id) != location_fingerprint(where)
    ):
        log.warning(
            "blob %s left for gc: blob store %s is not at the location recorded for its "
            "identity (a copy, a backup or a moved store; check blob_url)",
            key,
            blobs.url,
        )
        return False
    discard_blob(blobs, key)
    return True


def blob_key_for(file_id: str) -> str:
    """The blob key of a FileItem: ``<first two characters of the id>/<id>``.

    Made from the id only, never from a file name or a scope string, so no
    user input can steer where a blob lands (SPEC C1/C13).
    """
    return check_blob_key(f"{file_id[:2]}/{file_id}")
