"""In-memory metadata store: the repositories of every role and a unit of work over plain dicts.

Isolation: writes apply to the shared store at once (under a lock) and are
recorded in an undo log; leaving the unit without ``commit()`` replays the log
backwards. Other threads may therefore see uncommitted writes (read
uncommitted); uniqueness rules hold at every moment. Good enough for tests and
``memory://``; the SQL adapter gives real transactions. The one exception are
FileItem locks (``lock``, ``lock_shared``, ``confirm``): they are held until
the unit ends, as row locks are in SQL, and a conflicting one waits.
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import TypeVar

import attrs

from docbinder.domain.access import Resource
from docbinder.domain.audit import GENESIS_HASH, HEADLESS, READ_ACTIONS, AuditEvent
from docbinder.domain.counters import CounterStep, WorkflowCounters
from docbinder.domain.errors import (
    Conflict,
    DuplicateFileItem,
    DuplicateLabel,
    FileItemNotFound,
    InvalidInput,
    StorageError,
    VersionTaken,
    WorkflowNotFound,
)
from docbinder.domain.governance import (
    HoldKind,
    LegalHold,
    Quota,
    RetentionBasis,
    RetentionPolicy,
    quota_scopes,
)
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    FileVersion,
    Scope,
    duplicate_key,
)
from docbinder.domain.providers import CopyState, ProviderCopy, ProviderCopyKey
from docbinder.ports.metadata import CLAIM_TOKENS_KEPT, InlineBlobInfo, store_location_key

LOCK_WAIT_SECONDS = 60.0
"""How long a memory unit waits for another unit's FileItem lock (seconds) before
:class:`StorageError` (the SQL servers have their own lock wait timeouts)."""


class _Holds:
    """The FileItem locks one memory unit of work holds until it ends."""

    def __init__(self) -> None:
        self.exclusive: set[str] = set()
        self.shared: set[str] = set()


class MemoryMetadataStore:
    """The shared state of all memory units of work; one per ``memory://`` binder."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.released = threading.Condition(self.lock)
        self.exclusive: dict[str, _Holds] = {}
        self.shared: dict[str, set[_Holds]] = defaultdict(set)
        self.lock_waits = 0
        """Units waiting for a FileItem lock right now (a diagnostic)."""
        self.files: dict[str, FileItem] = {}
        self.dedup: dict[str, str] = {}
        self.dedup_of: dict[str, str] = {}
        self.workflows: dict[str, ChatWorkflow] = {}
        self.messages: dict[str, list[ChatMessage]] = defaultdict(list)
        self.documents: dict[str, ChatDocument] = {}
        self.message_ids: set[str] = set()
        self.labels: dict[tuple[str, str], ChatMessage] = {}
        self.by_file: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.doc_order: dict[str, list[str]] = defaultdict(list)
        self.marks: dict[str, tuple[str, datetime]] = {}
        self.database_id: str | None = None
        self.database_location: str | None = None
        """Where :attr:`database_id` was made: ``id()`` of this object (a copy is another one)."""
        self.former_database_ids: set[str] = set()
        self.database_claims: tuple[str, ...] = ()
        """Claim tokens, newest first (ADR 0075)."""
        self.store_locations: dict[str, str] = {}
        """:func:`~docbinder.ports.metadata.store_location_key` -> recorded location (ADR 0030)."""
        self.versions: dict[str, dict[int, FileVersion]] = defaultdict(dict)
        self.version_of: dict[str, FileVersion] = {}
        self.latest_number: dict[str, int] = {}
        self.space_names: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.quotas: dict[Scope, Quota] = {}
        self.inline: dict[str, _Inline] = {}
        """Inline blobs by key (ADR 0110)."""
        """Quotas by their exact scope, with their usage (B12)."""
        self.audit: list[AuditEvent] = []
        """The audit log, by ``seq`` (B11)."""
        self.audit_head: tuple[int, str] | None = None
        self.policies: dict[Scope, RetentionPolicy] = {}
        self.holds: dict[tuple[HoldKind, str], LegalHold] = {}
        self.provider_copies: dict[ProviderCopyKey, ProviderCopy] = {}
        """FileItems' copies at model providers, by their key (B22)."""
        self.audit_anchor: tuple[int, str] | None = None

    def charge(
        self,
        undo: _Undo,
        scope: Scope,
        size: int,
        files: int,
        *,
        check: bool,
        file_size: int | None = None,
    ) -> None:
        """Add ``size`` bytes and ``files`` FileItems to the quotas ``scope`` counts against.

        With ``check`` each is checked first (:class:`QuotaExceeded`, nothing
        changed; ``file_size`` as for :meth:`Quota.check_add`). Caller holds
        the lock; the change is pushed on ``undo``.
        """
        found = [self.quotas[q] for q in quota_scopes(scope) if q in self.quotas]
        if not found:
            return
        if check:
            for quota in found:
                quota.check_add(size, files, file_size=file_size)
        for quota in found:
            self.quotas[quota.scope] = quota.charged(size, files)

        def back() -> None:
            for quota in found:
                current = self.quotas.get(quota.scope)
                if current is not None:
                    self.quotas[quota.scope] = current.charged(-size, -files)

        undo.push(back)

    def link_version(self, version: FileVersion) -> None:
        """Index ``version`` (caller holds the lock): by series, by FileItem, latest, names."""
        key = version.series.key
        self.versions[key][version.version] = version
        self.version_of[version.file_id] = version
        if version.version > self.latest_number.get(key, -1):
            self.latest_number[key] = version.version
        self.space_names[version.series.space_key][version.series.name] += 1

    def unlink_version(self, version: FileVersion) -> None:
        """Remove ``version`` from every index (caller holds the lock)."""
        key = version.series.key
        series = self.versions[key]
        series.pop(version.version, None)
        self.version_of.pop(version.file_id, None)
        if self.latest_number.get(key) == version.version:
            if series:
                self.latest_number[key] = max(series)
            else:
                self.latest_number.pop(key, None)
        names = self.space_names[version.series.space_key]
        names[version.series.name] -= 1
        if names[version.series.name] <= 0:
            del names[version.series.name]

    def wait_for_files(self, holds: _Holds, file_ids: Sequence[str], *, exclusive: bool) -> None:
        """Wait (caller holds the lock) until no other unit's hold conflicts with ``file_ids``.

        An exclusive request conflicts with any hold of another unit, a shared
        one only with another unit's exclusive hold. Raises
        :class:`StorageError` after :data:`LOCK_WAIT_SECONDS`.
        """

        def free() -> bool:
            for file_id in file_ids:
                if self.exclusive.get(file_id, holds) is not holds:
                    return False
                if exclusive and self.shared.get(file_id, set()) - {holds}:
                    return False
            return True

        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while not free():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StorageError(
                    f"waited {LOCK_WAIT_SECONDS:g} s for another unit of work's lock on a FileItem"
                )
            self.lock_waits += 1
            try:
                self.released.wait(remaining)
            finally:
                self.lock_waits -= 1

    def release(self, holds: _Holds) -> None:
        """Drop every FileItem lock of ``holds`` and wake the units waiting for one."""
        with self.lock:
            if not (holds.exclusive or holds.shared):
                return
            for file_id in holds.exclusive:
                self.exclusive.pop(file_id, None)
            for file_id in holds.shared:
                holders = self.shared.get(file_id)
                if holders is not None:
                    holders.discard(holds)
                    if not holders:
                        del self.shared[file_id]
            holds.exclusive.clear()
            holds.shared.clear()
            self.released.notify_all()

    def unit_of_work(self) -> MemoryUnitOfWork:
        """A fresh unit of work over this store (the ``UnitOfWorkFactory``)."""
        return MemoryUnitOfWork(self)


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise InvalidInput("limit must be 0 or more")


