"""The duplicate rule storing and the duplicate check share (SPEC C2, ADR 0012).

:class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate` (the use case)
and :class:`~docbinder.application.steps.storing.FileStorer` (storing) both pick the
duplicate to reuse from the candidates
:meth:`~docbinder.ports.metadata.FileRepository.find_duplicates` found, with
:func:`choose_duplicate`; :class:`DuplicateCheck` is its answer.
"""

from __future__ import annotations

import logging

import attrs

from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobStore

log = logging.getLogger("docbinder.application.use_cases.check_duplicate")
"""The check's log lines keep the logger name they always had."""


@attrs.frozen
class DuplicateCheck:
    """Result of :class:`CheckDuplicate`.

    ``item`` is a readable duplicate or ``None``; ``key_taken`` says a
    candidate exists that the caller cannot read (a ghost duplicate), so a
    fresh copy must be stored outside duplicate detection.
    """

    item: FileItem | None
    key_taken: bool


def choose_duplicate(
    access: AccessPolicy,
    blobs: BlobStore | None,
    principal: Principal,
    file_name: str,
    candidates: list[FileItem],
) -> DuplicateCheck:
    """The first readable candidate whose blob is there; call it outside any unit of work.

    ``candidates`` come from
    :meth:`~docbinder.ports.metadata.FileRepository.find_duplicates`. A
    candidate counts only if ``access`` lets ``principal`` read it
    (:meth:`AccessPolicy.can_read_file`) and, when ``blobs`` is given, its
    blob is still there: the blob store is asked about each readable one, so
    no transaction may be open while this runs (ADR 0012).
    """
    for candidate in candidates:
        if not access.can_read_file(principal, candidate):
            continue
        if blobs is not None and not blobs.exists(candidate.blob_key):
            log.warning(
                "blob missing: duplicate candidate %s has no blob %s; storing a fresh copy",
                candidate.id,
                candidate.blob_key,
            )
            continue
        log.info(
            "duplicate detected for user %s: file %s (%s) in scope %s",
            principal.user_id,
            candidate.id,
            file_name,
            principal.scope,
        )
        return DuplicateCheck(candidate, key_taken=True)
    if candidates:
        log.info(
            "duplicate candidate not usable by user %s in scope %s; storing a fresh copy",
            principal.user_id,
            principal.scope,
        )
    return DuplicateCheck(None, key_taken=bool(candidates))
