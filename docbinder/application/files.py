"""FileItem use cases: store (C1), duplicate check (C2), get, read, list, delete."""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO, Generic, TypeVar

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.application.paging import visible_newest_first
from docbinder.domain.access import Action, ResourceKind
from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    DuplicateFileItem,
    FileItemNotFound,
    FileStillReferenced,
    InvalidInput,
    SizeLimitExceeded,
    StorageError,
)
from docbinder.domain.model import FileItem, Principal, check_file_metadata, check_file_name
from docbinder.ports.blobs import BlobReader, BlobStore, Chunks, check_blob_key, iter_chunks
from docbinder.ports.extractor import SNIFF_BYTES, MimeDetector
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

T = TypeVar("T")

FileData = Chunks | BinaryIO | bytes
"""What a producer may hand over: bytes, an iterable of byte chunks, or a binary file object."""


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


OVERLAP_MIN_BYTES = 256 * 1024
"""Chunks at least this long (bytes) are hashed on a worker thread while the consumer writes them."""

_hash_workers: ThreadPoolExecutor | None = None
_hash_workers_lock = threading.Lock()


def _forget_hash_pool() -> None:
    # A forked child inherits the pool object but not its threads: start afresh.
    global _hash_workers, _hash_workers_lock
    _hash_workers = None
    _hash_workers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_hash_pool)


def _hash_pool() -> ThreadPoolExecutor:
    global _hash_workers
    with _hash_workers_lock:
        if _hash_workers is None:
            _hash_workers = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 2, thread_name_prefix="docbinder-sha256"
            )
        return _hash_workers


def _submit_hash(update: Callable[[bytes], None], chunk: bytes) -> Future[None] | None:
    """Hash ``chunk`` on the worker pool; ``None`` if the pool takes no more work.

    During interpreter shutdown (a late thread, an ``atexit`` handler) the pool
    refuses new tasks with ``RuntimeError``; the caller then hashes inline.
    """
    try:
        return _hash_pool().submit(update, chunk)
    except RuntimeError:
        return None


class HashingStream:
    """Wraps a chunk stream: counts bytes, computes SHA-256, keeps the head, enforces a limit.

    ``max_size`` is in bytes (``None`` for no limit); exceeding it raises
    :class:`SizeLimitExceeded` from inside the iteration, so the blob store
    aborts the write and keeps nothing.

    A chunk of at least :data:`OVERLAP_MIN_BYTES` is hashed on a worker
    thread while the consumer writes it (``hashlib`` and ``os.write`` both
    release the GIL), so large files cost about the longer of the two instead
    of their sum; chunks are still hashed one after the other, in order.
    """

    def __init__(self, data: FileData, max_size: int | None = None) -> None:
        self._chunks = iter_chunks(data)
        self._max = max_size
        self._hash = hashlib.sha256()
        self._pending: Future[None] | None = None
        self.size = 0
        self.head = b""

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._chunks:
                self.size += len(chunk)
                if self._max is not None and self.size > self._max:
                    raise SizeLimitExceeded(self._max)
                if len(self.head) < SNIFF_BYTES:
                    self.head += chunk[: SNIFF_BYTES - len(self.head)]
                self._settle()
                if len(chunk) >= OVERLAP_MIN_BYTES:
                    self._pending = _submit_hash(self._hash.update, chunk)
                if self._pending is None:
                    self._hash.update(chunk)
                yield chunk
        finally:
            self._settle()

    def _settle(self) -> None:
        """Wait for the chunk being hashed on the worker thread, if any."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of everything iterated so far."""
        self._settle()
        return self._hash.hexdigest()


