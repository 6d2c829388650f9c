"""The whole-bridge contract on every backend combination.

memory + memory, SQLite + local disk (the embedded default), PostgreSQL + local
disk, MariaDB + local disk, PostgreSQL + S3 (moto server over HTTP), SQLite + S3.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing import BridgeContract
from docbinder.testing.bridge_suite import MakeBinder
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder


def _factory(
    uow_factory: UnitOfWorkFactory,
    blobs: BlobStore,
    read_uow_factory: UnitOfWorkFactory | None = None,
) -> MakeBinder:
    """Binders wired as the container wires them (SQL: read-only use cases use read units)."""

    def make(max_file_size: int | None = None) -> DocBinder:
        return wire_binder(uow_factory, blobs, read_uow_factory, max_file_size=max_file_size)

    return make


@pytest.fixture
def s3_store(s3_bucket: str, s3_endpoint: str) -> BlobStore:
    from docbinder.adapters.s3 import S3BlobStore

    return S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")


class TestMemoryBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self) -> MakeBinder:
        return _factory(MemoryMetadataStore().unit_of_work, MemoryBlobStore())


class TestSqliteLocalDiskBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, sqlite_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        sqlite_backend.clean()
        return _factory(
            sqlite_backend.store.unit_of_work,
            LocalDiskBlobStore(tmp_path / "blobs"),
            sqlite_backend.store.read_unit_of_work,
        )


class TestPostgresLocalDiskBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, postgresql_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        postgresql_backend.clean()
        return _factory(
            postgresql_backend.store.unit_of_work,
            LocalDiskBlobStore(tmp_path / "blobs"),
            postgresql_backend.store.read_unit_of_work,
        )


class TestMariaDbLocalDiskBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, mariadb_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        mariadb_backend.clean()
        return _factory(
            mariadb_backend.store.unit_of_work,
            LocalDiskBlobStore(tmp_path / "blobs"),
            mariadb_backend.store.read_unit_of_work,
        )


class TestPostgresS3Bridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, postgresql_backend: SqlBackend, s3_store: BlobStore) -> MakeBinder:
        postgresql_backend.clean()
        return _factory(
            postgresql_backend.store.unit_of_work,
            s3_store,
            postgresql_backend.store.read_unit_of_work,
        )


class TestSqliteS3Bridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, sqlite_backend: SqlBackend, s3_store: BlobStore) -> MakeBinder:
        sqlite_backend.clean()
        return _factory(
            sqlite_backend.store.unit_of_work, s3_store, sqlite_backend.store.read_unit_of_work
        )


# -- the same with the inline tier over the blob store (ADR 0110): small files in the database


def _inline(
    uow_factory: UnitOfWorkFactory, bulk: BlobStore, read: UnitOfWorkFactory | None = None
) -> MakeBinder:
    return _factory(uow_factory, InlineTierBlobStore(bulk, uow_factory, read), read)


class TestMemoryInlineBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self) -> MakeBinder:
        return _inline(MemoryMetadataStore().unit_of_work, MemoryBlobStore())


class TestSqliteLocalDiskInlineBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, sqlite_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        sqlite_backend.clean()
        store = sqlite_backend.store
        return _inline(
            store.unit_of_work, LocalDiskBlobStore(tmp_path / "b"), store.read_unit_of_work
        )


class TestPostgresLocalDiskInlineBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, postgresql_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        postgresql_backend.clean()
        store = postgresql_backend.store
        return _inline(
            store.unit_of_work, LocalDiskBlobStore(tmp_path / "b"), store.read_unit_of_work
        )


class TestMariaDbLocalDiskInlineBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, mariadb_backend: SqlBackend, tmp_path: Path) -> MakeBinder:
        mariadb_backend.clean()
        store = mariadb_backend.store
        return _inline(
            store.unit_of_work, LocalDiskBlobStore(tmp_path / "b"), store.read_unit_of_work
        )


class TestSqliteS3InlineBridge(BridgeContract):
    @pytest.fixture
    def make_binder(self, sqlite_backend: SqlBackend, s3_store: BlobStore) -> MakeBinder:
        sqlite_backend.clean()
        store = sqlite_backend.store
        return _inline(store.unit_of_work, s3_store, store.read_unit_of_work)
