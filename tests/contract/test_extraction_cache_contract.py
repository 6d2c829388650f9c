"""The shipped extraction cache contract on memory, SQLite, PostgreSQL, MariaDB, plus the cache
inside a whole binder (pruning, one extraction for two reads, a hit opens no blob)."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.memory import MemoryBlobStore, MemoryExtractionCache, MemoryMetadataStore
from docbinder.adapters.sql.extraction_cache import SqlExtractionCache
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.domain.model import ContentKind, ContentPart, FileItem, PageCoverage, Principal
from docbinder.domain.reading import scope_key
from docbinder.ports.extractor import Extraction
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.extraction_cache_suite import V1, A, B, C, ExtractionCacheContract, MakeCache
from docbinder.tools import consuming
from docbinder.toolset.toolset import read_documents_outcome
from tests import documents
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))
U2 = Principal("u2", "m2", None, roles=("member",))


class CountingExtractor:
    """The default extractor (with ``options``), counting the documents it really extracts
    and keeping the cache verdict of each."""

    def __init__(self, **options: Any) -> None:
        self.inner = DefaultContentExtractor(**options)
        self.calls: list[str] = []
        self.verdicts: list[str] = []

    @property
    def version(self) -> str:
        return self.inner.version

    @property
    def time_budget(self) -> float:
        return self.inner.time_budget

    def cacheable(self, item: FileItem, parts: list[ContentPart]) -> bool:
        return self.inner.cacheable(item, parts)

    def extract(self, document_id: str, item: FileItem, chunks: Iterator[bytes]) -> Any:
        return self.extract_with_verdict(document_id, item, chunks).parts

    def extract_with_verdict(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> Extraction:
        self.calls.append(item.file_name)
        extraction = self.inner.extract_with_verdict(document_id, item, chunks)
        self.verdicts.append(extraction.cache)
        return extraction


def _kill_the_first_converter(stop: threading.Event, killed: list[int]) -> None:
    """Kill (SIGKILL) the first converter process that appears, a moment after it starts."""
    while not stop.is_set():
        children = multiprocessing.active_children()
        if children:
            time.sleep(0.3)  # well inside the conversion, which takes seconds
            for child in children:
                if child.pid is not None and child.is_alive():
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)
            return
        time.sleep(0.005)


class CacheInBinderContract(ExtractionCacheContract):
    """The shipped contract plus the cache inside a binder over ``uow_factory``."""

    @pytest.fixture
    def uow_factory(self) -> UnitOfWorkFactory:
        raise NotImplementedError

    def test_prune_removes_hashes_no_fileitem_has(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        cache = make_cache()
        binder = wire_binder(uow_factory, MemoryBlobStore(), extraction_cache=cache)
        kept = binder.start_new_run(U1).produce_file("kept.txt", b"still referenced").item
        cache.put(kept.sha256, V1, b"1")
        cache.put(A, V1, b"2")
        prune = binder.prune_extraction_cache
        assert prune is not None
        report = prune(dry_run=True)
        assert (report.stale_hashes, report.removed) == ((A,), 0)
        assert cache.hashes() == {kept.sha256, A}
        report = prune(dry_run=False)
        assert (report.stale_hashes, report.removed) == ((A,), 1)
        assert cache.hashes() == {kept.sha256}

    def test_get_content_twice_extracts_once_and_needs_read_access(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        cache = make_cache()
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=cache
        )
        data = documents.xlsx_bytes(sheets=2)
        run = binder.start_new_run(U1)
        ref = run.produce_file("table.xlsx", data).reference
        first = run.get_content([ref]).parts
        second = run.get_content([ref]).parts
        assert extractor.calls == ["table.xlsx"]
        assert second == first
        assert [p.position for p in second] == ["sheet 1: Totals", "sheet 2: Region 2"]

        # Another mandate's user with the same bytes converts them again: entries are per
        # scope, so the first read tells nothing of what another tenant holds (ADR 0072)...
        other = binder.start_new_run(U2)
        own = other.produce_file("copy.xlsx", data)
        (part, _) = other.get_content([own.reference]).parts
        assert extractor.calls == ["table.xlsx", "copy.xlsx"]
        assert (part.document_id, part.file_name) == (own.document_id, "copy.xlsx")
        other.get_content([own.reference])
        assert extractor.calls == ["table.xlsx", "copy.xlsx"]  # ...and then has its own entry
        # ...but cannot reach the first user's document through its reference.
        denied = other.get_content([ref])
        assert denied.parts == ()
        assert [u.reason for u in denied.unresolved] != []
        assert all(u.reason is not UnresolvedReason.STORAGE_FAULT for u in denied.unresolved)

    def test_text_that_is_never_converted_is_not_looked_up(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        """Plain text, Markdown, CSV and JSON are read directly: no cache read, no cache write."""
        cache = make_cache()
        asked: list[str] = []
        real_get, real_put = cache.get, cache.put

        def get(sha256: str, version: str) -> bytes | None:
            asked.append(f"get {sha256[:8]}")
            return real_get(sha256, version)

        def put(sha256: str, version: str, payload: bytes) -> None:
            asked.append(f"put {sha256[:8]}")
            real_put(sha256, version, payload)

        cache.get, cache.put = get, put  # type: ignore[method-assign]
        binder = wire_binder(uow_factory, MemoryBlobStore(), extraction_cache=cache)
        run = binder.start_new_run(U1)
        for name, data in (
            ("n.txt", b"plain"),
            ("n.md", b"# Note"),
            ("n.csv", b"a,b\n1,2\n"),
            ("n.json", b'{"a": 1}'),
        ):
            (part,) = run.get_content([run.produce_file(name, data).reference]).parts
            assert part.text and part.kind is ContentKind.TEXT
        assert asked == []
        deck = run.produce_file("deck.pptx", documents.pptx_bytes(slides=1))
        run.get_content([deck.reference])
        assert [a.split()[0] for a in asked] == ["get", "put"]  # a converted type is cached

    def test_a_hit_does_not_open_the_blob(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        blobs = MemoryBlobStore()
        opened: list[str] = []
        real_open = blobs.open

        def counting_open(key: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
            opened.append(key)
            return real_open(key, chunk_size)

        blobs.open = counting_open  # type: ignore[method-assign]
        binder = wire_binder(uow_factory, blobs, extraction_cache=make_cache())
        run = binder.start_new_run(U1)
        ref = run.produce_file("deck.pptx", documents.pptx_bytes(slides=1)).reference
        run.get_content([ref])
        assert len(opened) == 1
        assert [p.position for p in run.get_content([ref]).parts] == ["slide 1"]
        assert len(opened) == 1

    @pytest.mark.usefixtures("ocr_ready")
    def test_ocr_output_is_cached_by_content_hash_like_any_conversion(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        run = binder.start_new_run(U1)
        scan = run.produce_file("invoice-scan.pdf", documents.scanned_pdf()).reference
        picture_bytes = documents.png(documents.scanned_page())
        picture = run.produce_file("invoice.png", picture_bytes).reference
        first = run.get_content([scan, picture]).parts
        second = run.get_content([scan, picture]).parts
        assert extractor.calls == ["invoice-scan.pdf", "invoice.png"]
        assert second == first
        assert [(p.kind, p.ocr) for p in second] == [
            (ContentKind.TEXT, True),
            (ContentKind.IMAGE, False),
            (ContentKind.TEXT, True),
        ]
        assert second[1].data == picture_bytes  # the image's bytes come from the file again
        assert "INVOICE No. 2026-0042" in (second[2].text or "")
        assert second[0].coverage == PageCoverage(1, ocr=1)

    # -- issue 31, kind 1: an outcome out of budget is cached, truncated ---------------------
    def test_a_conversion_out_of_time_is_cached_truncated_and_not_run_again(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        # The 416 KB .docx that mammoth needs 32 s for: here 20,000 paragraphs
        # (about 40 KB, tens of seconds) under a 1 s budget.
        extractor = CountingExtractor(time_budget=1.0)
        cache = make_cache()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=cache
        )
        run = binder.start_new_run(U1)
        slow = documents.slow_docx(100_000)
        ref = run.produce_file("slow.docx", slow).reference
        (first,) = run.get_content([ref]).parts
        assert first.truncated
        assert "time budget of 1.0 s spent" in (first.truncated_reason or "")
        assert extractor.verdicts == ["partial"]
        (second,) = run.get_content([ref]).parts
        assert extractor.calls == ["slow.docx"]  # the same bytes do not cost the budget again
        assert second == first
        assert second.data == slow  # the file's bytes, from the blob again

    def test_a_larger_time_budget_converts_a_truncated_entry_again(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        cache = make_cache()
        blobs = MemoryBlobStore()
        short = CountingExtractor(time_budget=1.0)
        binder = wire_binder(uow_factory, blobs, extractor=short, extraction_cache=cache)
        run = binder.start_new_run(U1)
        ref = run.produce_file("slow.docx", documents.slow_docx(100_000)).reference
        run.get_content([ref])
        longer = CountingExtractor(time_budget=2.0)
        again = wire_binder(uow_factory, blobs, extractor=longer, extraction_cache=cache)
        rerun = again.start_run(U1, run.context.workflow_id)
        (part,) = rerun.get_content([ref]).parts
        assert longer.calls == ["slow.docx"]  # 1 s entry, 2 s extractor: it tries again
        assert "time budget of 2.0 s spent" in (part.truncated_reason or "")
        rerun.get_content([ref])
        assert longer.calls == ["slow.docx"]  # now the 2 s entry stands
        run.get_content([ref])
        assert short.calls == ["slow.docx"]  # and serves the 1 s extractor as well

    # -- issue 31, kind 3: a crashed conversion is not cached as complete -------------------
    def test_a_crashed_html_conversion_is_not_cached_and_its_fallback_says_so(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        extractor = CountingExtractor(time_budget=300.0)  # only the kill may stop it
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        run = binder.start_new_run(U1)
        page = documents.html_page("crash", rows=6_000)  # markitdown needs seconds for it
        ref = run.produce_file("report.html", page).reference
        stop, killed = threading.Event(), []
        killer = threading.Thread(target=_kill_the_first_converter, args=(stop, killed))
        killer.start()
        try:
            (fallback,) = run.get_content([ref]).parts
        finally:
            stop.set()
            killer.join()
        assert killed, "no converter process was seen"
        assert "ended unexpectedly" in (fallback.note or "")
        assert "visible text, without headings" in (fallback.note or "")
        assert extractor.verdicts == ["none"]
        assert "# Report crash" not in (fallback.text or "")
        # The next reader is not handed the fallback for good: the converter runs again...
        (markdown,) = run.get_content([ref]).parts
        assert extractor.calls == ["report.html", "report.html"]
        assert (markdown.text or "").startswith("# Report crash")
        assert "| crash row 0 | 0 |" in (markdown.text or "")
        assert markdown.note is None
        # ...and its complete conversion is the one cached.
        assert run.get_content([ref]).parts == (markdown,)
        assert extractor.calls == ["report.html", "report.html"]

    def test_a_fallback_for_a_busy_converter_is_marked_and_not_cached(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        # Every converter process is taken (one, held here) and the page may not wait:
        # the visible text stands in, says why, and is not what the next reader gets.
        extractor = CountingExtractor(max_processes=1, queue_seconds=0)
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        run = binder.start_new_run(U1)
        ref = run.produce_file("report.html", documents.html_page("busy")).reference
        with extractor.inner.slots.slot(time.monotonic() + 5) as refused:
            assert refused is None
            (fallback,) = run.get_content([ref]).parts
        assert "busy" in (fallback.note or "") and "extract_max_processes" in (fallback.note or "")
        assert "visible text, without headings" in (fallback.note or "")
        assert extractor.verdicts == ["none"]
        (markdown,) = run.get_content([ref]).parts
        assert (markdown.text or "").startswith("# Report busy")
        assert extractor.verdicts == ["none", "complete"]

    # -- issue 31, kind 4: no timing oracle across scopes -----------------------------------
    def test_a_first_read_of_bytes_another_tenant_read_costs_what_a_miss_costs(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        # The issue: 1.7 ms for bytes another tenant had read, 82-146 ms for bytes nobody
        # read; 20 of 20 guesses right. Each trial is a new tenant reading its own copy of
        # bytes tenant A read, and bytes nobody read (same size and shape), in random
        # order. If the first were a hit, it would be faster in (nearly) every trial; with
        # one distribution for both, "faster" is a coin toss. Fail when 18 or more of 20
        # are faster: a fair coin does that with probability 0.0002 (the leak: 20 of 20).
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        known = documents.html_page("k" * 32)
        owner = binder.start_new_run(U1)
        owner.get_content([owner.produce_file("known.html", known).reference])
        rng = random.Random(31)
        faster = 0
        trials = 20
        for trial in range(trials):
            tenant = Principal(f"t{trial}", f"tenant-{trial}", None, roles=("member",))
            run = binder.start_new_run(tenant)
            fresh = documents.html_page(uuid.uuid4().hex)
            pair = {
                "known": run.produce_file("a.html", known).reference,
                "fresh": run.produce_file("b.html", fresh).reference,
            }
            timings: dict[str, float] = {}
            for name in rng.sample(sorted(pair), 2):
                started = time.perf_counter()
                run.get_content([pair[name]])
                timings[name] = time.perf_counter() - started
            faster += timings["known"] < timings["fresh"]
        assert extractor.calls.count("a.html") == trials  # every tenant converted its own
        assert faster < 18, f"{faster} of {trials} reads of known bytes were faster"

    def test_the_file_tools_keep_their_entries_per_scope_too(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        data = documents.html_page("shared")
        first = binder.start_new_run(U1)
        mine = first.produce_file("page.html", data).item
        assert "Report shared" in consuming.read_file(first, mine.id)
        other = binder.start_new_run(U2)
        theirs = other.produce_file("page.html", data).item
        assert consuming.search_in_file_content(other, "shared row 3", file_ids=[theirs.id])
        assert extractor.calls == ["page.html", "page.html"]
        consuming.read_file(other, theirs.id)
        assert extractor.calls == ["page.html", "page.html"]

    def test_one_user_id_in_two_feature_instances_has_two_scopes(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        # Feature instances hide their data from each other, also from the same user id
        # (an ADK app's "user" is not another app's): a first read in the second instance
        # converts, so its time tells nothing of what the first one read.
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        data = documents.html_page("per-instance")
        for instance in ("app-a", "app-b", None):
            principal = Principal("user", "adk", instance, roles=("member",))
            run = binder.start_new_run(principal)
            ref = run.produce_file("page.html", data).reference
            run.get_content([ref])
            run.get_content([ref])  # ...and a second read in one instance is a hit
        assert extractor.calls == ["page.html"] * 3
        assert scope_key("adk", "user") != scope_key("adk", "user", "app-a")
        assert scope_key("adk", "user", "app-a") != scope_key("adk", "user", "app-b")

    # -- issue 31, kind 2: the same bytes referenced many times are read once ----------------
    def test_the_same_image_referenced_150_times_is_read_once(
        self, make_cache: MakeCache, uow_factory: UnitOfWorkFactory
    ) -> None:
        extractor = CountingExtractor()
        binder = wire_binder(
            uow_factory, MemoryBlobStore(), extractor=extractor, extraction_cache=make_cache()
        )
        run = binder.start_new_run(U1)
        picture = documents.png(documents.scanned_page())
        refs = [run.produce_file(f"scan-{i}.png", picture).reference for i in range(150)]
        content = run.get_content(refs)
        assert extractor.calls == ["scan-0.png"]
        assert len(content.documents) == 150
        first, *rest = content.documents
        assert all(d.same_as == first.reference and d.parts == () for d in rest)
        images = [p for p in content.parts if p.kind is ContentKind.IMAGE]
        assert [len(p.data or b"") for p in images] == [len(picture)]
        outcome = read_documents_outcome(content)
        assert len([p for p in outcome.parts if p.kind is ContentKind.IMAGE]) == 1
        assert f"[same content as {first.reference}, shown once above]" in outcome.text
        # Each header gives the file's size, not the 0 bytes of a document without parts.
        assert {d["size"] for d in outcome.structured["documents"]} == {len(picture)}
        assert f"'scan-149.png' (image/png, {len(picture)} bytes," in outcome.text
        # One reference 150 times is one document, read once (here: from the cache).
        again = run.get_content([refs[7]] * 150)
        assert [d.reference for d in again.documents] == [refs[7]]
        assert [len(p.data or b"") for p in again.parts if p.kind is ContentKind.IMAGE] == [
            len(picture)
        ]
        assert extractor.calls == ["scan-0.png"]


class TestMemoryExtractionCache(CacheInBinderContract):
    @pytest.fixture
    def make_cache(self) -> MakeCache:
        return MemoryExtractionCache

    @pytest.fixture
    def uow_factory(self) -> UnitOfWorkFactory:
        return MemoryMetadataStore().unit_of_work

    def test_a_hit_makes_an_entry_recent(self) -> None:
        cache = MemoryExtractionCache(max_entries=2)
        cache.put(A, V1, b"1")
        cache.put(B, V1, b"2")
        assert cache.get(A, V1) == b"1"
        cache.put(C, V1, b"3")
        assert cache.hashes() == {A, C}


def _sql(backend: SqlBackend) -> MakeCache:
    backend.clean()

    def make(**bounds: Any) -> SqlExtractionCache:
        return SqlExtractionCache(backend.engine, **bounds)

    return make


class TestSqliteExtractionCache(CacheInBinderContract):
    @pytest.fixture
    def make_cache(self, sqlite_backend: SqlBackend) -> MakeCache:
        return _sql(sqlite_backend)

    @pytest.fixture
    def uow_factory(self, sqlite_backend: SqlBackend) -> UnitOfWorkFactory:
        return sqlite_backend.store.unit_of_work


@pytest.mark.postgres
class TestPostgresExtractionCache(CacheInBinderContract):
    @pytest.fixture
    def make_cache(self, postgresql_backend: SqlBackend) -> MakeCache:
        return _sql(postgresql_backend)

    @pytest.fixture
    def uow_factory(self, postgresql_backend: SqlBackend) -> UnitOfWorkFactory:
        return postgresql_backend.store.unit_of_work


@pytest.mark.mysql
class TestMariadbExtractionCache(CacheInBinderContract):
    @pytest.fixture
    def make_cache(self, mariadb_backend: SqlBackend) -> MakeCache:
        return _sql(mariadb_backend)

    @pytest.fixture
    def uow_factory(self, mariadb_backend: SqlBackend) -> UnitOfWorkFactory:
        return mariadb_backend.store.unit_of_work