class WorkNotCommitted(StorageError):
    """The file is stored (an existing duplicate) but the caller's extra work was not committed.

    Raised by :meth:`StoreFile.store_with` when the transaction that held only
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
    """Result of :class:`StoreFile`: the FileItem and whether it was an existing duplicate."""

    item: FileItem
    duplicate: bool


@attrs.frozen
class DuplicateCheck:
    """Result of :class:`CheckDuplicate`.

    ``item`` is a readable duplicate or ``None``; ``key_taken`` says a
    candidate exists that the caller cannot read (a ghost duplicate), so a
    fresh copy must be stored outside duplicate detection.
    """

    item: FileItem | None
    key_taken: bool


class CheckDuplicate:
    """The duplicate check that respects access (SPEC C2, the ghost-duplicate fix).

    Candidates match SHA-256 + file name + creator + the caller's scope
    exactly (feature instance when the caller has one, else the mandate). A
    candidate counts only if the caller can read it through
    :meth:`AccessPolicy.can_read_file`, the same decision :class:`GetFile` uses,
    and, when a blob store is given, only if its blob is still there: a
    duplicate whose bytes are gone would hand back a FileItem that cannot be
    read, so a fresh copy is stored instead.

    The blob store is asked only after the unit of work that read the
    candidates has ended, so no transaction (and on SQLite no write lock)
    ever waits on the blob store's network. The answer is a snapshot: a
    caller that reuses the candidate confirms it inside its own writing unit
    (:meth:`~docbinder.ports.metadata.FileRepository.confirm`).
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, access: AccessPolicy, blobs: BlobStore | None = None
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._blobs = blobs

    def __call__(self, principal: Principal, sha256: str, file_name: str) -> DuplicateCheck:
        """Look up a readable duplicate of (``sha256``, ``file_name``) for ``principal``."""
        with self._uow() as uow:
            candidates = uow.files.find_duplicates(
                sha256, file_name, principal.user_id, principal.scope
            )
        return self.choose(principal, file_name, candidates)

    def choose(
        self, principal: Principal, file_name: str, candidates: list[FileItem]
    ) -> DuplicateCheck:
        """The first readable candidate whose blob is there; call it outside any unit of work.

        ``candidates`` come from
        :meth:`~docbinder.ports.metadata.FileRepository.find_duplicates`; the
        blob store is asked about each readable one, so no transaction may be
        open while this runs (ADR 0012).
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


class StoreRegistration:
    """Makes sure, once per process, that the blob store knows its identity and this database.

    :meth:`ensure` returns the store's identity (made on first use) and
    registers the metadata database's identity in the store, so that ``gc``
    run from another database sharing the store knows these blobs are not
    its orphans. Blob-store calls happen outside any unit of work; the
    database identity is read in a reading unit, and made in a writing unit
    only the first time ever.
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, read_uow_factory: UnitOfWorkFactory, blobs: BlobStore
    ) -> None:
        self._uow = uow_factory
        self._read = read_uow_factory
        self._blobs = blobs
        self._lock = threading.Lock()
        self._registered = False

    def ensure(self) -> str | None:
        """The store's identity, after this database was registered in the store.

        Raises :class:`StorageError` when the store or the database fails.
        """
        store_id = self._blobs.identity(create=True)
        if self._registered:
            return store_id
        with self._lock:
            if not self._registered:
                with self._read() as uow:
                    database_id = uow.files.database_id()
                if database_id is None:
                    with self._uow() as uow:
                        database_id = uow.files.database_id(create=True)
                        uow.commit()
                if database_id is not None:
                    self._blobs.register_database(database_id)
                self._registered = True
        return store_id


_STORE_ATTEMPTS = 4
"""Rounds of check-then-commit a store tries while concurrent writers keep changing the candidate."""


