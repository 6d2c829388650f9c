"""Rules the use cases that write blobs share: where a blob goes, its MIME type, discarding one."""

from __future__ import annotations

import logging
import mimetypes

from docbinder.domain.errors import DocbinderError
from docbinder.ports.blobs import BlobStore, check_blob_key
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


def blob_key_for(file_id: str) -> str:
    """The blob key of a FileItem: ``<first two characters of the id>/<id>``.

    Made from the id only, never from a file name or a scope string, so no
    user input can steer where a blob lands (SPEC C1/C13).
    """
    return check_blob_key(f"{file_id[:2]}/{file_id}")
