"""Never lose data (issue 13), on every metadata backend: memory, SQLite, PostgreSQL, MariaDB.

* a duplicate deleted or changed between the duplicate check and the commit
  is never handed back: the returned FileItem exists and reads the produced
  bytes (the candidate is confirmed inside the writing unit of work);
* no blob-store call happens while a writing unit of work is open;
* a run cannot write into, or probe, a workflow its principal may not use,
  whatever workflow object its RunContext was built around;
* a stored file records its blob store, and the database registers itself in it;
* ``files rm`` and an attach of the same file never both commit: the attach
  is counted as a reference, or it fails with ``FileItemNotFound``.

The metadata port's operations for safety (confirm, marks, store identity,
document counts) are part of :class:`docbinder.testing.MetadataContract`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace, TracebackType
from typing import Any, BinaryIO

import attrs
import pytest
import sqlalchemy as sa

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.sql import maintenance
from docbinder.adapters.sqlite import maintenance as sqlite_maintenance
from docbinder.application import DocBinder, Run
from docbinder.application.context import RunContext
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.errors import FileItemNotFound, FileStillReferenced, WorkflowNotFound
from docbinder.domain.model import ChatMessage, ChatWorkflow, Principal
from docbinder.ports.blobs import BlobReader, BlobStat, BlobStore, Chunks
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from tests.contract.sql_backends import SqlBackend, statements_sent
from tests.wiring import UnitOfWorkWrapper, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))
ALICE = Principal("alice", "m1", roles=("member",))
BOB = Principal("bob", "m2", roles=("member",))

BACKENDS = ["memory", "sqlite", "postgresql", "mariadb"]


@attrs.define
class Stack:
    """One metadata backend (writer and reader factories) over a local-disk blob store."""

    uow_factory: UnitOfWorkFactory
    read_uow_factory: UnitOfWorkFactory
    blobs: BlobStore
    lock_waits: Callable[[], int] | None = None
    """How many units wait for a FileItem lock now; ``None`` where writing units are serialized."""

    def binder(
        self, blobs: BlobStore | None = None, uow_factory: UnitOfWorkFactory | None = None
    ) -> DocBinder:
        return wire_binder(
            uow_factory or self.uow_factory, blobs or self.blobs, self.read_uow_factory
        )


@pytest.fixture(params=BACKENDS)
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    if request.param == "memory":
        store = MemoryMetadataStore()
        return Stack(
            store.unit_of_work, store.unit_of_work, MemoryBlobStore(), lambda: store.lock_waits
        )
    backend = request.getfixturevalue(f"{request.param}_backend")
    backend.clean()
    return Stack(
        backend.store.unit_of_work,
        backend.store.read_unit_of_work,
        LocalDiskBlobStore(tmp_path / "blobs"),
        _row_lock_waits(backend),
    )


# Statements that wait for a row lock on this database's own ``file_items`` (other
# test runs share the server): PostgreSQL's waiters hold a lock on the table (the OID
# resolves through the private schema's search_path) and are blocked by some backend;
# InnoDB lists the requested lock with its table.
_POSTGRES_WAITS = sa.text(
    "SELECT count(*) FROM pg_stat_activity a"
    " WHERE cardinality(pg_blocking_pids(a.pid)) > 0 AND EXISTS ("
    " SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'file_items'::regclass)"
)
_MARIADB_WAITS = sa.text(
    "SELECT count(*) FROM information_schema.INNODB_LOCK_WAITS w"
    " JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id"
    " WHERE l.lock_table = :table"
)


def _row_lock_waits(backend: SqlBackend) -> Callable[[], int] | None:
    if backend.name == "postgresql":
        statement, params = _POSTGRES_WAITS, {}
    elif backend.name == "mariadb":
        statement, params = _MARIADB_WAITS, {"table": f"`{backend.url.database}`.`file_items`"}
    else:
        return None  # SQLite: a writing unit holds the database write lock from its start

    def waits() -> int:
        with backend.engine.connect() as conn:
            return int(conn.execute(statement, params).scalar_one())

    return waits


class _ActAfterProbe:
    """A blob store that runs ``action`` right after ``exists`` answered for ``key``.

    The answer is the one from before the action: the duplicate check saw the
    candidate with its blob, and then a concurrent writer changed things.
    """

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.key: str | None = None
        self.action: Callable[[], object] | None = None
        self.fired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def exists(self, key: str) -> bool:
        answer = self.inner.exists(key)
        if key == self.key and self.action is not None:
            action, self.action = self.action, None
            # Another thread, as a concurrent writer is (a unit of work per thread).
            worker = threading.Thread(target=action)
            worker.start()
            worker.join(60)
            assert not worker.is_alive(), "the concurrent writer did not finish"
            self.fired += 1
        return answer


@pytest.mark.parametrize("path", ["store_file", "produce_file"])
def test_a_duplicate_deleted_between_check_and_commit_is_never_returned(
    stack: Stack, path: str
) -> None:
    writer = stack.binder()
    first = writer.start_new_run(U1).produce_file("a.txt", b"alpha")
    racy = _ActAfterProbe(stack.blobs)
    racy.key = first.item.blob_key
    racy.action = lambda: writer.delete_file(U1, first.item.id, force=True)
    binder = stack.binder(racy)  # type: ignore[arg-type]
    run = binder.start_new_run(U1)

    if path == "store_file":
        item, duplicate = (lambda s: (s.item, s.duplicate))(run.store_file("a.txt", b"alpha"))
    else:
        result = run.produce_file("a.txt", b"alpha")
        item, duplicate = result.item, result.duplicate
        assert result.document_id is not None
        [resolved] = run.resolve([result.reference]).documents
        assert resolved.file.id == item.id

    assert racy.fired == 1
    assert not duplicate and item.id != first.item.id
    assert writer.get_file(U1, item.id) == item
    with writer.open_file(U1, item.id) as chunks:
        assert b"".join(chunks) == b"alpha"
    assert set(stack.blobs.keys()) == {item.blob_key}


def test_a_duplicate_changed_between_check_and_commit_is_never_returned(stack: Stack) -> None:
    writer = stack.binder()
    first = writer.start_run(U1).store_file("a.txt", b"alpha").item
    racy = _ActAfterProbe(stack.blobs)
    racy.key = first.blob_key
    racy.action = lambda: writer.update_file.replace(U1, first.id, b"beta")
    stored = stack.binder(racy).start_run(U1).store_file("a.txt", b"alpha")  # type: ignore[arg-type]

    assert racy.fired == 1
    assert not stored.duplicate and stored.item.id != first.id
    with writer.open_file(U1, stored.item.id) as chunks:
        assert b"".join(chunks) == b"alpha"
    with writer.open_file(U1, first.id) as chunks:
        assert b"".join(chunks) == b"beta"


def test_a_duplicate_still_there_at_commit_is_reused_and_the_fresh_blob_goes(
    stack: Stack,
) -> None:
    binder = stack.binder()
    first = binder.start_run(U1).store_file("a.txt", b"alpha").item
    again = binder.start_run(U1).store_file("a.txt", b"alpha")
    assert again.duplicate and again.item == first
    assert set(stack.blobs.keys()) == {first.blob_key}


# -- no blob-store call inside a writing unit of work -----------------------------------


class _Log:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.writing = 0
        self.violations: list[str] = []

    def blob(self, name: str) -> None:
        self.events.append(f"blob.{name}")
        if self.writing:
            self.violations.append(name)


class _LoggedUnit(UnitOfWorkWrapper):
    def __init__(self, inner: UnitOfWork, log: _Log) -> None:
        super().__init__(inner)
        self._log = log

    def __enter__(self) -> _LoggedUnit:
        super().__enter__()
        self._log.writing += 1
        self._log.events.append("write-begin")
        return self

    def commit(self) -> None:
        self._inner.commit()
        self._log.events.append("commit")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._log.writing -= 1
        self._log.events.append("write-end")
        super().__exit__(exc_type, exc, tb)


class _LoggedBlobs:
    def __init__(self, inner: BlobStore, log: _Log) -> None:
        self._inner = inner
        self._log = log

    @property
    def url(self) -> str:
        return self._inner.url

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        self._log.blob("put")
        return self._inner.put(key, data)

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        self._log.blob("open")
        return self._inner.open(key, chunk_size)

    def stat(self, key: str) -> BlobStat:
        self._log.blob("stat")
        return self._inner.stat(key)

    def exists(self, key: str) -> bool:
        self._log.blob("exists")
        return self._inner.exists(key)

    def delete(self, key: str) -> None:
        self._log.blob("delete")
        self._inner.delete(key)

    def keys(self) -> Iterator[str]:
        self._log.blob("keys")
        return self._inner.keys()

    def identity(self, *, create: bool = False) -> str | None:
        self._log.blob("identity")
        return self._inner.identity(create=create)

    def register_database(self, database_id: str) -> None:
        self._log.blob("register_database")
        self._inner.register_database(database_id)

    def databases(self) -> set[str]:
        self._log.blob("databases")
        return self._inner.databases()

    def mark_committed(self, key: str) -> bool:
        self._log.blob(f"mark_committed {key}")
        return self._inner.mark_committed(key)

    def is_committed(self, key: str) -> bool:
        self._log.blob("is_committed")
        return self._inner.is_committed(key)


def test_no_blob_store_call_while_a_writing_unit_is_open(stack: Stack) -> None:
    """Store, duplicate, produce, update, delete and gc: every blob call lies outside writes."""
    log = _Log()
    inner = stack.uow_factory

    def writer() -> UnitOfWork:
        return _LoggedUnit(inner(), log)  # type: ignore[return-value]

    binder = wire_binder(writer, _LoggedBlobs(stack.blobs, log), stack.read_uow_factory)
    run = binder.start_new_run(U1)
    first = run.produce_file("a.txt", b"alpha")
    again = run.produce_file("a.txt", b"alpha")
    assert again.duplicate and again.item.id == first.item.id
    run.store_file("b.txt", b"beta")
    binder.update_file.replace(U1, first.item.id, b"gamma")
    binder.delete_file(U1, first.item.id, force=True)
    binder.collect_garbage(dry_run=False, grace_seconds=0, force=True, allow_short_grace=True)

    assert log.violations == [], log.events
    # The duplicate's blob probe came before the writing unit that reused it.
    assert log.events.count("write-begin") >= 5 and "blob.exists" in log.events


# -- a new blob is recorded as committed after the commit (ADR 0031) ---------------------


def test_a_new_blob_is_recorded_as_committed_after_the_commit_outside_any_unit(
    stack: Stack,
) -> None:
    """store, produce (attach), a content update and a version save: the blob they wrote is
    recorded as committed only once the unit naming it committed and ended, never by a
    reused duplicate; a crash's leftover and a blob whose unit failed are not recorded."""
    log = _Log()
    inner = stack.uow_factory

    def writer() -> UnitOfWork:
        return _LoggedUnit(inner(), log)  # type: ignore[return-value]

    binder = wire_binder(writer, _LoggedBlobs(stack.blobs, log), stack.read_uow_factory)
    run = binder.start_new_run(U1)
    stored = run.store_file("a.txt", b"alpha").item
    produced = run.produce_file("b.txt", b"beta").item
    duplicate = run.produce_file("b.txt", b"beta")
    updated = binder.update_file.replace(U1, stored.id, b"gamma").item
    version = binder.versions.save(U1, "notes", b"v0").item
    assert duplicate.duplicate and duplicate.item.id == produced.id

    assert log.violations == [], log.events
    recorded = [e.split(" ")[1] for e in log.events if e.startswith("blob.mark_committed")]
    assert recorded == [stored.blob_key, produced.blob_key, updated.blob_key, version.blob_key]
    for key in recorded:
        at = log.events.index(f"blob.mark_committed {key}")
        # The last unit before the record committed and ended.
        assert log.events[:at][-2:] == ["commit", "write-end"], log.events[:at]
    # The replaced blob was freed; the others carry the record in the store.
    assert set(stack.blobs.keys()) == set(recorded[1:])
    assert all(stack.blobs.is_committed(key) for key in recorded[1:])


