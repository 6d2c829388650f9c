"""On SQLite, read-only use cases do not queue behind a writer (WAL + deferred ``BEGIN``).

Another connection holds the write lock (``BEGIN IMMEDIATE``) for the whole
test; the binder's busy timeout is 0.2 s, so any read that asked for the write
lock would fail with "database is locked" instead of answering.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql import migrate
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.application import DocBinder
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal
from tests.contract.sql_backends import binder_over

U1 = Principal("u1", "m1", None, roles=("member",))


@pytest.fixture
def binder(tmp_path: Path) -> Iterator[DocBinder]:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    migrate(url)
    metadata = SqliteMetadata.from_url(url, busy_timeout_s=0.2)
    yield binder_over(metadata, LocalDiskBlobStore(tmp_path / "blobs"))
    metadata.dispose()


def _hold_write_lock(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_reads_answer_while_another_connection_holds_the_write_lock(
    binder: DocBinder, tmp_path: Path
) -> None:
    run = binder.start_new_run(U1)
    produced = run.produce_file("notes.md", b"# notes\n")
    assert produced.reference is not None and run.workflow is not None
    writer = _hold_write_lock(tmp_path / "db.sqlite")
    try:
        again = binder.start_run(U1, run.workflow.id)
        assert again.resolve([produced.reference]).ok
        assert again.get_content([produced.reference]).parts
        assert again.get_file(produced.item.id) == produced.item
        assert [f.id for f in again.list_files()] == [produced.item.id]
        assert binder.check_duplicate(U1, produced.item.sha256, "notes.md").item == (produced.item)
        assert len(binder.list_messages(U1, run.workflow.id)) == 1
        # A write still waits for the lock, and says so when the timeout ends.
        with pytest.raises(StorageError):
            again.produce_file("more.md", b"more")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert again.produce_file("more.md", b"more").document_id is not None


def test_the_container_wires_read_units_for_sqlite(tmp_path: Path) -> None:
    built = build_binder(
        Settings.load(
            {"database_url": f"sqlite:///{tmp_path / 'c.sqlite'}", "home": str(tmp_path)},
            environ={},
        )
    )
    assert built.read_uow_factory is not built.uow_factory
    assert getattr(built.read_uow_factory, "__name__", "") == "read_unit_of_work"


def test_a_forked_child_starts_with_an_empty_pool_and_works(
    binder: DocBinder, tmp_path: Path
) -> None:
    import os
    import signal

    run = binder.start_new_run(U1)
    run.produce_file("before.md", b"parent")
    engine = binder.uow_factory.__self__.engine  # type: ignore[attr-defined]
    parent_pool = id(engine.pool)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        signal.alarm(20)
        code = 1
        try:
            fresh = id(engine.pool) != parent_pool
            child = binder.start_new_run(U1).produce_file("child.md", b"child")
            code = 0 if fresh and child.document_id is not None else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert id(engine.pool) == parent_pool
    assert run.produce_file("after.md", b"parent again").document_id is not None
    assert sorted(f.file_name for f in binder.list_files(U1)) == [
        "after.md",
        "before.md",
        "child.md",
    ]
