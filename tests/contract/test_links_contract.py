"""The shipped LinkLedger and ResolutionLog contracts on memory, SQLite, PostgreSQL, MariaDB."""

from __future__ import annotations

import pytest

from docbinder.adapters.memory.links import MemoryLinkLedger, MemoryResolutionLog
from docbinder.adapters.sql.links import SqlLinkLedger, SqlResolutionLog
from docbinder.testing.links_suite import (
    LinkLedgerContract,
    MakeLedger,
    MakeLog,
    ResolutionLogContract,
)
from tests.contract.sql_backends import SqlBackend


class TestMemoryLinkLedger(LinkLedgerContract):
    @pytest.fixture
    def make_ledger(self) -> MakeLedger:
        return MemoryLinkLedger


class TestMemoryResolutionLog(ResolutionLogContract):
    @pytest.fixture
    def make_log(self) -> MakeLog:
        return MemoryResolutionLog


def _ledger(backend: SqlBackend) -> MakeLedger:
    backend.clean()
    return lambda: SqlLinkLedger(backend.engine)


def _log(backend: SqlBackend) -> MakeLog:
    backend.clean()
    return lambda per_workflow: SqlResolutionLog(backend.engine, per_workflow)


class TestSqliteLinkLedger(LinkLedgerContract):
    @pytest.fixture
    def make_ledger(self, sqlite_backend: SqlBackend) -> MakeLedger:
        return _ledger(sqlite_backend)


class TestSqliteResolutionLog(ResolutionLogContract):
    @pytest.fixture
    def make_log(self, sqlite_backend: SqlBackend) -> MakeLog:
        return _log(sqlite_backend)


@pytest.mark.postgres
class TestPostgresLinkLedger(LinkLedgerContract):
    @pytest.fixture
    def make_ledger(self, postgresql_backend: SqlBackend) -> MakeLedger:
        return _ledger(postgresql_backend)


@pytest.mark.postgres
class TestPostgresResolutionLog(ResolutionLogContract):
    @pytest.fixture
    def make_log(self, postgresql_backend: SqlBackend) -> MakeLog:
        return _log(postgresql_backend)


@pytest.mark.mysql
class TestMariadbLinkLedger(LinkLedgerContract):
    @pytest.fixture
    def make_ledger(self, mariadb_backend: SqlBackend) -> MakeLedger:
        return _ledger(mariadb_backend)


@pytest.mark.mysql
class TestMariadbResolutionLog(ResolutionLogContract):
    @pytest.fixture
    def make_log(self, mariadb_backend: SqlBackend) -> MakeLog:
        return _log(mariadb_backend)