class _FailingCommit(UnitOfWorkWrapper):
    def commit(self) -> None:
        from docbinder.domain.errors import StorageError

        raise StorageError("commit refused by the test")


def test_a_blob_whose_unit_failed_is_never_recorded_as_committed(stack: Stack) -> None:
    binder = stack.binder()
    binder.start_run(U1).store_file("seed.txt", b"seed")
    before = set(stack.blobs.keys())
    failing = stack.binder(uow_factory=lambda: _FailingCommit(stack.uow_factory()))  # type: ignore[arg-type,return-value]
    from docbinder.domain.errors import StorageError

    with pytest.raises(StorageError):
        failing.start_run(U1).store_file("lost.txt", b"lost")
    assert set(stack.blobs.keys()) == before  # removed again: nothing left to record
    assert all(stack.blobs.is_committed(key) for key in before)


class _UnrecordingBlobs:
    """A blob store whose commit records fail (the store is unreachable right after the commit)."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def mark_committed(self, key: str) -> bool:
        from docbinder.domain.errors import StorageError

        raise StorageError("the store went away right after the commit")


def test_a_failed_commit_record_never_fails_the_call(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    binder = stack.binder(_UnrecordingBlobs(stack.blobs))  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="docbinder"):
        produced = binder.start_new_run(U1).produce_file("a.txt", b"alpha")
    assert produced.document_id is not None
    with binder.open_file(U1, produced.item.id) as chunks:
        assert b"".join(chunks) == b"alpha"
    assert not stack.blobs.is_committed(produced.item.blob_key)
    assert any(
        produced.item.blob_key in r.getMessage() and "recorded as committed" in r.getMessage()
        for r in caplog.records
    )


# -- a run trusts the stored workflow, not its in-memory object --------------------------


def _forged_run(binder: DocBinder, alice_workflow: ChatWorkflow) -> Run:
    """Bob (mandate m2) with a RunContext around alice's workflow id, relabelled with his scope."""
    forged = attrs.evolve(alice_workflow, scope=BOB.scope, created_by=BOB.user_id)
    return Run(binder, RunContext(BOB, forged))