class StoreFile:
    """Store a produced file: blob first, then the FileItem (SPEC C1, section 5).

    Streams the input once, computing SHA-256 and size while the blob is
    written. Then one writing unit looks for duplicate candidates and, when
    there are none (the usual case), inserts the FileItem and commits. When
    there are, that unit ends, the candidates are checked (access, and the
    blob store is probed) outside any transaction, and a second writing unit
    either confirms (locks) the readable duplicate and commits, after which
    the new blob is removed, or inserts the FileItem and commits; a duplicate deleted or
    changed between check and commit is noticed by the confirm and the check
    runs again, so the returned FileItem always exists with the produced bytes; :meth:`store_with` lets a caller add its own writes (the attach of
    :class:`~docbinder.application.produce.ProduceFile`) to that same
    transaction. If the metadata write fails the blob is removed again (or,
    if that fails too, left for ``gc`` with a log line). If the commit fails,
    the FileItem is looked up again, because a commit can take effect and
    still report a fault: found, the store succeeded; not found, the blob is
    removed; unknown, the blob is left for ``gc``. A FileItem never names a
    missing blob.
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
        read_uow_factory: UnitOfWorkFactory | None = None,
    ) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access
        self._clock = clock
        self._ids = ids
        self._mime = mime
        self._max_size = max_size
        self._check = CheckDuplicate(read_uow_factory or uow_factory, access, blobs)
        self.registration = StoreRegistration(uow_factory, read_uow_factory or uow_factory, blobs)

    def __call__(
        self,
        principal: Principal,
        file_name: str,
        data: FileData,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
    ) -> StoredFile:
        """Store ``data`` as ``file_name`` for ``principal`` in its scope.

        Raises :class:`InvalidInput` (bad name, folder or tags, see
        :func:`~docbinder.domain.model.check_text_field`; checked before any blob is
        written), :class:`AccessDenied` (no
        ``create`` right), :class:`SizeLimitExceeded` (input over ``max_size``
        bytes; nothing kept), :class:`StorageError` (backend fault; nothing
        kept, except a blob no FileItem names when the outcome of the commit
        could not be established: ``gc`` removes it).
        """
        stored, _ = self.store_with(
            principal, file_name, data, None, mime_type=mime_type, folder=folder, tags=tags
        )
        return stored

    def store_with(
        self,
        principal: Principal,
        file_name: str,
        data: FileData,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
    ) -> tuple[StoredFile, T | None]:
        """Store like :meth:`__call__`, running ``then(uow, item)`` in the recording transaction.

        ``then`` gets the open unit of work and the FileItem (the new one
        after its insert, or the readable duplicate) before the single
        commit, so whatever it writes commits or rolls back together with the
        FileItem. Its return value comes back next to the :class:`StoredFile`
        (``None`` when ``then`` is ``None``). An exception from ``then`` fails
        the store as a storage fault would (nothing kept); a caller that wants
        the file stored anyway catches inside ``then``. When a readable
        duplicate was found, the commit holds only ``then``'s writes: if it
        fails, :class:`WorkNotCommitted` (a :class:`StorageError`) carries the
        duplicate, which exists regardless. Errors as :meth:`__call__`.
        """
        check_file_name(file_name)
        folder, tags = check_file_metadata(folder, tags)
        self._access.require_create(principal, ResourceKind.FILE, principal.scope)
        file_id = self._ids.new_id()
        key = blob_key_for(file_id)
        store_id = self.registration.ensure()
        stream = HashingStream(data, self._max_size)
        self._blobs.put(key, stream)
        pending: _Pending[T] = _Pending()
        try:
            return self._record(
                principal,
                file_id,
                key,
                store_id,
                file_name,
                stream,
                mime_type,
                folder,
                tags,
                then,
                pending,
            )
        except WorkNotCommitted:
            raise  # the fresh blob was kept on purpose (see _reuse)
        except Exception as exc:
            if pending.item is not None:
                recovered = self._after_failed_commit(pending.item, exc)
                if recovered is not None:
                    return recovered, pending.result
                raise
            self._discard_blob(key)
            raise
        except BaseException:
            if pending.item is not None:
                # Interrupted while committing: the row may exist, so the blob stays.
                log.warning("orphan blob left for gc: %s (commit interrupted)", key)
                raise
            self._discard_blob(key)
            raise

    def _record(
        self,
        principal: Principal,
        file_id: str,
        key: str,
        store_id: str | None,
        file_name: str,
        stream: HashingStream,
        mime_type: str | None,
        folder: str | None,
        tags: tuple[str, ...],
        then: Callable[[UnitOfWork, FileItem], T] | None,
        pending: _Pending[T],
    ) -> tuple[StoredFile, T | None]:
        sha = stream.sha256
        item = FileItem(
            id=file_id,
            file_name=file_name,
            mime_type=self._detect(stream.head, file_name, mime_type),
            size=stream.size,
            sha256=sha,
            created_by=principal.user_id,
            scope=principal.scope,
            created_at=self._clock.now(),
            blob_key=key,
            folder=folder,
            tags=tags,
            blob_store=store_id,
        )
        lost_race = False
        for _attempt in range(_STORE_ATTEMPTS):
            # Candidates are looked up in the writing unit itself. Without any
            # (the usual case) the FileItem goes into that same unit; with some,
            # the unit ends before the blob store is asked about them (no
            # writing unit waits on the blob store), and a second unit reuses
            # the chosen duplicate or stores the fresh copy.
            with self._uow() as uow:
                candidates = uow.files.find_duplicates(
                    sha, file_name, principal.user_id, principal.scope
                )
                # After a lost race for the duplicate key whose winner is gone
                # again, store outside duplicate detection.
                if not candidates and not self._insert(uow, item, not lost_race, then, pending):
                    lost_race = True
                    continue
            if candidates:
                check = self._check.choose(principal, file_name, candidates)
                reused: tuple[StoredFile, T | None] | None = None
                with self._uow() as uow:
                    if check.item is not None:
                        reused = self._reuse(uow, principal, check.item, key, then)
                    elif not self._insert(
                        uow, item, not lost_race and not check.key_taken, then, pending
                    ):
                        lost_race = True
                        continue
                if check.item is not None:
                    if reused is None:
                        continue  # the candidate was deleted or changed: look again
                    # The commit proved the candidate is there: only now does the fresh
                    # copy go (outside the transaction, like every blob-store call).
                    self._discard_blob(key)
                    return reused
            if log.isEnabledFor(logging.INFO):
                log.info(
                    "stored file %s (%s, %d bytes) for user %s in scope %s",
                    item.id,
                    item.file_name,
                    item.size,
                    item.created_by,
                    item.scope,
                )
            return StoredFile(item, duplicate=False), pending.result
        raise StorageError(
            f"could not store {file_name!r}: its duplicate kept changing under "
            f"{_STORE_ATTEMPTS} attempts; nothing was stored"
        )

    @staticmethod
    def _insert(
        uow: UnitOfWork,
        item: FileItem,
        deduplicate: bool,
        then: Callable[[UnitOfWork, FileItem], T] | None,
        pending: _Pending[T],
    ) -> bool:
        """Insert ``item``, run ``then`` and commit in ``uow``; ``False`` after a lost race.

        A lost race is another writer storing the same file (same duplicate
        key) since the candidates were read: the unit is rolled back and the
        caller looks again in a fresh one, using theirs if readable.
        """
        try:
            uow.files.add(item, deduplicate=deduplicate)
        except DuplicateFileItem:
            uow.rollback()
            return False
        if then is not None:
            pending.result = then(uow, item)
        pending.item = item
        uow.commit()
        return True

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

    def _after_failed_commit(self, item: FileItem, exc: Exception) -> StoredFile | None:
        """Decide what a failed commit means for the blob, which was written first.

        A commit can fail after the database made it durable (the connection
        drops before the answer arrives), so the FileItem is looked up again
        in a fresh unit of work: if it is there, the store succeeded and the
        blob must stay; if it is not, the blob is removed; if the lookup fails
        too, the outcome is unknown and the blob is left for ``gc`` (a blob no
        FileItem names is found by ``gc``; a FileItem without its blob would
        be lost data).
        """
        try:
            with self._uow() as uow:
                stored = uow.files.get(item.id)
        except Exception as lookup_exc:
            log.warning(
                "orphan blob left for gc: %s (commit of file %s failed: %s; "
                "could not check whether it was stored: %s)",
                item.blob_key,
                item.id,
                exc,
                lookup_exc,
            )
            return None
        if stored is None:
            self._discard_blob(item.blob_key)
            return None
        log.warning(
            "commit of file %s reported a fault (%s) but the FileItem was stored; keeping it",
            item.id,
            exc,
        )
        return StoredFile(stored, duplicate=False)

    def _detect(self, head: bytes, file_name: str, declared: str | None) -> str:
        return detect_mime_type(self._mime, head, file_name, declared)

    def _discard_blob(self, key: str) -> None:
        discard_blob(self._blobs, key)


class GetFile:
    """Read access to FileItems: metadata and bytes, behind the one visibility decision."""

    def __init__(
        self, uow_factory: UnitOfWorkFactory, blobs: BlobStore, access: AccessPolicy
    ) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access

    def __call__(self, principal: Principal, file_id: str) -> FileItem:
        """The FileItem; :class:`FileItemNotFound` if absent or not readable (same message)."""
        with self._uow() as uow:
            item = uow.files.get(file_id)
        if item is None or not self._access.can_read_file(principal, item):
            raise FileItemNotFound(f"file {file_id} not found")
        return item

    def open(self, principal: Principal, file_id: str, chunk_size: int = 1 << 20) -> BlobReader:
        """The file's bytes as a :class:`BlobReader`: use it in a ``with`` block.

        Raises :class:`FileItemNotFound` (absent or not readable) and
        :class:`BlobMissing` at call time.
        """
        item = self(principal, file_id)
        return self._blobs.open(item.blob_key, chunk_size)

    def list(self, principal: Principal, *, limit: int | None = None) -> list[FileItem]:
        """FileItems of the principal's mandate it may read, newest first, at most ``limit``.

        Raises :class:`InvalidInput` for a negative ``limit``.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(f"limit must be a non-negative whole number, got {limit!r}")

        def fetch(size: int, after: FileItem | None) -> list[FileItem]:
            with self._uow() as uow:
                return uow.files.list(principal.mandate_id, limit=size, after=after)

        return visible_newest_first(
            fetch, lambda item: self._access.can_read_file(principal, item), limit
        )


