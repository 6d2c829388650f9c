"""A versioned save under faults: a FileItem never names a missing blob, a failed save keeps nothing.

The memory metadata store is wrapped so that a commit fails either before
taking effect (then the save must raise and remove its blob) or after it
(the commit reported a fault but the row is there: the save must succeed and
keep the blob), and blob writes can fail (then nothing is recorded).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType

import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.memory.metadata import MemoryUnitOfWork
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal
from docbinder.ports.blobs import Chunks, location_fingerprint
from tests.wiring import wire_binder

ALICE = Principal("alice", "m1")


class FlakyUnitOfWork:
    """A memory unit whose commit fails ``before`` or ``after`` taking effect."""

    def __init__(self, inner: MemoryUnitOfWork, mode: str) -> None:
        self._inner = inner
        self._mode = mode
        self.files = inner.files
        self.workflows = inner.workflows
        self.versions = inner.versions
        self.maintenance = inner.maintenance

    def __enter__(self) -> FlakyUnitOfWork:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inner.__exit__(exc_type, exc, tb)

    def commit(self) -> None:
        if self._mode == "after":
            self._inner.commit()
        raise StorageError(f"commit failed ({self._mode} taking effect)")

    def rollback(self) -> None:
        self._inner.rollback()


class BrokenBlobs(MemoryBlobStore):
    def put(self, key: str, data: Chunks) -> int:  # type: ignore[override]
        for _chunk in data:
            pass
        raise StorageError("disk full")


@pytest.fixture
def store() -> MemoryMetadataStore:
    """A store that has its database identity already, so the save's unit is the first writer."""
    store = MemoryMetadataStore()
    with store.unit_of_work() as uow:
        uow.maintenance.database_id(create=True)
        uow.commit()
    return store


def _known_blobs(store: MemoryMetadataStore) -> MemoryBlobStore:
    """A blob store whose location the database recorded already (ADR 0030), so the
    registration before the save writes nothing and the save's unit is the first writer."""
    blobs = MemoryBlobStore()
    store_id = blobs.identity(create=True)
    assert store_id is not None
    with store.unit_of_work() as uow:
        uow.maintenance.record_store_location(store_id, location_fingerprint(blobs.location()))
        uow.commit()
    return blobs


def _flaky(store: MemoryMetadataStore, mode: str, fail_commits: list[int]) -> object:
    calls = iter(range(1_000_000))

    def factory() -> object:
        n = next(calls)
        unit = store.unit_of_work()
        return FlakyUnitOfWork(unit, mode) if n in fail_commits else unit

    return factory


def _blob_keys(blobs: MemoryBlobStore) -> Iterator[str]:
    return blobs.keys()


def test_commit_failing_before_it_takes_effect_keeps_nothing(store: MemoryMetadataStore) -> None:
    blobs = _known_blobs(store)
    binder = wire_binder(_flaky(store, "before", [0]), blobs, store.unit_of_work)  # type: ignore[arg-type]
    with pytest.raises(StorageError):
        binder.versions.save(ALICE, "a.txt", b"lost")
    assert list(_blob_keys(blobs)) == []
    assert binder.versions.list(ALICE, "a.txt") == []
    assert binder.versions.save(ALICE, "a.txt", b"kept").number == 0


def test_commit_failing_after_it_took_effect_keeps_the_version(store: MemoryMetadataStore) -> None:
    blobs = _known_blobs(store)
    binder = wire_binder(_flaky(store, "after", [0]), blobs, store.unit_of_work)  # type: ignore[arg-type]
    stored = binder.versions.save(ALICE, "a.txt", b"kept")
    assert stored.number == 0
    latest = binder.versions.latest(ALICE, "a.txt")
    assert latest is not None and binder.versions.read(ALICE, latest) == b"kept"


def test_blob_write_failing_records_nothing(store: MemoryMetadataStore) -> None:
    binder = wire_binder(store.unit_of_work, BrokenBlobs())
    with pytest.raises(StorageError, match="disk full"):
        binder.versions.save(ALICE, "a.txt", b"x")
    with store.unit_of_work() as uow:
        assert list(uow.maintenance.iter_files()) == []