_Listed = TypeVar("_Listed", FileItem, ChatWorkflow)


def _newest_first_page(
    items: list[_Listed], limit: int | None, after: _Listed | None
) -> list[_Listed]:
    """``items`` newest first by (``created_at``, id), behind ``after``, at most ``limit``."""
    _check_limit(limit)
    if after is not None:
        mark = (after.created_at, after.id)
        items = [i for i in items if (i.created_at, i.id) < mark]
    items.sort(key=lambda i: (i.created_at, i.id), reverse=True)
    return items if limit is None else items[:limit]


class _Undo:
    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []

    def push(self, step: Callable[[], None]) -> None:
        self.steps.append(step)

    def replay(self) -> None:
        while self.steps:
            self.steps.pop()()

    def clear(self) -> None:
        self.steps.clear()


class MemoryFileRepository:
    """:class:`~docbinder.ports.metadata.FileRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo, holds: _Holds) -> None:
        self._s = store
        self._undo = undo
        self._holds = holds

    def add(self, item: FileItem, *, deduplicate: bool = True) -> None:
        s = self._s
        key = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
        with s.lock:
            if item.id in s.files:
                raise Conflict(f"a FileItem with id {item.id} already exists")
            if deduplicate and key in s.dedup:
                raise DuplicateFileItem(
                    "a FileItem with the same bytes, name, creator and scope exists"
                )
            s.charge(self._undo, item.scope, item.size, 1, check=True)
            s.files[item.id] = item
            if deduplicate:
                s.dedup[key] = item.id
                s.dedup_of[item.id] = key

            def undo() -> None:
                s.files.pop(item.id, None)
                if s.dedup_of.pop(item.id, None) is not None:
                    s.dedup.pop(key, None)

            self._undo.push(undo)

    def get(self, file_id: str) -> FileItem | None:
        return self._s.files.get(file_id)

    def get_many(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        files = self._s.files
        with self._s.lock:
            return {i: files[i] for i in dict.fromkeys(file_ids) if i in files}

    def find_duplicates(
        self, sha256: str, file_name: str, created_by: str, scope: Scope
    ) -> list[FileItem]:
        s = self._s
        key = duplicate_key(sha256, file_name, created_by, scope)
        with s.lock:
            found = [s.files[s.dedup[key]]] if key in s.dedup else []
            # Items stored without deduplication never match (SPEC C2: not readable by the caller
            # when they were made), so only the indexed key is consulted.
            return found

    def update(self, item: FileItem, *, if_blob_key: str | None = None) -> None:
        s = self._s
        with s.lock:
            old = s.files.get(item.id)
            if old is None:
                raise FileItemNotFound(f"no FileItem {item.id}")
            if if_blob_key is not None and old.blob_key != if_blob_key:
                raise Conflict(f"FileItem {item.id} no longer names blob {if_blob_key}")
            old_key = s.dedup_of.get(item.id)
            new_key = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
            if old_key is not None and new_key != old_key and new_key in s.dedup:
                raise DuplicateFileItem("the update would duplicate another FileItem")
            if item.size != old.size:
                s.charge(
                    self._undo,
                    old.scope,
                    item.size - old.size,
                    0,
                    check=item.size > old.size,
                    file_size=item.size,
                )
            if old_key is not None and new_key != old_key:
                s.dedup.pop(old_key, None)
                s.dedup[new_key] = item.id
                s.dedup_of[item.id] = new_key
            s.files[item.id] = item

            def undo() -> None:
                s.files[item.id] = old
                if old_key is not None and new_key != old_key:
                    s.dedup.pop(new_key, None)
                    s.dedup[old_key] = item.id
                    s.dedup_of[item.id] = old_key

            self._undo.push(undo)

    def delete(self, file_id: str, *, if_blob_key: str | None = None) -> bool:
        s = self._s
        with s.lock:
            current = s.files.get(file_id)
            if current is None or (if_blob_key is not None and current.blob_key != if_blob_key):
                return False
            s.charge(self._undo, current.scope, -current.size, -1, check=False)
            old = s.files.pop(file_id)
            key = s.dedup_of.pop(file_id, None)
            if key is not None:
                s.dedup.pop(key, None)
            mark = s.marks.pop(file_id, None)
            version = s.version_of.get(file_id)
            if version is not None:
                s.unlink_version(version)

            def undo() -> None:
                s.files[file_id] = old
                if mark is not None:
                    s.marks[file_id] = mark
                if key is not None:
                    s.dedup[key] = file_id
                    s.dedup_of[file_id] = key
                if version is not None:
                    s.link_version(version)

            self._undo.push(undo)
            return True

    def list(
        self, mandate_id: str, *, limit: int | None = None, after: FileItem | None = None
    ) -> list[FileItem]:
        with self._s.lock:
            items = [f for f in self._s.files.values() if f.scope.mandate_id == mandate_id]
        return _newest_first_page(items, limit, after)

    def confirm(self, file_id: str, blob_key: str) -> FileItem | None:
        # Held against ``lock`` (a delete that counts references) until the
        # unit ends; a content update does not wait here, unlike SQL's row lock.
        item = self.lock_shared([file_id]).get(file_id)
        return item if item is not None and item.blob_key == blob_key else None

    def lock(self, file_id: str) -> FileItem | None:
        s = self._s
        with s.lock:
            s.wait_for_files(self._holds, [file_id], exclusive=True)
            item = s.files.get(file_id)
            if item is not None:
                s.exclusive[file_id] = self._holds
                self._holds.exclusive.add(file_id)
            return item

    def lock_shared(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        s = self._s
        with s.lock:
            s.wait_for_files(self._holds, file_ids, exclusive=False)
            found = self.get_many(file_ids)
            for file_id in found:
                s.shared[file_id].add(self._holds)
                self._holds.shared.add(file_id)
            return found


class MemoryVersionRepository:
    """:class:`~docbinder.ports.metadata.VersionRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def add_version(self, version: FileVersion) -> None:
        s = self._s
        key = version.series.key
        with s.lock:
            if version.file_id in s.version_of:
                raise Conflict(f"FileItem {version.file_id} is already a version")
            if version.version in s.versions[key]:
                raise VersionTaken(
                    "that version of the file name was saved by another writer first"
                )
            s.link_version(version)

            def undo() -> None:
                s.unlink_version(version)

            self._undo.push(undo)

    def latest_version(self, series_key: str) -> FileVersion | None:
        with self._s.lock:
            number = self._s.latest_number.get(series_key)
            return None if number is None else self._s.versions[series_key][number]

    def get_version(self, series_key: str, version: int) -> FileVersion | None:
        with self._s.lock:
            series = self._s.versions.get(series_key)
            return series.get(version) if series else None

    def list_versions(self, series_key: str) -> builtins.list[FileVersion]:
        with self._s.lock:
            series = self._s.versions.get(series_key) or {}
            return [series[n] for n in sorted(series)]

    def version_of(self, file_id: str) -> FileVersion | None:
        return self._s.version_of.get(file_id)

    def series_names(self, space_key: str) -> builtins.list[str]:
        with self._s.lock:
            names = self._s.space_names.get(space_key)
            return sorted(names) if names else []


class MemoryMaintenanceRepository:
    """:class:`~docbinder.ports.metadata.MaintenanceRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def iter_files(self) -> Iterator[FileItem]:
        with self._s.lock:
            items = list(self._s.files.values())
        return iter(items)

    def iter_documents(self) -> Iterator[ChatDocument]:
        with self._s.lock:
            docs = list(self._s.documents.values())
        return iter(docs)

    def set_blob_store(self, file_id: str, blob_key: str, blob_store: str) -> bool:
        s = self._s
        with s.lock:
            old = s.files.get(file_id)
            if old is None or old.blob_key != blob_key or old.blob_store is not None:
                return False
            s.files[file_id] = attrs.evolve(old, blob_store=blob_store)

            def undo() -> None:
                if file_id in s.files:
                    s.files[file_id] = old

            self._undo.push(undo)
            return True

    def mark_missing(self, file_id: str, blob_key: str, at: datetime) -> datetime:
        s = self._s
        with s.lock:
            previous = s.marks.get(file_id)
            if previous is not None and previous[0] == blob_key:
                return previous[1]
            s.marks[file_id] = (blob_key, at)

            def undo() -> None:
                if previous is None:
                    s.marks.pop(file_id, None)
                else:
                    s.marks[file_id] = previous

            self._undo.push(undo)
            return at

    def clear_mark(self, file_id: str) -> None:
        s = self._s
        with s.lock:
            previous = s.marks.pop(file_id, None)
            if previous is not None:

                def undo() -> None:
                    s.marks[file_id] = previous

                self._undo.push(undo)

    def marks(self) -> dict[str, tuple[str, datetime]]:
        with self._s.lock:
            return dict(self._s.marks)

    def database_id(self, *, create: bool = False) -> str | None:
        """The store's UUID, made in this unit when ``create`` (gone again on rollback, as in SQL).

        A store copied (``copy.deepcopy``, pickling) is another object: the
        copy does not keep the id; ``create`` makes it a new one and keeps the
        old one as former.
        """
        s = self._s
        here = f"memory {id(s)}"
        with s.lock:
            if s.database_id is not None and s.database_location == here:
                return s.database_id
            if not create:
                return None
            before = (s.database_id, s.database_location, set(s.former_database_ids))
            if s.database_id is not None:
                s.former_database_ids.add(s.database_id)
            s.database_id, s.database_location = str(uuid.uuid4()), here

            def undo() -> None:
                s.database_id, s.database_location, s.former_database_ids = before

            self._undo.push(undo)
            return s.database_id

    def former_database_ids(self) -> tuple[str, ...]:
        s = self._s
        with s.lock:
            former = set(s.former_database_ids)
            if s.database_id is not None and s.database_location != f"memory {id(s)}":
                former.add(s.database_id)
        return tuple(sorted(former))

    def database_claims(self) -> tuple[str, ...]:
        with self._s.lock:
            return self._s.database_claims

    def rotate_database_claim(self, expected: str | None, new: str) -> bool:
        """Compare-and-set in this unit (gone again on rollback, as in SQL); see the port."""
        s = self._s
        with s.lock:
            before = s.database_claims
            current = before[0] if before else None
            if current != expected:
                return False
            s.database_claims = (new, *before)[:CLAIM_TOKENS_KEPT]

            def undo() -> None:
                s.database_claims = before

            self._undo.push(undo)
            return True

    def store_locations(self) -> dict[str, str]:
        with self._s.lock:
            return dict(self._s.store_locations)

    def record_store_location(self, store_id: str, location: str, *, replace: bool = False) -> str:
        """Record in this unit (gone again on rollback, as in SQL); see the port."""
        s = self._s
        key = store_location_key(store_id)
        with s.lock:
            before = s.store_locations.get(key)
            if before is None or replace:
                s.store_locations[key] = location

                def undo() -> None:
                    if before is None:
                        s.store_locations.pop(key, None)
                    else:
                        s.store_locations[key] = before

                self._undo.push(undo)
            return s.store_locations[key]


