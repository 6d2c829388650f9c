"""The file-versions contract (``versions_suite.VersionsContract``) on every metadata backend.

Blobs live in memory; the metadata backend is what numbering depends on.
Each SQL backend gets one private, migrated database per module, emptied
before each test.
"""

from __future__ import annotations

import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.testing import VersionsContract
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder


def _sql_binder(backend: SqlBackend) -> DocBinder:
    backend.clean()
    store = backend.store
    return wire_binder(store.unit_of_work, MemoryBlobStore(), store.read_unit_of_work)


class TestMemoryVersions(VersionsContract):
    @pytest.fixture
    def binder(self) -> DocBinder:
        return wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())


class TestSqliteVersions(VersionsContract):
    @pytest.fixture
    def binder(self, sqlite_backend: SqlBackend) -> DocBinder:
        return _sql_binder(sqlite_backend)


@pytest.mark.postgres
class TestPostgresVersions(VersionsContract):
    @pytest.fixture
    def binder(self, postgresql_backend: SqlBackend) -> DocBinder:
        return _sql_binder(postgresql_backend)


@pytest.mark.mysql
class TestMariadbVersions(VersionsContract):
    @pytest.fixture
    def binder(self, mariadb_backend: SqlBackend) -> DocBinder:
        return _sql_binder(mariadb_backend)
