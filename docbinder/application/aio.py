"""The async facade: :class:`AsyncDocBinder` and :class:`AsyncRun` over a :class:`DocBinder`.

Every method awaits the matching blocking use case in an anyio worker thread
(``anyio.to_thread.run_sync``) under one :class:`anyio.CapacityLimiter`, so the
event loop never blocks on SQL or blob I/O and at most ``max_threads`` calls
run at once. It works under asyncio and trio (anyio picks the running loop).

Data may be bytes, an iterable of byte chunks, a binary file object, or an
**async** iterable of byte chunks. An async iterable is pumped on the event
loop into a bounded memory object stream and pulled from it by the thread
that writes the blob, one chunk at a time, so at most ``buffer + 2`` chunks
are held at once whatever the file size.

Cancellation (ADR 0015): a cancelled ``await`` leaves either the complete
stored file or nothing. Cancelled while waiting for a worker thread: nothing
ran. Cancelled while an async-iterable source is still being read: the blob
write is abandoned and nothing is kept. Cancelled once the worker holds all
the data (bytes, a sync iterable or file object, or after the last async
chunk): the worker finishes (blob, FileItem and ChatMessage commit together)
and the ``await`` returns its result or raises the cancellation. Worker threads are never abandoned, so no
work goes on after the cancelled ``await`` has returned.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from docbinder.application.binder import DocBinder, Run, ToolFileResult
from docbinder.application.cancelling import run_sync_cancellable
from docbinder.application.steps.content_switch import FileUpdate
from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.storing import StoredFile
from docbinder.application.use_cases.check_duplicate import DuplicateCheck
from docbinder.application.use_cases.collect_garbage import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_MAX_SHARE,
    GcReport,
)
from docbinder.application.use_cases.get_content import ContentResult
from docbinder.application.use_cases.mint_link import MintedLink
from docbinder.application.use_cases.resolve_document_list import Resolution
from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import InvalidInput, StorageError
from docbinder.domain.model import (
    DEFAULT_LABEL,
    NO_PROVENANCE,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Principal,
    Provenance,
)
from docbinder.domain.providers import ProviderFileRef
from docbinder.ports.blobs import BlobReader

T = TypeVar("T")

AsyncFileData = FileData | AsyncIterable[bytes]
"""What an async producer may hand over: :data:`FileData` or an async iterable of byte chunks."""

DEFAULT_MAX_THREADS = 8
"""Worker threads one :class:`AsyncDocBinder` uses at most at a time, by default."""

DEFAULT_BUFFER_CHUNKS = 1
"""Chunks of an async-iterable upload read ahead of the blob write, by default."""


class UploadAborted(StorageError):
    """The async source of an upload stopped early (cancelled); nothing was stored."""


class _SourceFailed(Exception):
    """Raised in the writing thread when the async source raised; the host re-raises the cause."""


class _AsyncSource:
    """Bridges an async iterable of chunks to the thread that writes the blob.

    :meth:`pump` runs on the event loop and sends chunks into a memory object
    stream holding at most ``buffer`` chunks; iterating the object (in any
    thread: blob stores may read on their own threads) receives them one at a
    time through ``anyio.from_thread.run`` with the loop's token. The end of
    the stream is a normal end only when the source was exhausted; a source
    that raised or was cancelled ends it with an error, so the blob store
    abandons the write.
    """

    def __init__(self, source: AsyncIterable[bytes], buffer: int) -> None:
        self._source = source
        self._send: MemoryObjectSendStream[bytes]
        self._receive: MemoryObjectReceiveStream[bytes]
        self._send, self._receive = anyio.create_memory_object_stream[bytes](buffer)
        self._token = anyio.lowlevel.current_token()
        self._complete = False
        self.failure: Exception | None = None

    async def pump(self) -> None:
        """Send every chunk of the source, then close; a source error is kept for the host."""
        async with self._send:
            try:
                async for chunk in self._source:
                    try:
                        await self._send.send(chunk)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the writer stopped reading (it failed or finished)
            except Exception as exc:
                self.failure = exc
                return
            self._complete = True

    def close(self) -> None:
        """Stop the pump's sends (called when the writing thread is done)."""
        self._receive.close()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = anyio.from_thread.run(self._receive.receive, token=self._token)
            except anyio.EndOfStream:
                if self._complete:
                    return
                if self.failure is not None:
                    raise _SourceFailed() from self.failure
                raise UploadAborted("the upload was cancelled; nothing was stored") from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise UploadAborted("the upload was cancelled; nothing was stored") from None
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # the waiting receive was cancelled with the host
                raise UploadAborted("the upload was cancelled; nothing was stored") from exc
            yield chunk