class MemoryWorkflowRepository:
    """:class:`~docbinder.ports.metadata.WorkflowRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def add_workflow(self, workflow: ChatWorkflow) -> None:
        s = self._s
        with s.lock:
            if workflow.id in s.workflows:
                raise Conflict(f"a workflow with id {workflow.id} already exists")
            s.workflows[workflow.id] = attrs.evolve(workflow, messages=())

            def undo() -> None:
                s.workflows.pop(workflow.id, None)

            self._undo.push(undo)

    def get_workflow(self, workflow_id: str) -> ChatWorkflow | None:
        return self._s.workflows.get(workflow_id)

    def update_workflow(self, workflow: ChatWorkflow) -> None:
        s = self._s
        with s.lock:
            old = s.workflows.get(workflow.id)
            if old is None:
                raise WorkflowNotFound(f"no workflow {workflow.id}")
            s.workflows[workflow.id] = attrs.evolve(
                old,
                status=workflow.status,
                current_round=workflow.current_round,
                current_task=workflow.current_task,
                current_action=workflow.current_action,
            )

            def undo() -> None:
                s.workflows[workflow.id] = old

            self._undo.push(undo)

    def advance_counters(self, workflow_id: str, step: CounterStep) -> WorkflowCounters:
        s = self._s
        with s.lock:
            old = s.workflows.get(workflow_id)
            if old is None:
                raise WorkflowNotFound(f"no workflow {workflow_id}")
            counters = step.apply(old.counters)
            new = attrs.evolve(
                old,
                current_round=counters.round,
                current_task=counters.task,
                current_action=counters.action,
            )
            s.workflows[workflow_id] = new

            def undo() -> None:
                # Only this unit's change is undone: a later advance by another unit stays.
                if s.workflows.get(workflow_id) is new:
                    s.workflows[workflow_id] = old

            self._undo.push(undo)
            return counters

    def add_message(
        self, message: ChatMessage, admit: Callable[[Resource], None] | None = None
    ) -> ChatMessage:
        s = self._s
        wf = message.workflow_id
        with s.lock:
            workflow = s.workflows.get(wf)
            if workflow is None:
                raise WorkflowNotFound(f"no workflow {wf}")
            if admit is not None:
                admit(Resource.of_workflow(workflow))  # before anything of the message is checked
            if (wf, message.documents_label) in s.labels:
                raise DuplicateLabel(
                    f"documents_label {message.documents_label!r} is already used in workflow {wf}"
                )
            if message.id in s.message_ids:
                raise Conflict(f"a ChatMessage with id {message.id} already exists")
            if any(d.id in s.documents for d in message.documents):
                raise Conflict("a ChatDocument with that id already exists")
            msgs = s.messages[wf]
            seq = (msgs[-1].sequence_nr + 1) if msgs else 1
            # Number and counters read under the same lock (ADR 0026).
            stored = message.placed(seq, workflow.counters)
            msgs.append(stored)
            s.message_ids.add(stored.id)
            s.labels[(wf, stored.documents_label)] = stored
            for doc in stored.documents:
                s.documents[doc.id] = doc
                s.by_file[(wf, doc.file_id)].append(doc.id)
                s.doc_order[wf].append(doc.id)

            def undo() -> None:
                msgs.remove(stored)
                s.message_ids.discard(stored.id)
                s.labels.pop((wf, stored.documents_label), None)
                for doc in stored.documents:
                    s.documents.pop(doc.id, None)
                    s.by_file[(wf, doc.file_id)].remove(doc.id)
                    s.doc_order[wf].remove(doc.id)

            self._undo.push(undo)
            return stored

    def get_documents(
        self, workflow_id: str, document_ids: Sequence[str]
    ) -> dict[str, ChatDocument]:
        out: dict[str, ChatDocument] = {}
        with self._s.lock:
            for doc_id in document_ids:
                doc = self._s.documents.get(doc_id)
                if doc is not None and doc.workflow_id == workflow_id:
                    out[doc_id] = doc
        return out

    def documents_by_label(self, workflow_id: str, label: str) -> list[ChatDocument]:
        with self._s.lock:
            msg = self._s.labels.get((workflow_id, label))
            return list(msg.documents) if msg is not None else []

    def documents_by_file(self, workflow_id: str, file_id: str) -> list[ChatDocument]:
        with self._s.lock:
            ids = self._s.by_file.get((workflow_id, file_id), [])
            return [self._s.documents[i] for i in ids]

    def documents_by_labels(
        self, workflow_id: str, labels: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        out: dict[str, list[ChatDocument]] = {}
        with self._s.lock:
            for label in dict.fromkeys(labels):
                msg = self._s.labels.get((workflow_id, label))
                if msg is not None and msg.documents:
                    out[label] = list(msg.documents)
        return out

    def documents_by_files(
        self, workflow_id: str, file_ids: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        out: dict[str, list[ChatDocument]] = {}
        with self._s.lock:
            for file_id in dict.fromkeys(file_ids):
                ids = self._s.by_file.get((workflow_id, file_id))
                if ids:
                    out[file_id] = [self._s.documents[i] for i in ids]
        return out

    def documents_by_file_names(
        self, workflow_id: str, names: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        wanted = dict.fromkeys(names)
        found: dict[str, list[ChatDocument]] = {}
        with self._s.lock:
            for doc_id in self._s.doc_order.get(workflow_id, []):
                doc = self._s.documents[doc_id]
                if doc.file_name in wanted:
                    found.setdefault(doc.file_name, []).append(doc)
        return {name: found[name] for name in wanted if name in found}

    def recent_documents(self, workflow_id: str, limit: int) -> list[ChatDocument]:
        _check_limit(limit)
        with self._s.lock:
            order = self._s.doc_order.get(workflow_id, [])
            return [self._s.documents[i] for i in reversed(order[-limit:])] if limit > 0 else []

    def list_messages(self, workflow_id: str) -> list[ChatMessage]:
        with self._s.lock:
            return list(self._s.messages.get(workflow_id, []))

    def list_workflows(
        self, mandate_id: str, *, limit: int | None = None, after: ChatWorkflow | None = None
    ) -> list[ChatWorkflow]:
        with self._s.lock:
            items = [w for w in self._s.workflows.values() if w.scope.mandate_id == mandate_id]
        return _newest_first_page(items, limit, after)

    def count_documents_for_file(self, file_id: str) -> int:
        with self._s.lock:
            return sum(1 for doc in self._s.documents.values() if doc.file_id == file_id)


class MemoryQuotaRepository:
    """:class:`~docbinder.ports.metadata.QuotaRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def usage(self, scope: Scope) -> tuple[int, int]:
        with self._s.lock:
            sizes = [
                f.size
                for f in self._s.files.values()
                if f.scope.mandate_id == scope.mandate_id
                and (
                    scope.feature_instance_id is None
                    or f.scope.feature_instance_id == scope.feature_instance_id
                )
            ]
        return sum(sizes), len(sizes)

    def set_quota(self, quota: Quota) -> Quota:
        s = self._s
        with s.lock:
            used_bytes, used_files = self.usage(quota.scope)
            stored = attrs.evolve(quota, used_bytes=used_bytes, used_files=used_files)
            before = s.quotas.get(quota.scope)
            s.quotas[quota.scope] = stored

            def undo() -> None:
                if before is None:
                    s.quotas.pop(quota.scope, None)
                else:
                    s.quotas[quota.scope] = before

            self._undo.push(undo)
            return stored

    def get_quota(self, scope: Scope) -> Quota | None:
        with self._s.lock:
            return self._s.quotas.get(scope)

    def list_quotas(self, mandate_id: str) -> builtins.list[Quota]:
        with self._s.lock:
            found = [q for q in self._s.quotas.values() if q.scope.mandate_id == mandate_id]
        return sorted(
            found,
            key=lambda q: (
                q.scope.feature_instance_id is not None,
                q.scope.feature_instance_id or "",
            ),
        )

    def remove_quota(self, scope: Scope) -> bool:
        s = self._s
        with s.lock:
            before = s.quotas.pop(scope, None)
            if before is None:
                return False

            def undo() -> None:
                s.quotas[scope] = before

            self._undo.push(undo)
            return True


class MemoryAuditRepository:
    """:class:`~docbinder.ports.metadata.AuditRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def append(self, events: Sequence[AuditEvent]) -> builtins.list[AuditEvent]:
        s = self._s
        if not events:
            return []
        with s.lock:
            if s.audit_head is None and any(
                e.seq > (s.audit_anchor or (0, ""))[0] for e in s.audit
            ):
                raise StorageError(HEADLESS)
            head = s.audit_head or s.audit_anchor or (0, GENESIS_HASH)
            seq, prev = head
            stored: list[AuditEvent] = []
            for event in events:
                seq += 1
                chained = event.chained(seq, prev)
                stored.append(chained)
                prev = chained.hash
            before, count = s.audit_head, len(s.audit)
            s.audit.extend(stored)
            s.audit_head = (seq, prev)

            def undo() -> None:
                del s.audit[count:]
                s.audit_head = before

            self._undo.push(undo)
            return stored

    def events(
        self,
        *,
        file_id: str | None = None,
        principal: str | None = None,
        since: datetime | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> builtins.list[AuditEvent]:
        with self._s.lock:
            found = [
                e
                for e in self._s.audit
                if e.seq > after_seq
                and (file_id is None or e.file_id == file_id)
                and (principal is None or e.principal == principal)
                and (since is None or e.at >= since)
            ]
        return found if limit is None else found[:limit]

    def head(self) -> tuple[int, str] | None:
        return self._s.audit_head

    def anchor(self) -> tuple[int, str] | None:
        return self._s.audit_anchor

    def prune(self, before: datetime) -> int:
        s = self._s
        with s.lock:
            older = [e.seq for e in s.audit if e.at < before]
            if not older:
                return 0
            cut = max(older)
            removed = [e for e in s.audit if e.seq <= cut]
            anchor = s.audit_anchor
            s.audit[:] = [e for e in s.audit if e.seq > cut]
            s.audit_anchor = (cut, removed[-1].hash)

            def undo() -> None:
                s.audit[:0] = removed
                s.audit_anchor = anchor

            self._undo.push(undo)
            return len(removed)


class MemoryRetentionRepository:
    """:class:`~docbinder.ports.metadata.RetentionRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def _put(self, table: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
        with self._s.lock:
            missing = object()
            before = table.get(key, missing)
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value

            def undo() -> None:
                if before is missing:
                    table.pop(key, None)
                else:
                    table[key] = before

            self._undo.push(undo)

    def set_policy(self, policy: RetentionPolicy) -> None:
        self._put(self._s.policies, policy.scope, policy)

    def policies(self, mandate_id: str) -> builtins.list[RetentionPolicy]:
        with self._s.lock:
            found = [p for p in self._s.policies.values() if p.scope.mandate_id == mandate_id]
        return sorted(found, key=lambda p: p.scope.feature_instance_id or "")

    def remove_policy(self, scope: Scope) -> bool:
        with self._s.lock:
            there = scope in self._s.policies
            if there:
                self._put(self._s.policies, scope, None)
            return there

    def place_hold(self, hold: LegalHold) -> None:
        self._put(self._s.holds, (hold.kind, hold.target_id), hold)

    def release_hold(self, kind: HoldKind, target_id: str, mandate_id: str) -> bool:
        with self._s.lock:
            hold = self._s.holds.get((kind, target_id))
            there = hold is not None and hold.mandate_id == mandate_id
            if there:
                self._put(self._s.holds, (kind, target_id), None)
            return there

    def holds(self, mandate_id: str) -> builtins.list[LegalHold]:
        with self._s.lock:
            found = [h for h in self._s.holds.values() if h.mandate_id == mandate_id]
        return sorted(found, key=lambda h: (h.kind.value, h.target_id))

    def held(self, file_ids: Sequence[str], workflow_ids: Sequence[str]) -> set[str]:
        with self._s.lock:
            holds = self._s.holds
            return {f for f in file_ids if (HoldKind.FILE, f) in holds} | {
                w for w in workflow_ids if (HoldKind.WORKFLOW, w) in holds
            }

    def last_reads(self, file_ids: Sequence[str]) -> dict[str, datetime]:
        wanted = set(file_ids)
        found: dict[str, datetime] = {}
        with self._s.lock:
            for e in self._s.audit:
                if (
                    e.file_id in wanted
                    and e.action.value in READ_ACTIONS
                    and e.outcome == "ok"
                    and (e.file_id not in found or e.at > found[e.file_id])
                ):
                    found[e.file_id] = e.at
        return found

    def policy_mandates(self) -> builtins.list[str]:
        with self._s.lock:
            return sorted({scope.mandate_id for scope in self._s.policies})

    def expired_files(
        self,
        policy: RetentionPolicy,
        born_before: datetime,
        *,
        other_features: Sequence[str] = (),
    ) -> builtins.list[FileItem]:
        scope, others = policy.scope, set(other_features)
        with self._s.lock:
            found = [
                f
                for f in self._s.files.values()
                if f.scope.mandate_id == scope.mandate_id
                and f.created_at <= born_before
                and (
                    f.scope.feature_instance_id == scope.feature_instance_id
                    if scope.feature_instance_id is not None
                    else f.scope.feature_instance_id not in others
                )
            ]
        if policy.basis is RetentionBasis.LAST_READ and found:
            reads = self.last_reads([f.id for f in found])
            found = [f for f in found if f.id not in reads or reads[f.id] <= born_before]
        return sorted(found, key=lambda f: (f.created_at, f.id))


class MemoryProviderCopyRepository:
    """:class:`~docbinder.ports.metadata.ProviderCopyRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def _set(self, key: ProviderCopyKey, copy: ProviderCopy | None) -> None:
        table = self._s.provider_copies
        before = table.get(key)
        if copy is None:
            table.pop(key, None)
        else:
            table[key] = copy

        def undo() -> None:
            if before is None:
                table.pop(key, None)
            else:
                table[key] = before

        self._undo.push(undo)

    def claim(self, copy: ProviderCopy) -> ProviderCopy | None:
        with self._s.lock:
            there = self._s.provider_copies.get(copy.key)
            if there is None:
                self._set(copy.key, copy)
            return there

    def get(self, key: ProviderCopyKey) -> ProviderCopy | None:
        with self._s.lock:
            return self._s.provider_copies.get(key)

    def replace(self, expected_claim: str, copy: ProviderCopy) -> bool:
        with self._s.lock:
            there = self._s.provider_copies.get(copy.key)
            if there is None or there.claim != expected_claim:
                return False
            self._set(copy.key, copy)
            return True

    def remove(self, key: ProviderCopyKey, expected_claim: str) -> bool:
        with self._s.lock:
            there = self._s.provider_copies.get(key)
            if there is None or there.claim != expected_claim:
                return False
            self._set(key, None)
            return True

    def renew(self, key: ProviderCopyKey, expected_claim: str, at: datetime) -> bool:
        with self._s.lock:
            there = self._s.provider_copies.get(key)
            if (
                there is None
                or there.claim != expected_claim
                or there.state is not CopyState.UPLOADING
            ):
                return False
            self._set(key, attrs.evolve(there, claimed_at=at))
            return True

    def of_content(self, scope: Scope, sha256: str) -> builtins.list[ProviderCopy]:
        with self._s.lock:
            found = [
                c
                for k, c in self._s.provider_copies.items()
                if k.scope == scope and k.sha256 == sha256
            ]
        return sorted(found, key=lambda c: (c.key.provider.value, c.key.account))

    def deleting(self, limit: int) -> builtins.list[ProviderCopy]:
        with self._s.lock:
            found = [c for c in self._s.provider_copies.values() if c.state is CopyState.DELETING]
        return sorted(found, key=lambda c: c.claimed_at)[:limit]


@attrs.frozen
class _Inline:
    data: bytes
    origin: str | None
    at: datetime
    committed: bool


class MemoryInlineBlobRepository:
    """:class:`~docbinder.ports.metadata.InlineBlobRepository` over a :class:`MemoryMetadataStore`."""

    def __init__(self, store: MemoryMetadataStore, undo: _Undo) -> None:
        self._s = store
        self._undo = undo

    def _set(self, key: str, value: _Inline | None) -> None:
        """Set (``None``: remove) the blob ``key``, pushing the undo (caller holds the lock)."""
        table = self._s.inline
        old = table.get(key)
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value

        def undo() -> None:
            if old is None:
                table.pop(key, None)
            else:
                table[key] = old

        self._undo.push(undo)

    def put(
        self, key: str, data: bytes, origin: str | None, at: datetime, *, committed: bool
    ) -> None:
        with self._s.lock:
            self._set(key, _Inline(bytes(data), origin, at, committed))

    def get(self, key: str) -> bytes | None:
        with self._s.lock:
            found = self._s.inline.get(key)
        return None if found is None else found.data

    def stat(self, key: str) -> InlineBlobInfo | None:
        with self._s.lock:
            found = self._s.inline.get(key)
        if found is None:
            return None
        return InlineBlobInfo(len(found.data), found.at, found.origin, found.committed)

    def mark_committed(self, key: str) -> bool:
        with self._s.lock:
            found = self._s.inline.get(key)
            if found is None:
                return False
            if not found.committed:
                self._set(key, attrs.evolve(found, committed=True))
            return True

    def delete(self, key: str) -> bool:
        with self._s.lock:
            if key not in self._s.inline:
                return False
            self._set(key, None)
            return True

    def keys(self) -> builtins.list[str]:
        with self._s.lock:
            return list(self._s.inline)

    def totals(self) -> tuple[int, int]:
        with self._s.lock:
            return len(self._s.inline), sum(len(v.data) for v in self._s.inline.values())


class MemoryUnitOfWork:
    """A unit of work over a :class:`MemoryMetadataStore`; rolls back unless committed."""

    def __init__(self, store: MemoryMetadataStore) -> None:
        self._store = store
        self._undo = _Undo()
        self._holds = _Holds()
        self.files = MemoryFileRepository(store, self._undo, self._holds)
        self.workflows = MemoryWorkflowRepository(store, self._undo)
        self.versions = MemoryVersionRepository(store, self._undo)
        self.maintenance = MemoryMaintenanceRepository(store, self._undo)
        self.quotas = MemoryQuotaRepository(store, self._undo)
        self.audit = MemoryAuditRepository(store, self._undo)
        self.retention = MemoryRetentionRepository(store, self._undo)
        self.provider_copies = MemoryProviderCopyRepository(store, self._undo)
        self.inline_blobs = MemoryInlineBlobRepository(store, self._undo)

    def __enter__(self) -> MemoryUnitOfWork:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.rollback()

    def commit(self) -> None:
        self._undo.clear()
        self._store.release(self._holds)

    def rollback(self) -> None:
        with self._store.lock:
            self._undo.replay()
            self._store.release(self._holds)