def test_a_forged_run_context_cannot_write_into_another_tenants_workflow(stack: Stack) -> None:
    binder = stack.binder()
    alice = binder.start_new_run(ALICE)
    mine = alice.produce_file("plan.md", b"# alice's plan\n")
    assert alice.workflow is not None
    run = _forged_run(binder, alice.workflow)

    produced = run.produce_file("x.txt", b"bob was here")
    assert produced.document_id is None  # stored for bob, not attached
    with pytest.raises(WorkflowNotFound):
        run.attach(produced.item)
    with pytest.raises(WorkflowNotFound):
        run.persist_action_result([produced.item], label="task:1")
    assert run.attach_safely(produced.item) is None
    messages = binder.list_messages(ALICE, alice.workflow.id)
    assert [m.documents[0].id for m in messages] == [mine.document_id]
    # The refused attaches used up none of alice's message numbers.
    alice.produce_file("next.md", b"# next\n")
    numbers = [m.sequence_nr for m in binder.list_messages(ALICE, alice.workflow.id)]
    assert numbers == [1, 2]


def test_a_forged_run_context_cannot_advance_another_tenants_counters(stack: Stack) -> None:
    binder = stack.binder()
    alice = binder.start_new_run(ALICE)
    alice.advance(round=2)
    assert alice.workflow is not None
    run = _forged_run(binder, alice.workflow)
    with pytest.raises(WorkflowNotFound):
        run.next_round()
    with pytest.raises(WorkflowNotFound):
        run.advance(round=7)
    assert binder.get_workflow(ALICE, alice.workflow.id).counters.as_tuple() == (2, 0, 0)


