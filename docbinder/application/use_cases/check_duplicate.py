"""The duplicate check that respects access (SPEC C2, ADR 0003, 0008, 0012): :class:`CheckDuplicate`.

One rule decides every duplicate: :meth:`CheckDuplicate.__call__` for a caller
that asks (``binder.check_duplicate``), and :meth:`CheckDuplicate.choose` for
the store path (:class:`~docbinder.application.steps.storing.FileStorer`,
behind ``StoreFile`` and ``ProduceFile``), which reads the candidates in its
own writing unit and hands them over once that unit has ended.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.expiry import due_for_expiry
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock

__all__ = ["CheckDuplicate", "DuplicateCheck"]

log = logging.getLogger(__name__)


@attrs.frozen
class DuplicateCheck:
    """The answer of :class:`CheckDuplicate`.

    ``item`` is a readable duplicate whose blob is there, or ``None``;
    ``key_taken`` says a candidate exists (readable or not), so a fresh copy
    must be stored outside duplicate detection when ``item`` is ``None`` (a
    ghost duplicate, ADR 0003).
    """

    item: FileItem | None
    key_taken: bool


class CheckDuplicate:
    """The duplicate check that respects access (SPEC C2, the ghost-duplicate fix).

    Candidates match SHA-256 + file name + creator + the caller's scope
    exactly (feature instance when the caller has one, else the mandate;
    :meth:`~docbinder.ports.metadata.FileRepository.find_duplicates`, ADR 0003).
    A candidate counts only if the caller can read it through
    :meth:`AccessPolicy.can_read_file`, the same decision :class:`GetFile`
    uses (ADR 0008), and, when a blob store is given, only if its blob is
    still there: a duplicate whose bytes are gone would hand back a FileItem
    that cannot be read, so a fresh copy is stored instead.

    The blob store is asked only after the unit of work that read the
    candidates has ended, so no transaction (and on SQLite no write lock)
    ever waits on the blob store's network (ADR 0012). The answer is a
    snapshot: a caller that reuses the candidate confirms it inside its own
    writing unit (:meth:`~docbinder.ports.metadata.FileRepository.confirm`).
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        blobs: BlobStore | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._blobs = blobs
        self._clock = clock

    def __call__(self, principal: Principal, sha256: str, file_name: str) -> DuplicateCheck:
        """Look up a readable duplicate of (``sha256``, ``file_name``) for ``principal``.

        ``sha256`` is the 64 lowercase hex digits of the content. Reads the
        candidates in one unit of work of its own, leaves out those past
        their retention period (with a ``clock``), then applies
        :meth:`choose`. Raises :class:`~docbinder.domain.errors.StorageError`
        on a backend fault.
        """
        with self._uow() as uow:
            candidates = uow.files.find_duplicates(
                sha256, file_name, principal.user_id, principal.scope
            )
            if self._clock is not None and candidates:
                # past its retention period, a candidate is about to go: no duplicate (ADR 0142)
                now = self._clock.now()
                candidates = [c for c in candidates if not due_for_expiry(uow, c, now, holds=False)]
        return self.choose(principal, file_name, candidates)

    def choose(
        self, principal: Principal, file_name: str, candidates: Sequence[FileItem]
    ) -> DuplicateCheck:
        """The first of ``candidates`` that ``principal`` can read and whose blob is there.

        ``candidates`` come from
        :meth:`~docbinder.ports.metadata.FileRepository.find_duplicates`, read
        by the caller in a unit of work that has ended: the blob store is
        asked about each readable one, so no transaction may be open while
        this runs (ADR 0012). Logs the duplicate found, each candidate whose
        blob is missing, and a key taken by candidates nobody here may use.
        """
        for candidate in candidates:
            if not self._access.can_read_file(principal, candidate):
                continue
            if self._blobs is not None and not self._blobs.exists(candidate.blob_key):
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
