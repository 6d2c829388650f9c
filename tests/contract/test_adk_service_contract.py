"""The ADK artifact-service contract (``adk_service_suite``) on every metadata and blob backend.

Pairs: memory + memory, SQLite + local disk, PostgreSQL + S3 (moto),
MariaDB + memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.testing.adk_service_suite import AdkServiceContract
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder

pytestmark = pytest.mark.anyio


class TestMemoryAdkService(AdkServiceContract):
    @pytest.fixture
    def binder(self) -> DocBinder:
        return wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())


class TestSqliteDiskAdkService(AdkServiceContract):
    @pytest.fixture
    def binder(self, sqlite_backend: SqlBackend, tmp_path: Path) -> DocBinder:
        sqlite_backend.clean()
        store = sqlite_backend.store
        return wire_binder(
            store.unit_of_work, LocalDiskBlobStore(tmp_path / "blobs"), store.read_unit_of_work
        )


@pytest.mark.postgres
class TestPostgresS3AdkService(AdkServiceContract):
    @pytest.fixture
    def binder(
        self,
        postgresql_backend: SqlBackend,
        s3_bucket: str,
        s3_endpoint: str,
    ) -> Iterator[DocBinder]:
        postgresql_backend.clean()
        store = postgresql_backend.store
        blobs = S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")
        yield wire_binder(store.unit_of_work, blobs, store.read_unit_of_work)


@pytest.mark.mysql
class TestMariadbAdkService(AdkServiceContract):
    @pytest.fixture
    def binder(self, mariadb_backend: SqlBackend) -> DocBinder:
        mariadb_backend.clean()
        store = mariadb_backend.store
        return wire_binder(store.unit_of_work, MemoryBlobStore(), store.read_unit_of_work)
