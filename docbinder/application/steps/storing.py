"""Storing a file, the steps the use cases that store one share (SPEC C1, C2, section 5).

:class:`FileStorer` holds them:
:class:`~docbinder.application.use_cases.store_file.StoreFile` runs them alone,
:class:`~docbinder.application.use_cases.produce_file.ProduceFile` adds its attach to
the transaction that records the FileItem (ADR 0011), and
:class:`~docbinder.application.use_cases.save_file_version.SaveFileVersion` writes its
blob and builds its FileItem with them. Duplicates are decided by
:class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate`, the one
duplicate rule. It is no use case; the composition root (:mod:`docbinder.container`)
builds one and hands it to all three.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.blob_rules import (
    blob_key_for,
    confirm_committed,
    detect_mime_type,
    discard_blob,
    inlining,
    look_up_after_failed_commit,
    write_or_hold,
)
from docbinder.application.steps.expiry import due_for_expiry
from docbinder.application.steps.hashing import FileData, HashingStream, HashWorkers
from docbinder.application.steps.store_registration import StoreRegistration
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.application.use_cases.check_duplicate import CheckDuplicate
from docbinder.domain.access import ResourceKind
from docbinder.domain.audit import AuditAction, AuditEvent
from docbinder.domain.errors import (
    AccessDenied,
    DuplicateFileItem,
    QuotaExceeded,
    StorageError,
    TransactionAborted,
)
from docbinder.domain.model import (
    NO_PROVENANCE,
    FileItem,
    Principal,
    Provenance,
    check_file_metadata,
    check_file_name,
)
from docbinder.ports.blobs import BlobStore
from docbinder.ports.extractor import MimeDetector
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

T = TypeVar("T")


class WorkNotCommitted(StorageError):
    """The file is stored (an existing duplicate) but the caller's extra work was not committed.

    Raised by :meth:`FileStorer.store` when the transaction that held only
    the ``then`` writes for a duplicate failed to commit. ``stored`` is the
    duplicate; ``__cause__`` the commit's error. Whether those writes took
    effect is unknown.
    """

    def __init__(self, stored: StoredFile, cause: Exception) -> None:
        super().__init__(
            f"file stored (duplicate {stored.item.id}); other work not committed: {cause}"
        )
        self.stored = stored


@attrs.define
class _Pending(Generic[T]):
    """What a store is committing: set just before the commit, read if the commit fails."""

    item: FileItem | None = None
    result: T | None = None


@attrs.frozen
class StoredFile:
    """Result of storing a file: the FileItem and whether it was an existing duplicate."""

    item: FileItem
    duplicate: bool


_STORE_ATTEMPTS = 4
"""Rounds of check-then-commit a store tries while concurrent writers keep changing the candidate."""


@attrs.frozen
class NewBlob:
    """A blob :meth:`FileStorer.write_blob` wrote for a new FileItem not stored yet.

    ``file_id`` is the id the FileItem gets, ``key`` the blob's key in the
    store, ``store_id`` the store's identity (``None`` when it keeps none),
    ``stream`` the :class:`HashingStream` it was written from (size in bytes,
    SHA-256, head for MIME sniffing). ``inline`` holds the bytes of a blob the
    store keeps inline (ADR 0110): nothing was written yet, and
    :meth:`FileStorer.write_inline` writes it in the unit of work that inserts
    the FileItem; ``origin`` is its provenance mark. ``None`` for a blob the
    store already holds.
    """

    file_id: str
    key: str
    store_id: str | None
    stream: HashingStream
    inline: bytes | None = None
    origin: str | None = None


class FileStorer:
    """Store a file: blob first, then the FileItem (SPEC C1, section 5).

    Streams the input once, computing SHA-256 and size while the blob is
    written. Then one writing unit inserts the FileItem under its duplicate
    key and commits; when no file has that key (the usual case) that is all.
    When the key is taken, the same unit looks the candidates up and ends, the candidates are checked (access, and the
    blob store is probed) outside any transaction, and a second writing unit
    either confirms (locks) the readable duplicate and commits, after which
    the new blob is removed, or inserts the FileItem and commits; a duplicate deleted or
    changed between check and commit is noticed by the confirm and the check
    runs again, so the returned FileItem always exists with the produced bytes;
    ``then`` lets a caller add its own writes (the attach of
    :class:`~docbinder.application.use_cases.produce_file.ProduceFile`) to that same
    transaction. If the metadata write fails the blob is removed again (or,
    if that fails too, left for ``gc`` with a log line). If the commit fails,
    the FileItem is looked up again, because a commit can take effect and
    still report a fault: found, the store succeeded; not found, the blob is
    removed; unknown, the blob is left for ``gc``. A FileItem never names a
    missing blob. Once the FileItem naming a new blob committed, and outside
    any unit of work, the blob is recorded as committed in the store
    (:func:`~docbinder.application.steps.blob_rules.confirm_committed`, ADR 0031), so
    ``gc`` never takes it for a leftover even if a restored database no longer
    names it; a reused duplicate records nothing.

    The duplicate is chosen by ``duplicates``, the
    :class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate` the binder
    offers as ``check_duplicate`` (:meth:`CheckDuplicate.choose` over the candidates
    this storer read); it and ``registration`` are handed in by the composition root
    (:mod:`docbinder.container`), which shares them with the other use cases.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        access: AccessPolicy,
        clock: Clock,
        ids: IdFactory,
        mime: MimeDetector | None = None,
        max_size: int | None = None,
        *,
        registration: StoreRegistration,
        duplicates: CheckDuplicate,
        hash_workers: HashWorkers | None = None,
        audit: AuditTrail = DISABLED,
    ) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._inline = inlining(blobs)
        self._access = access
        self._clock = clock
        self._ids = ids
        self._mime = mime
        self._max_size = max_size
        self._hash_workers = hash_workers
        self._duplicates = duplicates
        self.registration = registration
        self.audit = audit

    def write_blob(self, principal: Principal, data: FileData) -> NewBlob:
        """Check ``principal``'s ``create`` right, then write ``data`` as the blob of a new file id.

        The blob is durable when this returns (:meth:`BlobStore.put`); nothing
        names it yet. With a store that keeps small blobs inline
        (:class:`~docbinder.ports.blobs.InliningBlobStore`, ADR 0110) the input
        is read up to the store's limit first: when it ends there, nothing is
        written and the returned blob carries the bytes
        (:attr:`NewBlob.inline`) for :meth:`write_inline`; otherwise the bytes
        read so far and the rest stream to the store as one blob. Raises
        :class:`AccessDenied` (before anything is written),
        :class:`SizeLimitExceeded` (over ``max_size`` bytes; nothing kept) and
        :class:`StorageError`.
        """
        try:
            self._access.require_create(principal, ResourceKind.FILE, principal.scope)
        except AccessDenied as exc:
            if self.audit.enabled:
                self.audit.refused(
                    self.audit.event(
                        AuditAction.ACCESS_REFUSED,
                        principal,
                        outcome="access_denied",
                        detail={"operation": "create_file", "reason": str(exc)},
                    )
                )
            raise
        file_id = self._ids.new_id()
        key = blob_key_for(file_id)
        store_id = self.registration.ensure()
        stream = HashingStream(data, self._max_size, self._hash_workers)
        tier = self._inline
        held = write_or_hold(self._blobs, key, stream, tier)
        if held is None or tier is None:
            return NewBlob(file_id, key, store_id, stream)
        return NewBlob(file_id, key, store_id, stream, held, tier.inline_origin(key))

    @staticmethod
    def write_inline(uow: UnitOfWork, blob: NewBlob, item: FileItem) -> None:
        """Write ``blob``'s inline bytes in ``uow``, recorded as committed with ``item``; nothing for a stored blob.

        Call it in the unit that inserts ``item`` (the FileItem naming the
        blob), before its commit: the bytes and the row commit together or
        not at all (ADR 0110).
        """
        if blob.inline is not None:
            uow.inline_blobs.put(
                blob.key, blob.inline, blob.origin, item.created_at, committed=True
            )

    def confirm_new(self, blob: NewBlob) -> None:
        """:meth:`confirm_committed` for a blob the store holds; an inline one was recorded in its unit."""
        if blob.inline is None:
            self.confirm_committed(blob.key)

    def discard_new(self, blob: NewBlob) -> None:
        """:meth:`discard_blob` for a blob the store holds; an inline one went with its unit's rollback."""
        if blob.inline is None:
            self.discard_blob(blob.key)

    def new_item(
        self,
        principal: Principal,
        blob: NewBlob,
        file_name: str,
        mime_type: str | None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance = NO_PROVENANCE,
    ) -> FileItem:
        """The FileItem naming ``blob``, owned by ``principal``; the MIME type as ``StoreFile`` decides it."""
        stream = blob.stream
        return FileItem(
            id=blob.file_id,
            file_name=file_name,
            mime_type=detect_mime_type(self._mime, stream.head, file_name, mime_type),
            size=stream.size,
            sha256=stream.sha256,
            created_by=principal.user_id,
            scope=principal.scope,
            created_at=self._clock.now(),
            blob_key=blob.key,
            folder=folder,
            tags=tags,
            blob_store=blob.store_id,
            provenance=provenance,
        )

    def confirm_committed(self, key: str) -> None:
        """Record in the store that a FileItem naming ``key`` committed (ADR 0031); never raises."""
        confirm_committed(self._blobs, key)

    def discard_blob(self, key: str) -> None:
        """Remove the blob ``key`` no FileItem names (logged, never raises)."""
        discard_blob(self._blobs, key)

    def look_up_after_failed_commit(
        self, file_id: str, key: str, exc: Exception
    ) -> tuple[bool, FileItem | None]:
        """:func:`~docbinder.application.steps.blob_rules.look_up_after_failed_commit` on this storer's units."""
        return look_up_after_failed_commit(self._uow, file_id, key, exc)

    def store(
        self,
        principal: Principal,
        file_name: str,
        data: FileData,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance = NO_PROVENANCE,
    ) -> tuple[StoredFile, T | None]:
        """Store ``data`` as ``file_name`` for ``principal`` in its scope, running ``then``.

        ``then(uow, item)``, unless ``None``, gets the open unit of work and
        the FileItem (the new one after its insert, or the readable duplicate)
        before the single commit, so whatever it writes commits or rolls back together with the
        FileItem. ``provenance`` is recorded on a new FileItem (a reused
        duplicate keeps its own). Its return value comes back next to the :class:`StoredFile`
        (``None`` when ``then`` is ``None``). An exception from ``then`` fails
        the store as a storage fault would (nothing kept); a caller that wants
        the file stored anyway catches inside ``then``. When a readable
        duplicate was found, the commit holds only ``then``'s writes: if it
        fails, :class:`WorkNotCommitted` (a :class:`StorageError`) carries the
        duplicate, which exists regardless.

        Raises :class:`InvalidInput` (bad name, folder or tags, see
        :func:`~docbinder.domain.model.check_text_field`; checked before any blob is
        written), :class:`AccessDenied` (no
        ``create`` right), :class:`SizeLimitExceeded` (input over ``max_size``
        bytes; nothing kept), :class:`StorageError` (backend fault; nothing
        kept, except a blob no FileItem names when the outcome of the commit
        could not be established: ``gc`` removes it).
        """
        check_file_name(file_name)
        folder, tags = check_file_metadata(folder, tags)
        blob = self.write_blob(principal, data)
        key = blob.key
        pending: _Pending[T] = _Pending()
        try:
            item = self.new_item(principal, blob, file_name, mime_type, folder, tags, provenance)
            recorded = run_again_if_aborted(
                lambda: self._record_once(principal, item, blob, then, pending),
                f"storing {file_name!r}",
            )
        except WorkNotCommitted:
            raise  # the fresh blob was kept on purpose (see _reuse)
        except Exception as exc:
            if isinstance(exc, QuotaExceeded) and self.audit.enabled:
                self.audit.refused(
                    self.audit.event(
                        AuditAction.QUOTA_REFUSED,
                        principal,
                        outcome="quota_exceeded",
                        detail={
                            "fileName": file_name,
                            "quota": exc.quota,
                            "limit": exc.limit,
                            "used": exc.used,
                        },
                    )
                )
            if pending.item is not None:
                recovered = self._after_failed_commit(pending.item, blob, exc)
                if recovered is not None:
                    self.confirm_new(blob)
                    return recovered, pending.result
                raise
            self.discard_new(blob)
            raise
        except BaseException:
            if pending.item is not None:
                # Interrupted while committing: the row may exist, so the blob stays.
                if blob.inline is None:
                    log.warning("orphan blob left for gc: %s (commit interrupted)", key)
                raise
            self.discard_new(blob)
            raise
        if not recorded[0].duplicate:
            # The FileItem naming the new blob committed: record it in the store, after
            # the unit of work ended (ADR 0031). A reused duplicate wrote no kept blob;
            # an inline blob was recorded in the unit itself (ADR 0110).
            self.confirm_new(blob)
        return recorded

    def _record_once(
        self,
        principal: Principal,
        item: FileItem,
        blob: NewBlob,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        pending: _Pending[T],
    ) -> tuple[StoredFile, T | None]:
        """:meth:`_record`; a unit the database aborted (a deadlock) committed nothing: forget it."""
        try:
            return self._record(principal, item, blob, then, pending)
        except TransactionAborted:
            pending.item, pending.result = None, None
            raise

    def _record(
        self,
        principal: Principal,
        item: FileItem,
        blob: NewBlob,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        pending: _Pending[T],
    ) -> tuple[StoredFile, T | None]:
        sha, file_name, key = item.sha256, item.file_name, item.blob_key
        lost_race = False
        for attempt in range(_STORE_ATTEMPTS):
            # The usual case (no duplicate) costs no lookup: the first attempt
            # inserts the FileItem under its duplicate key right away, and the
            # unique key refuses it when a file with the same key exists (ADR
            # 0032). Only then are the candidates looked up, in the same unit
            # (a refused insert leaves it usable, as the port promises); the
            # unit ends before the blob store is asked about them (no writing
            # unit waits on the blob store), and a second unit reuses the
            # chosen duplicate or stores the fresh copy.
            with self._uow() as uow:
                if attempt == 0 and self._insert(
                    uow, item, blob, True, then, pending, keep_unit=True
                ):
                    return self._stored(item), pending.result
                candidates = uow.files.find_duplicates(
                    sha, file_name, principal.user_id, principal.scope
                )
                # A candidate past its retention period is about to be removed: not reused,
                # and its duplicate key stays taken (ADR 0142).
                reusable = [
                    c
                    for c in candidates
                    if not due_for_expiry(uow, c, self._clock.now(), holds=False)
                ]
                # After a lost race for the duplicate key whose winner is gone
                # again, store outside duplicate detection.
                if not candidates and not self._insert(
                    uow, item, blob, not lost_race, then, pending
                ):
                    lost_race = True
                    continue
            if candidates:
                check = self._duplicates.choose(principal, file_name, reusable)
                key_taken = check.key_taken or len(reusable) < len(candidates)
                reused: tuple[StoredFile, T | None] | None = None
                with self._uow() as uow:
                    if check.item is not None:
                        reused = self._reuse(uow, principal, check.item, key, then)
                    elif not self._insert(
                        uow, item, blob, not lost_race and not key_taken, then, pending
                    ):
                        lost_race = True
                        continue
                if check.item is not None:
                    if reused is None:
                        continue  # the candidate was deleted or changed: look again
                    # The commit proved the candidate is there: only now does the fresh
                    # copy go (outside the transaction, like every blob-store call).
                    self.discard_new(blob)
                    return reused
            return self._stored(item), pending.result
        raise StorageError(
            f"could not store {file_name!r}: its duplicate kept changing under "
            f"{_STORE_ATTEMPTS} attempts; nothing was stored"
        )

    @staticmethod
    def _stored(item: FileItem) -> StoredFile:
        """The result for a newly recorded ``item``, logged."""
        if log.isEnabledFor(logging.INFO):
            log.info(
                "stored file %s (%s, %d bytes) for user %s in scope %s",
                item.id,
                item.file_name,
                item.size,
                item.created_by,
                item.scope,
            )
        return StoredFile(item, duplicate=False)

    def _insert(
        self,
        uow: UnitOfWork,
        item: FileItem,
        blob: NewBlob,
        deduplicate: bool,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        pending: _Pending[T],
        *,
        keep_unit: bool = False,
    ) -> bool:
        """Insert ``item``, run ``then`` and commit in ``uow``; ``False`` if the key is taken.

        A taken key means a file with the same duplicate key exists: one
        stored before (the first, optimistic attempt of :meth:`_record`) or
        one another writer stored since the candidates were read (a lost
        race). With ``keep_unit`` the unit stays open for the caller to look
        the candidates up in it; otherwise it is rolled back and the caller
        looks again in a fresh one, using theirs if readable.
        """
        try:
            uow.files.add(item, deduplicate=deduplicate)
        except DuplicateFileItem:
            if not keep_unit:
                uow.rollback()
            return False
        self.write_inline(uow, blob, item)
        if self.audit.enabled:
            self.audit.record(uow, self._store_event(item, "ok"))
        if then is not None:
            pending.result = then(uow, item)
        pending.item = item
        uow.commit()
        return True

    def _store_event(self, item: FileItem, outcome: str) -> AuditEvent:
        p = item.provenance
        return self.audit.event(
            AuditAction.STORE,
            item.created_by,
            outcome=outcome,
            file_id=item.id,
            workflow_id=p.workflow_id,
            mandate_id=item.scope.mandate_id,
            detail={"size": item.size, "sha256": item.sha256},
        )

    def _reuse(
        self,
        uow: UnitOfWork,
        principal: Principal,
        candidate: FileItem,
        fresh_key: str,
        then: Callable[[UnitOfWork, FileItem], T] | None,
    ) -> tuple[StoredFile, T | None] | None:
        """Reuse ``candidate`` if it is still there at commit; ``None`` if it vanished meanwhile.

        The row is confirmed (and locked) in this writing unit, ``then`` runs
        and the unit commits; the caller removes the fresh blob under
        ``fresh_key`` only after that: until the commit proved the candidate
        still exists, the fresh copy is the caller's only copy of the bytes.
        """
        current = uow.files.confirm(candidate.id, candidate.blob_key)
        if current is None or not self._access.can_read_file(principal, current):
            log.info(
                "duplicate candidate %s was deleted or changed before it could be reused; "
                "checking again",
                candidate.id,
            )
            uow.rollback()
            return None
        duplicate = StoredFile(current, duplicate=True)
        if self.audit.enabled:
            self.audit.record(uow, self._store_event(current, "duplicate"))
        result = then(uow, current) if then is not None else None
        try:
            uow.commit()
        except Exception as exc:
            # Nothing proves the candidate still exists: the fresh blob stays for gc.
            log.warning(
                "orphan blob left for gc: %s (commit reusing duplicate %s failed: %s)",
                fresh_key,
                current.id,
                exc,
            )
            raise WorkNotCommitted(duplicate, exc) from exc
        return duplicate, result

    def _after_failed_commit(
        self, item: FileItem, blob: NewBlob, exc: Exception
    ) -> StoredFile | None:
        """What a failed commit means for the blob, which was written first.

        :func:`~docbinder.application.steps.blob_rules.look_up_after_failed_commit`:
        stored, the store succeeded; certainly absent, the blob is removed;
        unknown, the blob is left for ``gc``.
        """
        known, stored = self.look_up_after_failed_commit(item.id, item.blob_key, exc)
        if stored is not None:
            return StoredFile(stored, duplicate=False)
        if known:
            self.discard_new(blob)
        return None
