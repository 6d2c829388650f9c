"""Bounded conversion work (issue 31, kinds 1 and 2): converter processes, read-call budgets,
cancellation when the caller is gone."""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.extract.isolation import ConverterSlots, default_max_processes
from docbinder.adapters.memory import MemoryBlobStore, MemoryExtractionCache, MemoryMetadataStore
from docbinder.aio import AsyncDocBinder
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError, InvalidInput
from docbinder.domain.model import ContentKind, FileItem, Principal
from docbinder.domain.reading import ReadLimits
from docbinder.ports.extractor import Extraction
from docbinder.toolset import DocbinderToolset
from tests import documents
from tests.converter_watch import ConverterWatch
from tests.wiring import wire_binder

ALICE = Principal("alice", "m1", None, roles=("member",))


class Recording:
    """The default extractor (with ``options``): records each document and its verdict."""

    def __init__(self, **options: Any) -> None:
        self.inner = DefaultContentExtractor(**options)
        self.calls: list[str] = []
        self.extractions: list[Extraction] = []

    @property
    def version(self) -> str:
        return self.inner.version

    @property
    def time_budget(self) -> float:
        return self.inner.time_budget

    def extract(self, document_id: str, item: FileItem, chunks: Iterator[bytes]) -> Any:
        return self.extract_with_verdict(document_id, item, chunks).parts

    def extract_with_verdict(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> Extraction:
        self.calls.append(item.file_name)
        extraction = self.inner.extract_with_verdict(document_id, item, chunks)
        self.extractions.append(extraction)
        return extraction


def _binder(extractor: Any, **options: Any) -> Any:
    return wire_binder(
        MemoryMetadataStore().unit_of_work,
        MemoryBlobStore(),
        extractor=extractor,
        extraction_cache=MemoryExtractionCache(),
        **options,
    )


# -- kind 1: how many converter processes run at once ---------------------------------------
def test_the_default_number_of_converter_processes_follows_cores_and_memory() -> None:
    cores = default_max_processes(None)
    assert cores >= 1
    assert default_max_processes(2 * 1024**3) <= cores
    assert default_max_processes(1 << 60) == 1  # no machine holds that much twice
    with pytest.raises(InvalidInput, match="max_processes"):
        ConverterSlots(0)


def test_three_concurrent_reads_run_one_converter_at_a_time_and_all_finish() -> None:
    # The issue: three concurrent read_documents held 5.6 GiB in converter processes.
    # With one converter process allowed, the three wait their turn and each is read.
    extractor = Recording(max_processes=1, queue_seconds=60.0, time_budget=1.0)
    binder = _binder(extractor)
    run = binder.start_new_run(ALICE)
    refs = [
        run.produce_file(f"slow-{n}.docx", documents.slow_docx(20_000 + n)).reference
        for n in range(3)
    ]
    results: list[Any] = []

    def read(ref: str) -> None:
        results.append(binder.start_run(ALICE, run.context.workflow_id).get_content([ref]))

    with ConverterWatch() as watch:
        threads = [threading.Thread(target=read, args=(ref,)) for ref in refs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert watch.most == 1
    assert sorted(extractor.calls) == ["slow-0.docx", "slow-1.docx", "slow-2.docx"]
    assert [e.cache for e in extractor.extractions] == ["partial"] * 3
    assert all(len(r.documents) == 1 and not r.unresolved for r in results)


def test_a_document_that_finds_no_free_converter_is_refused_with_the_setting_named() -> None:
    extractor = Recording(max_processes=1, queue_seconds=0.2)
    binder = _binder(extractor)
    run = binder.start_new_run(ALICE)
    ref = run.produce_file("deck.pptx", documents.pptx_bytes(slides=1)).reference
    with extractor.inner.slots.slot(time.monotonic() + 5) as refused:
        assert refused is None
        (part,) = run.get_content([ref]).parts
    assert part.kind is ContentKind.BINARY
    assert "all 1 converter processes were busy for 0.2 s" in (part.note or "")
    assert "extract_max_processes = 1" in (part.note or "")
    assert extractor.extractions[0].cache == "none"
    (slide,) = run.get_content([ref]).parts  # refused is not cached: the next read converts
    assert slide.position == "slide 1"


# -- kind 1: a conversion whose caller is gone stops -----------------------------------------
@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_cancelled_await_stops_the_conversion_and_caches_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    extractor = Recording(time_budget=300.0)  # only the cancellation can stop it early
    cache = MemoryExtractionCache()
    sync = wire_binder(
        MemoryMetadataStore().unit_of_work,
        MemoryBlobStore(),
        extractor=extractor,
        extraction_cache=cache,
    )
    binder = AsyncDocBinder(sync)
    run = await binder.start_new_run(ALICE)
    ref = (await run.produce_file("slow.docx", documents.slow_docx(100_000))).reference
    caplog.set_level(logging.INFO, logger="docbinder.adapters.extract.extractor")
    with anyio.CancelScope() as scope:

        async def cancel_when_the_converter_runs() -> None:
            while not multiprocessing.active_children():
                await anyio.sleep(0.01)
            await anyio.sleep(0.3)
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel_when_the_converter_runs)
            await run.get_content([ref])
    assert scope.cancelled_caught
    assert not multiprocessing.active_children()
    (extraction,) = extractor.extractions
    assert extraction.cache == "none"
    assert "the caller is gone" in (extraction.parts[0].note or "")
    assert "cancelled: the caller is gone" in caplog.text
    assert cache.hashes() == set()


@pytest.mark.anyio
async def test_a_cancelled_tool_call_reports_its_documents_as_not_read() -> None:
    extractor = Recording(time_budget=300.0)
    binder = _binder(extractor)
    run = binder.start_new_run(ALICE)
    refs = [
        run.produce_file("slow.docx", documents.slow_docx(100_000)).reference,
        run.produce_file("later.docx", documents.docx_bytes()).reference,
    ]
    toolset = DocbinderToolset(run)
    with anyio.CancelScope() as scope:

        async def cancel_soon() -> None:
            while not multiprocessing.active_children():
                await anyio.sleep(0.01)
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel_soon)
            await toolset.acall("read_documents", {"documentList": refs})
    assert scope.cancelled_caught
    assert extractor.calls == ["slow.docx"]  # the later document was never converted


