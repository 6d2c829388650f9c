"""What append and replace share when they change the bytes of a FileItem in place (SPEC C10).

The use cases are :class:`~docbinder.application.use_cases.append_file_content.AppendFileContent`
and :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`;
:class:`~docbinder.application.use_cases.get_file_for_update.GetFileForUpdate` checks the
rights both need. This module holds their result, :class:`FileUpdate`, and the
switch to the new content, :class:`ContentSwitch`.

The FileItem keeps its id (so every ChatDocument and every ``file id`` the
model holds stays valid) and gets new content, size and SHA-256. No message is
created.

Fault order (SPEC section 5): the new full content is written to a **new**
blob under a fresh key first; then, in one transaction, the FileItem's
``blob_key``, ``size`` and ``sha256`` are switched to it, provided nobody else
changed the file in between; only after the commit is the old blob removed,
and only when its provenance mark proves this database wrote it (a copied
database shares the original's blobs; see
:func:`~docbinder.application.steps.blob_rules.release_blob`).
After the commit, and before the old blob goes, the new blob is recorded as
committed in the store (ADR 0031), so ``gc`` never takes it for a leftover.
Until the commit every reader still sees the old, complete blob; if anything
fails, the new blob is removed again and the FileItem is unchanged. An old blob
that cannot be removed is left for ``gc`` with a log line.
"""

from __future__ import annotations

import logging

import attrs

from docbinder.application.steps.blob_rules import (
    blob_key_for,
    confirm_committed,
    inlining,
    release_blob,
    write_or_hold,
)
from docbinder.application.steps.database_claim import claim_for_destruction
from docbinder.application.steps.expiry import hold_on
from docbinder.application.steps.hashing import FileData, HashingStream, HashWorkers
from docbinder.application.steps.provider_copies import ProviderCopyCleaner
from docbinder.application.steps.store_registration import StoreRegistration
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.domain.errors import (
    Conflict,
    DocbinderError,
    DuplicateFileItem,
    FileUnderLegalHold,
    TransactionAborted,
)
from docbinder.domain.model import FileItem, Principal
from docbinder.domain.providers import ProviderCopy
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import IdFactory

log = logging.getLogger(__name__)


@attrs.frozen
class FileUpdate:
    """Result of an append or a replace: the FileItem before and after the change."""

    item: FileItem
    previous: FileItem

    @property
    def size_change(self) -> int:
        """New size minus old size, in bytes (negative when the file shrank)."""
        return self.item.size - self.previous.size


