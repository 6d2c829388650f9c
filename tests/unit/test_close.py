"""Closing a binder releases its pools and worker threads, once, and refuses use afterwards."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from docbinder import BinderClosed, DocBinder, Principal, build_binder
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.aio import AsyncDocBinder
from docbinder.application.steps.hashing import OVERLAP_MIN_BYTES
from tests.wiring import USE_CASE_NAMES, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


def _sqlite_binder(tmp_path: Path) -> DocBinder:
    return build_binder(
        database_url=f"sqlite:///{tmp_path / 'meta.db'}", blob_url=(tmp_path / "blobs").as_uri()
    )


def _metadata(binder: DocBinder) -> SqliteMetadata:
    metadata = binder.uow_factory.__self__  # type: ignore[attr-defined]
    assert isinstance(metadata, SqliteMetadata)
    return metadata


def test_close_disposes_the_sql_pool_and_refuses_new_units(tmp_path: Path) -> None:
    binder = _sqlite_binder(tmp_path)
    metadata = _metadata(binder)
    opened: list[sqlite3.Connection] = []
    event.listen(metadata.engine, "connect", lambda conn, _record: opened.append(conn))
    run = binder.start_new_run(U1)
    run.produce_file("a.txt", b"alpha")
    assert run.list_files() and opened
    binder.close()
    assert binder.closed and metadata.closed
    for conn in opened:  # the pooled DBAPI connections were really closed
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("select 1")
    with pytest.raises(BinderClosed, match="was closed"):
        metadata.unit_of_work()
    with pytest.raises(BinderClosed, match="was closed"):
        metadata.read_unit_of_work()


def test_a_closed_binder_and_its_runs_raise_a_clear_error(tmp_path: Path) -> None:
    binder = _sqlite_binder(tmp_path)
    run = binder.start_new_run(U1)
    stored = run.store_file("a.txt", b"alpha")
    binder.close()
    with pytest.raises(BinderClosed, match="build a new one"):
        binder.start_new_run(U1)
    with pytest.raises(BinderClosed):
        binder.start_run(U1)
    with pytest.raises(BinderClosed):
        run.produce_file("b.txt", b"beta")
    with pytest.raises(BinderClosed):
        run.get_file(stored.item.id)
    # The data stays: a new binder over the same storage reads it.
    with _sqlite_binder(tmp_path) as again:
        assert again.get_file(U1, stored.item.id) == stored.item


def test_close_is_idempotent_and_the_context_manager_closes(tmp_path: Path) -> None:
    with _sqlite_binder(tmp_path) as binder:
        metadata = _metadata(binder)
        binder.start_new_run(U1).produce_file("a.txt", b"alpha")
        assert not binder.closed
    assert binder.closed and metadata.closed
    binder.close()  # a second close does nothing and raises nothing
    assert binder.closed


def test_close_stops_the_hash_worker_threads() -> None:
    binder = wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())
    run = binder.start_new_run(U1)
    run.produce_file("big.bin", [b"x" * OVERLAP_MIN_BYTES, b"y" * OVERLAP_MIN_BYTES])
    workers = next(r for r in binder._resources if type(r).__name__ == "HashWorkers")
    assert workers.started
    threads = list(workers._pool._threads)
    assert threads and all(t.is_alive() for t in threads)
    binder.close()
    assert workers.closed and not workers.started
    assert not any(t.is_alive() for t in threads)


def test_compose_binder_closes_what_it_owns_and_leaves_the_callers_ports_open(
    tmp_path: Path,
) -> None:
    from docbinder.adapters.extract import DefaultContentExtractor
    from docbinder.adapters.rbac import RoleTableAuthorizer
    from docbinder.adapters.system import UtcClock, UuidIdFactory
    from docbinder.container import compose_binder

    kept = SqliteMetadata.from_url(f"sqlite:///{tmp_path / 'kept.db'}")
    owned = SqliteMetadata.from_url(f"sqlite:///{tmp_path / 'owned.db'}")
    binder = compose_binder(
        uow_factory=kept.unit_of_work,
        blobs=MemoryBlobStore(),
        authorizer=RoleTableAuthorizer(),
        clock=UtcClock(),
        ids=UuidIdFactory(),
        extractor=DefaultContentExtractor(),
        owned=(owned,),
    )
    binder.close()
    assert owned.closed and not kept.closed
    kept.close()


def test_a_host_authorizer_is_not_closed_with_the_binder(tmp_path: Path) -> None:
    class HostAuthorizer:
        name = "host"
        closed = False

        def is_allowed(self, principal: Any, action: Any, resource: Any) -> bool:
            return True

        def close(self) -> None:
            self.closed = True

    host = HostAuthorizer()
    binder = build_binder(
        database_url=f"sqlite:///{tmp_path / 'meta.db'}",
        blob_url=(tmp_path / "blobs").as_uri(),
        authorizer=host,
    )
    metadata = _metadata(binder)
    binder.close()
    assert metadata.closed and not host.closed


@pytest.mark.anyio
async def test_the_async_binder_closes_with_async_with(tmp_path: Path) -> None:
    sync = _sqlite_binder(tmp_path)
    async with AsyncDocBinder(sync) as binder:
        run = await binder.start_new_run(U1)
        assert (await run.produce_file("a.txt", b"alpha")).document_id is not None
    assert sync.closed and _metadata(sync).closed
    with pytest.raises(BinderClosed):
        await binder.start_new_run(U1)
    with pytest.raises(BinderClosed):
        await run.store_file("b.txt", b"beta")
    await binder.aclose()  # idempotent


def test_use_cases_share_one_instance_of_each_shared_rule() -> None:
    """The container builds each use case once and hands it in; none builds another."""
    with build_binder(database_url="memory://", blob_url="memory://") as binder:
        # Storing alone, with the attach and as a version run the same steps, built once.
        assert binder.produce_file._storer is binder.store_file._storer
        assert binder.save_file_version._storer is binder.store_file._storer
        switch = binder.append_file_content._switch
        assert switch is binder.replace_file_content._switch
        assert switch._registration is binder.store_file.registration
        assert binder.append_file_content._load is binder.get_file_for_update
        assert binder.replace_file_content._load is binder.get_file_for_update
        assert binder.delete_file_versions._list is binder.list_file_versions
        # The facades hold the binder's use cases, not copies of their own.
        assert binder.update_file._append is binder.append_file_content
        assert binder.update_file._replace is binder.replace_file_content
        assert binder.update_file._load is binder.get_file_for_update
        assert binder.versions._save is binder.save_file_version
        assert binder.versions._latest is binder.get_latest_file_version
        assert binder.versions._get is binder.get_file_version
        assert binder.versions._list is binder.list_file_versions
        assert binder.versions._latest_of_each is binder.list_latest_file_versions
        assert binder.versions._open is binder.open_file_version
        assert binder.versions._delete is binder.delete_file_versions
        assert binder.open_file._open_item is binder.open_file_item
        assert binder.open_file_item._get is binder.get_file
        assert binder.delete_file._get is binder.get_file
        # One attach: the action result and the producer path compose the binder's AttachFile.
        assert binder.persist_action_result._attach is binder.attach_file
        assert binder.produce_file._attach is binder.attach_file
        # One duplicate rule: the store path asks the binder's CheckDuplicate.
        assert binder.store_file._storer._duplicates is binder.check_duplicate
        assert binder.list_messages._get_workflow is binder.get_workflow
        assert binder.get_content._resolve is binder.resolve


def test_a_host_without_logging_configured_sees_no_docbinder_output() -> None:
    """A library prints nothing by itself: unresolved references only go to the logger."""
    import subprocess
    import sys

    code = (
        "from docbinder import Principal, build_binder\n"
        "with build_binder(database_url='memory://', blob_url='memory://') as binder:\n"
        "    run = binder.start_new_run(Principal('alice', 'acme'))\n"
        "    assert not run.resolve(['docItem:nope', 'docList:missing']).ok\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_every_use_case_refuses_after_close_before_touching_storage(
    backend: str, tmp_path: Path
) -> None:

    from docbinder.application.context import RunContext
    from docbinder.domain.counters import CounterStep

    if backend == "memory":
        binder = build_binder(database_url="memory://", blob_url="memory://")
    else:
        binder = _sqlite_binder(tmp_path)
    run = binder.start_new_run(U1)
    produced = run.produce_file("a.txt", b"alpha")
    item = produced.item
    version = binder.versions.save(U1, "notes.md", b"v1")
    ctx: RunContext = run.context
    messages = binder.list_messages(U1, ctx.require_workflow("test").id)

    def stored_keys() -> list[str]:
        """Every blob key, both tiers: the closed binder's inline tier cannot read any more."""
        if backend == "memory":
            return sorted(binder.blobs.keys())
        with _sqlite_binder(tmp_path) as again:
            return sorted(again.blobs.keys())

    keys = stored_keys()
    binder.close()

    calls: dict[str, Any] = {
        "store_file": lambda: binder.store_file(U1, "b.txt", b"beta"),
        "check_duplicate": lambda: binder.check_duplicate(U1, item.sha256, item.file_name),
        "get_file": lambda: binder.get_file(U1, item.id),
        "open_file": lambda: binder.open_file(U1, item.id),
        "open_file_item": lambda: binder.open_file_item(U1, item.id),
        "list_files": lambda: binder.list_files(U1),
        "delete_file": lambda: binder.delete_file(U1, item.id, force=True),
        "count_file_references": lambda: binder.count_file_references(U1, item.id),
        "attach_file": lambda: binder.attach_file(ctx, item),
        "persist_action_result": lambda: binder.persist_action_result(ctx, [item], label="x"),
        "produce_file": lambda: binder.produce_file(ctx, "c.txt", b"gamma", label="y"),
        "create_workflow": lambda: binder.create_workflow(U1),
        "get_workflow": lambda: binder.get_workflow(U1, messages[0].workflow_id),
        "list_workflows": lambda: binder.list_workflows(U1),
        "list_messages": lambda: binder.list_messages(U1, messages[0].workflow_id),
        "find_deleted_files": lambda: binder.find_deleted_files(U1, messages),
        "advance_counters": lambda: binder.advance_counters(ctx, CounterStep.next("task")),
        "resolve": lambda: binder.resolve(ctx, [produced.reference]),
        "get_content": lambda: binder.get_content(ctx, [produced.reference]),
        "collect_garbage": lambda: binder.collect_garbage(dry_run=False, force=True),
        "update_file": lambda: binder.update_file.append(U1, item.id, b"more"),
        "update_file.replace": lambda: binder.update_file.replace(U1, item.id, b"new"),
        "update_file.load_for_update": lambda: binder.update_file.load_for_update(U1, item.id),
        "versions": lambda: binder.versions.save(U1, "notes.md", b"v2"),
        "versions.latest": lambda: binder.versions.latest(U1, "notes.md"),
        "versions.get": lambda: binder.versions.get(U1, "notes.md", 1),
        "versions.list": lambda: binder.versions.list(U1, "notes.md"),
        "versions.names": lambda: binder.versions.names(U1),
        "versions.latest_of_each": lambda: binder.versions.latest_of_each(U1),
        "versions.open": lambda: binder.versions.open(U1, version),
        "versions.read": lambda: binder.versions.read(U1, version),
        "versions.delete": lambda: binder.versions.delete(U1, "notes.md"),
        "get_file_for_update": lambda: binder.get_file_for_update(U1, item.id),
        "append_file_content": lambda: binder.append_file_content(U1, item.id, b"more"),
        "replace_file_content": lambda: binder.replace_file_content(U1, item.id, b"new"),
        "save_file_version": lambda: binder.save_file_version(U1, "notes.md", b"v2"),
        "get_latest_file_version": lambda: binder.get_latest_file_version(U1, "notes.md"),
        "get_file_version": lambda: binder.get_file_version(U1, "notes.md", 0),
        "list_file_versions": lambda: binder.list_file_versions(U1, "notes.md"),
        "list_latest_file_versions": lambda: binder.list_latest_file_versions(U1),
        "open_file_version": lambda: binder.open_file_version(U1, version),
        "delete_file_versions": lambda: binder.delete_file_versions(U1, "notes.md"),
        "prune_extraction_cache": lambda: binder.prune_extraction_cache(dry_run=False),
        "mint_link": lambda: binder.mint_link(ctx, item.id, expires_in=60),
        "redeem_link": lambda: binder.redeem_link("a.b"),
        "revoke_link": lambda: binder.revoke_link(U1, "a.b"),
        "list_resolutions": lambda: binder.list_resolutions(U1, messages[0].workflow_id),
        "provide_file": lambda: binder.provide_file(U1, item.id, "openai"),
    }
    assert {name.split(".")[0] for name in calls} == USE_CASE_NAMES | {"update_file", "versions"}
    for name, call in calls.items():
        with pytest.raises(BinderClosed, match="build a new one"):
            call()
        assert stored_keys() == keys, name  # nothing written or removed
    # Nothing stored changed either: a new binder over the same storage sees it all.
    if backend == "sqlite":
        with _sqlite_binder(tmp_path) as again:
            assert sorted(f.id for f in again.list_files(U1)) == sorted([item.id, version.item.id])
            assert len(again.list_messages(U1, messages[0].workflow_id)) == 1
