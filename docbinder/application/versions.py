"""Versions of a file name (feature row B1, ADR 0013).

A file name in a scope (and a namespace inside it, see
:class:`~docbinder.domain.model.VersionSeries`) can have several versions.
Each version is its own FileItem with its own blob, numbered 0, 1, 2, ... in
save order; saving identical bytes twice gives two versions (versioned saves
take no part in the duplicate check of SPEC C2, whose semantics for ordinary
stores are unchanged).

Numbering is race-free on every backend: a save reads the latest number
through the ``(series_key, version)`` index and inserts the next one; the
unique rule on that pair makes a concurrent save of the same number fail with
:class:`VersionTaken`, and the loser retries in a fresh transaction (the blob
is written once, before the first attempt). Reading the latest version and
saving the next one are index lookups whatever the number of versions.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.application.blob_rules import (
    blob_key_for,
    confirm_committed,
    detect_mime_type,
    discard_blob,
    release_blob,
)
from docbinder.application.closing import UnitOfWorkGate
from docbinder.application.hashing import FileData, HashingStream, HashWorkers
from docbinder.application.store_registration import StoreRegistration
from docbinder.domain.access import Action, ResourceKind
from docbinder.domain.errors import (
    AccessDenied,
    InvalidInput,
    StorageError,
    VersionTaken,
)
from docbinder.domain.model import FileItem, FileVersion, Principal, VersionSeries
from docbinder.ports.blobs import BlobReader, BlobStore
from docbinder.ports.extractor import MimeDetector
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_SAVE_ATTEMPTS = 1000
"""How many times a save retries after losing a version number to a concurrent save."""


WHOLE_READ_CHUNK = 64 << 20
"""Largest chunk (bytes) :meth:`FileVersions.read` asks a blob store for."""


@attrs.frozen
class StoredVersion:
    """A version and its FileItem (creation time, MIME type, size, blob)."""

    item: FileItem
    version: FileVersion

    @property
    def number(self) -> int:
        """The version number (0 for the first save)."""
        return self.version.version


class FileVersions:
    """Save, read, list and delete the versions of file names, behind the authorizer.

    A series lives in the principal's scope (``principal.scope``); the
    ``namespace`` argument picks a sub-space of it (``""`` by default).
    Versions the principal may not read (:meth:`AccessPolicy.can_read_file`)
    are treated as absent by every read. With a ``gate`` (the binder's
    :class:`~docbinder.application.closing.UnitOfWorkGate`), :meth:`open` and
    :meth:`read`, which open no unit of work, raise ``BinderClosed`` once it
    is closed, like every other method.
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
        *,
        registration: StoreRegistration,
        hash_workers: HashWorkers | None = None,
        gate: UnitOfWorkGate | None = None,
    ) -> None:
        self._uow = uow_factory
        self._gate = gate
        self._registration = registration
        self._read = read_uow_factory or uow_factory
        self._blobs = blobs
        self._access = access
        self._clock = clock
        self._ids = ids
        self._mime = mime
        self._max_size = max_size
        self._hash_workers = hash_workers

    def series(self, principal: Principal, name: str, namespace: str = "") -> VersionSeries:
        """The series of ``name`` in the principal's scope; :class:`InvalidInput` if malformed."""
        return VersionSeries(principal.scope, name, namespace)

    def save(
        self,
        principal: Principal,
        name: str,
        data: FileData,
        *,
        namespace: str = "",
        file_name: str | None = None,
        mime_type: str | None = None,
        user_metadata: dict[str, Any] | None = None,
        host_data: dict[str, Any] | None = None,
    ) -> StoredVersion:
        """Store ``data`` as the next version of ``name`` and return it with its number.

        Arguments and errors as :meth:`save_with` (without ``then``).
        """
        stored, _ = self.save_with(
            principal,
            name,
            data,
            namespace=namespace,
            file_name=file_name,
            mime_type=mime_type,
            user_metadata=user_metadata,
            host_data=host_data,
        )
        return stored

    def save_with(
        self,
        principal: Principal,
        name: str,
        data: FileData,
        *,
        namespace: str = "",
        file_name: str | None = None,
        mime_type: str | None = None,
        user_metadata: dict[str, Any] | None = None,
        host_data: dict[str, Any] | None = None,
        then: Callable[[UnitOfWork, StoredVersion], T] | None = None,
    ) -> tuple[StoredVersion, T | None]:
        """Store ``data`` as the next version of ``name``; return it and ``then``'s result.

        ``file_name`` (default ``name``) is the FileItem's file name.
        ``mime_type`` as in ``StoreFile`` (declared, else detected, else
        guessed). ``then(uow, stored)`` runs inside the recording
        transaction, like ``StoreFile.store_with``. Raises
        :class:`InvalidInput` (bad name, namespace or metadata),
        :class:`AccessDenied`, :class:`SizeLimitExceeded`,
        :class:`StorageError`; nothing is kept when it raises (a blob left
        by an interrupted commit is removed by ``gc``). After the commit the
        new blob is recorded as committed in the store (ADR 0031).
        """
        series = self.series(principal, name, namespace)
        user_metadata = dict(user_metadata or {})
        host_data = dict(host_data or {})
        # Validate the metadata before anything is written (the id is a placeholder).
        FileVersion("unsaved", series, 0, user_metadata, host_data)
        self._access.require_create(principal, ResourceKind.FILE, principal.scope)
        file_id = self._ids.new_id()
        key = blob_key_for(file_id)
        store_id = self._registration.ensure()
        stream = HashingStream(data, self._max_size, self._hash_workers)
        self._blobs.put(key, stream)
        item = FileItem(
            id=file_id,
            file_name=file_name if file_name is not None else name,
            mime_type=self._detect(stream.head, file_name or name, mime_type),
            size=stream.size,
            sha256=stream.sha256,
            created_by=principal.user_id,
            scope=principal.scope,
            created_at=self._clock.now(),
            blob_key=key,
            blob_store=store_id,
        )
        committing = False
        try:
            for _attempt in range(MAX_SAVE_ATTEMPTS):
                with self._uow() as uow:
                    latest = uow.files.latest_version(series.key)
                    number = 0 if latest is None else latest.version + 1
                    version = FileVersion(file_id, series, number, user_metadata, host_data)
                    uow.files.add(item, deduplicate=False)
                    try:
                        uow.files.add_version(version)
                    except VersionTaken:
                        uow.rollback()
                        continue
                    stored = StoredVersion(item, version)
                    result = then(uow, stored) if then is not None else None
                    committing = True
                    uow.commit()
                confirm_committed(self._blobs, key)  # after the commit, outside the unit (ADR 0031)
                log.info(
                    "saved version %d of %r (file %s, %d bytes) for user %s in scope %s",
                    number,
                    name,
                    file_id,
                    item.size,
                    principal.user_id,
                    principal.scope,
                )
                return stored, result
            raise StorageError(
                f"could not number a version of {name!r}: "
                f"{MAX_SAVE_ATTEMPTS} concurrent saves took every number first"
            )
        except Exception as exc:
            if committing:
                outcome = self._stored_anyway(file_id, exc)
                if outcome is True:
                    confirm_committed(self._blobs, key)
                    return stored, result
                if outcome is None:
                    raise  # unknown: the blob stays for gc
            self._discard_blob(key)
            raise
        except BaseException:
            if committing:
                log.warning("orphan blob left for gc: %s (commit interrupted)", key)
            else:
                self._discard_blob(key)
            raise

    def latest(self, principal: Principal, name: str, namespace: str = "") -> StoredVersion | None:
        """The highest-numbered version the principal may read, or ``None``."""
        series = self.series(principal, name, namespace)
        with self._read() as uow:
            version = uow.files.latest_version(series.key)
            return self._readable(uow, principal, version)

    def get(
        self, principal: Principal, name: str, number: int, namespace: str = ""
    ) -> StoredVersion | None:
        """Version ``number`` if it exists and the principal may read it, else ``None``."""
        series = self.series(principal, name, namespace)
        if isinstance(number, bool) or not isinstance(number, int):
            raise InvalidInput(f"a version number must be a whole number, got {number!r}")
        if number < 0:
            return None
        with self._read() as uow:
            return self._readable(uow, principal, uow.files.get_version(series.key, number))

    def list(self, principal: Principal, name: str, namespace: str = "") -> list[StoredVersion]:
        """Every readable version of ``name``, lowest number first."""
        series = self.series(principal, name, namespace)
        with self._read() as uow:
            versions = uow.files.list_versions(series.key)
            items = uow.files.get_many([v.file_id for v in versions])
        return [
            StoredVersion(items[v.file_id], v)
            for v in versions
            if v.file_id in items and self._access.can_read_file(principal, items[v.file_id])
        ]

    def names(self, principal: Principal, namespace: str = "") -> builtins.list[str]:
        """Names with at least one readable version in (principal's scope, ``namespace``), sorted."""
        return [s.version.series.name for s in self.latest_of_each(principal, namespace)]

    def latest_of_each(
        self, principal: Principal, namespace: str = ""
    ) -> builtins.list[StoredVersion]:
        """The latest readable version of every name in (principal's scope, ``namespace``).

        Sorted by name (code point order); names without a readable version
        are left out. One index lookup per name.
        """
        space = self.series(principal, "probe", namespace).space_key
        found: builtins.list[StoredVersion] = []
        with self._read() as uow:
            for name in uow.files.series_names(space):
                key = VersionSeries(principal.scope, name, namespace).key
                stored = self._readable(uow, principal, uow.files.latest_version(key))
                if stored is not None:
                    found.append(stored)
        return found

    def open(
        self, principal: Principal, stored: StoredVersion, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """The bytes of a version as a :class:`BlobReader` of at most ``chunk_size`` bytes a chunk.

        Use it in a ``with`` block so the stream is closed however reading ends.

        Raises :class:`AccessDenied` if the principal may not read it,
        :class:`BlobMissing` if its blob is gone, ``BinderClosed`` after the
        binder's close.
        """
        if self._gate is not None:
            self._gate.require_open()  # the one read that opens no unit of work
        if not self._access.can_read_file(principal, stored.item):
            raise AccessDenied(f"user {principal.user_id} may not read file {stored.item.id}")
        return self._blobs.open(stored.item.blob_key, chunk_size)

    def read(self, principal: Principal, stored: StoredVersion) -> bytes:
        """The whole bytes of a version, in memory (for what a host holds in memory anyway).

        Asks the blob store for one chunk of the file's size (at most
        :data:`WHOLE_READ_CHUNK` bytes per chunk), so a file is not copied
        again to join its chunks. Errors as :meth:`open`.
        """
        chunk = max(1, min(stored.item.size, WHOLE_READ_CHUNK))
        with self.open(principal, stored, chunk) as chunks:
            return b"".join(chunks)

    def delete(self, principal: Principal, name: str, namespace: str = "") -> int:
        """Delete every version of ``name`` (metadata first, then blobs); return how many.

        All versions go in one transaction. Raises :class:`AccessDenied` if
        the principal may read a version but not delete it (then none is
        deleted); versions it cannot read count as absent and stay.
        """
        versions = self.list(principal, name, namespace)
        for stored in versions:
            if not self._access.can_on_file(principal, Action.DELETE, stored.item):
                raise AccessDenied(f"user {principal.user_id} may not delete file {stored.item.id}")
        if not versions:
            return 0
        with self._uow() as uow:
            for stored in versions:
                uow.files.delete(stored.item.id, if_blob_key=stored.item.blob_key)
            database_id = uow.files.database_id()
            locations = uow.files.store_locations()
            uow.commit()
        for stored in versions:
            release_blob(self._blobs, stored.item.blob_key, database_id, locations)
        log.info("deleted %d version(s) of %r by user %s", len(versions), name, principal.user_id)
        return len(versions)

    def _readable(
        self, uow: UnitOfWork, principal: Principal, version: FileVersion | None
    ) -> StoredVersion | None:
        if version is None:
            return None
        item = uow.files.get(version.file_id)
        if item is None or not self._access.can_read_file(principal, item):
            return None
        return StoredVersion(item, version)

    def _stored_anyway(self, file_id: str, exc: Exception) -> bool | None:
        """After a failed commit: is the FileItem there? ``None`` if that cannot be told.

        A commit can take effect and still report a fault, so the blob is
        removed only when the FileItem is certainly absent (``False``).
        """
        try:
            with self._uow() as uow:
                found = uow.files.get(file_id) is not None
        except Exception as lookup_exc:
            log.warning(
                "orphan blob may be left for gc: commit of version file %s failed (%s); "
                "could not check whether it was stored (%s)",
                file_id,
                exc,
                lookup_exc,
            )
            return None
        if found:
            log.warning(
                "commit of version file %s reported a fault (%s) but it was stored; keeping it",
                file_id,
                exc,
            )
        return found

    def _detect(self, head: bytes, file_name: str, declared: str | None) -> str:
        return detect_mime_type(self._mime, head, file_name, declared)

    def _discard_blob(self, key: str) -> None:
        discard_blob(self._blobs, key)
