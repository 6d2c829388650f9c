"""Deleting every version of a file name (feature row B1, ADR 0013): :class:`DeleteFileVersions`."""

from __future__ import annotations

import logging

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.blob_rules import release_blob
from docbinder.application.steps.database_claim import claim_for_destruction
from docbinder.application.steps.expiry import hold_on
from docbinder.application.steps.provider_copies import ProviderCopyCleaner
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.application.use_cases.list_file_versions import ListFileVersions
from docbinder.domain.access import Action
from docbinder.domain.errors import AccessDenied, FileUnderLegalHold
from docbinder.domain.model import Principal
from docbinder.domain.providers import ProviderCopy
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)


class DeleteFileVersions:
    """Delete all versions of a name the principal may read: metadata first, then blobs.

    The versions come from :class:`ListFileVersions` (versions the principal
    cannot read count as absent and stay). A blob is released only when its
    provenance mark proves this database wrote it
    (:func:`~docbinder.application.steps.blob_rules.release_blob`); afterwards
    numbering of the name starts at 0 again.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        access: AccessPolicy,
        list_file_versions: ListFileVersions,
        provider_copies: ProviderCopyCleaner | None = None,
    ) -> None:
        self._copies = provider_copies
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access
        self._list = list_file_versions

    def __call__(self, principal: Principal, name: str, namespace: str = "") -> int:
        """Delete every version of ``name`` (metadata first, then blobs); return how many.

        All versions go in one transaction. Raises :class:`AccessDenied` if
        the principal may read a version but not delete it (then none is
        deleted); versions it cannot read count as absent and stay; and
        :class:`~docbinder.domain.errors.DatabaseCloned` (none deleted) when
        another database with this database's id holds its claim in the blob
        store (ADR 0075).
        """
        versions = self._list(principal, name, namespace)
        for stored in versions:
            if not self._access.can_on_file(principal, Action.DELETE, stored.item):
                raise AccessDenied(f"user {principal.user_id} may not delete file {stored.item.id}")
        if not versions:
            return 0
        claim_for_destruction(self._uow, self._blobs)

        def delete_unit() -> tuple[str | None, dict[str, str], list[ProviderCopy]]:
            marked: list[ProviderCopy] = []
            with self._uow() as uow:
                for stored in versions:
                    locked = uow.files.lock(stored.item.id)
                    hold = hold_on(uow, locked) if locked is not None else None
                    if hold is not None:  # none of the versions goes
                        raise FileUnderLegalHold(
                            stored.item.id,
                            hold.kind.value,
                            hold.target_id,
                            hold.reason,
                            hold.mandate_id,
                        )
                for stored in versions:
                    uow.files.delete(stored.item.id, if_blob_key=stored.item.blob_key)
                    if self._copies is not None:
                        marked.extend(self._copies.mark(uow, stored.item))
                database_id = uow.maintenance.database_id()
                locations = uow.maintenance.store_locations()
                uow.commit()
            return database_id, locations, marked

        database_id, locations, marked = run_again_if_aborted(
            delete_unit, f"deleting the versions of {name!r}"
        )
        for stored in versions:
            release_blob(self._blobs, stored.item.blob_key, database_id, locations)
        if marked and self._copies is not None:
            self._copies.delete_marked(marked)
        log.info("deleted %d version(s) of %r by user %s", len(versions), name, principal.user_id)
        return len(versions)
