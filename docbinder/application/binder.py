"""The public facade: a :class:`DocBinder` built from ports, and a :class:`Run` per agent run.

A host framework builds one ``DocBinder`` (usually through
:func:`docbinder.container.build_binder`), then per agent run::

    run = binder.start_run(principal, workflow_id)     # binds principal + workflow once (C4)
    result = run.produce_file("report.md", data, verb="Wrote", label="writeFile:report.md")
    result.text                                        # the unified tool-result text (C5)
    content = run.get_content(model_supplied_document_list)   # C6 + C7 + C8
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.application.attach import DEFAULT_LABEL, AttachFiles, attach_file_as_chat_document
from docbinder.application.check_duplicate import CheckDuplicate
from docbinder.application.content import ContentResult, GetContent
from docbinder.application.context import RunContext
from docbinder.application.delete_file import DeleteFile
from docbinder.application.extraction_cache import CachingExtractor, PruneExtractionCache
from docbinder.application.get_file import GetFile
from docbinder.application.hashing import FileData
from docbinder.application.maintenance import CollectGarbage
from docbinder.application.produce import ProduceFile
from docbinder.application.resolve import Resolution, ResolveDocumentList
from docbinder.application.results import format_tool_file_result
from docbinder.application.store_file import StoredFile, StoreFile
from docbinder.application.update import UpdateFileContent
from docbinder.application.versions import FileVersions
from docbinder.application.workflows import Workflows
from docbinder.domain.model import ChatDocument, ChatMessage, ChatWorkflow, FileItem, Principal
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore
from docbinder.ports.extractor import ContentExtractor, ExtractionCache, MimeDetector
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory


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
    """All use cases over one set of adapters. Thread-safe if the adapters are.

    ``uow_factory`` makes the units of work that write; ``read_uow_factory``
    (default: the same) those of the read-only use cases: resolving, content,
    getting and listing files, the standalone duplicate check and workflow
    reads. With SQL metadata pass ``SqlMetadata.read_unit_of_work``, so that on
    SQLite reads do not wait for the write lock (the container does).
    ``max_file_size`` is in bytes (``None``: no limit). With an
    ``extraction_cache`` the extractor is wrapped in
    :class:`~docbinder.application.extraction_cache.CachingExtractor` and
    ``prune_extraction_cache`` removes entries of hashes no FileItem has (a
    ``gc`` step); without one it is ``None``.
    """

    def __init__(
        self,
        *,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        authorizer: Authorizer,
        clock: Clock,
        ids: IdFactory,
        extractor: ContentExtractor,
        mime: MimeDetector | None = None,
        max_file_size: int | None = None,
        read_uow_factory: UnitOfWorkFactory | None = None,
        extraction_cache: ExtractionCache | None = None,
    ) -> None:
        reader = read_uow_factory or uow_factory
        if extraction_cache is not None:
            extractor = CachingExtractor(extractor, extraction_cache)
        self.uow_factory = uow_factory
        self.read_uow_factory = reader
        self.blobs = blobs
        self.authorizer = authorizer
        self.ids = ids
        self.clock = clock
        self.extractor = extractor
        self.max_file_size = max_file_size
        self.access = AccessPolicy(authorizer)
        self.store_file = StoreFile(
            uow_factory,
            blobs,
            self.access,
            clock,
            ids,
            mime,
            max_file_size,
            reader,
        )
        self.check_duplicate = CheckDuplicate(reader, self.access, blobs)
        self.get_file = GetFile(reader, blobs, self.access)
        self.delete_file = DeleteFile(uow_factory, blobs, self.access)
        self.attach_files = AttachFiles(uow_factory, self.access, clock, ids)
        self.produce_file = ProduceFile(self.store_file, self.attach_files)
        self.workflows = Workflows(uow_factory, self.access, clock, ids, reader)
        self.resolve = ResolveDocumentList(reader, blobs, self.access)
        self.get_content = GetContent(self.resolve, blobs, extractor)
        self.collect_garbage = CollectGarbage(uow_factory, blobs, clock)
        self.update_file = UpdateFileContent(
            uow_factory, blobs, self.access, ids, max_file_size, self.store_file.registration
        )
        self.versions = FileVersions(
            uow_factory,
            blobs,
            self.access,
            clock,
            ids,
            mime,
            max_file_size,
            reader,
            self.store_file.registration,
        )
        self.extraction_cache = extraction_cache
        self.prune_extraction_cache = (
            PruneExtractionCache(reader, extraction_cache) if extraction_cache is not None else None
        )

    def start_run(self, principal: Principal, workflow_id: str | None = None) -> Run:
        """Bind ``principal`` and, if given, the workflow ``workflow_id`` for one agent run.

        Raises :class:`WorkflowNotFound` if the workflow is absent or not
        readable by ``principal``. With no ``workflow_id`` the run has no
        workflow: producers still store files, and resolving answers
        ``no_active_workflow``.
        """
        workflow = self.workflows.get(principal, workflow_id) if workflow_id is not None else None
        return Run(self, RunContext(principal, workflow))

    def start_new_run(self, principal: Principal) -> Run:
        """Create a workflow for ``principal`` and bind it; :class:`AccessDenied` if not allowed."""
        return Run(self, RunContext(principal, self.workflows.create(principal)))


class Run:
    """One agent run: a :class:`DocBinder` plus the bound :class:`RunContext`."""

    def __init__(self, binder: DocBinder, context: RunContext) -> None:
        self.binder = binder
        self.context = context

    @property
    def principal(self) -> Principal:
        """The run's principal."""
        return self.context.principal

    @property
    def workflow(self) -> ChatWorkflow | None:
        """The run's in-memory workflow (with the messages this run created), or ``None``."""
        return self.context.workflow

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
        return self.binder.attach_files.attach(
            self.context, _file_item(item), label=label, user_message=user_message
        )

    def can_attach(self) -> bool:
        """Whether this run has a workflow that its principal may add documents to."""
        return self.binder.attach_files.can_attach(self.context)

    def attach_safely(
        self, item: FileItem | StoredFile, *, label: str = DEFAULT_LABEL, user_message: str = ""
    ) -> str | None:
        """Attach and return the ChatDocument id, or ``None`` with one logged warning (C3)."""
        return attach_file_as_chat_document(
            self.binder.attach_files,
            self.context,
            _file_item(item),
            label=label,
            user_message=user_message,
        )

    def persist_action_result(
        self, items: Sequence[FileItem | StoredFile], *, label: str, user_message: str = ""
    ) -> ChatMessage:
        """Attach several FileItems (or :meth:`store_file` results) as one message (C9)."""
        return self.binder.attach_files.persist_action_result(
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

    def open_file(self, file_id: str) -> Iterator[bytes]:
        """A readable FileItem's bytes as chunks."""
        return self.binder.get_file.open(self.principal, file_id)

    def list_files(self, *, limit: int | None = None) -> list[FileItem]:
        """FileItems the principal may read in its mandate, newest first."""
        return self.binder.get_file.list(self.principal, limit=limit)


def _file_item(value: FileItem | StoredFile) -> FileItem:
    """The FileItem itself, or the one a :class:`StoredFile` carries."""
    return value.item if isinstance(value, StoredFile) else value
