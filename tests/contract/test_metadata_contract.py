"""The metadata contract (``metadata_suite.MetadataContract``) on every backend.

Memory gets a fresh store per test. Each SQL backend gets one private,
migrated database per module (see ``sql_backends``), emptied before each test.
A memory store whose unit offers no versions stands for a third-party backend
that declares ``supports_versions = False``.
"""

from __future__ import annotations

import pytest

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.domain.errors import ConfigurationError
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.testing import MetadataContract
from tests.contract.sql_backends import SqlBackend


class TestMemoryMetadata(MetadataContract):
    @pytest.fixture
    def make_uow_factory(self) -> UnitOfWorkFactory:
        return MemoryMetadataStore().unit_of_work


class _NoVersions:
    """The versions role of a backend that keeps none: every method refuses, naming it."""

    def __getattr__(self, name: str) -> object:
        def refuse(*_args: object, **_kwargs: object) -> object:
            raise ConfigurationError(
                f"the memory-without-versions backend keeps no file versions ({name})"
            )

        return refuse


class TestMemoryMetadataWithoutVersions(MetadataContract):
    supports_versions = False

    @pytest.fixture
    def make_uow_factory(self) -> UnitOfWorkFactory:
        store = MemoryMetadataStore()

        def unit_of_work() -> UnitOfWork:
            unit = store.unit_of_work()
            unit.versions = _NoVersions()  # type: ignore[assignment]
            return unit

        return unit_of_work


class TestSqliteMetadata(MetadataContract):
    @pytest.fixture
    def make_uow_factory(self, sqlite_backend: SqlBackend) -> UnitOfWorkFactory:
        sqlite_backend.clean()
        return sqlite_backend.store.unit_of_work


@pytest.mark.postgres
class TestPostgresMetadata(MetadataContract):
    @pytest.fixture
    def make_uow_factory(self, postgresql_backend: SqlBackend) -> UnitOfWorkFactory:
        postgresql_backend.clean()
        return postgresql_backend.store.unit_of_work


@pytest.mark.mysql
class TestMariadbMetadata(MetadataContract):
    @pytest.fixture
    def make_uow_factory(self, mariadb_backend: SqlBackend) -> UnitOfWorkFactory:
        mariadb_backend.clean()
        return mariadb_backend.store.unit_of_work