def test_a_forged_run_context_learns_nothing_from_resolve(stack: Stack) -> None:
    binder = stack.binder()
    alice = binder.start_new_run(ALICE)
    mine = alice.produce_file("plan.md", b"# alice's plan\n")
    assert alice.workflow is not None and mine.reference is not None
    run = _forged_run(binder, alice.workflow)

    real = run.resolve([mine.reference])
    made_up = run.resolve(["docItem:00000000-0000-4000-8000-000000000000"])
    assert real.documents == () and real.suggestions == ()
    # The same answer for an existing and an unknown id: no existence oracle.
    for answer in (real, made_up):
        [miss] = answer.unresolved
        assert miss.reason is UnresolvedReason.NOT_IN_WORKFLOW and miss.document_id is None
    assert run.get_content([mine.reference]).parts == ()


class _FailingWorkflowReads(RoleTableAuthorizer):
    """The role table, but deciding whether a workflow may be read raises once armed."""

    armed = False

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        if self.armed and resource.kind is ResourceKind.WORKFLOW and action is Action.READ:
            raise RuntimeError("the authorizer is down")
        return super().is_allowed(principal, action, resource)


def test_an_authorizer_failing_during_the_attach_does_not_fail_the_store(stack: Stack) -> None:
    authorizer = _FailingWorkflowReads()
    binder = wire_binder(
        stack.uow_factory, stack.blobs, stack.read_uow_factory, authorizer=authorizer
    )
    alice = binder.start_new_run(ALICE)
    first = alice.produce_file("plan.md", b"# plan\n")
    assert alice.workflow is not None
    authorizer.armed = True  # the attach's check on the stored workflow raises
    produced = alice.produce_file("x.txt", b"stored anyway")
    assert produced.document_id is None
    authorizer.armed = False
    assert binder.get_file(ALICE, produced.item.id) == produced.item
    alice.produce_file("next.md", b"# next\n")
    messages = binder.list_messages(ALICE, alice.workflow.id)
    assert [m.sequence_nr for m in messages] == [1, 2]
    assert messages[0].documents[0].id == first.document_id


