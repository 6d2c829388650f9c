"""Metadata ports: one repository per role, and the unit of work over them (SPEC C12).

Roles (ADR 0041):

* core -- :class:`FileRepository` (FileItems) and :class:`WorkflowRepository`
  (workflows, ChatMessages, ChatDocuments): what storing, attaching,
  resolving and deleting need;
* versions -- :class:`VersionRepository` (file versions, feature row B1);
* maintenance -- :class:`MaintenanceRepository`: scans of every row,
  ``gc``'s missing-blob marks, the database's identity and the blob-store
  locations it recorded;
* quotas -- :class:`QuotaRepository`: limits per mandate / feature instance
  (feature row B12), whose usage :class:`FileRepository` keeps as it writes;
* audit -- :class:`AuditRepository`: the hash-chained audit log (B11);
* retention -- :class:`RetentionRepository`: retention policies and legal holds (B5);
* provider copies -- :class:`ProviderCopyRepository`: FileItems' copies in model
  providers' Files APIs (B22).
* inline blobs -- :class:`InlineBlobRepository`: the bytes of small files kept in
  the metadata database itself, written in the transaction of their FileItem
  (ADR 0110).

A :class:`UnitOfWork` offers all eight over one transaction. What a backend
may lack (versions; units in several threads at once) it declares as a
capability flag of the shipped contract suite (:class:`~docbinder.testing.MetadataContract`),
which then skips those cases with the reason.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import Protocol

import attrs

from docbinder.domain.access import Resource
from docbinder.domain.audit import AuditEvent
from docbinder.domain.counters import CounterStep, WorkflowCounters
from docbinder.domain.governance import HoldKind, LegalHold, Quota, RetentionPolicy
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    FileVersion,
    Scope,
)
from docbinder.domain.providers import ProviderCopy, ProviderCopyKey

STORE_KEY_LENGTH = 49
"""Longest store identity :func:`store_location_key` keeps as it is (64-character names
less the ``store_location:`` prefix the SQL adapter puts before it)."""


def store_location_key(store_id: str) -> str:
    """The key under which :meth:`MaintenanceRepository.store_locations` lists the store ``store_id``.

    The identity itself when it has at most :data:`STORE_KEY_LENGTH`
    characters (every shipped store's UUID), else ``sha256-`` and the first
    42 hex digits of its SHA-256, so that any identity fits a short column.
    """
    if len(store_id) <= STORE_KEY_LENGTH:
        return store_id
    return "sha256-" + hashlib.sha256(store_id.encode()).hexdigest()[:42]


CLAIM_TOKENS_KEPT = 32
"""Claim tokens a database keeps, the current one included (ADR 0075, addendum 2026-12-03)."""


class FileRepository(Protocol):
    """FileItem rows (core role). Every method returns domain entities, never rows or dicts.

    Errors: :class:`DuplicateFileItem`, :class:`Conflict`,
    :class:`FileItemNotFound`, :class:`QuotaExceeded`, :class:`StorageError`
    (driver faults).

    Quotas (B12, ADR 0090): :meth:`add`, :meth:`update` and :meth:`delete`
    keep the usage of every :class:`~docbinder.domain.governance.Quota` of the
    item's mandate and feature instance in the same transaction. :meth:`add`
    and a growing :meth:`update` hold those quota rows until the unit ends
    (SQL: ``SELECT ... FOR UPDATE``), check them with
    :meth:`Quota.check_add <docbinder.domain.governance.Quota.check_add>` and
    raise :class:`QuotaExceeded` before writing anything.
    """

    def add(self, item: FileItem, *, deduplicate: bool = True) -> None:
        """Insert ``item``, counting it against the quotas of its scope.

        With ``deduplicate`` the item takes part in duplicate detection: a
        second item with the same (sha256, file name, creator, scope) raises
        :class:`DuplicateFileItem`. Without it the item is stored regardless
        (used when an existing duplicate is not readable by the caller, SPEC C2).
        """
        ...

    def get(self, file_id: str) -> FileItem | None:
        """The item with that id, or ``None``."""
        ...

    def get_many(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        """The items among ``file_ids`` that exist, keyed by id, in the order of ``file_ids``.

        Missing ids are left out; repeated ids count once. A batch of
        primary-key lookups, however long the list.
        """
        ...

    def find_duplicates(
        self, sha256: str, file_name: str, created_by: str, scope: Scope
    ) -> list[FileItem]:
        """Items with exactly this SHA-256, file name, creator and scope (an index lookup).

        The scope matches exactly: a mandate-level scope (no feature instance)
        does not match items of a feature instance, and vice versa.
        """
        ...

    def update(self, item: FileItem, *, if_blob_key: str | None = None) -> None:
        """Replace the stored metadata of ``item.id``; :class:`FileItemNotFound` if absent.

        With ``if_blob_key`` this is a compare-and-set: the row is changed only
        if it still names that blob (every content change writes a new blob,
        so the key is the content's version), else :class:`Conflict`. Two
        concurrent updates based on the same read can then never both succeed.
        """
        ...

    def delete(self, file_id: str, *, if_blob_key: str | None = None) -> bool:
        """Remove the item; ``True`` if it existed (and, with ``if_blob_key``, still named that blob).

        With ``if_blob_key`` a row that has moved on to another blob is kept
        and ``False`` returned. The item's version record and missing-blob
        mark (:class:`VersionRepository`, :class:`MaintenanceRepository`) go
        with it.
        """
        ...

    def list(
        self, mandate_id: str, *, limit: int | None = None, after: FileItem | None = None
    ) -> list[FileItem]:
        """Items of one mandate, newest first (``created_at``, then id), at most ``limit``.

        With ``after`` the list continues behind that item (keyset paging: an
        index range, however far the page is from the start).
        """
        ...

    def confirm(self, file_id: str, blob_key: str) -> FileItem | None:
        """The item if it still exists and names ``blob_key``, held until this unit ends.

        Used before reusing a duplicate: a concurrent delete or content update
        of the row waits for this unit's commit (SQL: a no-op ``UPDATE`` of the
        row takes its write lock), so a reused FileItem still exists when the
        commit returns. ``None`` if the row is gone or moved to another blob.
        """
        ...

    def lock(self, file_id: str) -> FileItem | None:
        """The item, locked against other units until this one ends; ``None`` if absent.

        Taken before deleting an item whose references were counted
        (:class:`~docbinder.application.use_cases.delete_file.DeleteFile`): a unit holding
        the item with :meth:`lock_shared` (an attach of it) makes this wait for
        its commit, so the count that follows sees its documents; and a later
        :meth:`lock_shared` waits for this unit. SQL: ``SELECT ... FOR UPDATE``
        (PostgreSQL, InnoDB); SQLite's writing units are serialized already.
        """
        ...

    def lock_shared(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        """As :meth:`get_many`, each item found held against :meth:`lock` until this unit ends.

        Used by an attach of stored items: a unit that holds an item with
        :meth:`lock` makes this wait for its end and then read the row as it
        left it (absent after a committed delete). Shared holds do not block
        each other. SQL: ``SELECT ... FOR SHARE`` (PostgreSQL; ``LOCK IN SHARE
        MODE`` on MariaDB); SQLite's writing units are serialized already.
        """
        ...


class WorkflowRepository(Protocol):
    """Workflows, their messages and ChatDocuments (core role).

    Lookups are by indexed keys, so their cost does not grow with the size of
    the workflow. Errors: :class:`DuplicateLabel`, :class:`WorkflowNotFound`,
    :class:`Conflict`, :class:`StorageError`.
    """

    def add_workflow(self, workflow: ChatWorkflow) -> None:
        """Insert a workflow (its ``messages`` are ignored)."""
        ...

    def get_workflow(self, workflow_id: str) -> ChatWorkflow | None:
        """The workflow without its messages (``messages == ()``), or ``None``."""
        ...

    def update_workflow(self, workflow: ChatWorkflow) -> None:
        """Store status and round/task/action counters; :class:`WorkflowNotFound` if absent."""
        ...

    def advance_counters(self, workflow_id: str, step: CounterStep) -> WorkflowCounters:
        """Apply ``step`` to the stored round/task/action in one atomic change; return the result.

        Atomic against every other writer of the workflow: two runs that each
        ask for the next task get two different task numbers, and an absolute
        step is compared with the counters as stored at that moment (SQL: one
        conditional ``UPDATE`` that locks the row until the unit ends). Raises
        :class:`CountersWouldGoBack` (nothing changed) if the result would be
        behind the stored counters, :class:`InvalidInput` if an increment
        would pass :data:`~docbinder.domain.counters.MAX_COUNTER`, and
        :class:`WorkflowNotFound` if the workflow is absent. See
        :meth:`CounterStep.apply <docbinder.domain.counters.CounterStep.apply>`
        for the rule.
        """
        ...

    def add_message(
        self, message: ChatMessage, admit: Callable[[Resource], None] | None = None
    ) -> ChatMessage:
        """Insert a message with its documents; return it as stored, numbered and placed.

        ``sequence_nr`` is one more than the highest of the workflow so far.
        The message and each of its documents get the workflow's round, task
        and action numbers as stored at the moment the number is taken, read
        atomically with it (SQL: the same statement on the same locked row;
        see :meth:`ChatMessage.placed <docbinder.domain.model.ChatMessage.placed>`);
        the numbers the given message carries are ignored. So, against
        concurrent :meth:`advance_counters`, the counters of a workflow's
        messages never go down in ``sequence_nr`` order (ADR 0026). Raises
        :class:`DuplicateLabel` if the workflow already has a message with that
        ``documents_label``, :class:`WorkflowNotFound` if the workflow does not
        exist.

        ``admit``, unless ``None``, is called once with the workflow as stored
        (:meth:`Resource.of_workflow <docbinder.domain.access.Resource.of_workflow>`:
        its stored scope and creator), read together with the number, after
        the workflow was found and before the label or any id is checked or
        anything inserted. Whatever it raises propagates and leaves nothing of
        the message, with the number not used up (ADR 0038): the attach checks
        its rights on the stored workflow this way, in the statement that
        numbers the message, instead of reading the workflow first.
        """
        ...

    def get_documents(
        self, workflow_id: str, document_ids: Sequence[str]
    ) -> dict[str, ChatDocument]:
        """The documents of that workflow among ``document_ids``, keyed by id."""
        ...

    def documents_by_label(self, workflow_id: str, label: str) -> list[ChatDocument]:
        """Documents of the message with that ``documents_label``, in stored order."""
        ...

    def documents_by_file(self, workflow_id: str, file_id: str) -> list[ChatDocument]:
        """Documents of that workflow that point at ``file_id``, oldest first."""
        ...

    def documents_by_labels(
        self, workflow_id: str, labels: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """The documents of the messages with these ``documents_label``s, keyed by label.

        One batch for the whole list (SQL: one query per 500 labels): each
        label maps to what :meth:`documents_by_label` gives for it; labels no
        message of the workflow carries are left out, and so are labels whose
        message has no documents. Labels compare exactly (case, spaces,
        Unicode form). Keys are in the order of ``labels``; repeats count once.
        """
        ...

    def documents_by_files(
        self, workflow_id: str, file_ids: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """Documents of that workflow pointing at each of ``file_ids``, keyed by file id.

        One batch for the whole list (SQL: one query per 500 ids): each id
        maps to what :meth:`documents_by_file` gives for it (oldest first);
        ids no document of the workflow points at are left out. Keys are in
        the order of ``file_ids``; repeats count once.
        """
        ...

    def documents_by_file_names(
        self, workflow_id: str, names: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """Documents of that workflow whose file name is exactly one of ``names``, keyed by name.

        Compared as stored (no Unicode normalisation: a caller asks for each
        spelling it accepts); oldest first per name; names no document has
        are left out. For the hint a miss gets when the model sent a file
        name where a reference belongs: the workflow's documents are read
        through its ``workflow_id`` index, no index by name.
        """
        ...

    def recent_documents(self, workflow_id: str, limit: int) -> list[ChatDocument]:
        """The workflow's newest documents, newest first, at most ``limit``.

        :class:`InvalidInput` for a negative ``limit`` (as :meth:`list_workflows`).
        """
        ...

    def list_messages(self, workflow_id: str) -> list[ChatMessage]:
        """All messages of a workflow with their documents, by ``sequence_nr``."""
        ...

    def list_workflows(
        self, mandate_id: str, *, limit: int | None = None, after: ChatWorkflow | None = None
    ) -> list[ChatWorkflow]:
        """Workflows of one mandate, newest first, without messages; ``after`` as in ``FileRepository.list``."""
        ...

    def count_documents_for_file(self, file_id: str) -> int:
        """How many ChatDocuments, in any workflow, point at ``file_id`` (an index lookup)."""
        ...


class VersionRepository(Protocol):
    """File versions (feature row B1): which FileItem is which version of a named series.

    A backend that keeps no versions declares it (``supports_versions = False``
    in its :class:`~docbinder.testing.MetadataContract` subclass) and raises
    :class:`~docbinder.domain.errors.ConfigurationError` from every method
    here, naming the backend. Errors otherwise: :class:`VersionTaken`,
    :class:`Conflict`, :class:`StorageError`.
    """

    def add_version(self, version: FileVersion) -> None:
        """Record that FileItem ``version.file_id`` is that version of its series (B1).

        Raises :class:`VersionTaken` if the series already has that version
        number (the unique rule that makes numbering race-free), and
        :class:`Conflict` if the FileItem is already a version. Deleting the
        FileItem (:meth:`FileRepository.delete`) removes its version record too.
        """
        ...

    def latest_version(self, series_key: str) -> FileVersion | None:
        """The highest-numbered version of a series, or ``None`` (one index lookup)."""
        ...

    def get_version(self, series_key: str, version: int) -> FileVersion | None:
        """Version ``version`` of a series, or ``None`` (one index lookup)."""
        ...

    def list_versions(self, series_key: str) -> builtins.list[FileVersion]:
        """Every version of a series, lowest number first."""
        ...

    def version_of(self, file_id: str) -> FileVersion | None:
        """The version record of a FileItem, or ``None`` if it is not versioned."""
        ...

    def series_names(self, space_key: str) -> builtins.list[str]:
        """The distinct series names of one (scope, namespace), sorted by code point."""
        ...


class MaintenanceRepository(Protocol):
    """What ``gc``, ``doctor`` and blob-store registration need: scans, marks and identities.

    Scans read every row of every mandate; the other methods keep the
    database's own identity (ADR 0022), the locations of the blob stores it
    wrote into (ADR 0030) and ``gc``'s missing-blob marks. Errors:
    :class:`Conflict`, :class:`StorageError`.
    """

    def iter_files(self) -> Iterator[FileItem]:
        """Every FileItem of every mandate (``gc``, ``doctor``, pruning the extraction cache)."""
        ...

    def iter_documents(self) -> Iterator[ChatDocument]:
        """Every ChatDocument of every workflow (``doctor``)."""
        ...

    def set_blob_store(self, file_id: str, blob_key: str, blob_store: str) -> bool:
        """Record ``blob_store`` on an item that has none yet and still names ``blob_key``.

        ``gc`` uses it to adopt rows stored before stores had identities once
        their blob was found in the connected store. ``True`` if a row changed.
        """
        ...

    def mark_missing(self, file_id: str, blob_key: str, at: datetime) -> datetime:
        """Record that the item's blob ``blob_key`` was found missing at ``at``.

        Returns the time of the earliest mark still standing for that
        (item, blob) pair (``at`` for a new mark). A mark is removed with the
        item, by :meth:`clear_mark`, or replaced when the item names another blob.
        """
        ...

    def clear_mark(self, file_id: str) -> None:
        """Forget the missing-blob mark of the item (its blob is back); absent is fine."""
        ...

    def marks(self) -> dict[str, tuple[str, datetime]]:
        """Every missing-blob mark: file id -> (blob key, time marked)."""
        ...

    def database_id(self, *, create: bool = False) -> str | None:
        """The metadata database's own identity (a UUID) where it lives now; made when ``create``.

        Blob stores record the databases that write into them
        (:meth:`~docbinder.ports.blobs.BlobStore.register_database`) and mark
        every blob with the writer's id, so a copy of the database must not
        keep the id (ADR 0022): the id is stored beside a fingerprint of where
        the database lives (SQLite: the file's resolved path; PostgreSQL: the
        cluster's system identifier, database, its OID and schema; MariaDB:
        server host name, port, data directory and database; memory: the
        store object). When the stored fingerprint differs from the current
        one (the database was copied, restored elsewhere or moved), or none
        was stored, the stored id is not this database's any more: ``None``
        is returned, and ``create`` makes a new id, keeps the old one as a
        former id (:meth:`former_database_ids`) and records the fingerprint.
        Creating writes in this unit (commit it); two creators end with one
        identity.
        """
        ...

    def former_database_ids(self) -> tuple[str, ...]:
        """Ids this database had before it was copied or moved (see :meth:`database_id`).

        Includes the stored id while it no longer matches where the database
        lives and no new one was made yet. ``gc`` never counts a blob marked
        with one of them as this database's own: the copy it came from may
        still use that id. Sorted; empty for a database never copied or moved.
        """
        ...

    def database_claims(self) -> tuple[str, ...]:
        """The claim tokens this database wrote for its id, newest first; empty before the first.

        At most :data:`CLAIM_TOKENS_KEPT`: the current token and those it
        replaced. A blob store keeps one claim record per database id (ADR
        0075); the store's claim is this database's own while it is one of
        these. Processes of one database rotate concurrently and write the
        store in any order, so the store may hold a token several rotations
        old. A clone carries the same tokens, but the first of the two
        databases to rotate the claim (:meth:`rotate_database_claim`, then the
        store) writes a token the other never made.
        """
        ...

    def rotate_database_claim(self, expected: str | None, new: str) -> bool:
        """Compare-and-set the current claim token from ``expected`` to ``new``; whether it was set.

        ``expected`` is the current token read before (``None``: none yet);
        it joins the ones replaced, of which the oldest go beyond
        :data:`CLAIM_TOKENS_KEPT`. ``False`` (nothing written) when another
        unit changed the current token meanwhile. Writes in this unit (commit
        it).
        """
        ...

    def store_locations(self) -> dict[str, str]:
        """:func:`store_location_key` of a store identity -> the location fingerprint recorded (ADR 0030).

        The fingerprint is :func:`~docbinder.ports.blobs.location_fingerprint`
        of where the blob store with that identity was when this database
        first wrote into it (or when it was adopted there). A database copied
        or moved keeps these: its blob stores did not move with it.
        """
        ...

    def record_store_location(self, store_id: str, location: str, *, replace: bool = False) -> str:
        """Record ``location`` (a fingerprint) for the blob store ``store_id``; return what is recorded.

        Without ``replace`` an existing record is kept (first use wins: two
        first writers racing end with one record, and each gets it back to
        compare); with it the record is set to ``location`` (``docbinder
        store adopt``). Writes in this unit (commit it).
        """
        ...


class QuotaRepository(Protocol):
    """Quotas per mandate / feature instance (feature row B12).

    A quota of ``Scope(m)`` counts every FileItem of mandate ``m``; one of
    ``Scope(m, f)`` those of feature instance ``f``. Usage is kept by
    :class:`FileRepository` as it writes. Errors: :class:`StorageError`.
    """

    def set_quota(self, quota: Quota) -> Quota:
        """Store the limits of ``quota.scope`` (replacing earlier ones); return the quota as stored.

        The usage is counted from the FileItems of that scope now (its
        ``used_*`` fields are ignored), in this unit. Writes in this unit (commit it).
        """
        ...

    def get_quota(self, scope: Scope) -> Quota | None:
        """The quota of exactly ``scope``, with its usage, or ``None``."""
        ...

    def list_quotas(self, mandate_id: str) -> builtins.list[Quota]:
        """Every quota of one mandate: the mandate's own first, then by feature instance id."""
        ...

    def remove_quota(self, scope: Scope) -> bool:
        """Drop the quota of exactly ``scope``; ``True`` if there was one."""
        ...

    def usage(self, scope: Scope) -> tuple[int, int]:
        """``(bytes, files)`` of the FileItems of ``scope`` counted now (a mandate scope: all of it)."""
        ...


class AuditRepository(Protocol):
    """The audit log of this metadata store: one hash chain, append-only (B11, ADR 0092).

    Errors: :class:`StorageError`.
    """

    def append(self, events: Sequence[AuditEvent]) -> builtins.list[AuditEvent]:
        """Add ``events`` after the chain's head, in order; return them as stored (``seq``, hashes).

        The head is held until the unit ends (SQL: its ``docbinder_meta`` row
        ``FOR UPDATE``), so concurrent appends queue and the chain never forks.
        Writes in this unit: the events commit or roll back with the write
        they record.
        """
        ...

    def events(
        self,
        *,
        file_id: str | None = None,
        principal: str | None = None,
        since: datetime | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> builtins.list[AuditEvent]:
        """Stored events with ``seq > after_seq`` matching every filter given, by ``seq``, at most ``limit``."""
        ...

    def head(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the newest event, or ``None`` for an empty log."""
        ...

    def anchor(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the last event :meth:`prune` removed, or ``None``."""
        ...

    def prune(self, before: datetime) -> int:
        """Remove the oldest events, up to the newest one older than ``before``; return how many.

        The chain stays verifiable: the last removed event becomes the
        :meth:`anchor` the first kept one links to.
        """
        ...


class RetentionRepository(Protocol):
    """Retention policies per mandate / feature instance and legal holds (B5). Errors: :class:`StorageError`."""

    def set_policy(self, policy: RetentionPolicy) -> None:
        """Store the policy of ``policy.scope``, replacing an earlier one. Writes in this unit."""
        ...

    def policies(self, mandate_id: str) -> builtins.list[RetentionPolicy]:
        """The policies of one mandate: the mandate's own first, then by feature instance id."""
        ...

    def remove_policy(self, scope: Scope) -> bool:
        """Drop the policy of exactly ``scope``; ``True`` if there was one."""
        ...

    def place_hold(self, hold: LegalHold) -> None:
        """Place (or renew) a hold; writes in this unit."""
        ...

    def release_hold(self, kind: HoldKind, target_id: str, mandate_id: str) -> bool:
        """Lift the hold ``mandate_id`` placed on the target; ``True`` if there was one.

        A hold of another mandate on the same id stays (another tenant's id
        answers like an unknown one).
        """
        ...

    def holds(self, mandate_id: str) -> builtins.list[LegalHold]:
        """Every hold of one mandate, by kind and target id."""
        ...

    def held(self, file_ids: Sequence[str], workflow_ids: Sequence[str]) -> set[str]:
        """Which of these file and workflow ids a hold names (one batch)."""
        ...

    def last_reads(self, file_ids: Sequence[str]) -> dict[str, datetime]:
        """When each file was last read, as the audit log recorded it (``read_bytes``/``read_content``)."""
        ...

    def policy_mandates(self) -> builtins.list[str]:
        """The ids of the mandates that have at least one policy, sorted."""
        ...

    def expired_files(
        self,
        policy: RetentionPolicy,
        born_before: datetime,
        *,
        other_features: Sequence[str] = (),
    ) -> builtins.list[FileItem]:
        """The FileItems ``policy`` governs whose period started at or before ``born_before``, oldest first.

        ``born_before`` is the moment minus the policy's ``max_age``. The
        files are those of the policy's feature instance, or for a mandate's
        policy the mandate's files outside ``other_features`` (the feature
        instances with a policy of their own). ``created`` basis: created at
        or before ``born_before``; ``last_read``: that, and no read event
        (``read_bytes``/``read_content``) after it. One indexed query (the
        ``(mandate_id, created_at)`` index; ADR 0097): only the expired rows
        are returned, not the mandate's other files. Holds are not applied.
        """
        ...


class ProviderCopyRepository(Protocol):
    """FileItems' copies in model providers' Files APIs, one row per :class:`ProviderCopyKey` (B22).

    Every lookup names the whole key, tenant included: no method finds a copy
    by the provider's file id alone, so a tenant never sees another tenant's
    copy (ADR 0105). Changes are compare-and-sets on the row's claim token.
    Errors: :class:`StorageError`.
    """

    def claim(self, copy: ProviderCopy) -> ProviderCopy | None:
        """Insert ``copy`` under its key; ``None`` if inserted, else the row already there (unchanged).

        Of concurrent callers for one key exactly one inserts (unique key);
        the unit stays usable after losing.
        """
        ...

    def get(self, key: ProviderCopyKey) -> ProviderCopy | None:
        """The copy of exactly this key (content, provider, account, tenant), or ``None``."""
        ...

    def replace(self, expected_claim: str, copy: ProviderCopy) -> bool:
        """Overwrite the row of ``copy.key`` if its claim is still ``expected_claim``; ``True`` if done."""
        ...

    def remove(self, key: ProviderCopyKey, expected_claim: str) -> bool:
        """Delete the row of ``key`` if its claim is still ``expected_claim``; ``True`` if done."""
        ...

    def renew(self, key: ProviderCopyKey, expected_claim: str, at: datetime) -> bool:
        """Set ``claimed_at`` of ``key``'s row to ``at`` (UTC) if it is ``uploading`` under ``expected_claim``.

        The live uploader's lease renewal (ADR 0130): nothing else of the
        row changes, the claim token included. ``True`` if renewed; ``False``
        when the row is gone, another caller holds it, or it left
        ``uploading`` (ready, lost, deleting).
        """
        ...

    def of_content(self, scope: Scope, sha256: str) -> builtins.list[ProviderCopy]:
        """Every copy of this content in exactly this tenant, any provider and account."""
        ...

    def deleting(self, limit: int) -> builtins.list[ProviderCopy]:
        """Up to ``limit`` copies in state ``deleting`` (oldest claim first), for ``gc`` to retry."""
        ...


@attrs.frozen
class InlineBlobInfo:
    """What :meth:`InlineBlobRepository.stat` tells of one inline blob.

    ``size`` in bytes, ``modified_at`` (UTC) when it was written, ``origin``
    its provenance mark (:func:`~docbinder.ports.blobs.blob_origin`, ``None``
    when written before the store had an identity), ``committed`` whether a
    FileItem naming it committed (ADR 0031; for a blob written in its
    FileItem's own transaction, from the start).
    """

    size: int
    modified_at: datetime
    origin: str | None
    committed: bool


class InlineBlobRepository(Protocol):
    """Blobs kept in the metadata database: table ``inline_blobs`` (ADR 0110).

    The inline tier of the blob store
    (:class:`~docbinder.adapters.inline.InlineTierBlobStore`) keeps blobs up to
    its limit here, so a small file's bytes, its FileItem and its ChatDocument
    commit in one transaction. Keys are blob keys
    (:func:`~docbinder.ports.blobs.check_blob_key`; the callers check them).
    Writes take effect with the unit's commit. Errors: :class:`StorageError`.
    """

    def put(
        self, key: str, data: bytes, origin: str | None, at: datetime, *, committed: bool
    ) -> None:
        """Store ``data`` under ``key`` with its mark, time and commit record, replacing any."""
        ...

    def get(self, key: str) -> bytes | None:
        """The bytes under ``key``, or ``None`` when no inline blob has that key."""
        ...

    def stat(self, key: str) -> InlineBlobInfo | None:
        """Size, time, mark and commit record of the blob ``key``; ``None`` when absent."""
        ...

    def mark_committed(self, key: str) -> bool:
        """Record that a FileItem naming ``key`` committed; ``False`` when no blob has that key."""
        ...

    def delete(self, key: str) -> bool:
        """Remove the blob ``key``; whether one was there."""
        ...

    def keys(self) -> builtins.list[str]:
        """Every key of the table, in no particular order."""
        ...

    def totals(self) -> tuple[int, int]:
        """How many inline blobs there are and their bytes in all (``doctor``, ``gc``)."""
        ...


class UnitOfWork(Protocol):
    """One transaction over the repositories of every role.

    Used as a context manager: leaving the block without :meth:`commit` rolls
    back everything done inside it. All eight repositories share the unit's
    transaction: what one writes, the others read.
    """

    @property
    def files(self) -> FileRepository:
        """The FileItem repository of this unit (core)."""
        ...

    @property
    def workflows(self) -> WorkflowRepository:
        """The workflow/message/document repository of this unit (core)."""
        ...

    @property
    def versions(self) -> VersionRepository:
        """The file-version repository of this unit (raises on a backend without versions)."""
        ...

    @property
    def maintenance(self) -> MaintenanceRepository:
        """Scans, missing-blob marks and identities of this unit."""
        ...

    @property
    def quotas(self) -> QuotaRepository:
        """Quotas of this unit (B12)."""
        ...

    @property
    def audit(self) -> AuditRepository:
        """The audit log of this unit (B11)."""
        ...

    @property
    def retention(self) -> RetentionRepository:
        """Retention policies and legal holds of this unit (B5)."""
        ...

    @property
    def provider_copies(self) -> ProviderCopyRepository:
        """FileItems' copies at model providers of this unit (B22)."""
        ...

    @property
    def inline_blobs(self) -> InlineBlobRepository:
        """The inline blobs of this unit (ADR 0110)."""
        ...

    def __enter__(self) -> UnitOfWork: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def commit(self) -> None:
        """Make everything done in this unit visible to others, atomically."""
        ...

    def rollback(self) -> None:
        """Discard everything done in this unit since the last commit."""
        ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
"""Makes a fresh unit of work; each thread must use its own."""