class DeleteFile:
    """Delete a FileItem and its blob: metadata first, then the blob.

    Each FileItem owns its blob, so removing one never removes bytes another
    FileItem needs (SPEC C2). A blob that cannot be removed is left for ``gc``.
    A FileItem that ChatDocuments refer to is deleted only with ``force``:
    those documents stay in their workflows and resolve as ``file_missing``
    (ADR 0012).
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, blobs: BlobStore, access: AccessPolicy
    ) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access
        self._get = GetFile(uow_factory, blobs, access)

    def references(self, principal: Principal, file_id: str) -> int:
        """How many ChatDocuments (in any workflow) point at the readable FileItem ``file_id``.

        Raises :class:`FileItemNotFound` if it is absent or not readable.
        """
        item = self._get(principal, file_id)
        with self._uow() as uow:
            return uow.workflows.count_documents_for_file(item.id)

    def __call__(self, principal: Principal, file_id: str, *, force: bool = False) -> FileItem:
        """Delete and return the FileItem.

        Raises :class:`FileItemNotFound`, :class:`AccessDenied`, and
        :class:`~docbinder.domain.errors.FileStillReferenced` (with the number
        of referring documents; nothing deleted) when documents refer to the
        file and ``force`` is false. The count and the delete are one unit of
        work.
        """
        item = self._get(principal, file_id)
        if not self._access.can_on_file(principal, Action.DELETE, item):
            raise AccessDenied(f"user {principal.user_id} may not delete file {file_id}")
        with self._uow() as uow:
            references = uow.workflows.count_documents_for_file(item.id)
            if references and not force:
                raise FileStillReferenced(item.id, references)
            if not uow.files.delete(item.id):
                raise FileItemNotFound(f"file {file_id} not found")
            uow.commit()
        try:
            self._blobs.delete(item.blob_key)
        except StorageError as exc:
            log.warning("orphan blob left for gc: %s could not be removed (%s)", item.blob_key, exc)
        log.info(
            "deleted file %s (%s) by user %s%s",
            item.id,
            item.file_name,
            principal.user_id,
            f"; {references} document(s) now resolve as file_missing" if references else "",
        )
        return item
