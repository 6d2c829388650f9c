"""The inline tier through the binder (ADR 0110): memory, SQLite, PostgreSQL and MariaDB.

Small files are stored in the unit of work of their FileItem (no bulk-store
write at all), read, deduplicated, versioned, deleted and garbage-collected
like any other blob; a failed commit leaves no inline row; ``0`` turns the
tier off for new files while the inline blobs already there stay readable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.domain.errors import InvalidInput, StorageError
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore, Chunks, LocatingBlobStore, PresigningBlobStore
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from tests.contract.sql_backends import SqlBackend
from tests.wiring import BlobStoreWrapper, UnitOfWorkWrapper, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))
LIMIT = 4096


class CountingBulk(BlobStoreWrapper):
    """The bulk store, counting the puts that reach it."""

    def __init__(self, inner: BlobStore) -> None:
        super().__init__(inner)
        self.puts: list[str] = []

    def put(self, key: str, data: Any) -> int:
        self.puts.append(key)
        return self.inner.put(key, data)

    def mark_committed(self, key: str) -> bool:
        return bool(self.inner.mark_committed(key))

    def is_committed(self, key: str) -> bool:
        return bool(self.inner.is_committed(key))


class Stack:
    """A binder over the inline tier of ``units`` with a counting memory bulk store."""

    def __init__(
        self, units: UnitOfWorkFactory, read_units: UnitOfWorkFactory, limit: int = LIMIT
    ) -> None:
        self.units = units
        self.read_units = read_units
        self.bulk = CountingBulk(MemoryBlobStore())
        self.fail_commit = False
        self.tier = InlineTierBlobStore(self.bulk, units, read_units, limit=limit)
        self.binder: DocBinder = wire_binder(self._unit, self.tier, read_units)

    def _unit(self) -> UnitOfWork:
        stack = self

        class Unit(UnitOfWorkWrapper):
            def commit(self) -> None:
                if stack.fail_commit:
                    raise StorageError("injected: the commit failed")
                self._inner.commit()

        return Unit(self.units())  # type: ignore[return-value]

    def with_limit(self, limit: int) -> Stack:
        """Another binder over the same database and bulk store, with ``limit``."""
        other = Stack.__new__(Stack)
        other.units, other.read_units, other.bulk, other.fail_commit = (
            self.units,
            self.read_units,
            self.bulk,
            False,
        )
        other.tier = InlineTierBlobStore(self.bulk, self.units, self.read_units, limit=limit)
        other.binder = wire_binder(other._unit, other.tier, self.read_units)
        return other


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mariadb"])
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    if request.param == "memory":
        store = MemoryMetadataStore()
        yield Stack(store.unit_of_work, store.unit_of_work)
        return
    backend: SqlBackend = request.getfixturevalue(f"{request.param}_backend")
    backend.clean()
    yield Stack(backend.store.unit_of_work, backend.store.read_unit_of_work)


def _inline_keys(stack: Stack) -> list[str]:
    with stack.read_units() as uow:
        return sorted(uow.inline_blobs.keys())


def test_a_small_file_is_stored_inline_in_its_files_unit(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    produced = run.produce_file("notes.md", b"# notes\n" * 10)
    key = produced.item.blob_key
    assert produced.document_id is not None
    assert stack.bulk.puts == []  # no bulk-store write for a small file
    assert _inline_keys(stack) == [key]
    assert stack.tier.is_inline(key) and stack.tier.is_committed(key)
    assert run.read_file(produced.item.id) == b"# notes\n" * 10
    assert stack.tier.stat(key).size == 80
    origin = stack.tier.stat(key).origin
    assert origin is not None and origin.startswith("v1 ")  # marked like any blob of the store


def test_a_file_over_the_limit_goes_to_the_bulk_store(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    data = bytes(range(256)) * (LIMIT // 256) + b"!"  # limit + 1 bytes
    produced = run.produce_file("big.bin", iter([data[:1000], data[1000:]]))
    key = produced.item.blob_key
    assert stack.bulk.puts == [key] and _inline_keys(stack) == []
    assert not stack.tier.is_inline(key)
    assert run.read_file(produced.item.id) == data
    assert produced.item.size == LIMIT + 1
    # a file of exactly the limit is inline
    exact = run.produce_file("exact.bin", data[:LIMIT])
    assert stack.tier.is_inline(exact.item.blob_key)


def test_a_duplicate_small_file_writes_no_second_blob(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    first = run.produce_file("a.csv", b"x,y\n1,2\n")
    again = run.produce_file("a.csv", b"x,y\n1,2\n")
    assert again.duplicate and again.item.id == first.item.id
    assert _inline_keys(stack) == [first.item.blob_key]
    assert stack.bulk.puts == []


def test_a_failed_commit_leaves_no_inline_row_and_no_file(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    stack.fail_commit = True
    with pytest.raises(StorageError, match="injected"):
        run.store_file("lost.txt", b"never stored")
    stack.fail_commit = False
    assert _inline_keys(stack) == [] and list(stack.tier.keys()) == []
    assert run.list_files() == []


def test_deleting_the_file_removes_its_inline_blob(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    stored = run.store_file("gone.txt", b"short lived")
    run.delete_file(stored.item.id)
    assert _inline_keys(stack) == [] and list(stack.tier.keys()) == []


def test_versions_of_small_files_are_inline_and_deleted_with_them(stack: Stack) -> None:
    versions = stack.binder.versions
    v0 = versions.save(U1, "chart.json", b'{"v": 0}')
    v1 = versions.save(U1, "chart.json", b'{"v": 1}')
    assert _inline_keys(stack) == sorted([v0.item.blob_key, v1.item.blob_key])
    assert versions.read(U1, v1) == b'{"v": 1}'
    assert versions.delete(U1, "chart.json") == 2
    assert _inline_keys(stack) == []
    assert stack.bulk.puts == []


def test_gc_keeps_named_inline_blobs_and_removes_old_orphans(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    kept = run.produce_file("kept.txt", b"named by its FileItem").item.blob_key
    # An inline blob no FileItem names, old enough and not committed: a leftover.
    orphan = "ab/ab" + "0" * 30
    stack.tier.put(orphan, [b"left over"])
    old = datetime.now(UTC) - timedelta(days=2)
    with stack.units() as uow:
        origin = stack.tier.inline_origin(orphan)
        uow.inline_blobs.put(orphan, b"left over", origin, old, committed=False)
        uow.commit()
    # One that a FileItem named once (committed) but none names now: kept, reported.
    restored = "cd/cd" + "1" * 30
    with stack.units() as uow:
        origin = stack.tier.inline_origin(restored)
        uow.inline_blobs.put(restored, b"committed once", origin, old, committed=True)
        uow.commit()
    collect = stack.binder.collect_garbage
    dry = collect(dry_run=True, grace_seconds=3600)
    assert dry.orphan_blobs == (orphan,) and dry.committed_blobs == (restored,)
    assert dry.inline_blobs == 3
    done = collect(dry_run=False, grace_seconds=3600)
    assert done.orphan_blobs == (orphan,)
    assert _inline_keys(stack) == sorted([kept, restored])
    assert run.read_file(run.list_files()[0].id) == b"named by its FileItem"


def test_limit_zero_stores_new_files_in_bulk_and_still_reads_inline_ones(stack: Stack) -> None:
    before = stack.binder.start_new_run(U1).store_file("old.txt", b"kept inline").item
    off = stack.with_limit(0)
    run = off.binder.start_new_run(U1)
    after = run.store_file("new.txt", b"goes to bulk").item
    assert off.tier.is_inline(before.blob_key) and not off.tier.is_inline(after.blob_key)
    assert stack.bulk.puts == [after.blob_key]
    assert run.read_file(before.id) == b"kept inline"
    assert sorted(off.tier.keys()) == sorted([before.blob_key, after.blob_key])


def _read(store: BlobStore, key: str) -> bytes:
    with store.open(key) as chunks:
        return b"".join(chunks)


def test_replacing_across_tiers_never_brings_an_older_blob_back(stack: Stack) -> None:
    tier = stack.tier
    big: Chunks = [b"B" * (LIMIT + 10)]
    tier.put("ef/efkey", [b"small one"])
    tier.put("ef/efkey", big)
    assert _read(tier, "ef/efkey") == b"B" * (LIMIT + 10) and not tier.is_inline("ef/efkey")
    tier.put("ef/efkey", [b"small again"])
    assert _read(tier, "ef/efkey") == b"small again"
    assert not stack.bulk.inner.exists("ef/efkey")  # the bulk copy went
    assert list(tier.keys()) == ["ef/efkey"]
    tier.delete("ef/efkey")
    assert not tier.exists("ef/efkey") and list(tier.keys()) == []


def test_presigned_urls_are_refused_for_inline_blobs() -> None:
    calls: list[str] = []

    class Presigning(BlobStoreWrapper):
        def presigned_get(self, key: str, **options: Any) -> str:
            calls.append(key)
            return f"https://bucket.example/{key}"

    store = MemoryMetadataStore()
    bulk = Presigning(MemoryBlobStore())
    tier = InlineTierBlobStore(bulk, store.unit_of_work, limit=16)
    tier.put("gh/ghsmall", [b"tiny"])
    tier.put("gh/ghlarge", [b"L" * 100])
    presign: Callable[..., str] = tier.presigned_get  # type: ignore[attr-defined]
    with pytest.raises(StorageError, match="metadata database"):
        presign("gh/ghsmall", expires_in=60, file_name="a", mime_type="x/y", disposition="a")
    assert presign("gh/ghlarge", expires_in=60, file_name="a", mime_type="x/y", disposition="a")
    assert calls == ["gh/ghlarge"]


def test_content_updates_of_small_files_write_inline_in_the_switch(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    item = run.store_file("log.txt", b"one\n").item
    appended = run.append_file(item.id, b"two\n").item
    assert appended.blob_key != item.blob_key
    assert _inline_keys(stack) == [appended.blob_key]  # the old inline blob was freed
    assert stack.tier.is_committed(appended.blob_key)
    assert run.read_file(item.id) == b"one\ntwo\n"
    # Growing past the limit moves the content to the bulk store, and frees the inline row.
    grown = run.replace_file(item.id, b"x" * (LIMIT + 1)).item
    assert stack.bulk.puts == [grown.blob_key] and _inline_keys(stack) == []
    shrunk = run.replace_file(item.id, b"small again").item
    assert _inline_keys(stack) == [shrunk.blob_key] and list(stack.tier.keys()) == [shrunk.blob_key]
    assert stack.bulk.puts == [grown.blob_key]  # no bulk write for the small content


def test_a_failed_switch_commit_leaves_no_inline_row(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    item = run.store_file("log.txt", b"one\n").item
    stack.fail_commit = True
    with pytest.raises(StorageError):
        run.append_file(item.id, b"two\n")
    stack.fail_commit = False
    assert _inline_keys(stack) == [item.blob_key]
    assert run.read_file(item.id) == b"one\n"


@pytest.mark.parametrize("limit", [-1, (1 << 20) + 1, True, 1.5, "64"])
def test_the_tier_refuses_a_limit_that_is_no_byte_count_up_to_1_mib(limit: object) -> None:
    store = MemoryMetadataStore()
    with pytest.raises(InvalidInput, match="inline_blob_limit"):
        InlineTierBlobStore(MemoryBlobStore(), store.unit_of_work, limit=limit)  # type: ignore[arg-type]


def test_the_tier_offers_the_bulk_stores_optional_parts_and_only_those() -> None:
    store = MemoryMetadataStore()
    bulk = MemoryBlobStore()
    tier = InlineTierBlobStore(bulk, store.unit_of_work)
    assert isinstance(tier, LocatingBlobStore)  # the memory store locates itself
    assert tier.location(create=True) == bulk.location(create=False)
    assert not isinstance(tier, PresigningBlobStore)  # memory has no presigned URLs
    plain = InlineTierBlobStore(BlobStoreWrapper(bulk), store.unit_of_work)
    assert not isinstance(plain, LocatingBlobStore)
    with pytest.raises(AttributeError):
        plain._hidden  # noqa: B018 - private names are never passed on
    with pytest.raises(InvalidInput):
        tier.is_inline("../escape")
