"""The provider Files bridge (B22) over every metadata backend: uploaded once, also under concurrency.

The official ``openai`` SDK against the local provider server on 127.0.0.1; the copies'
table on memory, SQLite, PostgreSQL and MariaDB (each a private, migrated database, see
``sql_backends``). Concurrent callers for one key race on the table's unique key.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

import pytest

pytest.importorskip("openai")

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.providers.openai_files import OpenAIFiles
from docbinder.domain.model import Principal
from docbinder.domain.providers import CopyState, marked_name, token_of
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.provider_server import ProviderServer
from tests.contract.sql_backends import SqlBackend
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme", "fi1")
BOB = Principal("bob", "globex", "fi1")
PDF = b"%PDF-1.4\n% the same bytes in every tenant\n%%EOF\n"
THREADS = 6


class SlowUploads(OpenAIFiles):
    """The OpenAI adapter with a pause in each upload, so concurrent callers overlap."""

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        time.sleep(0.3)
        return super().upload(source, size, file_name, mime_type)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


class _BridgeContract:
    @pytest.fixture
    def units(self) -> UnitOfWorkFactory:
        pytest.fail("a backend's test class provides units")

    def test_an_expired_file_is_not_uploaded(
        self, units: UnitOfWorkFactory, server: ProviderServer
    ) -> None:
        """Past its retention period a file's content is not served: no provider gets it (B5)."""
        from datetime import timedelta

        from docbinder.domain.errors import FileExpired
        from docbinder.domain.model import Scope

        binder = wire_binder(units, MemoryBlobStore())
        binder.providers.register(OpenAIFiles(server.openai_client(), "main"))
        item = binder.store_file(ALICE, "r.pdf", PDF, mime_type="application/pdf").item
        binder.retention.set(Scope("acme", "fi1"), timedelta(seconds=1))
        time.sleep(1.1)
        run = binder.start_new_run(ALICE)
        with pytest.raises(FileExpired):
            run.provide_file(item.id, "openai", "main")
        assert server.uploads_of("openai") == []

    def test_once_per_tenant_concurrently_and_gone_with_the_file(
        self, units: UnitOfWorkFactory, server: ProviderServer
    ) -> None:
        binder = wire_binder(units, MemoryBlobStore())
        binder.providers.register(SlowUploads(server.openai_client(), "main"))
        ids = {
            who: binder.store_file(who, "r.pdf", PDF, mime_type="application/pdf").item.id
            for who in (ALICE, BOB)
        }
        barrier = threading.Barrier(THREADS)
        results: list[Any] = []

        def call(who: Principal) -> None:
            barrier.wait(timeout=10)
            try:
                results.append((who, binder.provide_file(who, ids[who], "openai", "main")))
            except Exception as err:  # shown by the assertions
                results.append((who, err))

        threads = [
            threading.Thread(target=call, args=(ALICE if i % 2 else BOB,)) for i in range(THREADS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert all(not isinstance(r, Exception) for _, r in results), results
        by_tenant = {who: {r.file_id for w, r in results if w == who} for who in (ALICE, BOB)}
        assert [len(v) for v in by_tenant.values()] == [1, 1], results
        assert by_tenant[ALICE] != by_tenant[BOB]
        assert len(server.uploads_of("openai")) == 2
        assert sum(r.uploaded for _, r in results) == 2
        sha = hashlib.sha256(PDF).hexdigest()
        with units() as uow:
            rows = uow.provider_copies.of_content(ALICE.scope, sha)
        assert [(r.state, r.file_id) for r in rows] == [
            (CopyState.READY, next(iter(by_tenant[ALICE])))
        ]
        # the token the provider's name of the copy carries is stored with the row
        (alice_upload,) = [u for u in server.uploads_of("openai") if u.file_id == rows[0].file_id]
        assert rows[0].upload_token is not None
        assert token_of(alice_upload.file_name) == rows[0].upload_token
        assert alice_upload.file_name == marked_name("r.pdf", rows[0].upload_token)
        binder.delete_file(ALICE, ids[ALICE])
        assert not server.holds("openai", next(iter(by_tenant[ALICE])))
        assert server.holds("openai", next(iter(by_tenant[BOB])))  # bob's copy is bob's
        with units() as uow:
            assert uow.provider_copies.of_content(ALICE.scope, sha) == []
            assert len(uow.provider_copies.of_content(BOB.scope, sha)) == 1


class TestMemoryBridge(_BridgeContract):
    @pytest.fixture
    def units(self) -> UnitOfWorkFactory:
        return MemoryMetadataStore().unit_of_work


class TestSqliteBridge(_BridgeContract):
    @pytest.fixture
    def units(self, sqlite_backend: SqlBackend) -> UnitOfWorkFactory:
        sqlite_backend.clean()
        return sqlite_backend.store.unit_of_work


@pytest.mark.postgres
class TestPostgresBridge(_BridgeContract):
    @pytest.fixture
    def units(self, postgresql_backend: SqlBackend) -> UnitOfWorkFactory:
        postgresql_backend.clean()
        return postgresql_backend.store.unit_of_work


@pytest.mark.mysql
class TestMariadbBridge(_BridgeContract):
    @pytest.fixture
    def units(self, mariadb_backend: SqlBackend) -> UnitOfWorkFactory:
        mariadb_backend.clean()
        return mariadb_backend.store.unit_of_work