class ContentSwitch:
    """Switch a FileItem to new full content: new blob, compare-and-set, old blob released.

    Not a use case: the steps
    :class:`~docbinder.application.use_cases.append_file_content.AppendFileContent` and
    :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`
    share once they have the FileItem (from
    :class:`~docbinder.application.use_cases.get_file_for_update.GetFileForUpdate`) and
    its new chunks. ``max_size`` (bytes,
    ``None`` for no limit) bounds the new full content, as for storing.

    Errors of :meth:`switch`: :class:`SizeLimitExceeded`, :class:`Conflict`
    (the file changed meanwhile, or the new content would make it a duplicate
    of another FileItem of the same name, creator and scope),
    :class:`StorageError`, :class:`~docbinder.domain.errors.DatabaseCloned`
    (another database with this database's id holds its claim in the blob
    store, ADR 0075). On every error the FileItem is unchanged and no new
    blob is left behind.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        ids: IdFactory,
        max_size: int | None = None,
        registration: StoreRegistration | None = None,
        hash_workers: HashWorkers | None = None,
        provider_copies: ProviderCopyCleaner | None = None,
    ) -> None:
        self._copies = provider_copies
        self._uow = uow_factory
        self._blobs = blobs
        self._inline = inlining(blobs)
        self._ids = ids
        self._max_size = max_size
        self._hash_workers = hash_workers
        self._registration = registration

    def switch(self, principal: Principal, item: FileItem, chunks: FileData) -> FileUpdate:
        """Make ``chunks`` the whole new content of ``item`` (read for ``principal``'s update)."""
        new_key = blob_key_for(self._ids.new_id())
        claim_for_destruction(self._uow, self._blobs)  # it frees the old blob: ADR 0075
        store_id = (
            self._registration.ensure()
            if self._registration is not None
            else self._blobs.identity(create=True)
        )
        stream = HashingStream(chunks, self._max_size, self._hash_workers)
        inline = write_or_hold(self._blobs, new_key, stream, self._inline)
        origin = (
            self._inline.inline_origin(new_key)
            if inline is not None and self._inline is not None
            else None
        )
        updated = attrs.evolve(
            item,
            blob_key=new_key,
            size=stream.size,
            sha256=stream.sha256,
            blob_store=store_id,
        )
        committing = False
        database_id: str | None = None
        locations: dict[str, str] = {}
        marked: list[ProviderCopy] = []

        def switch_unit() -> tuple[str | None, dict[str, str]]:
            nonlocal committing
            marked.clear()
            try:
                with self._uow() as uow:
                    # The row locked first, then its holds read: a hold placed meanwhile
                    # waits for this unit (ManageRetention.hold locks the row too).
                    locked = uow.files.lock(item.id)
                    hold = hold_on(uow, locked) if locked is not None else None
                    if hold is not None:
                        raise FileUnderLegalHold(
                            item.id, hold.kind.value, hold.target_id, hold.reason, hold.mandate_id
                        )
                    try:
                        # Compare-and-set on the blob the caller's read named: of
                        # two concurrent updates, only one can win.
                        uow.files.update(updated, if_blob_key=item.blob_key)
                        if inline is not None:  # the new bytes commit with the row (ADR 0110)
                            uow.inline_blobs.put(
                                new_key, inline, origin, updated.created_at, committed=True
                            )
                    except DuplicateFileItem as exc:
                        raise Conflict(
                            f"the new content would make '{item.file_name}' a duplicate of "
                            "another file with the same name, creator and scope; nothing "
                            "was changed"
                        ) from exc
                    except Conflict as exc:
                        raise Conflict(
                            f"file {item.id} was changed by someone else meanwhile; "
                            "nothing was changed, try again"
                        ) from exc
                    if self._copies is not None and updated.sha256 != item.sha256:
                        # the old content's copies at model providers go with it (B22)
                        marked.extend(self._copies.mark(uow, item))
                    found = uow.maintenance.database_id(), uow.maintenance.store_locations()
                    committing = True
                    uow.commit()
            except TransactionAborted:
                committing = False  # the database ended the unit: nothing of it committed
                raise
            return found

        try:
            database_id, locations = run_again_if_aborted(switch_unit, f"updating file {item.id}")
        except Exception as exc:
            if not committing:
                if inline is None:
                    self._discard(new_key)
                raise
            if not self._commit_landed(item.id, new_key, exc, inline is not None):
                raise
        except BaseException:
            if not committing and inline is None:
                self._discard(new_key)
            raise
        # The row names the new blob now: record that in the store (ADR 0031), then free
        # the old one; both outside the unit of work. An inline blob was recorded in it.
        if inline is None:
            confirm_committed(self._blobs, new_key)
        release_blob(self._blobs, item.blob_key, database_id, locations)
        if marked and self._copies is not None:
            self._copies.delete_marked(marked)
        log.info(
            "updated file %s (%s): %d -> %d bytes by user %s",
            item.id,
            item.file_name,
            item.size,
            updated.size,
            principal.user_id,
        )
        return FileUpdate(updated, item)

    def _commit_landed(
        self, file_id: str, new_key: str, exc: Exception, inline: bool = False
    ) -> bool:
        """After a failed commit: did the switch take effect anyway? Cleans up accordingly.

        A commit can become durable and still report a fault. The FileItem is
        read again: naming ``new_key`` means the update happened (``True``; the
        caller removes the old blob); naming anything else means it did not
        (the new blob is removed, ``False``); if the read fails too, both blobs
        are kept for ``gc`` (``False``), since removing either could leave a
        FileItem without its bytes.
        """
        try:
            with self._uow() as uow:
                current = uow.files.get(file_id)
        except Exception as lookup_exc:
            log.warning(
                "orphan blob left for gc: %s (commit of update to file %s failed: %s; "
                "could not check whether it took effect: %s)",
                new_key,
                file_id,
                exc,
                lookup_exc,
            )
            return False
        if current is not None and current.blob_key == new_key:
            log.warning(
                "commit of update to file %s reported a fault (%s) but took effect; keeping it",
                file_id,
                exc,
            )
            return True
        if not inline:  # an inline blob went with the unit that did not commit
            self._discard(new_key)
        return False

    def _discard(self, key: str) -> None:
        try:
            self._blobs.delete(key)
        except DocbinderError as exc:
            log.warning("orphan blob left for gc: %s could not be removed (%s)", key, exc)