# -- kind 2: one call's budget across its documents -----------------------------------------
def test_search_shares_one_time_budget_across_files_and_says_which_it_did_not_search() -> None:
    # The issue: 4 PDFs of 141 KB, each with a fresh 30 s budget, again on every call:
    # 128 s. Here each conversion may take 1 s and the call 2.5 s.
    extractor = Recording(time_budget=1.0, max_decoded_bytes=1 << 40)
    binder = _binder(extractor, read_limits=ReadLimits(time_budget=2.5))
    run = binder.start_new_run(ALICE)
    pdf = documents.shared_stream_pdf(pages=30, stream_repeats=200_000)
    ids = [run.produce_file(f"{n}.pdf", pdf + b"%" + bytes([48 + n])).item.id for n in range(4)]
    toolset = DocbinderToolset(run)
    first = toolset.call("search_in_file_content", {"query": "shared", "file_ids": ids})
    assert not first.is_error, first.text
    unsearched = first.structured["unsearched"]
    assert unsearched, first.text
    assert any("time budget" in u["reason"] for u in unsearched)
    assert "not searched wholly" in first.text
    assert extractor.calls[0] == "0.pdf"
    # The first file had its whole budget: its truncated outcome is cached, so the next
    # call starts where the first one stopped instead of converting it again.
    second = toolset.call("search_in_file_content", {"query": "shared", "file_ids": ids})
    assert not second.is_error, second.text
    assert extractor.calls.count("0.pdf") == 1


def test_documents_past_the_call_byte_budget_are_not_read_with_the_reason() -> None:
    binder = _binder(Recording(), read_limits=ReadLimits(max_bytes=25_000))
    run = binder.start_new_run(ALICE)
    refs = [run.produce_file(f"{n}.txt", bytes([97 + n]) * 10_000).reference for n in range(4)]
    content = run.get_content(refs)
    assert [d.file_name for d in content.documents] == ["0.txt", "1.txt"]
    reasons = [(u.reason, u.message) for u in content.unresolved]
    assert reasons[0][0] is UnresolvedReason.NOT_READ
    assert "its limit of 25000 bytes" in reasons[0][1] or "past its limit" in reasons[0][1]
    assert len(reasons) == 2
    outcome = DocbinderToolset(run).call("read_documents", {"documentList": refs})
    assert outcome.structured["unresolved"][0]["reason"] == "not_read"
    # Every reference was good: the answer does not tell the model the workflow has no
    # readable documents (it said "Valid references: none (... no readable documents)").
    assert "Valid references" not in outcome.text, outcome.text
    assert "no readable documents" not in outcome.text
    assert outcome.structured["validReferences"] == []
    # A reference that is wrong still gets the line, beside the documents not read.
    mixed = DocbinderToolset(run).call("read_documents", {"documentList": [*refs, "docItem:x"]})
    lines = mixed.text.splitlines()
    assert "Unresolved: docItem:x (not_in_workflow)" in mixed.text
    assert lines[-1].startswith("Valid references"), mixed.text
    assert refs[0] in lines[-1]


def test_documents_past_the_call_part_budget_are_not_read() -> None:
    binder = _binder(Recording(), read_limits=ReadLimits(max_parts=3))
    run = binder.start_new_run(ALICE)
    deck = run.produce_file("deck.pptx", documents.pptx_bytes(slides=2)).reference
    sheets = run.produce_file("book.xlsx", documents.xlsx_bytes(sheets=2)).reference
    content = run.get_content([deck, sheets])
    assert [d.file_name for d in content.documents] == ["deck.pptx"]
    (miss,) = content.unresolved
    assert miss.reason is UnresolvedReason.NOT_READ
    assert "its 2 content parts would take this call past its limit of 3 parts" in miss.message


