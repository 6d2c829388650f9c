"""The extraction cache contract (``extraction_cache_suite``) on memory, SQLite, PostgreSQL, MariaDB."""

from __future__ import annotations

from typing import Any

import pytest

from docbinder.adapters.memory import MemoryExtractionCache, MemoryMetadataStore
from docbinder.adapters.sql.extraction_cache import SqlExtractionCache
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.extraction_cache_suite import V1, A, B, C, ExtractionCacheContract, MakeCache
from tests.contract.sql_backends import SqlBackend


class TestMemoryExtractionCache(ExtractionCacheContract):
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


class TestSqliteExtractionCache(ExtractionCacheContract):
    @pytest.fixture
    def make_cache(self, sqlite_backend: SqlBackend) -> MakeCache:
        return _sql(sqlite_backend)

    @pytest.fixture
    def uow_factory(self, sqlite_backend: SqlBackend) -> UnitOfWorkFactory:
        return sqlite_backend.store.unit_of_work


@pytest.mark.postgres
class TestPostgresExtractionCache(ExtractionCacheContract):
    @pytest.fixture
    def make_cache(self, postgresql_backend: SqlBackend) -> MakeCache:
        return _sql(postgresql_backend)

    @pytest.fixture
    def uow_factory(self, postgresql_backend: SqlBackend) -> UnitOfWorkFactory:
        return postgresql_backend.store.unit_of_work


@pytest.mark.mysql
class TestMariadbExtractionCache(ExtractionCacheContract):
    @pytest.fixture
    def make_cache(self, mariadb_backend: SqlBackend) -> MakeCache:
        return _sql(mariadb_backend)

    @pytest.fixture
    def uow_factory(self, mariadb_backend: SqlBackend) -> UnitOfWorkFactory:
        return mariadb_backend.store.unit_of_work