def test_a_forged_attach_neither_waits_for_nor_reveals_the_owners_open_write(
    stack: Stack,
) -> None:
    if stack.lock_waits is None:
        pytest.skip("SQLite: every writing unit waits for the one database write lock alike")
    binder = stack.binder()
    alice = binder.start_new_run(ALICE)
    alice.produce_file("plan.md", b"# alice's plan\n")
    assert alice.workflow is not None
    workflow = alice.workflow
    numbered, forged_done = threading.Event(), threading.Event()
    finished_first: list[bool] = []

    def alice_writes() -> None:
        # An open unit of alice's that numbered a message: it holds the workflow's row.
        with stack.uow_factory() as u:
            u.workflows.add_message(
                ChatMessage(
                    id="00000000-0000-4000-8000-0000000000a1",
                    workflow_id=workflow.id,
                    documents_label="alice, still writing",
                    published_at=datetime.now(UTC),
                )
            )
            numbered.set()
            finished_first.append(forged_done.wait(30))
            u.rollback()

    owner = threading.Thread(target=alice_writes)
    owner.start()
    try:
        assert numbered.wait(30)
        produced = _forged_run(binder, workflow).produce_file("x.txt", b"bob was here")
    finally:
        forged_done.set()
        owner.join(60)
    assert produced.document_id is None
    # Refused while alice's unit still held the row: it waited for nothing.
    assert finished_first == [True]


def test_a_run_of_a_workflow_deleted_meanwhile_fails_cleanly(stack: Stack) -> None:
    binder = stack.binder()
    phantom = attrs.evolve(
        binder.start_new_run(U1).context.bound_workflow,  # type: ignore[arg-type]
        id="00000000-0000-4000-8000-00000000abcd",
    )
    run = Run(binder, RunContext(U1, phantom))
    produced = run.produce_file("x.txt", b"x")
    assert produced.document_id is None
    assert binder.get_file(U1, produced.item.id) == produced.item


# -- files rm against a concurrent attach of the same file ------------------------------


class _Gate:
    """Stops the first call of ``repository.method`` in a writing unit until :meth:`open`.

    Armed by :meth:`arm`; the stopped thread sets :attr:`reached`. Wraps a
    unit-of-work factory with :meth:`wrap`.
    """

    def __init__(self, repository: str, method: str) -> None:
        self.repository = repository
        self.method = method
        self.armed = False
        self.reached = threading.Event()
        self._open = threading.Event()

    def arm(self) -> None:
        self.armed = True

    def open(self) -> None:
        self._open.set()

    def pass_through(self) -> None:
        self.armed = False
        self.reached.set()
        assert self._open.wait(60), "the test never opened the gate"

    def wrap(self, factory: UnitOfWorkFactory) -> UnitOfWorkFactory:
        def make() -> UnitOfWork:
            return _GatedUnit(factory(), self)  # type: ignore[return-value]

        return make


