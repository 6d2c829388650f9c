"""The shipped LinkLedger and ResolutionLog contracts on memory, SQLite, PostgreSQL, MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from docbinder.adapters.memory.links import MemoryLinkLedger, MemoryResolutionLog
from docbinder.adapters.sql.links import SqlLinkLedger, SqlResolutionLog
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.adapters.sqlite.links import SqliteLinkLedger
from docbinder.adapters.sqlite.resolutions import SqliteResolutionLog
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
    """SQLite's ledger is the SQLite adapter's own, on ``sqlite3`` (ADR 0122)."""

    @pytest.fixture
    def make_ledger(self, sqlite_backend: SqlBackend) -> MakeLedger:
        sqlite_backend.clean()
        return lambda: SqliteLinkLedger(SqliteMetadata(sqlite_backend.engine).session)


def test_sqlite_marks_read_the_same_through_sqlalchemy(sqlite_backend: SqlBackend) -> None:
    """The rows the ``sqlite3`` ledger writes are the rows SQLAlchemy's reads (same text format)."""
    from datetime import UTC, datetime, timedelta

    sqlite_backend.clean()
    own = SqliteLinkLedger(SqliteMetadata(sqlite_backend.engine).session)
    core = SqlLinkLedger(sqlite_backend.engine)
    until = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    own.vouch("ab12", "cd34", until)
    assert core.vouched_until("ab12", "cd34") == until
    assert own.revoke("ef56", until) and core.is_revoked("ef56")
    assert not core.revoke("ef56", until)  # the same row, seen by both
    core.vouch("ab12", "cd34", until + timedelta(days=1))
    assert own.vouched_until("ab12", "cd34") == until + timedelta(days=1)
    assert own.prune(until + timedelta(seconds=1)) == 1  # the revocation; the vouch lives on
    assert not core.is_revoked("ef56")


class TestSqliteResolutionLog(ResolutionLogContract):
    """SQLite's resolution log is the SQLite adapter's own, on ``sqlite3`` (ADR 0122)."""

    @pytest.fixture
    def make_log(self, sqlite_backend: SqlBackend) -> MakeLog:
        sqlite_backend.clean()
        meta = SqliteMetadata(sqlite_backend.engine)
        return lambda per_workflow: SqliteResolutionLog(meta.session, per_workflow)


def test_an_unsynced_session_leaves_the_connection_at_its_own_level(tmp_path: Path) -> None:
    """The resolution log commits with ``synchronous = NORMAL``; the next unit syncs again."""
    from docbinder.adapters.sql import create_engine_from_url

    engine = create_engine_from_url(f"sqlite:///{tmp_path / 'm.db'}", pool_size=1)
    meta = SqliteMetadata(engine)
    session = meta.session(True, synced=False)
    try:
        session.execute("CREATE TABLE t (x INTEGER)").close()
        session.execute("INSERT INTO t VALUES (1)").close()
        assert session.one("PRAGMA synchronous") == (1,)  # NORMAL while it holds the connection
        session.commit()
    finally:
        session.close()
    with meta.unit_of_work() as uow:  # the pool's one connection, back at SQLite's FULL
        assert uow._session.one("PRAGMA synchronous") == (2,)
        assert uow._session.one("SELECT count(*) FROM t") == (1,)


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


def test_sqlite_ledger_answers_revocations_inside_a_unit_of_its_database(
    sqlite_backend: SqlBackend, tmp_path: Path
) -> None:
    """ADR 0128: in a unit on its own engine the ledger reads there; any other unit, its own way."""
    from datetime import UTC, datetime, timedelta

    from docbinder.adapters.sql import migrate
    from tests.contract.sql_backends import statements_sent

    sqlite_backend.clean()
    store = SqliteMetadata(sqlite_backend.engine)
    ledger = SqliteLinkLedger(store.session, sqlite_backend.engine)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert ledger.revoke("a" * 32, later)
    with store.read_unit_of_work() as uow:
        sent = statements_sent(
            sqlite_backend.engine,
            lambda: (
                ledger.is_revoked_within(uow, "a" * 32),
                ledger.is_revoked_within(uow, "b" * 32),
            ),
        )
        assert ledger.is_revoked_within(uow, "a" * 32)
        assert not ledger.is_revoked_within(uow, "b" * 32)
    assert [s for s, _ in sent if s.startswith("BEGIN")] == ["BEGIN DEFERRED"]
    other_url = f"sqlite:///{tmp_path / 'other.db'}"
    migrate(other_url)
    other = SqliteMetadata.from_url(other_url)
    try:
        with other.read_unit_of_work() as foreign:
            assert ledger.is_revoked_within(foreign, "a" * 32)  # its own database decides
            assert not ledger.is_revoked_within(foreign, "b" * 32)
    finally:
        other.close()


def test_a_redemption_on_sqlite_is_one_transaction_and_still_sees_a_revocation(
    sqlite_backend: SqlBackend,
) -> None:
    import base64
    import hashlib

    from docbinder.adapters.memory import MemoryBlobStore
    from docbinder.domain.links import LinkKeys, LinkRefused
    from docbinder.domain.model import Principal
    from tests.contract.sql_backends import binder_over, statements_sent

    sqlite_backend.clean()
    store = SqliteMetadata(sqlite_backend.engine)
    secret = base64.b64encode(hashlib.sha256(b"ledger test key").digest()).decode()
    binder = binder_over(
        store,
        MemoryBlobStore(),
        link_keys=LinkKeys.parse(f"k1:{secret}"),
        link_ledger=SqliteLinkLedger(store.session, sqlite_backend.engine),
        public_url="http://127.0.0.1:9",
    )
    try:
        alice = Principal("alice", "m1")
        run = binder.start_new_run(alice)
        produced = run.produce_file("a.txt", b"alpha " * 50)
        token = run.link_for(produced.item.id, expires_in=600).url.rpartition("/")[2]
        sent = statements_sent(sqlite_backend.engine, lambda: binder.redeem_link(token))
        assert [s for s, _ in sent if s.startswith("BEGIN")] == ["BEGIN DEFERRED"]
        assert any("link_marks" in s for s, _ in sent)
        binder.revoke_link(alice, token)
        with pytest.raises(LinkRefused, match="revoked"):
            binder.redeem_link(token)
    finally:
        binder.close()
