"""What the audit log records for a read, and how its read batches commit (B11, ADR 0127)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from tests.contract.sql_backends import SqlBackend, backend_binder, binder_over, statements_sent

ALICE = Principal("alice", "m1")


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mariadb"])
def audited(request: pytest.FixtureRequest) -> Iterator[DocBinder]:
    binder, _ = backend_binder(request, request.param, audit=True)
    try:
        yield binder
    finally:
        binder.close()


def test_each_reference_of_a_content_read_is_one_event(audited: DocBinder) -> None:
    run = audited.start_new_run(ALICE)
    kept = run.produce_file("kept.txt", b"kept " * 400)
    gone = run.produce_file("gone.txt", b"gone " * 400)
    audited.blobs.delete(gone.item.blob_key)
    before = len(audited.audit_log.list())
    result = run.get_content(
        [f"docItem:{kept.document_id}", f"docItem:{gone.document_id}", "docItem:nothing"]
    )
    assert [d.document_id for d in result.documents] == [kept.document_id]
    events = audited.audit_log.list()[before:]
    seen = sorted((e.action.value, e.outcome, e.file_id, e.document_id) for e in events)
    assert seen == sorted(
        [
            ("read_content", "ok", kept.item.id, kept.document_id),
            ("read_content", "blob_missing", gone.item.id, gone.document_id),
            ("resolve", "not_in_workflow", None, None),
        ]
    )
    assert audited.audit_log.verify().ok


def test_a_resolution_without_a_read_records_resolve_events(audited: DocBinder) -> None:
    run = audited.start_new_run(ALICE)
    kept = run.produce_file("kept.txt", b"kept " * 400)
    before = len(audited.audit_log.list())
    run.resolve([f"docItem:{kept.document_id}"])
    events = audited.audit_log.list()[before:]
    assert [(e.action.value, e.outcome, e.document_id) for e in events] == [
        ("resolve", "ok", kept.document_id)
    ]


def test_sqlite_read_batches_commit_unsynced_and_writes_synced(sqlite_backend: SqlBackend) -> None:
    sqlite_backend.clean()
    binder = binder_over(sqlite_backend.store, MemoryBlobStore(), audit=True)
    try:
        run = binder.start_new_run(ALICE)
        written = statements_sent(
            sqlite_backend.engine, lambda: run.produce_file("a.txt", b"alpha " * 100)
        )
        assert any(s.startswith("INSERT INTO audit_events") for s, _ in written)
        assert not any("synchronous" in s for s, _ in written)
        produced = run.produce_file("b.txt", b"beta " * 100)
        run.get_content([f"docItem:{produced.document_id}"])
        flushed = [s for s, _ in statements_sent(sqlite_backend.engine, binder.audit_log.flush)]
        assert "PRAGMA synchronous = NORMAL" in flushed
        assert flushed.index("PRAGMA synchronous = NORMAL") < flushed.index("BEGIN IMMEDIATE")
        assert any(s.startswith("INSERT INTO audit_events") for s in flushed)
        assert flushed[-1].startswith("PRAGMA synchronous = 2")  # the connection's own level back
        assert binder.audit_log.verify().ok
    finally:
        binder.close()


def test_the_container_gives_sqlite_read_batches_the_unsynced_unit(tmp_path: Path) -> None:
    from docbinder.adapters.sql import migrate
    from docbinder.adapters.sqlite import SqliteMetadata
    from docbinder.config import Settings
    from docbinder.container import Container

    settings = Settings(
        home=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'docbinder.db'}",
        blob_url=(tmp_path / "blobs").as_uri(),
        audit=True,
    )
    migrate(settings.database_url)
    container = Container(settings=settings)
    binder = container.binder()
    try:
        store = container.metadata()
        assert isinstance(store, SqliteMetadata)
        run = binder.start_new_run(ALICE)
        produced = run.produce_file("b.txt", b"beta " * 100)
        run.get_content([f"docItem:{produced.document_id}"])
        flushed = [s for s, _ in statements_sent(store.engine, binder.audit_log.flush)]
        assert "PRAGMA synchronous = NORMAL" in flushed
        assert [e.action.value for e in binder.audit_log.list()] == [
            "store",
            "attach",
            "read_content",
        ]
    finally:
        binder.close()