class _GatedRepository:
    def __init__(self, inner: object, gate: _Gate, name: str) -> None:
        self._inner = inner
        self._gate = gate
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        found = getattr(self._inner, attr)
        gate = self._gate
        if (self._name, attr) != (gate.repository, gate.method) or not gate.armed:
            return found

        def stopped(*args: Any, **kwargs: Any) -> Any:
            gate.pass_through()
            return found(*args, **kwargs)

        return stopped


class _GatedUnit(UnitOfWorkWrapper):
    def __init__(self, inner: UnitOfWork, gate: _Gate) -> None:
        super().__init__(inner)
        self.files = _GatedRepository(inner.files, gate, "files")
        self.workflows = _GatedRepository(inner.workflows, gate, "workflows")


def _waits_or_finishes(stack: Stack, other: Future[Any]) -> None:
    """Return once ``other`` has finished or waits for a FileItem lock.

    Without row locks the other side runs to its end while the gate is shut
    (the race the test is about); with them it waits. Where writing units are
    serialized (SQLite) it can do nothing until the gated unit ends either way.
    Polls every 0.2 s: InnoDB refreshes its lock tables only for a reader that
    left them alone for 0.1 s.
    """
    deadline = time.monotonic() + 60
    while not other.done():
        if stack.lock_waits is None or stack.lock_waits() > 0:
            return
        assert time.monotonic() < deadline, "the other side neither finished nor waited"
        time.sleep(0.2)


def test_files_rm_counts_an_attach_that_read_the_file_before_it(stack: Stack) -> None:
    """The attach has read the file and is about to add its message when the delete starts."""
    plain = stack.binder()
    gate = _Gate("workflows", "add_message")
    run = stack.binder(uow_factory=gate.wrap(stack.uow_factory)).start_new_run(U1)
    item = run.store_file("a.txt", b"alpha").item
    assert run.workflow is not None
    gate.arm()
    with ThreadPoolExecutor(2) as pool:
        attach = pool.submit(run.attach, item)
        assert gate.reached.wait(60)
        delete = pool.submit(plain.delete_file, U1, item.id)
        _waits_or_finishes(stack, delete)
        gate.open()
        document = attach.result(60)
        with pytest.raises(FileStillReferenced) as refused:
            delete.result(60)

    assert refused.value.references == 1
    assert plain.get_file(U1, item.id) == item
    [message] = plain.list_messages(U1, run.workflow.id)
    assert [d.id for d in message.documents] == [document.id]
    [resolved] = run.resolve([f"docItem:{document.id}"]).documents
    assert resolved.file == item
    assert set(stack.blobs.keys()) == {item.blob_key}


def test_an_attach_of_a_file_that_files_rm_counted_fails_cleanly(stack: Stack) -> None:
    """The delete has locked and counted the file (no references) when the attach starts."""
    plain = stack.binder()
    run = plain.start_new_run(U1)
    item = run.store_file("a.txt", b"alpha").item
    assert run.workflow is not None
    gate = _Gate("files", "delete")
    deleter = stack.binder(uow_factory=gate.wrap(stack.uow_factory))
    gate.arm()
    with ThreadPoolExecutor(2) as pool:
        delete = pool.submit(deleter.delete_file, U1, item.id)
        assert gate.reached.wait(60)
        attach = pool.submit(run.attach, item)
        _waits_or_finishes(stack, attach)
        gate.open()
        assert delete.result(60) == item
        with pytest.raises(FileItemNotFound):
            attach.result(60)

    assert plain.list_messages(U1, run.workflow.id) == []
    with stack.read_uow_factory() as uow:
        assert uow.workflows.count_documents_for_file(item.id) == 0
        assert uow.files.get(item.id) is None
    assert run.attach_safely(item) is None
    assert list(stack.blobs.keys()) == []


# -- blob-store identity (the rest is in docbinder.testing.BlobStoreContract) ----------


def test_each_memory_store_is_a_store_of_its_own() -> None:
    one, two = MemoryBlobStore(), MemoryBlobStore()
    made = one.identity(create=True)
    assert made and one.identity() == made != two.identity(create=True)