def test_the_call_settings_are_checked_and_reach_the_binder(tmp_path: Any) -> None:
    settings = Settings.load(
        {
            "home": str(tmp_path),
            "call_time_budget": "5",
            "call_max_bytes": 1000,
            "call_max_parts": "7",
            "extract_max_processes": 1,
            "extract_queue_seconds": "0",
        },
        environ={},
    )
    assert settings.read_limits() == ReadLimits(5.0, 1000, 7)
    assert settings.extractor_budgets() == {"max_processes": 1, "queue_seconds": 0.0}
    with pytest.raises(ConfigurationError, match="call_max_parts"):
        Settings.load({"home": str(tmp_path), "call_max_parts": 0}, environ={})
    with pytest.raises(ConfigurationError, match="extract_queue_seconds"):
        Settings.load({"home": str(tmp_path), "extract_queue_seconds": -1}, environ={})
    from docbinder.container import build_binder

    binder = build_binder(settings)
    try:
        assert binder.get_content.limits == ReadLimits(5.0, 1000, 7)
    finally:
        binder.close()


def test_a_conversion_the_call_budget_cut_short_is_not_cached() -> None:
    # The extractor may spend 5 s on the document, the call only 1 s: what the 1 s gave is
    # not what 5 s give, so it is not kept; a call with time for the whole budget keeps it.
    extractor = Recording(time_budget=3.0)
    cache = MemoryExtractionCache()
    store, blobs = MemoryMetadataStore(), MemoryBlobStore()
    short = wire_binder(
        store.unit_of_work,
        blobs,
        extractor=extractor,
        extraction_cache=cache,
        read_limits=ReadLimits(time_budget=1.0),
    )
    run = short.start_new_run(ALICE)
    ref = run.produce_file("slow.docx", documents.slow_docx(100_000)).reference
    (cut,) = run.get_content([ref]).parts
    assert cut.truncated
    assert [e.cache for e in extractor.extractions] == ["none"]
    assert cache.hashes() == set()
    whole = wire_binder(store.unit_of_work, blobs, extractor=extractor, extraction_cache=cache)
    rerun = whole.start_run(ALICE, run.context.workflow_id)
    (part,) = rerun.get_content([ref]).parts
    assert "time budget of 3.0 s spent" in (part.truncated_reason or "")
    assert [e.cache for e in extractor.extractions] == ["none", "partial"]


@pytest.mark.anyio
async def test_a_caller_that_goes_away_while_queued_never_starts_a_converter() -> None:
    extractor = Recording(max_processes=1, queue_seconds=60.0)
    binder = AsyncDocBinder(_binder(extractor))
    run = await binder.start_new_run(ALICE)
    ref = (await run.produce_file("deck.pptx", documents.pptx_bytes(slides=1))).reference
    with extractor.inner.slots.slot(time.monotonic() + 5) as refused:
        assert refused is None
        with anyio.move_on_after(0.5) as scope:
            await run.get_content([ref])
        assert not multiprocessing.active_children()
    assert scope.cancelled_caught
    (extraction,) = extractor.extractions
    assert extraction.cache == "none"
    assert "nothing was converted" in (extraction.parts[0].note or "")


def test_read_file_over_several_references_stops_at_the_tool_calls_budget() -> None:
    binder = _binder(Recording(), read_limits=ReadLimits(max_bytes=15))
    run = binder.start_new_run(ALICE)
    refs = [run.produce_file(f"{n}.txt", bytes([97 + n]) * 10).reference for n in range(3)]
    answer = DocbinderToolset(run).call("read_file", {"file_id": ", ".join(refs)})
    assert not answer.is_error, answer.text
    assert "aaaaaaaaaa" in answer.text and "bbbbbbbbbb" in answer.text
    assert "cccccccccc" not in answer.text
    assert (
        f"[1 more file(s) not read: this call already returns 20 bytes of content, its limit "
        f"of 15 bytes; ask for it in another call; the next: {refs[2]}]"
    ) in answer.text


def test_a_document_larger_than_the_whole_call_budget_is_not_sent_to_another_call() -> None:
    # "ask for it in another call" was said of a document no call could return.
    binder = _binder(Recording(), read_limits=ReadLimits(max_bytes=120, max_parts=1))
    run = binder.start_new_run(ALICE)
    big = run.produce_file("big.txt", b"x" * 150).reference
    deck = run.produce_file("deck.pptx", documents.pptx_bytes(slides=2)).reference
    small = run.produce_file("small.txt", b"y" * 10).reference
    content = run.get_content([big, deck, small])
    assert [d.file_name for d in content.documents] == ["small.txt"]
    by_ref = {u.reference: u.message for u in content.unresolved}
    assert "(150 bytes) is more than any call may return" in by_ref[big]
    assert "setting call_max_bytes" in by_ref[big] and "another call would not" in by_ref[big]
    assert "its 2 content parts are more than any call may return" in by_ref[deck]
    assert "setting call_max_parts" in by_ref[deck]
    # one that would fit a call of its own is still sent to another call
    crowded = run.get_content([small, run.produce_file("next.txt", b"z" * 115).reference])
    (later,) = crowded.unresolved
    assert later.message.endswith("ask for it in another call")
