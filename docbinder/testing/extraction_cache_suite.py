"""The ExtractionCache contract, run on memory, SQLite, PostgreSQL and MariaDB.

A concrete test class provides ``make_cache(max_entries, max_bytes)`` and
``uow_factory`` (the metadata store the cache lives beside).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.memory import MemoryBlobStore
from docbinder.application.resolve import UnresolvedReason
from docbinder.domain.model import ContentPart, FileItem, Principal
from docbinder.ports.extractor import ExtractionCache
from docbinder.ports.metadata import UnitOfWorkFactory
from tests import documents
from tests.wiring import wire_binder

A = "a" * 64
B = "b" * 64
C = "c" * 64
V1 = "docbinder-extract/2;pypdf=7;limits=1"
V2 = "docbinder-extract/3;pypdf=7;limits=1"
U1 = Principal("u1", "m1", "f1", roles=("member",))
U2 = Principal("u2", "m2", None, roles=("member",))

MakeCache = Callable[..., ExtractionCache]


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


class ExtractionCacheContract:
    """Behaviour every ExtractionCache adapter must show."""

    @pytest.fixture
    def make_cache(self) -> MakeCache:
        raise NotImplementedError

    @pytest.fixture
    def uow_factory(self) -> UnitOfWorkFactory:
        raise NotImplementedError

    def test_miss_then_hit_returns_the_bytes(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        payload = bytes(range(256)) * 3
        assert cache.get(A, V1) is None
        cache.put(A, V1, payload)
        assert cache.get(A, V1) == payload
        assert cache.get(A, V2) is None  # a new extractor version misses
        assert cache.get(B, V1) is None

    def test_put_replaces_the_entry_of_the_same_key(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        cache.put(A, V1, b"old")
        cache.put(A, V1, b"new")
        assert cache.get(A, V1) == b"new"
        assert cache.hashes() == {A}

    def test_entry_bound_evicts_the_oldest(self, make_cache: MakeCache) -> None:
        cache = make_cache(max_entries=2)
        cache.put(A, V1, b"1")
        cache.put(B, V1, b"2")
        cache.put(C, V1, b"3")
        assert cache.get(A, V1) is None
        assert (cache.get(B, V1), cache.get(C, V1)) == (b"2", b"3")

    def test_byte_bound_evicts_until_it_holds(self, make_cache: MakeCache) -> None:
        cache = make_cache(max_bytes=10)
        cache.put(A, V1, b"x" * 4)
        cache.put(B, V1, b"y" * 4)
        cache.put(C, V1, b"z" * 4)
        assert cache.get(A, V1) is None
        assert cache.hashes() == {B, C}
        cache.put(A, V2, b"w" * 11)  # bigger than the whole bound: not stored
        assert cache.get(A, V2) is None
        assert cache.hashes() == {B, C}

    def test_remove_by_hash(self, make_cache: MakeCache) -> None:
        cache = make_cache()
        cache.put(A, V1, b"1")
        cache.put(A, V2, b"2")
        cache.put(B, V1, b"3")
        assert cache.remove([A, C]) == 2
        assert cache.hashes() == {B}
        assert cache.remove([]) == 0

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