def test_a_stored_file_records_its_store(stack: Stack) -> None:
    item = stack.binder().start_run(U1).store_file("a.txt", b"a").item
    assert item.blob_store is not None and item.blob_store == stack.blobs.identity()
    updated = stack.binder().update_file.replace(U1, item.id, b"b")
    assert updated.item.blob_store == item.blob_store


def test_a_database_has_one_identity_and_registers_it_in_the_store(stack: Stack) -> None:
    with stack.uow_factory() as uow:
        made = uow.maintenance.database_id(create=True)
        assert made and uow.maintenance.database_id(create=True) == made
        uow.commit()
    with stack.read_uow_factory() as uow:
        assert uow.maintenance.database_id() == made
    assert stack.blobs.databases() == set()
    stack.binder().start_run(U1).store_file("a.txt", b"a")
    assert stack.blobs.databases() == {made}


# -- the database identity follows physical copies (ADR 0022) ---------------------------


def test_a_sqlite_file_on_a_cloned_volume_gets_its_own_identity(
    sqlite_backend: SqlBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file-system image or volume clone keeps the inode of the database file; the
    device number tells the clone from the original, so the clone makes its own id."""
    sqlite_backend.clean()
    store = sqlite_backend.store
    with store.unit_of_work() as uow:
        original = uow.maintenance.database_id(create=True)
        uow.commit()

    def on_the_clone(path: Any) -> os.stat_result:
        real = os.stat(path)
        fields = list(real)
        fields[2] = real.st_dev + 1  # st_dev: the same inode on another device
        return os.stat_result(fields)

    monkeypatch.setattr(sqlite_maintenance, "os", SimpleNamespace(stat=on_the_clone))
    with store.read_unit_of_work() as uow:
        assert uow.maintenance.database_id() is None
        assert uow.maintenance.former_database_ids() == (original,)
    with store.unit_of_work() as uow:
        clone = uow.maintenance.database_id(create=True)
        uow.commit()
    assert clone and clone != original
    monkeypatch.undo()
    with store.read_unit_of_work() as uow:
        assert uow.maintenance.database_id() is None  # the original rotates too: space, not data
        assert set(uow.maintenance.former_database_ids()) == {original, clone}


def test_the_postgres_fingerprint_names_the_running_instance() -> None:
    """A physical copy (``cp -a`` of the data directory, ``pg_basebackup``, a promoted
    replica) has the same cluster, database, OID and schema; the server's address, port
    and data directory tell the running copies apart. ``None`` values count as values."""
    same = ("1234", "test", "public", 16384)
    original = maintenance.postgres_location(*same, "10.0.0.1", 5432, "/srv/pg")
    copies = [
        maintenance.postgres_location(*same, "10.0.0.2", 5432, "/srv/pg"),
        maintenance.postgres_location(*same, "10.0.0.1", 5433, "/srv/pg"),
        maintenance.postgres_location(*same, "10.0.0.1", 5432, "/srv/pg-copy"),
        maintenance.postgres_location(*same, None, 5432, "/srv/pg"),
        maintenance.postgres_location(None, *same[1:], "10.0.0.1", 5432, None),
    ]
    assert len({original, *copies}) == 1 + len(copies)
    assert maintenance.postgres_location(*same, "10.0.0.1", 5432, "/srv/pg") == original


def test_the_postgres_location_query_reads_address_port_and_data_directory(
    postgresql_backend: SqlBackend,
) -> None:
    """The fingerprint query runs on a real server and asks for the instance's values."""
    seen = statements_sent(postgresql_backend.engine, lambda: _location(postgresql_backend))
    [query] = [s for s, _ in seen if "current_database()" in s]
    for asked in ("inet_server_addr()", "inet_server_port()", "data_directory"):
        assert asked in query
    with postgresql_backend.engine.connect() as conn:
        row = conn.exec_driver_sql(maintenance._POSTGRES_LOCATION).one()
    assert row[4] is not None  # the port of the running server


def _location(backend: SqlBackend) -> None:
    with backend.store.read_unit_of_work() as uow:
        uow.maintenance.former_database_ids()  # computes the fingerprint