class AsyncChunks:
    """An open file's bytes as an async iterator of chunks (bytes, at most ``chunk_size`` each).

    Each chunk is read in a worker thread. Use as ``async with`` (or call
    :meth:`aclose`) to release the underlying stream early; it is released
    when exhausted too. Errors while reading: :class:`StorageError`.
    """

    def __init__(self, chunks: BlobReader, runner: _Runner) -> None:
        self._chunks = chunks
        self._run = runner
        self._closed = False

    def __aiter__(self) -> AsyncChunks:
        return self

    async def __anext__(self) -> bytes:
        if self._closed:
            raise StopAsyncIteration
        try:
            chunk: bytes | None = await self._run(next, self._chunks, None)
            # A read is never worth keeping once cancelled: release the stream.
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await self.aclose()
            raise
        if chunk is None:
            await self.aclose()
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Release the underlying stream (idempotent; shielded from cancellation)."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._run(self._chunks.close)

    async def __aenter__(self) -> AsyncChunks:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Runner:
    """Runs blocking calls in worker threads under one capacity limiter."""

    def __init__(self, max_threads: int) -> None:
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
            raise InvalidInput(f"max_threads must be a whole number >= 1, got {max_threads!r}")
        self.limiter = anyio.CapacityLimiter(max_threads)

    async def __call__(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(func, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    async def cancellable(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A read: like ``__call__``, and a cancelled ``await`` stops its conversion (ADR 0070)."""
        call = functools.partial(func, *args, **kwargs)
        return await run_sync_cancellable(call, limiter=self.limiter)

    async def with_data(self, data: AsyncFileData, buffer: int, work: Callable[[FileData], T]) -> T:
        """``work(data)`` in a worker thread; an async iterable is bridged chunk by chunk."""
        if not isinstance(data, AsyncIterable):
            return await self(work, data)
        source = _AsyncSource(data, buffer)
        # Errors are raised after the task group, which would wrap them in a group.
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(source.pump)
            try:
                result = await self(work, source)
            except _SourceFailed as exc:
                error = source.failure or exc
            except Exception as exc:
                error = exc
            finally:
                source.close()
                tg.cancel_scope.cancel()
        if error is not None:
            if isinstance(error, UploadAborted):
                # Aborted because this task was cancelled: raise the cancellation itself.
                await anyio.lowlevel.checkpoint_if_cancelled()
            raise error
        return result


class AsyncDocBinder:
    """The async face of a :class:`DocBinder`: the same use cases, awaited off the event loop.

    ``max_threads`` (default :data:`DEFAULT_MAX_THREADS`) bounds the worker
    threads this binder uses at once; ``buffer_chunks`` (default
    :data:`DEFAULT_BUFFER_CHUNKS`, >= 0) the chunks of an async-iterable
    upload read ahead of the blob write. Errors are those of the sync API,
    plus :class:`InvalidInput` for bad options. ``sync`` is the wrapped
    :class:`DocBinder`. ``await binder.aclose()`` (or ``async with binder:``)
    closes it.
    """

    def __init__(
        self,
        binder: DocBinder,
        *,
        max_threads: int = DEFAULT_MAX_THREADS,
        buffer_chunks: int = DEFAULT_BUFFER_CHUNKS,
    ) -> None:
        if (
            isinstance(buffer_chunks, bool)
            or not isinstance(buffer_chunks, int)
            or buffer_chunks < 0
        ):
            raise InvalidInput(f"buffer_chunks must be a whole number >= 0, got {buffer_chunks!r}")
        self.sync = binder
        self.buffer_chunks = buffer_chunks
        self._run = _Runner(max_threads)

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The capacity limiter of this binder's worker threads (its ``total_tokens`` can change)."""
        return self._run.limiter

    async def aclose(self) -> None:
        """Close the wrapped :class:`DocBinder` in a worker thread (see :meth:`DocBinder.close`).

        Idempotent. Afterwards every call raises
        :class:`~docbinder.domain.errors.BinderClosed`.
        """
        await self._run(self.sync.close)

    async def __aenter__(self) -> AsyncDocBinder:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start_run(self, principal: Principal, workflow_id: str | None = None) -> AsyncRun:
        """As :meth:`DocBinder.start_run`; :class:`WorkflowNotFound`."""
        return AsyncRun(self, await self._run(self.sync.start_run, principal, workflow_id))

    async def start_new_run(self, principal: Principal) -> AsyncRun:
        """As :meth:`DocBinder.start_new_run`; :class:`AccessDenied`."""
        return AsyncRun(self, await self._run(self.sync.start_new_run, principal))

    def wrap_run(self, run: Run) -> AsyncRun:
        """An :class:`AsyncRun` over an existing sync :class:`Run` (sharing its context)."""
        return AsyncRun(self, run)

    async def store_file(
        self,
        principal: Principal,
        file_name: str,
        data: AsyncFileData,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance = NO_PROVENANCE,
    ) -> StoredFile:
        """As :class:`~docbinder.application.use_cases.store_file.StoreFile`; ``data`` may be async chunks."""

        def work(chunks: FileData) -> StoredFile:
            return self.sync.store_file(
                principal,
                file_name,
                chunks,
                mime_type=mime_type,
                folder=folder,
                tags=tags,
                provenance=provenance,
            )

        return await self._run.with_data(data, self.buffer_chunks, work)

    async def check_duplicate(
        self, principal: Principal, sha256: str, file_name: str
    ) -> DuplicateCheck:
        """As :class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate`."""
        return await self._run(self.sync.check_duplicate, principal, sha256, file_name)

    async def get_file(self, principal: Principal, file_id: str) -> FileItem:
        """A readable FileItem; :class:`FileItemNotFound` otherwise."""
        return await self._run(self.sync.get_file, principal, file_id)

    async def open_file(
        self, principal: Principal, file_id: str, chunk_size: int = 1 << 20
    ) -> AsyncChunks:
        """The file's bytes as :class:`AsyncChunks` of at most ``chunk_size`` bytes.

        Raises (at the ``await``) :class:`FileItemNotFound`, :class:`BlobMissing`.
        """
        chunks = await self._run(self.sync.open_file, principal, file_id, chunk_size)
        reader = AsyncChunks(chunks, self._run)
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await reader.aclose()  # cancelled while opening: release the stream
            raise
        return reader

    async def read_file(self, principal: Principal, file_id: str) -> bytes:
        """The whole content of a readable file, in memory (for small files)."""
        parts = [chunk async for chunk in await self.open_file(principal, file_id)]
        return b"".join(parts)

    async def list_files(self, principal: Principal, *, limit: int | None = None) -> list[FileItem]:
        """As :class:`ListFiles`: readable FileItems of the mandate, newest first."""
        return await self._run(self.sync.list_files, principal, limit=limit)

    async def delete_file(
        self, principal: Principal, file_id: str, *, force: bool = False
    ) -> FileItem:
        """As :class:`DeleteFile`; :class:`FileItemNotFound`, :class:`AccessDenied`."""
        return await self._run(self.sync.delete_file, principal, file_id, force=force)

    async def append_file(
        self, principal: Principal, file_id: str, data: AsyncFileData
    ) -> FileUpdate:
        """As ``binder.update_file.append``; ``data`` may be async chunks.

        See :class:`~docbinder.application.use_cases.append_file_content.AppendFileContent`.
        """

        def work(chunks: FileData) -> FileUpdate:
            return self.sync.update_file.append(principal, file_id, chunks)

        return await self._run.with_data(data, self.buffer_chunks, work)

    async def replace_file(
        self,
        principal: Principal,
        file_id: str,
        data: AsyncFileData,
        *,
        expected: FileItem | None = None,
    ) -> FileUpdate:
        """As ``binder.update_file.replace``; ``data`` may be async chunks.

        See :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`.
        """

        def work(chunks: FileData) -> FileUpdate:
            return self.sync.update_file.replace(principal, file_id, chunks, expected=expected)

        return await self._run.with_data(data, self.buffer_chunks, work)

    async def create_workflow(
        self, principal: Principal, workflow_id: str | None = None
    ) -> ChatWorkflow:
        """As :class:`CreateWorkflow`; :class:`AccessDenied`, :class:`Conflict` (id taken)."""
        return await self._run(self.sync.create_workflow, principal, workflow_id)

    async def get_workflow(self, principal: Principal, workflow_id: str) -> ChatWorkflow:
        """As :class:`GetWorkflow`; :class:`WorkflowNotFound`."""
        return await self._run(self.sync.get_workflow, principal, workflow_id)

    async def workflow_messages(self, principal: Principal, workflow_id: str) -> list[ChatMessage]:
        """As :class:`ListMessages`: all messages of a readable workflow."""
        return await self._run(self.sync.list_messages, principal, workflow_id)

    async def list_workflows(
        self, principal: Principal, *, limit: int | None = None
    ) -> list[ChatWorkflow]:
        """As :class:`ListWorkflows`: readable workflows of the mandate, newest first."""
        return await self._run(self.sync.list_workflows, principal, limit=limit)

    async def collect_garbage(
        self,
        *,
        dry_run: bool = True,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        force: bool = False,
        max_share: float = DEFAULT_MAX_SHARE,
        allow_short_grace: bool = False,
    ) -> GcReport:
        """As :class:`CollectGarbage` (``grace_seconds`` in seconds, ``max_share`` a fraction)."""
        return await self._run(
            self.sync.collect_garbage,
            dry_run=dry_run,
            grace_seconds=grace_seconds,
            force=force,
            max_share=max_share,
            allow_short_grace=allow_short_grace,
        )


class AsyncRun:
    """One agent run, async: every method of :class:`Run`, awaited in a worker thread."""

    def __init__(self, binder: AsyncDocBinder, run: Run) -> None:
        self.binder = binder
        self.sync = run
        self._run = binder._run

    @property
    def principal(self) -> Principal:
        """The run's principal."""
        return self.sync.principal

    @property
    def workflow(self) -> ChatWorkflow | None:
        """The run's in-memory workflow, or ``None``."""
        return self.sync.workflow

    @property
    def counters(self) -> WorkflowCounters | None:
        """As :attr:`Run.counters`: round, task and action as this run last saw them."""
        return self.sync.counters

    async def advance(
        self, *, round: int | None = None, task: int | None = None, action: int | None = None
    ) -> WorkflowCounters:
        """As :meth:`Run.advance`: absolute round/task/action, lower levels not given become 0."""
        return await self._run(self.sync.advance, round=round, task=task, action=action)

    async def next_round(self) -> WorkflowCounters:
        """As :meth:`Run.next_round`."""
        return await self._run(self.sync.next_round)

    async def next_task(self) -> WorkflowCounters:
        """As :meth:`Run.next_task`."""
        return await self._run(self.sync.next_task)

    async def next_action(self) -> WorkflowCounters:
        """As :meth:`Run.next_action`."""
        return await self._run(self.sync.next_action)

    async def store_file(
        self,
        file_name: str,
        data: AsyncFileData,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance | None = None,
    ) -> StoredFile:
        """As :meth:`Run.store_file`; ``data`` may be async chunks."""

        def work(chunks: FileData) -> StoredFile:
            return self.sync.store_file(
                file_name,
                chunks,
                mime_type=mime_type,
                folder=folder,
                tags=tags,
                provenance=provenance,
            )

        return await self._run.with_data(data, self.binder.buffer_chunks, work)

    async def produce_file(
        self,
        file_name: str,
        data: AsyncFileData,
        *,
        verb: str = "Stored",
        label: str = DEFAULT_LABEL,
        mime_type: str | None = None,
        user_message: str = "",
        provenance: Provenance | None = None,
    ) -> ToolFileResult:
        """As :meth:`Run.produce_file` (store, duplicate check, attach, text in one commit)."""

        def work(chunks: FileData) -> ToolFileResult:
            return self.sync.produce_file(
                file_name,
                chunks,
                verb=verb,
                label=label,
                mime_type=mime_type,
                user_message=user_message,
                provenance=provenance,
            )

        return await self._run.with_data(data, self.binder.buffer_chunks, work)

    async def attach(
        self, item: FileItem | StoredFile, *, label: str = DEFAULT_LABEL, user_message: str = ""
    ) -> ChatDocument:
        """As :meth:`Run.attach`; :class:`NoActiveWorkflow`, :class:`AccessDenied`, ..."""
        return await self._run(self.sync.attach, item, label=label, user_message=user_message)

    async def can_attach(self) -> bool:
        """As :meth:`Run.can_attach`."""
        return await self._run(self.sync.can_attach)

    async def attach_safely(
        self, item: FileItem | StoredFile, *, label: str = DEFAULT_LABEL, user_message: str = ""
    ) -> str | None:
        """As :meth:`Run.attach_safely`: the ChatDocument id, or ``None`` with a warning."""
        return await self._run(
            self.sync.attach_safely, item, label=label, user_message=user_message
        )

    async def persist_action_result(
        self, items: Sequence[FileItem | StoredFile], *, label: str, user_message: str = ""
    ) -> ChatMessage:
        """As :meth:`Run.persist_action_result`: several FileItems as one message."""
        return await self._run(
            self.sync.persist_action_result, list(items), label=label, user_message=user_message
        )

    async def resolve(self, document_list: object) -> Resolution:
        """As :meth:`Run.resolve`."""
        return await self._run(self.sync.resolve, document_list)

    async def note_read(self, file_ids: Sequence[str]) -> None:
        """As :meth:`Run.note_read`."""
        await self._run(self.sync.note_read, file_ids)

    async def get_content(self, document_list: object) -> ContentResult:
        """As :meth:`Run.get_content`; a cancelled ``await`` stops the conversion in progress.

        The converter process is killed and the thread returns at once (ADR 0070);
        nothing is cached for the documents it did not finish.
        """
        return await self._run.cancellable(self.sync.get_content, document_list)

    async def link_for(
        self,
        reference_or_file_id: str,
        *,
        expires_in: object,
        audience: str | None = None,
        once: bool = False,
        base_url: str | None = None,
    ) -> MintedLink:
        """As :meth:`Run.link_for`."""
        return await self._run(
            lambda: self.sync.link_for(
                reference_or_file_id,
                expires_in=expires_in,
                audience=audience,
                once=once,
                base_url=base_url,
            )
        )

    async def get_file(self, file_id: str) -> FileItem:
        """As :meth:`Run.get_file`; :class:`FileItemNotFound`."""
        return await self.binder.get_file(self.principal, file_id)

    async def provide_file(
        self, file_id: str, provider: str, account: str = "default", *, verify: bool = True
    ) -> ProviderFileRef:
        """As :meth:`Run.provide_file`, in a worker thread (the upload blocks)."""
        return await self._run(
            lambda: self.sync.provide_file(file_id, provider, account, verify=verify)
        )

    async def open_file(self, file_id: str, chunk_size: int = 1 << 20) -> AsyncChunks:
        """As :meth:`Run.open_file`, as :class:`AsyncChunks`; errors at the ``await``."""
        return await self.binder.open_file(self.principal, file_id, chunk_size)

    async def read_file(self, file_id: str) -> bytes:
        """The whole content of a readable file, in memory (for small files)."""
        return await self.binder.read_file(self.principal, file_id)

    async def list_files(self, *, limit: int | None = None) -> list[FileItem]:
        """As :meth:`Run.list_files`."""
        return await self.binder.list_files(self.principal, limit=limit)

    async def delete_file(self, file_id: str, *, force: bool = False) -> FileItem:
        """Delete a FileItem of this principal (as :meth:`AsyncDocBinder.delete_file`).

        Raises :class:`FileStillReferenced` when ChatDocuments refer to it and
        ``force`` is false.
        """
        return await self.binder.delete_file(self.principal, file_id, force=force)

    async def append_file(self, file_id: str, data: AsyncFileData) -> FileUpdate:
        """Append to a FileItem (as :meth:`AsyncDocBinder.append_file`)."""
        return await self.binder.append_file(self.principal, file_id, data)

    async def replace_file(
        self, file_id: str, data: AsyncFileData, *, expected: FileItem | None = None
    ) -> FileUpdate:
        """Replace a FileItem's content (as :meth:`AsyncDocBinder.replace_file`)."""
        return await self.binder.replace_file(self.principal, file_id, data, expected=expected)

    async def messages(self) -> list[ChatMessage]:
        """As :meth:`Run.messages`; :class:`NoActiveWorkflow` without a workflow."""
        return await self._run(self.sync.messages)
