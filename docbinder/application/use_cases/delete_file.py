"""Deleting a FileItem and its blob: :class:`DeleteFile`."""

from __future__ import annotations

import logging

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.blob_rules import release_blob
from docbinder.application.steps.database_claim import claim_for_destruction
from docbinder.application.steps.expiry import hold_on
from docbinder.application.steps.provider_copies import ProviderCopyCleaner
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.access import Action
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import (
    AccessDenied,
    FileItemNotFound,
    FileStillReferenced,
    FileUnderLegalHold,
)
from docbinder.domain.model import FileItem, Principal
from docbinder.domain.providers import ProviderCopy
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)


class DeleteFile:
    """Delete a FileItem and its blob: metadata first, then the blob.

    Each FileItem owns its blob, so removing one never removes bytes another
    FileItem needs (SPEC C2). A blob that cannot be removed, or whose
    provenance mark does not prove this database wrote it (a copied database
    shares the blobs of the original), is left for ``gc``
    (:func:`~docbinder.application.steps.blob_rules.release_blob`).
    A FileItem that ChatDocuments refer to is deleted only with ``force``:
    those documents stay in their workflows and resolve as ``file_missing``
    (ADR 0012). The row is locked before the references are counted, so an
    attach of the file either commits first and is counted, or waits and then
    fails with :class:`FileItemNotFound`. The copies of the file's content
    that its tenant handed to model providers are marked in the same unit and
    deleted at the providers after the commit; one that cannot be deleted
    stays recorded for ``gc`` (B22, ADR 0107).
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        access: AccessPolicy,
        get_file: GetFile,
        *,
        audit: AuditTrail = DISABLED,
        provider_copies: ProviderCopyCleaner | None = None,
    ) -> None:
        self._copies = provider_copies
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access
        self._get = get_file
        self._audit = audit

    def __call__(self, principal: Principal, file_id: str, *, force: bool = False) -> FileItem:
        """Delete and return the FileItem.

        Raises :class:`FileItemNotFound`, :class:`AccessDenied`, and
        :class:`~docbinder.domain.errors.FileStillReferenced` (with the number
        of referring documents; nothing deleted) when documents refer to the
        file and ``force`` is false, and
        :class:`~docbinder.domain.errors.FileUnderLegalHold` (even with
        ``force``) when a legal hold names the file or a workflow showing it. The lock of the row
        (:meth:`~docbinder.ports.metadata.FileRepository.lock`), the count and
        the delete are one unit of work; the blob removed is the one the
        locked row names. Before it, :class:`~docbinder.domain.errors.DatabaseCloned`
        (nothing deleted) when another database with this database's id holds
        its claim in the blob store (ADR 0075).
        """
        item = self._get(principal, file_id)
        if not self._access.can_on_file(principal, Action.DELETE, item):
            if self._audit.enabled:
                self._audit.refused(
                    self._audit.event(
                        AuditAction.ACCESS_REFUSED,
                        principal,
                        outcome="access_denied",
                        file_id=item.id,
                        detail={"operation": "delete_file"},
                    )
                )
            raise AccessDenied(f"user {principal.user_id} may not delete file {file_id}")
        claim_for_destruction(self._uow, self._blobs)
        item, references, database_id, locations, copies = run_again_if_aborted(
            lambda: self._delete(principal, item, file_id, force), f"deleting file {item.id}"
        )
        release_blob(self._blobs, item.blob_key, database_id, locations)
        if copies and self._copies is not None:
            self._copies.delete_marked(copies)
        log.info(
            "deleted file %s (%s) by user %s%s",
            item.id,
            item.file_name,
            principal.user_id,
            f"; {references} document(s) now resolve as file_missing" if references else "",
        )
        return item

    def _delete(
        self, principal: Principal, item: FileItem, file_id: str, force: bool
    ) -> tuple[FileItem, int, str | None, dict[str, str], list[ProviderCopy]]:
        """The deleting unit: lock, count, delete, audit, mark provider copies.

        Returns ``(row, references, database id, locations, marked copies)``.
        """
        with self._uow() as uow:
            locked = uow.files.lock(item.id)
            if locked is None:
                raise FileItemNotFound(f"file {file_id} not found")
            hold = hold_on(uow, locked)
            if hold is not None:
                raise FileUnderLegalHold(
                    locked.id, hold.kind.value, hold.target_id, hold.reason, hold.mandate_id
                )
            references = uow.workflows.count_documents_for_file(locked.id)
            if references and not force:
                raise FileStillReferenced(locked.id, references)
            if not uow.files.delete(locked.id):
                raise FileItemNotFound(f"file {file_id} not found")
            if self._audit.enabled:
                self._audit.record(
                    uow,
                    self._audit.event(
                        AuditAction.DELETE,
                        principal,
                        file_id=locked.id,
                        detail={"references": references, "force": force},
                    ),
                )
            copies = [] if self._copies is None else self._copies.mark(uow, locked)
            database_id = uow.maintenance.database_id()
            locations = uow.maintenance.store_locations()
            uow.commit()
        return locked, references, database_id, locations, copies
