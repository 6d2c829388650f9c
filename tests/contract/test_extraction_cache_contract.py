"""The shipped extraction cache contract on memory, SQLite, PostgreSQL, MariaDB, plus the cache
inside a whole binder (pruning, one extraction for two reads, a hit opens no blob)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.memory import MemoryBlobStore, MemoryExtractionCache, MemoryMetadataStore
from docbinder.adapters.sql.extraction_cache import SqlExtractionCache
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.domain.model import ContentKind, ContentPart, FileItem, PageCoverage, Principal
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.extraction_cache_suite import V1, A, B, C, ExtractionCacheContract, MakeCache
from tests import documents
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))
U2 = Principal("u2", "m2", None, roles=("member",))


class CountingExtractor:
    """The default extractor, counting the documents it really extracts."""

    def __init__(self) -> None:
        self.inner = DefaultContentExtractor()
        self.calls: list[str] = []

    @property
    def version(self) -> str:
        return self.inner.version

    def cacheable(self, item: FileItem, parts: list[ContentPart]) -> bool:
        return self.inner.cacheable(item, parts)

    def extract(self, document_id: str, item: FileItem, chunks: Iterator[bytes]) -> Any:
        self.calls.append(item.file_name)
        return self.inner.extract(document_id, item, chunks)


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

        # Another mandate's user with the same bytes gets them from the cache, under
        # their own document id and file name...
        other = binder.start_new_run(U2)
        own = other.produce_file("copy.xlsx", data)
        (part, _) = other.get_content([own.reference]).parts
        assert extractor.calls == ["table.xlsx"]
        assert (part.document_id, part.file_name) == (own.document_id, "copy.xlsx")
        # ...but cannot reach the first user's document through its reference.
        denied = other.get_content([ref])
        assert denied.parts == ()
        assert [u.reason for u in denied.unresolved] != []
        assert all(u.reason is not UnresolvedReason.STORAGE_FAULT for u in denied.unresolved)

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
