"""The async API: the same use cases off the event loop, bounded uploads, clean cancellation.

Every test runs on memory and on SQLite + local disk, under asyncio and trio.
Cancellation tests cancel at a known point (gated by events, never by timing)
and then check the stores: every FileItem has its blob, every blob its
FileItem, every ChatMessage its ChatDocuments and their FileItems.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.streams import ChunkReader
from docbinder.aio import AsyncDocBinder, AsyncRun, build_async_binder
from docbinder.application import DocBinder
from docbinder.config import Settings
from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import (
    CountersWouldGoBack,
    FileItemNotFound,
    InvalidInput,
    SizeLimitExceeded,
    WorkflowNotFound,
)
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobReader, BlobStore, Chunks, iter_chunks
from tests.wiring import BlobStoreWrapper, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))
U2 = Principal("u2", "m2", "f2", roles=("member",))
CHUNK = b"x" * 1000


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class WatchedBlobs(BlobStoreWrapper):
    """A blob store wrapper: counts chunks it consumed, can pause after a put, tracks opens."""

    def __init__(self, inner: BlobStore) -> None:
        super().__init__(inner)
        self.consumed = 0
        self.pause_after_put = False
        self.put_done = threading.Event()
        self.resume = threading.Event()
        self.on_put_done: Any = None
        self.read_gate: threading.Event | None = None
        self.reading = threading.Event()
        self.open_gate: threading.Event | None = None
        self.opening = threading.Event()
        self.closed = 0
        self.active = 0
        self.most_active = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        # The rest of the port (store identity, registrations, ...) as the inner store has it.
        return getattr(self.inner, name)

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        def counted() -> Iterator[bytes]:
            for chunk in iter_chunks(data):
                self.consumed += 1
                yield chunk

        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            size = self.inner.put(key, counted())
        finally:
            with self._lock:
                self.active -= 1
        if self.pause_after_put:
            self.on_put_done()
            self.resume.wait(30)
        return size

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        inner = self.inner.open(key, chunk_size)
        watched = self
        if self.open_gate is not None:
            self.opening.set()
            self.open_gate.wait(30)

        def gated() -> Iterator[bytes]:
            while True:
                if watched.read_gate is not None:
                    watched.reading.set()
                    watched.read_gate.wait(30)
                chunk = next(inner, None)
                if chunk is None:
                    return
                yield chunk

        def close() -> None:
            watched.closed += 1
            inner.close()

        return ChunkReader(gated(), close)


class Stack:
    """A binder over one backend pair, its watched blob store and a view of what is stored."""

    def __init__(self, binder: DocBinder, blobs: WatchedBlobs) -> None:
        self.binder = binder
        self.blobs = blobs

    def file_items(self) -> list[Any]:
        with self.binder.uow_factory() as uow:
            return list(uow.maintenance.iter_files())

    def consistent(self, workflow_ids: list[str]) -> tuple[int, int]:
        """Assert no half state; return (FileItems, ChatMessages)."""
        items = self.file_items()
        keys = set(self.blobs.keys())
        assert {i.blob_key for i in items} == keys, "a FileItem without blob or a stray blob"
        ids = {i.id for i in items}
        messages = 0
        for workflow_id in workflow_ids:
            for message in self.binder.list_messages(U1, workflow_id):
                messages += 1
                assert message.documents, "a ChatMessage without its ChatDocument"
                assert all(d.file_id in ids for d in message.documents)
        return len(items), messages


@pytest.fixture(params=["memory", "sqlite+localdisk"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    if request.param == "memory":
        blobs = WatchedBlobs(MemoryBlobStore())
        return Stack(wire_binder(MemoryMetadataStore().unit_of_work, blobs), blobs)
    from docbinder.adapters.sqlite import SqliteMetadata
    from docbinder.container import prepare_storage

    url = f"sqlite:///{tmp_path / 'docbinder.db'}"
    prepare_storage(Settings.load({"home": str(tmp_path), "database_url": url}, environ={}))
    metadata = SqliteMetadata.from_url(url)
    blobs = WatchedBlobs(LocalDiskBlobStore(tmp_path / "blobs"))
    binder = wire_binder(metadata.unit_of_work, blobs, metadata.read_unit_of_work)
    return Stack(binder, blobs)


async def chunks(count: int, chunk: bytes = CHUNK) -> AsyncIterator[bytes]:
    for _ in range(count):
        await anyio.lowlevel.checkpoint()
        yield chunk


# -- the mirror of the sync API ------------------------------------------------------


@pytest.mark.anyio
async def test_a_run_produces_resolves_reads_and_lists_like_the_sync_api(stack: Stack) -> None:
    binder = AsyncDocBinder(stack.binder)
    run = await binder.start_new_run(U1)
    assert isinstance(run, AsyncRun) and run.workflow is not None
    result = await run.produce_file("a.txt", b"alpha", verb="Wrote", label="writeFile:a.txt")
    assert result.text.startswith("Wrote 'a.txt' (5 bytes)") and result.reference is not None
    resolution = await run.resolve([result.reference])
    assert resolution.documents[0].file == result.item
    content = await run.get_content(result.reference)
    assert [p.text for p in content.parts] == ["alpha"]
    assert await run.get_file(result.item.id) == result.item
    assert await run.read_file(result.item.id) == b"alpha"
    streamed = await run.store_file("b.bin", chunks(5))
    assert streamed.item.size == 5 * len(CHUNK)
    assert [i.id for i in await run.list_files()] == [streamed.item.id, result.item.id]
    document = await run.attach(streamed, label="again")
    assert document.file_id == streamed.item.id
    assert await run.can_attach()
    assert await run.attach_safely(streamed.item) is not None
    message = await run.persist_action_result([result.item, streamed], label="both")
    assert [d.file_id for d in message.documents] == [result.item.id, streamed.item.id]
    assert len(await run.messages()) == 4
    again = await binder.start_run(U1, run.workflow.id)
    assert (await again.resolve([result.reference])).documents[0].file == result.item
    update = await run.append_file(result.item.id, chunks(2, b"!"))
    assert await run.read_file(result.item.id) == b"alpha!!" and update.size_change == 2
    await run.replace_file(result.item.id, b"beta", expected=update.item)
    assert await run.read_file(result.item.id) == b"beta"
    assert [w.id for w in await binder.list_workflows(U1)] == [run.workflow.id]
    report = await binder.collect_garbage(grace_seconds=0)
    assert (report.orphan_blobs, report.young_blobs, report.orphan_rows) == ((), (), ())
    assert stack.consistent([run.workflow.id]) == (2, 4)
    await run.delete_file(streamed.item.id, force=True)
    with pytest.raises(FileItemNotFound):
        await run.get_file(streamed.item.id)
    assert [i.id for i in stack.file_items()] == [result.item.id]


@pytest.mark.anyio
async def test_errors_are_those_of_the_sync_api(stack: Stack) -> None:
    binder = AsyncDocBinder(stack.binder)
    run = await binder.start_new_run(U1)
    with pytest.raises(WorkflowNotFound):
        await binder.start_run(U2, run.workflow.id if run.workflow else "")
    with pytest.raises(InvalidInput):
        await run.produce_file("bad\x00name", chunks(1))
    with pytest.raises(InvalidInput):
        await run.store_file("a.txt", _text_chunks())
    stored = await run.store_file("a.txt", b"secret")
    other = await binder.start_new_run(U2)
    with pytest.raises(FileItemNotFound):
        await other.get_file(stored.item.id)
    with pytest.raises(FileItemNotFound):
        await other.open_file(stored.item.id)
    with pytest.raises(InvalidInput):
        await run.list_files(limit=-1)
    with pytest.raises(InvalidInput):
        AsyncDocBinder(stack.binder, max_threads=0)
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (1, 0)


async def _text_chunks() -> AsyncIterator[Any]:
    yield "not bytes"


@pytest.mark.anyio
async def test_an_async_upload_over_the_size_limit_keeps_nothing(tmp_path: Path) -> None:
    blobs = WatchedBlobs(MemoryBlobStore())
    binder = AsyncDocBinder(
        wire_binder(MemoryMetadataStore().unit_of_work, blobs, max_file_size=2500)
    )
    run = await binder.start_new_run(U1)
    with pytest.raises(SizeLimitExceeded):
        await run.produce_file("big.bin", chunks(10))
    assert list(blobs.keys()) == []
    assert await run.list_files() == []


@pytest.mark.anyio
async def test_a_failing_async_source_raises_its_own_error_and_keeps_nothing(stack: Stack) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield CHUNK
        yield CHUNK
        raise ValueError("source broke")

    async def broken_stream() -> AsyncIterator[bytes]:
        yield CHUNK
        raise anyio.BrokenResourceError("the client went away")

    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    with pytest.raises(ValueError, match="source broke"):
        await run.produce_file("a.bin", broken())
    with pytest.raises(anyio.BrokenResourceError, match="the client went away"):
        await run.store_file("b.bin", broken_stream())
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (0, 0)


# -- bounded memory --------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("buffer_chunks", [0, 1, 4])
async def test_an_async_upload_holds_a_bounded_number_of_chunks(
    stack: Stack, buffer_chunks: int
) -> None:
    produced = 0
    most_in_flight = 0

    async def counted() -> AsyncIterator[bytes]:
        nonlocal produced, most_in_flight
        for _ in range(300):
            produced += 1
            most_in_flight = max(most_in_flight, produced - stack.blobs.consumed)
            yield CHUNK

    run = await AsyncDocBinder(stack.binder, buffer_chunks=buffer_chunks).start_new_run(U1)
    result = await run.produce_file("big.bin", counted())
    assert result.item.size == 300 * len(CHUNK)
    assert stack.blobs.consumed == 300
    # The chunk being sent, the buffer, and the one the writer holds.
    assert most_in_flight <= buffer_chunks + 2


@pytest.mark.anyio
async def test_concurrent_tasks_share_one_run_within_the_thread_limit(stack: Stack) -> None:
    run = await AsyncDocBinder(stack.binder, max_threads=2).start_new_run(U1)
    results: list[Any] = []

    async def produce(n: int) -> None:
        results.append(await run.produce_file(f"f{n}.bin", chunks(20, bytes([n]) * 100)))

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(produce, n)
    assert sorted(r.item.file_name for r in results) == [f"f{n}.bin" for n in range(8)]
    assert all(r.document_id is not None for r in results)
    assert 1 <= stack.blobs.most_active <= 2
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (8, 8)


@pytest.mark.anyio
async def test_concurrent_tasks_advancing_one_workflow_get_distinct_actions(stack: Stack) -> None:
    binder = AsyncDocBinder(stack.binder, max_threads=4)
    run = await binder.start_new_run(U1)
    assert run.counters == WorkflowCounters(1, 0, 0)
    assert await run.advance(round=2, task=1) == WorkflowCounters(2, 1, 0)
    seen: list[WorkflowCounters] = []

    async def act(n: int) -> None:
        counters = await run.next_action()
        seen.append(counters)
        await run.produce_file(f"a{n}.txt", bytes([n]), label=f"action {n}")

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(act, n)
    assert sorted(c.action for c in seen) == list(range(1, 9))
    assert run.counters == WorkflowCounters(2, 1, 8)
    assert await run.next_task() == WorkflowCounters(2, 2, 0)
    assert await run.next_round() == WorkflowCounters(3, 0, 0)
    with pytest.raises(CountersWouldGoBack):
        await run.advance(round=2)
    assert run.workflow is not None
    again = await binder.start_run(U1, run.workflow.id)
    assert again.counters == WorkflowCounters(3, 0, 0)
    numbers = [(d.round_number, d.task_number) for m in await again.messages() for d in m.documents]
    assert numbers == [(2, 1)] * 8


# -- cancellation ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_cancelled_before_the_worker_starts_nothing_is_stored(stack: Stack) -> None:
    binder = AsyncDocBinder(stack.binder, max_threads=1)
    run = await binder.start_new_run(U1)
    release = threading.Event()
    async with anyio.create_task_group() as tg:
        # Hold the only worker thread.
        tg.start_soon(lambda: anyio.to_thread.run_sync(release.wait, limiter=binder.limiter))
        await anyio.wait_all_tasks_blocked()
        with anyio.CancelScope() as scope:
            tg.start_soon(_cancel_when_blocked, scope)
            await run.produce_file("a.txt", b"alpha")
        release.set()
    assert scope.cancelled_caught
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (0, 0)


async def _cancel_when_blocked(scope: anyio.CancelScope) -> None:
    await anyio.wait_all_tasks_blocked()
    scope.cancel()


async def cancel_mid_upload(run: AsyncRun, name: str) -> bool:
    """Produce ``name`` from a source that stalls after 3 chunks, cancel it there.

    Returns whether the cancellation was caught by its scope (it must be).
    """
    halfway = anyio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield CHUNK
        halfway.set()
        await anyio.sleep_forever()
        yield CHUNK  # pragma: no cover

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel() -> None:
                await halfway.wait()
                scope.cancel()

            tg.start_soon(cancel)
            await run.produce_file(name, stalls())
    return scope.cancelled_caught


@pytest.mark.anyio
async def test_cancelled_mid_stream_of_an_async_upload_nothing_is_stored(stack: Stack) -> None:
    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    assert await cancel_mid_upload(run, "a.bin")
    assert stack.blobs.consumed >= 3
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (0, 0)
    # The binder still works afterwards.
    assert (await run.produce_file("b.bin", chunks(2))).document_id is not None
    assert stack.consistent([run.workflow.id]) == (1, 1)


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["bytes", "async"])
async def test_cancelled_after_the_blob_write_the_whole_file_and_message_are_kept(
    stack: Stack, source: str
) -> None:
    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    written = anyio.Event()
    token = anyio.lowlevel.current_token()
    stack.blobs.pause_after_put = True
    stack.blobs.on_put_done = lambda: anyio.from_thread.run_sync(written.set, token=token)
    data: Any = b"alpha" * 100 if source == "bytes" else chunks(4)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel() -> None:
                await written.wait()
                scope.cancel()
                stack.blobs.resume.set()

            tg.start_soon(cancel)
            result = await run.produce_file("a.bin", data)
    # The work had passed the point of no return: the await may still hand back
    # its result, or raise the cancellation; either way the file is whole.
    assert scope.cancel_called
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (1, 1)
    if not scope.cancelled_caught:
        assert result.document_id is not None


@pytest.mark.anyio
async def test_cancelled_while_reading_a_file_the_stream_is_released(stack: Stack) -> None:
    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    stored = await run.store_file("a.bin", b"abcdef")
    reader = await run.open_file(stored.item.id, chunk_size=2)
    assert await reader.__anext__() == b"ab"
    stack.blobs.read_gate = threading.Event()
    stack.blobs.reading.clear()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel() -> None:
                await anyio.to_thread.run_sync(stack.blobs.reading.wait)
                scope.cancel()
                assert stack.blobs.read_gate is not None
                stack.blobs.read_gate.set()

            tg.start_soon(cancel)
            await reader.__anext__()
    assert scope.cancelled_caught
    assert stack.blobs.closed == 1
    assert [c async for c in reader] == []
    stack.blobs.read_gate = None
    assert await run.read_file(stored.item.id) == b"abcdef"
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (1, 0)


# -- building ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_build_async_binder_builds_the_embedded_default(tmp_path: Path) -> None:
    binder = await build_async_binder(
        Settings.load({"home": str(tmp_path / "home")}, environ={}), max_threads=2
    )
    assert binder.limiter.total_tokens == 2
    run = await binder.start_new_run(Principal("u", "m"))
    result = await run.produce_file("a.txt", chunks(3, b"abc"))
    assert (await run.get_content(result.reference)).parts[0].text == "abc" * 3
    assert (tmp_path / "home" / "docbinder.db").exists()


# -- S3: the blob is written (and the async source pulled) on transfer threads --------


@pytest.mark.s3
@pytest.mark.anyio
async def test_async_uploads_to_s3_stream_from_transfer_threads_and_cancel_cleanly(
    s3_endpoint: str, s3_bucket: str
) -> None:
    from docbinder.adapters.s3 import S3BlobStore

    s3 = S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")
    blobs = WatchedBlobs(s3)
    stack = Stack(wire_binder(MemoryMetadataStore().unit_of_work, blobs), blobs)
    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    result = await run.produce_file("a.bin", chunks(50))
    assert await run.read_file(result.item.id) == CHUNK * 50
    assert await cancel_mid_upload(run, "b.bin")
    assert run.workflow is not None
    assert stack.consistent([run.workflow.id]) == (1, 1)


@pytest.mark.anyio
async def test_cancelled_while_opening_a_file_the_stream_is_released(stack: Stack) -> None:
    run = await AsyncDocBinder(stack.binder).start_new_run(U1)
    stored = await run.store_file("a.bin", b"abcdef")
    gate = stack.blobs.open_gate = threading.Event()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel() -> None:
                await anyio.to_thread.run_sync(stack.blobs.opening.wait)
                scope.cancel()
                gate.set()

            tg.start_soon(cancel)
            await run.open_file(stored.item.id)
    assert scope.cancelled_caught
    assert stack.blobs.closed == 1
    stack.blobs.open_gate = None
    assert await run.read_file(stored.item.id) == b"abcdef"
