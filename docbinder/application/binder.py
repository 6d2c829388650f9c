"""The public facade: a :class:`DocBinder` over the use cases, and a :class:`Run` per agent run.

A host framework builds one ``DocBinder`` (usually through
:func:`docbinder.container.build_binder`), then per agent run::

    run = binder.start_run(principal, workflow_id)     # binds principal + workflow once (C4)
    result = run.produce_file("report.md", data, verb="Wrote", label="writeFile:report.md")
    result.text                                        # the unified tool-result text (C5)
    content = run.get_content(model_supplied_document_list)   # C6 + C7 + C8
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import attrs

from docbinder.application.context import RunContext
from docbinder.application.provenance import provenance_for
from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import AuditTrail
from docbinder.application.steps.closing import CLOSED_MESSAGE
from docbinder.application.steps.content_switch import FileUpdate
from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.provider_copies import ProviderRegistry
from docbinder.application.steps.results import NotAttached, format_tool_file_result
from docbinder.application.steps.storing import StoredFile
from docbinder.application.use_cases.advance_counters import AdvanceCounters
from docbinder.application.use_cases.append_file_content import AppendFileContent
from docbinder.application.use_cases.attach_file import AttachFile, attach_file_as_chat_document
from docbinder.application.use_cases.audit_log import AuditLog
from docbinder.application.use_cases.check_duplicate import CheckDuplicate
from docbinder.application.use_cases.collect_garbage import CollectGarbage
from docbinder.application.use_cases.count_file_references import CountFileReferences
from docbinder.application.use_cases.create_workflow import CreateWorkflow
from docbinder.application.use_cases.delete_file import DeleteFile
from docbinder.application.use_cases.delete_file_versions import DeleteFileVersions
from docbinder.application.use_cases.find_deleted_files import FindDeletedFiles
from docbinder.application.use_cases.get_content import ContentResult, GetContent
from docbinder.application.use_cases.get_file import GetFile
from docbinder.application.use_cases.get_file_for_update import GetFileForUpdate
from docbinder.application.use_cases.get_file_version import GetFileVersion
from docbinder.application.use_cases.get_latest_file_version import GetLatestFileVersion
from docbinder.application.use_cases.get_workflow import GetWorkflow
from docbinder.application.use_cases.list_file_versions import ListFileVersions
from docbinder.application.use_cases.list_files import ListFiles
from docbinder.application.use_cases.list_latest_file_versions import ListLatestFileVersions
from docbinder.application.use_cases.list_messages import ListMessages
from docbinder.application.use_cases.list_resolutions import ListResolutions
from docbinder.application.use_cases.list_workflows import ListWorkflows
from docbinder.application.use_cases.manage_quotas import ManageQuotas
from docbinder.application.use_cases.manage_retention import ManageRetention
from docbinder.application.use_cases.mint_link import TOOL_LINK_SECONDS, MintedLink, MintLink
from docbinder.application.use_cases.open_file import OpenFile
from docbinder.application.use_cases.open_file_item import OpenFileItem
from docbinder.application.use_cases.open_file_version import OpenFileVersion
from docbinder.application.use_cases.persist_action_result import PersistActionResult
from docbinder.application.use_cases.produce_file import ProduceFile
from docbinder.application.use_cases.provide_file import ProvideFile
from docbinder.application.use_cases.prune_extraction_cache import PruneExtractionCache
from docbinder.application.use_cases.redeem_link import RedeemLink, RevokeLink
from docbinder.application.use_cases.replace_file_content import ReplaceFileContent
from docbinder.application.use_cases.resolve_document_list import Resolution, ResolveDocumentList
from docbinder.application.use_cases.save_file_version import SaveFileVersion, StoredVersion
from docbinder.application.use_cases.store_file import StoreFile
from docbinder.domain.access import Action
from docbinder.domain.counters import CounterLevel, CounterStep, WorkflowCounters
from docbinder.domain.errors import BinderClosed, DocbinderError, NoActiveWorkflow
from docbinder.domain.model import (
    DEFAULT_LABEL,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Principal,
    Provenance,
    VersionSeries,
)
from docbinder.domain.providers import ProviderFileRef
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobReader, BlobStore
from docbinder.ports.extractor import ContentExtractor, ExtractionCache
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

T = TypeVar("T")

WHOLE_READ_CHUNK = 64 << 20
"""Largest chunk (bytes) :meth:`FileVersions.read` asks a blob store for."""


@attrs.frozen
class ToolFileResult:
    """What a file-producing tool gets back: the FileItem, the ChatDocument id and the text.

    ``document_id`` is ``None`` when no workflow is bound or the attach failed;
    ``not_attached`` then names the cause (``not_attached.cause``, a
    :class:`~docbinder.application.steps.results.NotAttachedCause`, and
    the error's ``message``; it was also logged), and ``text`` has no
    ``documentList ref`` line (with a bound workflow it has a ``not in the
    workflow`` line instead, :func:`format_tool_file_result`). ``label`` is the
    ``documents_label`` the message got (the requested one, or it with a
    ``#<8 hex>`` suffix when that was taken; ``None`` without attach).
    """

    item: FileItem
    document_id: str | None
    text: str
    duplicate: bool
    label: str | None = None
    not_attached: NotAttached | None = None

    @property
    def reference(self) -> str | None:
        """``docItem:<document_id>``, or ``None``."""
        return f"docItem:{self.document_id}" if self.document_id else None


class FileContentUpdates:
    """``binder.update_file``: in-place changes of a FileItem's bytes, one method per use case.

    A thin facade: :meth:`load_for_update` is
    :class:`~docbinder.application.use_cases.get_file_for_update.GetFileForUpdate`,
    :meth:`append` is
    :class:`~docbinder.application.use_cases.append_file_content.AppendFileContent`,
    :meth:`replace` is
    :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`
    (their docstrings give the errors). The FileItem keeps its id; no message
    is created (SPEC C10).
    """

    def __init__(
        self,
        get_file_for_update: GetFileForUpdate,
        append_file_content: AppendFileContent,
        replace_file_content: ReplaceFileContent,
    ) -> None:
        self._load = get_file_for_update
        self._append = append_file_content
        self._replace = replace_file_content

    def load_for_update(self, principal: Principal, file_id: str) -> FileItem:
        """The FileItem if ``principal`` may read and update it; see :class:`GetFileForUpdate`."""
        return self._load(principal, file_id)

    def append(self, principal: Principal, file_id: str, data: FileData) -> FileUpdate:
        """Append ``data`` (bytes, chunks or a binary file object); see :class:`AppendFileContent`."""
        return self._append(principal, file_id, data)

    def replace(
        self,
        principal: Principal,
        file_id: str,
        data: FileData,
        *,
        expected: FileItem | None = None,
    ) -> FileUpdate:
        """Make ``data`` the whole new content; see :class:`ReplaceFileContent`."""
        return self._replace(principal, file_id, data, expected=expected)


class FileVersions:
    """``binder.versions``: the versions of file names (ADR 0013), one method per use case.

    A thin facade over :class:`SaveFileVersion` (:meth:`save`,
    :meth:`save_with`), :class:`GetLatestFileVersion` (:meth:`latest`),
    :class:`GetFileVersion` (:meth:`get`), :class:`ListFileVersions`
    (:meth:`list`), :class:`ListLatestFileVersions` (:meth:`latest_of_each`,
    :meth:`names`), :class:`OpenFileVersion` (:meth:`open`, :meth:`read`) and
    :class:`DeleteFileVersions` (:meth:`delete`); their docstrings give the
    errors. A series lives in the principal's scope (``principal.scope``);
    the ``namespace`` argument picks a sub-space of it (``""`` by default).
    Versions the principal may not read are treated as absent by every read.
    """

    def __init__(
        self,
        *,
        save_file_version: SaveFileVersion,
        get_latest_file_version: GetLatestFileVersion,
        get_file_version: GetFileVersion,
        list_file_versions: ListFileVersions,
        list_latest_file_versions: ListLatestFileVersions,
        open_file_version: OpenFileVersion,
        delete_file_versions: DeleteFileVersions,
    ) -> None:
        self._save = save_file_version
        self._latest = get_latest_file_version
        self._get = get_file_version
        self._list = list_file_versions
        self._latest_of_each = list_latest_file_versions
        self._open = open_file_version
        self._delete = delete_file_versions

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

        Arguments and errors as :class:`SaveFileVersion` (without ``then``).
        """
        stored, _ = self._save(
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
        provenance: Provenance | None = None,
    ) -> tuple[StoredVersion, T | None]:
        """Store the next version, running ``then(uow, stored)`` in its transaction.

        Returns the version and ``then``'s result; see :class:`SaveFileVersion`
        (``provenance`` as there).
        """
        return self._save(
            principal,
            name,
            data,
            namespace=namespace,
            file_name=file_name,
            mime_type=mime_type,
            user_metadata=user_metadata,
            host_data=host_data,
            then=then,
            provenance=provenance,
        )

    def latest(self, principal: Principal, name: str, namespace: str = "") -> StoredVersion | None:
        """The highest-numbered version the principal may read, or ``None``."""
        return self._latest(principal, name, namespace)

    def get(
        self, principal: Principal, name: str, number: int, namespace: str = ""
    ) -> StoredVersion | None:
        """Version ``number`` if it exists and the principal may read it, else ``None``."""
        return self._get(principal, name, number, namespace)

    def list(self, principal: Principal, name: str, namespace: str = "") -> list[StoredVersion]:
        """Every readable version of ``name``, lowest number first."""
        return self._list(principal, name, namespace)

    def names(self, principal: Principal, namespace: str = "") -> builtins.list[str]:
        """Names with at least one readable version in (principal's scope, ``namespace``), sorted."""
        return [s.version.series.name for s in self._latest_of_each(principal, namespace)]

    def latest_of_each(
        self, principal: Principal, namespace: str = ""
    ) -> builtins.list[StoredVersion]:
        """The latest readable version of every name in the namespace, sorted by name."""
        return self._latest_of_each(principal, namespace)

    def open(
        self, principal: Principal, stored: StoredVersion, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """The bytes of a version as a :class:`BlobReader`; use it in a ``with`` block.

        Chunks hold at most ``chunk_size`` bytes; see :class:`OpenFileVersion`.
        """
        return self._open(principal, stored, chunk_size)

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
        """Delete every version of ``name``; return how many. See :class:`DeleteFileVersions`."""
        return self._delete(principal, name, namespace)


@attrs.define(kw_only=True, eq=False, repr=False)
class UseCases:
    """Every use case of one binder, each built once by the composition root.

    One field per use case, named after it; :class:`DocBinder` offers each
    as its attribute of the same name (``binder.store_file`` is the
    :class:`StoreFile`). A new use case is its module, a field here and a
    provider in :class:`docbinder.container.UseCaseContainer` (ADR 0048).
    ``prune_extraction_cache`` is ``None`` when the binder has no extraction
    cache.
    """

    store_file: StoreFile
    check_duplicate: CheckDuplicate
    get_file: GetFile
    open_file: OpenFile
    open_file_item: OpenFileItem
    list_files: ListFiles
    delete_file: DeleteFile
    count_file_references: CountFileReferences
    attach_file: AttachFile
    persist_action_result: PersistActionResult
    produce_file: ProduceFile
    create_workflow: CreateWorkflow
    get_workflow: GetWorkflow
    list_workflows: ListWorkflows
    list_messages: ListMessages
    find_deleted_files: FindDeletedFiles
    advance_counters: AdvanceCounters
    resolve: ResolveDocumentList
    get_content: GetContent
    collect_garbage: CollectGarbage
    get_file_for_update: GetFileForUpdate
    append_file_content: AppendFileContent
    replace_file_content: ReplaceFileContent
    save_file_version: SaveFileVersion
    get_latest_file_version: GetLatestFileVersion
    get_file_version: GetFileVersion
    list_file_versions: ListFileVersions
    list_latest_file_versions: ListLatestFileVersions
    open_file_version: OpenFileVersion
    delete_file_versions: DeleteFileVersions
    prune_extraction_cache: PruneExtractionCache | None
    mint_link: MintLink
    redeem_link: RedeemLink
    revoke_link: RevokeLink
    list_resolutions: ListResolutions
    provide_file: ProvideFile


class DocBinder(UseCases):
    """The facade over every use case, built by the composition root (:mod:`docbinder.container`).

    A host gets one from :func:`docbinder.build_binder` (from settings) or
    :func:`docbinder.container.compose_binder` (over ports it built itself);
    the constructor takes the :class:`UseCases` bundle ready-made and builds
    no use case. Thread-safe if the adapters are.

    Every field of :class:`UseCases` is an attribute of the binder
    (``store_file``, ``check_duplicate``, ``get_file``, ``open_file``,
    ``list_files``, ``delete_file``, ``attach_file``, ``produce_file``,
    ``resolve``, ``get_content``, ``collect_garbage``, ...), each callable
    with the principal (or the run context) first. ``update_file``
    (:class:`FileContentUpdates`: ``load_for_update``, ``append``, ``replace``)
    and ``versions`` (:class:`FileVersions`: ``save``, ``latest``, ``get``,
    ``list``, ``names``, ``read``, ``delete``, ...) group the in-place update
    and the version use cases under one name each, over the same instances.
    The ports the use cases were built over stay readable for diagnostics
    (``uow_factory``, ``read_uow_factory``, ``blobs``, ``authorizer``,
    ``clock``, ``ids``, ``extractor``, ``extraction_cache``, ``access``;
    ``max_file_size`` in bytes or ``None``).

    The operator's governance APIs are attributes too, each a group of entry
    points over the metadata port rather than one use case: ``quotas``
    (:class:`ManageQuotas`, B12), ``audit_log`` (:class:`AuditLog`, B11) and
    ``retention`` (:class:`ManageRetention`, B5). They take no principal, as
    ``collect_garbage``; a host offers them to its administrators only.
    ``providers`` is the :class:`~docbinder.application.steps.provider_copies.ProviderRegistry`
    of model-provider clients that ``provide_file``, ``delete_file`` and ``gc`` use (B22);
    the composition root passes the one it built them over.

    :meth:`close` (or leaving ``with binder:``) releases what the binder holds:
    ``resources`` are closed in reverse order, each once (any object with a
    ``close()`` method: the SQL metadata store's connection pools, an S3
    client, the hash worker threads, ...). Afterwards :meth:`start_run`,
    :meth:`start_new_run`, every :class:`Run` method and every use case
    attribute raise :class:`~docbinder.domain.errors.BinderClosed`, on every
    backend: the composition root hands the use cases their units of work
    through a :class:`~docbinder.application.steps.closing.UnitOfWorkGate` that is
    among ``resources`` and closes first. The ``uow_factory`` and
    ``read_uow_factory`` attributes are the ports themselves, not gated.
    """

    def __init__(
        self,
        use_cases: UseCases,
        *,
        uow_factory: UnitOfWorkFactory,
        read_uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        authorizer: Authorizer,
        clock: Clock,
        ids: IdFactory,
        extractor: ContentExtractor,
        access: AccessPolicy,
        extraction_cache: ExtractionCache | None = None,
        max_file_size: int | None = None,
        resources: Sequence[object] = (),
        quotas: ManageQuotas | None = None,
        audit_log: AuditLog | None = None,
        retention: ManageRetention | None = None,
        providers: ProviderRegistry | None = None,
    ) -> None:
        super().__init__(**attrs.asdict(use_cases, recurse=False))
        trail = AuditTrail(None, None, None)
        self.quotas = quotas or ManageQuotas(uow_factory, read_uow_factory)
        self.audit_log = audit_log or AuditLog(uow_factory, read_uow_factory, trail, clock)
        self.retention = retention or ManageRetention(uow_factory, read_uow_factory, clock, trail)
        self.providers = providers or ProviderRegistry()
        self.update_file = FileContentUpdates(
            self.get_file_for_update, self.append_file_content, self.replace_file_content
        )
        self.versions = FileVersions(
            save_file_version=self.save_file_version,
            get_latest_file_version=self.get_latest_file_version,
            get_file_version=self.get_file_version,
            list_file_versions=self.list_file_versions,
            list_latest_file_versions=self.list_latest_file_versions,
            open_file_version=self.open_file_version,
            delete_file_versions=self.delete_file_versions,
        )
        self.uow_factory = uow_factory
        self.read_uow_factory = read_uow_factory
        self.blobs = blobs
        self.authorizer = authorizer
        self.clock = clock
        self.ids = ids
        self.extractor = extractor
        self.access = access
        self.extraction_cache = extraction_cache
        self.max_file_size = max_file_size
        self._resources = tuple(resources)
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def require_open(self) -> None:
        """Raise :class:`~docbinder.domain.errors.BinderClosed` if :meth:`close` was called."""
        if self._closed:
            raise BinderClosed(CLOSED_MESSAGE)

    def close(self) -> None:
        """Release connection pools, clients and worker threads; idempotent.

        Every resource is closed once, in reverse order of construction, even
        when an earlier one fails; the first failure is raised afterwards.
        Stored data is not touched. Runs of this binder stop working
        (:class:`~docbinder.domain.errors.BinderClosed`).
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        failure: Exception | None = None
        for resource in reversed(self._resources):
            close = getattr(resource, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:  # close the others before reporting
                log.warning("closing %s failed: %s", type(resource).__name__, exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    def __enter__(self) -> DocBinder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start_run(self, principal: Principal, workflow_id: str | None = None) -> Run:
        """Bind ``principal`` and, if given, the workflow ``workflow_id`` for one agent run.

        Raises :class:`WorkflowNotFound` if the workflow is absent or not
        readable by ``principal``, :class:`BinderClosed` after :meth:`close`.
        With no ``workflow_id`` the run has no workflow: producers still store
        files, and resolving answers ``no_active_workflow``.
        """
        self.require_open()
        workflow = self.get_workflow(principal, workflow_id) if workflow_id is not None else None
        return Run(self, RunContext(principal, workflow, run_id=self.ids.new_id()))

    def start_new_run(self, principal: Principal) -> Run:
        """Create a workflow for ``principal`` and bind it; :class:`AccessDenied` if not allowed."""
        self.require_open()
        workflow = self.create_workflow(principal)
        return Run(self, RunContext(principal, workflow, run_id=self.ids.new_id()))


class Run:
    """One agent run: a :class:`DocBinder` plus the bound :class:`RunContext`.

    Every method raises :class:`~docbinder.domain.errors.BinderClosed` once the
    binder was closed.
    """

    def __init__(self, binder: DocBinder, context: RunContext) -> None:
        self._binder = binder
        self.context = context

    @property
    def binder(self) -> DocBinder:
        """The run's binder; :class:`~docbinder.domain.errors.BinderClosed` after its close."""
        self._binder.require_open()
        return self._binder

    @property
    def principal(self) -> Principal:
        """The run's principal."""
        return self.context.principal

    @property
    def workflow(self) -> ChatWorkflow | None:
        """The run's in-memory workflow (with the messages this run created), or ``None``."""
        return self.context.workflow

    @property
    def counters(self) -> WorkflowCounters | None:
        """The workflow's round, task and action as this run last saw them, or ``None``.

        Seen at the start of the run, and stored by this run's last
        :meth:`advance` or attach; another run of the workflow may have moved
        them on since (``binder.get_workflow(...).counters`` reads them).
        """
        workflow = self.context.bound_workflow
        return workflow.counters if workflow is not None else None

    def advance(
        self, *, round: int | None = None, task: int | None = None, action: int | None = None
    ) -> WorkflowCounters:
        """Set the workflow's round, task and/or action (absolute numbers); return them.

        Lower levels not given become 0 (``advance(round=2)`` is round 2, task
        0, action 0; ``advance(task=3)`` keeps the round). Stored at once for
        every run of the workflow; documents attached afterwards carry them.
        Setting the numbers it already has changes nothing. Raises
        :class:`InvalidInput` (not a whole number from 0 to 2**31 - 1, or no
        level given), :class:`CountersWouldGoBack` (the workflow is already
        further; nothing changed), :class:`NoActiveWorkflow`,
        :class:`AccessDenied` (no ``update`` right), :class:`WorkflowNotFound`.
        """
        return self.binder.advance_counters(
            self.context, CounterStep.to(round=round, task=task, action=action)
        )

    def next_round(self) -> WorkflowCounters:
        """Start the next round, task and action back to 0; errors as :meth:`advance`."""
        return self.binder.advance_counters(self.context, CounterStep.next(CounterLevel.ROUND))

    def next_task(self) -> WorkflowCounters:
        """Start the next task of the round, action back to 0; errors as :meth:`advance`."""
        return self.binder.advance_counters(self.context, CounterStep.next(CounterLevel.TASK))

    def next_action(self) -> WorkflowCounters:
        """Start the next action of the task, atomically; errors as :meth:`advance`.

        Two runs calling it at once get two different action numbers.
        """
        return self.binder.advance_counters(self.context, CounterStep.next(CounterLevel.ACTION))

    def store_file(
        self,
        file_name: str,
        data: FileData,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance | None = None,
    ) -> StoredFile:
        """Store a file for the run's principal (C1 + C2); see :class:`StoreFile`.

        The FileItem's provenance (B9) is ``provenance`` (else the bound tool
        call) completed with this run's id, workflow and the files it read.
        """
        ctx = self.context
        return self.binder.store_file(
            self.principal,
            file_name,
            data,
            mime_type=mime_type,
            folder=folder,
            tags=tags,
            provenance=provenance_for(
                provenance, run_id=ctx.run_id, workflow_id=ctx.workflow_id, parents=ctx.read_files
            ),
        )

    def attach(
        self, item: FileItem | StoredFile, *, label: str = DEFAULT_LABEL, user_message: str = ""
    ) -> ChatDocument:
        """Attach a FileItem (or the result of :meth:`store_file`) to the run's workflow (C3).

        Raises :class:`NoActiveWorkflow`, :class:`AccessDenied`,
        :class:`FileItemNotFound`, :class:`InvalidInput`, :class:`StorageError`.
        """
        return self.binder.attach_file(
            self.context, _file_item(item), label=label, user_message=user_message
        )

    def can_attach(self) -> bool:
        """Whether this run has a workflow that its principal may add documents to."""
        workflow = self.context.bound_workflow
        binder = self.binder
        return workflow is not None and binder.access.can_on_workflow(
            self.principal, Action.UPDATE, workflow
        )

    def attach_safely(
        self, item: FileItem | StoredFile, *, label: str = DEFAULT_LABEL, user_message: str = ""
    ) -> str | None:
        """Attach and return the ChatDocument id, or ``None`` with one logged warning (C3)."""
        return attach_file_as_chat_document(
            self.binder.attach_file,
            self.context,
            _file_item(item),
            label=label,
            user_message=user_message,
        )

    def persist_action_result(
        self, items: Sequence[FileItem | StoredFile], *, label: str, user_message: str = ""
    ) -> ChatMessage:
        """Attach several FileItems (or :meth:`store_file` results) as one message (C9)."""
        return self.binder.persist_action_result(
            self.context, [_file_item(i) for i in items], label=label, user_message=user_message
        )

    def produce_file(
        self,
        file_name: str,
        data: FileData,
        *,
        verb: str = "Stored",
        label: str = DEFAULT_LABEL,
        mime_type: str | None = None,
        user_message: str = "",
        provenance: Provenance | None = None,
    ) -> ToolFileResult:
        """The whole producer path: store -> duplicate check -> attach -> tool-result text.

        ``provenance`` (B9) is what the producer declares: tool name, call id,
        argument digest, model; without it the tool call a host bound with
        :func:`docbinder.application.provenance.tool_call` is used, and without
        that ``tool`` stays ``None``. The run adds its id, its workflow and the
        files whose content it read so far (the parents).

        The blob is written first; then the duplicate check, the FileItem and
        the ChatMessage are one transaction (:class:`ProduceFile`). Storing
        errors propagate (bad name, access, size, storage); attaching never
        raises: a missing workflow or permission drops the ``documentList ref``
        line, logs why and sets ``not_attached`` on the result (with a bound
        workflow the text says in one line that the file is stored but not in
        the workflow). With link keys and ``public_url`` configured, a last line
        ``  download: <url> (until <UTC time>)`` gives a signed link valid for an
        hour (:meth:`_download_link`).
        """
        produced = self.binder.produce_file(
            self.context,
            file_name,
            data,
            label=label,
            user_message=user_message,
            mime_type=mime_type,
            provenance=provenance,
        )
        item, document_id = produced.stored.item, produced.document_id
        text = format_tool_file_result(verb, item, document_id, produced.not_attached)
        link = self._download_link(item)
        if link is not None:
            text += f"\n  download: {link.url} (until {link.expires_at.isoformat()})"
        label_used = produced.message.documents_label if produced.message is not None else None
        return ToolFileResult(
            item, document_id, text, produced.stored.duplicate, label_used, produced.not_attached
        )

    def _download_link(self, item: FileItem) -> MintedLink | None:
        """A link for the ``download:`` line of a tool result, or ``None``.

        ``None`` unless link keys and ``public_url`` are configured. Valid for
        :data:`TOOL_LINK_SECONDS` (at most the longest lifetime allowed). Never
        raises: a link that cannot be minted is logged and left out; the file
        is stored either way.
        """
        mint = self.binder.mint_link
        if mint.keys is None or not mint.base_url:
            return None
        try:
            return mint(self.context, item.id, expires_in=min(TOOL_LINK_SECONDS, mint.max_expiry))
        except DocbinderError as exc:
            log.warning("no download link for file %s: %s", item.id, exc)
            return None

    def resolve(self, document_list: object) -> Resolution:
        """Resolve a model-supplied ``documentList`` in the run's workflow (C6 + C7)."""
        return self.binder.resolve(self.context, document_list)

    def get_content(self, document_list: object) -> ContentResult:
        """Content parts for a model-supplied ``documentList`` (C6 + C7 + C8).

        The files read become parents of what this run produces next (B9).
        """
        content = self.binder.get_content(self.context, document_list)
        self.context.note_read(d.file_id for d in content.documents)
        return content

    def note_read(self, file_ids: Sequence[str]) -> None:
        """Record that a tool of this run read these files' content another way than :meth:`get_content`.

        They become parents of what the run produces next (B9) and, with the
        audit log on, ``read_content`` events (B11).
        """
        self.context.note_read(file_ids)
        self.binder.audit_log.content_read(self.principal, list(file_ids), self.context.workflow_id)

    def link_for(
        self,
        reference_or_file_id: str,
        *,
        expires_in: object,
        audience: str | None = None,
        once: bool = False,
        base_url: str | None = None,
    ) -> MintedLink:
        """A signed, expiring link to a file (feature row B4): ``link.url``, ``link.expires_at``.

        ``reference_or_file_id`` is a file id or a reference of the run's
        workflow naming one file (``docItem:<id>``); ``expires_in`` seconds or
        text like ``"10m"``; ``once`` makes a one-time link; ``base_url``
        defaults to the ``public_url`` setting. Errors as :class:`MintLink`.
        """
        return self.binder.mint_link(
            self.context,
            reference_or_file_id,
            expires_in=expires_in,
            audience=audience,
            once=once,
            base_url=base_url,
        )

    def get_file(self, file_id: str) -> FileItem:
        """A readable FileItem; :class:`FileItemNotFound` otherwise."""
        return self.binder.get_file(self.principal, file_id)

    def provide_file(
        self, file_id: str, provider: str, account: str = "default", *, verify: bool = True
    ) -> ProviderFileRef:
        """The file as a model provider knows it, uploaded at most once per content and tenant (B22).

        ``provider`` is ``openai``, ``anthropic`` or ``gemini``; ``account`` the
        name its client was registered under (``binder.providers.register``).
        Errors as :class:`~docbinder.application.use_cases.provide_file.ProvideFile`.
        """
        return self.binder.provide_file(self.principal, file_id, provider, account, verify=verify)

    def open_file(self, file_id: str, chunk_size: int = 1 << 20) -> BlobReader:
        """A readable FileItem's bytes as a :class:`BlobReader`; use it in a ``with`` block.

        Chunks hold at most ``chunk_size`` bytes. Raises
        :class:`FileItemNotFound` and :class:`BlobMissing` at call time.
        """
        reader = self.binder.open_file(self.principal, file_id, chunk_size)
        self.context.note_read((file_id,))
        return reader

    def read_file(self, file_id: str) -> bytes:
        """The whole content of a readable file, in memory (for small files).

        The stream is closed before returning; errors as :meth:`open_file`.
        """
        with self.open_file(file_id) as chunks:
            return b"".join(chunks)

    def list_files(self, *, limit: int | None = None) -> list[FileItem]:
        """FileItems the principal may read in its mandate, newest first."""
        return self.binder.list_files(self.principal, limit=limit)

    def delete_file(self, file_id: str, *, force: bool = False) -> FileItem:
        """Delete a FileItem of this principal; return it as it was. See :class:`DeleteFile`.

        Raises :class:`FileItemNotFound`, :class:`AccessDenied`, and
        :class:`FileStillReferenced` when ChatDocuments refer to it and
        ``force`` is false.
        """
        return self.binder.delete_file(self.principal, file_id, force=force)

    def append_file(self, file_id: str, data: FileData) -> FileUpdate:
        """Append ``data`` to a FileItem in place (``binder.update_file.append``)."""
        return self.binder.update_file.append(self.principal, file_id, data)

    def replace_file(
        self, file_id: str, data: FileData, *, expected: FileItem | None = None
    ) -> FileUpdate:
        """Make ``data`` a FileItem's whole new content (``binder.update_file.replace``)."""
        return self.binder.update_file.replace(self.principal, file_id, data, expected=expected)

    def messages(self) -> list[ChatMessage]:
        """The stored messages of the run's workflow; :class:`NoActiveWorkflow` without one.

        Every message of the workflow, also those other runs added
        (:class:`ListMessages`); :class:`WorkflowNotFound` if it is no longer
        readable.
        """
        workflow = self.workflow
        if workflow is None:
            raise NoActiveWorkflow("this run has no workflow")
        return self.binder.list_messages(self.principal, workflow.id)


def _file_item(value: FileItem | StoredFile) -> FileItem:
    """The FileItem itself, or the one a :class:`StoredFile` carries."""
    return value.item if isinstance(value, StoredFile) else value
