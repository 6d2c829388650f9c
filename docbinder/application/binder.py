"""The public facade: a :class:`DocBinder` over the use cases, and a :class:`Run` per agent run.

A host framework builds one ``DocBinder`` (usually through
:func:`docbinder.container.build_binder`), then per agent run::

    run = binder.start_run(principal, workflow_id)     # binds principal + workflow once (C4)
    result = run.produce_file("report.md", data, verb="Wrote", label="writeFile:report.md")
    result.text                                        # the unified tool-result text (C5)
    content = run.get_content(model_supplied_document_list)   # C6 + C7 + C8
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from types import TracebackType

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.application.advance_counters import AdvanceCounters
from docbinder.application.attach_file import AttachFile, attach_file_as_chat_document
from docbinder.application.attaching import Attacher
from docbinder.application.check_duplicate import CheckDuplicate
from docbinder.application.closing import CLOSED_MESSAGE
from docbinder.application.content import ContentResult, GetContent
from docbinder.application.context import RunContext
from docbinder.application.count_file_references import CountFileReferences
from docbinder.application.create_workflow import CreateWorkflow
from docbinder.application.delete_file import DeleteFile
from docbinder.application.extraction_cache import PruneExtractionCache
from docbinder.application.find_deleted_files import FindDeletedFiles
from docbinder.application.get_file import GetFile
from docbinder.application.get_workflow import GetWorkflow
from docbinder.application.hashing import FileData
from docbinder.application.list_files import ListFiles
from docbinder.application.list_messages import ListMessages
from docbinder.application.list_workflows import ListWorkflows
from docbinder.application.maintenance import CollectGarbage
from docbinder.application.open_file import OpenFile
from docbinder.application.persist_action_result import PersistActionResult
from docbinder.application.produce import ProduceFile
from docbinder.application.resolve import Resolution, ResolveDocumentList
from docbinder.application.results import format_tool_file_result
from docbinder.application.store_file import StoredFile, StoreFile
from docbinder.application.update import UpdateFileContent
from docbinder.application.versions import FileVersions
from docbinder.domain.counters import CounterLevel, CounterStep, WorkflowCounters
from docbinder.domain.errors import BinderClosed
from docbinder.domain.model import (
    DEFAULT_LABEL,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Principal,
)
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobReader, BlobStore
from docbinder.ports.extractor import ContentExtractor, ExtractionCache
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)


@attrs.frozen
class ToolFileResult:
    """What a file-producing tool gets back: the FileItem, the ChatDocument id and the text.

    ``document_id`` is ``None`` when no workflow is bound or the attach failed
    (the reason was logged); ``text`` then has no ``documentList ref`` line.
    ``label`` is the ``documents_label`` the message got (the requested one, or
    it with a ``#<8 hex>`` suffix when that was taken; ``None`` without attach).
    """

    item: FileItem
    document_id: str | None
    text: str
    duplicate: bool
    label: str | None = None

    @property
    def reference(self) -> str | None:
        """``docItem:<document_id>``, or ``None``."""
        return f"docItem:{self.document_id}" if self.document_id else None


class DocBinder:
    """The facade over every use case, built by the composition root (:mod:`docbinder.container`).

    A host gets one from :func:`docbinder.build_binder` (from settings) or
    :func:`docbinder.container.compose_binder` (over ports it built itself);
    the constructor takes the use cases ready-made and builds none of them.
    Thread-safe if the adapters are.

    The use cases are attributes named after them (``store_file``,
    ``check_duplicate``, ``get_file``, ``open_file``, ``list_files``,
    ``delete_file``, ``count_file_references``, ``attach_file``,
    ``persist_action_result``, ``produce_file``, ``create_workflow``,
    ``get_workflow``, ``list_workflows``, ``list_messages``,
    ``find_deleted_files``, ``advance_counters``, ``resolve``, ``get_content``, ``collect_garbage``,
    ``update_file``, ``versions``, ``prune_extraction_cache``), each callable
    with the principal (or the run context) first. The ports they were built
    over stay readable for diagnostics (``uow_factory``, ``read_uow_factory``,
    ``blobs``, ``authorizer``, ``clock``, ``ids``, ``extractor``,
    ``extraction_cache``, ``access``; ``max_file_size`` in bytes or ``None``).

    :meth:`close` (or leaving ``with binder:``) releases what the binder holds:
    ``resources`` are closed in reverse order, each once (any object with a
    ``close()`` method: the SQL metadata store's connection pools, an S3
    client, the hash worker threads, ...). Afterwards :meth:`start_run`,
    :meth:`start_new_run`, every :class:`Run` method and every use case
    attribute raise :class:`~docbinder.domain.errors.BinderClosed`, on every
    backend: the composition root hands the use cases their units of work
    through a :class:`~docbinder.application.closing.UnitOfWorkGate` that is
    among ``resources`` and closes first. The ``uow_factory`` and
    ``read_uow_factory`` attributes are the ports themselves, not gated.
    """

    def __init__(
        self,
        *,
        store_file: StoreFile,
        check_duplicate: CheckDuplicate,
        get_file: GetFile,
        open_file: OpenFile,
        list_files: ListFiles,
        delete_file: DeleteFile,
        count_file_references: CountFileReferences,
        attacher: Attacher,
        attach_file: AttachFile,
        persist_action_result: PersistActionResult,
        produce_file: ProduceFile,
        create_workflow: CreateWorkflow,
        get_workflow: GetWorkflow,
        list_workflows: ListWorkflows,
        list_messages: ListMessages,
        find_deleted_files: FindDeletedFiles,
        advance_counters: AdvanceCounters,
        resolve: ResolveDocumentList,
        get_content: GetContent,
        collect_garbage: CollectGarbage,
        update_file: UpdateFileContent,
        versions: FileVersions,
        prune_extraction_cache: PruneExtractionCache | None,
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
    ) -> None:
        self.store_file = store_file
        self.check_duplicate = check_duplicate
        self.get_file = get_file
        self.open_file = open_file
        self.list_files = list_files
        self.delete_file = delete_file
        self.count_file_references = count_file_references
        self.attacher = attacher
        self.attach_file = attach_file
        self.persist_action_result = persist_action_result
        self.produce_file = produce_file
        self.create_workflow = create_workflow
        self.get_workflow = get_workflow
        self.list_workflows = list_workflows
        self.list_messages = list_messages
        self.find_deleted_files = find_deleted_files
        self.advance_counters = advance_counters
        self.resolve = resolve
        self.get_content = get_content
        self.collect_garbage = collect_garbage
        self.update_file = update_file
        self.versions = versions
        self.prune_extraction_cache = prune_extraction_cache
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
        return Run(self, RunContext(principal, workflow))

    def start_new_run(self, principal: Principal) -> Run:
        """Create a workflow for ``principal`` and bind it; :class:`AccessDenied` if not allowed."""
        self.require_open()
        return Run(self, RunContext(principal, self.create_workflow(principal)))


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
    ) -> StoredFile:
        """Store a file for the run's principal (C1 + C2); see :class:`StoreFile`."""
        return self.binder.store_file(
            self.principal, file_name, data, mime_type=mime_type, folder=folder, tags=tags
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
        return self.binder.attacher.can_attach(self.context)

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
    ) -> ToolFileResult:
        """The whole producer path: store -> duplicate check -> attach -> tool-result text.

        After the blob is written, the duplicate check, the FileItem and the
        ChatMessage are one transaction (:class:`ProduceFile`). Storing errors propagate (bad name, access, size, storage); attaching
        never raises (a missing workflow or permission drops the
        ``documentList ref`` line and logs why).
        """
        produced = self.binder.produce_file(
            self.context,
            file_name,
            data,
            label=label,
            user_message=user_message,
            mime_type=mime_type,
        )
        item, document_id = produced.stored.item, produced.document_id
        text = format_tool_file_result(verb, item, document_id)
        label_used = produced.message.documents_label if produced.message is not None else None
        return ToolFileResult(item, document_id, text, produced.stored.duplicate, label_used)

    def resolve(self, document_list: object) -> Resolution:
        """Resolve a model-supplied ``documentList`` in the run's workflow (C6 + C7)."""
        return self.binder.resolve(self.context, document_list)

    def get_content(self, document_list: object) -> ContentResult:
        """Content parts for a model-supplied ``documentList`` (C6 + C7 + C8)."""
        return self.binder.get_content(self.context, document_list)

    def get_file(self, file_id: str) -> FileItem:
        """A readable FileItem; :class:`FileItemNotFound` otherwise."""
        return self.binder.get_file(self.principal, file_id)

    def open_file(self, file_id: str, chunk_size: int = 1 << 20) -> BlobReader:
        """A readable FileItem's bytes as a :class:`BlobReader`; use it in a ``with`` block.

        Chunks hold at most ``chunk_size`` bytes. Raises
        :class:`FileItemNotFound` and :class:`BlobMissing` at call time.
        """
        return self.binder.open_file(self.principal, file_id, chunk_size)

    def read_file(self, file_id: str) -> bytes:
        """The whole content of a readable file, in memory (for small files).

        The stream is closed before returning; errors as :meth:`open_file`.
        """
        with self.open_file(file_id) as chunks:
            return b"".join(chunks)

    def list_files(self, *, limit: int | None = None) -> list[FileItem]:
        """FileItems the principal may read in its mandate, newest first."""
        return self.binder.list_files(self.principal, limit=limit)


def _file_item(value: FileItem | StoredFile) -> FileItem:
    """The FileItem itself, or the one a :class:`StoredFile` carries."""
    return value.item if isinstance(value, StoredFile) else value
