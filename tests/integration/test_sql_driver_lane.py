"""SQLite's driver lane: the producer path's statements go to the driver connection (ADR 0032).

While nothing listens to SQLAlchemy's statement events, a SQLite unit sends
its ``BEGIN`` and the producer path's writes to the ``sqlite3`` connection
itself, and the FileItem insert runs without a savepoint: SQLite undoes a
failed statement by itself, and the driver says whether an error ended the
whole transaction. These tests watch and break the driver connection
(a ``sqlite3.Connection`` subclass handed in as the connection factory), so
they see exactly what reaches SQLite, and check that the guarantees of ADR
0011 hold there as they do on the savepoint path
(``test_sql_lost_transaction.py``): a transaction the database ended stores
nothing, an interrupt comes through as itself, a refused insert leaves the
unit usable.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql import SqlMetadata, create_engine_from_url, migrate
from docbinder.adapters.sql.schema import chat_messages, file_items
from docbinder.application import DocBinder, Run
from docbinder.domain.errors import Conflict, StorageError
from docbinder.domain.model import ChatWorkflow, FileItem, Principal
from docbinder.testing.metadata_suite import make_message, make_workflow
from tests.contract.sql_backends import binder_over

U1 = Principal("u1", "m1", None, roles=("member",))

Trap = Callable[["WatchedConnection", str], None]


class WatchedConnection(sqlite3.Connection):
    """A ``sqlite3`` connection that records each statement sent and can break one.

    ``trap`` is ``(prefix, action, after)``: ``action`` runs for the first
    statement starting with ``prefix``, before SQLite runs it, or after
    (``after=True``: the statement took effect, then the action raises).
    """

    sent: ClassVar[list[str]] = []
    trap: ClassVar[tuple[str, Trap, bool] | None] = None

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        after = self._watch(sql, before=True)
        cursor = super().execute(sql, *args)
        if after is not None:
            after(self, sql)
        return cursor

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        after = self._watch(sql, before=True)
        cursor = super().executemany(sql, *args)
        if after is not None:
            after(self, sql)
        return cursor

    def _watch(self, sql: str, *, before: bool) -> Trap | None:
        WatchedConnection.sent.append(sql)
        trap = WatchedConnection.trap
        if trap is None or not sql.upper().startswith(trap[0]):
            return None
        WatchedConnection.trap = None
        if trap[2]:
            return trap[1]
        trap[1](self, sql)
        return None


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    WatchedConnection.sent = []
    WatchedConnection.trap = None
    made = create_engine_from_url(
        f"sqlite:///{tmp_path / 'db.sqlite'}", connect_args={"factory": WatchedConnection}
    )
    migrate(made)
    yield made
    made.dispose()


@pytest.fixture
def binder(engine: sa.Engine, tmp_path: Path) -> DocBinder:
    return binder_over(SqlMetadata(engine), LocalDiskBlobStore(tmp_path / "blobs"))


def _rows(engine: sa.Engine, table: sa.Table) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _store_with_a_kept_file(engine: sa.Engine) -> tuple[SqlMetadata, FileItem]:
    """A store on ``engine`` holding one committed FileItem (``kept.txt``), and that FileItem."""
    store = SqlMetadata(engine)
    binder = binder_over(store, LocalDiskBlobStore(Path(str(engine.url.database)).parent / "b"))
    return store, binder.store_file(U1, "kept.txt", b"kept").item


def _stored_workflow(store: SqlMetadata) -> ChatWorkflow:
    """A new workflow, committed in ``store``."""
    workflow = make_workflow()
    with store.unit_of_work() as uow:
        uow.workflows.add_workflow(workflow)
        uow.commit()
    return workflow


def _second_message_trapped(
    uow: Any,
    workflow: ChatWorkflow,
    trap: tuple[str, Trap, bool],
    raised: type[BaseException],
    files: int,
) -> None:
    """In ``uow``: a first message, then a second one with ``files`` documents that ``trap`` breaks."""
    uow.workflows.add_message(make_message(workflow, "first"))
    WatchedConnection.trap = trap
    with pytest.raises(raised):
        uow.workflows.add_message(make_message(workflow, "second", files=files))
    assert WatchedConnection.trap is None  # it fired


def _numbers(engine: sa.Engine) -> list[int]:
    """The stored messages' sequence numbers, in order."""
    with engine.connect() as conn:
        query = sa.select(chat_messages.c.sequence_nr).order_by(chat_messages.c.sequence_nr)
        return [int(n) for n in conn.execute(query).scalars()]


def _ends_the_transaction(conn: WatchedConnection, sql: str) -> None:
    """What SQLite does on a full disk or an I/O error: the whole transaction is gone."""
    sqlite3.Connection.execute(conn, "ROLLBACK")
    raise sqlite3.OperationalError(f"database or disk is full (test, at {sql[:30]})")


def _interrupt(conn: WatchedConnection, sql: str) -> None:
    raise KeyboardInterrupt


def test_a_new_file_reaches_sqlite_without_sqlalchemy_and_without_a_file_savepoint(
    binder: DocBinder,
) -> None:
    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")
    WatchedConnection.sent.clear()
    produced = run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
    assert produced.document_id is not None
    sent = [sql.split(" (")[0].split(" SET")[0] for sql in WatchedConnection.sent]
    assert sent[:2] == ["BEGIN IMMEDIATE", "INSERT INTO file_items"]
    # The attach's three statements stand or fall together without a savepoint (ADR 0036).
    assert not any("SAVEPOINT" in sql for sql in sent)
    assert sent[-4:] == [
        "UPDATE workflows",
        "INSERT INTO chat_messages",
        "INSERT INTO chat_documents",
        "COMMIT",
    ]


def test_a_statement_listener_sees_every_statement(binder: DocBinder, engine: sa.Engine) -> None:
    seen: list[str] = []

    def listen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement.split(" (")[0])

    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")  # the store's registration, once per process
    WatchedConnection.sent.clear()
    event.listen(engine, "before_cursor_execute", listen)
    try:
        run.produce_file("a.txt", b"alpha")
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert seen[:4] == [
        "BEGIN IMMEDIATE",
        "SAVEPOINT docbinder_statement",
        "INSERT INTO file_items",
        "RELEASE SAVEPOINT docbinder_statement",
    ]
    assert "INSERT INTO chat_messages" in seen
    # Nothing went past the listener to the driver connection directly.
    assert WatchedConnection.sent == []


@pytest.mark.parametrize(
    "statement",
    ["INSERT INTO FILE_ITEMS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"],
)
def test_a_transaction_the_database_ended_stores_nothing(
    binder: DocBinder, engine: sa.Engine, statement: str
) -> None:
    run = binder.start_new_run(U1)
    WatchedConnection.trap = (statement, _ends_the_transaction, False)
    with pytest.raises(StorageError):
        run.produce_file("lost.txt", b"never kept")
    assert WatchedConnection.trap is None  # it fired
    assert _rows(engine, file_items) == 0
    assert _rows(engine, chat_messages) == 0
    assert list(binder.blobs.keys()) == []
    after = run.produce_file("after.txt", b"kept")
    assert after.document_id is not None
    assert binder.get_file(U1, after.item.id) == after.item


def test_an_interrupt_after_the_file_insert_ran_comes_through_and_stores_nothing(
    binder: DocBinder, engine: sa.Engine
) -> None:
    run = binder.start_new_run(U1)
    WatchedConnection.trap = ("INSERT INTO FILE_ITEMS", _interrupt, True)
    with pytest.raises(KeyboardInterrupt):
        run.produce_file("stopped.txt", b"interrupted")
    assert _rows(engine, file_items) == 0
    assert list(binder.blobs.keys()) == []
    assert run.produce_file("after.txt", b"kept").document_id is not None


@pytest.mark.parametrize(
    "statement", ["UPDATE WORKFLOWS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"]
)
def test_an_interrupt_after_a_statement_of_the_attach_ran_stores_nothing(
    binder: DocBinder, engine: sa.Engine, statement: str
) -> None:
    """Without a savepoint the attach's statements cannot be undone after an interrupt: none commits."""
    run = binder.start_new_run(U1)
    kept = run.produce_file("kept.txt", b"kept", label="writeFile:kept.txt")
    WatchedConnection.trap = (statement, _interrupt, True)
    with pytest.raises(KeyboardInterrupt):
        run.produce_file("stopped.txt", b"interrupted", label="writeFile:stopped.txt")
    assert WatchedConnection.trap is None  # it fired
    assert _rows(engine, file_items) == 1
    assert _rows(engine, chat_messages) == 1
    after = run.produce_file("after.txt", b"after", label="writeFile:after.txt")
    assert kept.document_id is not None and after.document_id is not None
    assert _numbers(engine) == [1, 2]


def test_a_refused_label_gives_its_number_back_on_the_driver(
    binder: DocBinder, engine: sa.Engine
) -> None:
    """A taken label is undone by the attach itself, on the driver connection, and numbers stay dense."""
    first = binder.start_new_run(U1)
    first.produce_file("a.txt", b"alpha", label="same")
    assert first.workflow is not None
    run = binder.start_run(U1, first.workflow.id)  # a run that has not seen the label taken
    WatchedConnection.sent.clear()
    second = run.produce_file("b.txt", b"beta", label="same")
    assert second.label is not None and second.label.startswith("same")
    assert second.label != "same"
    sent = [sql.split(" (")[0].split(" SET")[0] for sql in WatchedConnection.sent]
    assert not any("SAVEPOINT" in sql for sql in sent)
    assert sent[-1] == "COMMIT"
    assert sent.count("UPDATE workflows") == 3  # taken, given back, taken again
    assert _numbers(engine) == [1, 2]
    assert _write_lock_is_free(engine)


@pytest.mark.parametrize("statement", ["INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"])
def test_a_unit_whose_attach_was_interrupted_refuses_to_commit(
    engine: sa.Engine, statement: str
) -> None:
    """An interrupt caught inside the unit: what ran cannot be told apart, so nothing commits."""
    store = SqlMetadata(engine)
    workflow = _stored_workflow(store)
    with store.unit_of_work() as uow:
        first = uow.workflows.add_message(make_message(workflow, "first"))
        WatchedConnection.trap = (statement, _interrupt, True)
        with pytest.raises(KeyboardInterrupt):
            uow.workflows.add_message(make_message(workflow, "second"))
        with pytest.raises(StorageError, match="ended this transaction"):
            uow.commit()
    assert first.sequence_nr == 1
    assert _rows(engine, chat_messages) == 0


def test_a_unit_whose_statement_was_interrupted_refuses_to_commit(engine: sa.Engine) -> None:
    """The insert ran and cannot be undone alone without a savepoint: nothing of the unit commits."""
    store, kept = _store_with_a_kept_file(engine)
    with store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "first"))
        WatchedConnection.trap = ("INSERT INTO FILE_ITEMS", _interrupt, True)
        with pytest.raises(KeyboardInterrupt):
            uow.files.add(attrs_copy(kept, "second"))
        with pytest.raises(StorageError, match="ended this transaction"):
            uow.commit()
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]


def test_a_refused_insert_leaves_the_unit_usable_without_a_savepoint(engine: sa.Engine) -> None:
    store, kept = _store_with_a_kept_file(engine)
    with store.unit_of_work() as uow:
        first = attrs_copy(kept, "first")
        uow.files.add(first)
        WatchedConnection.sent.clear()
        with pytest.raises(Conflict):
            uow.files.add(attrs_copy(kept, "taken", file_id=kept.id))  # the id is taken
        assert not any("SAVEPOINT" in sql for sql in WatchedConnection.sent)
        uow.commit()
    with store.read_unit_of_work() as uow:
        assert {item.id for item in uow.files.list(U1.mandate_id)} == {kept.id, first.id}


def attrs_copy(item: FileItem, name: str, *, file_id: str | None = None) -> FileItem:
    """``item`` under another name and id (a different duplicate key), not stored yet."""
    return attrs.evolve(
        item, id=file_id or str(uuid.uuid4()), file_name=f"{name}.txt", blob_key=f"x/{name}"
    )


def _write_lock_is_free(engine: sa.Engine) -> bool:
    """Whether another connection gets SQLite's write lock at once (nobody holds a transaction)."""
    other = sqlite3.connect(str(engine.url.database), timeout=0.05, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


def test_the_unit_begins_and_commits_on_the_driver_connection(
    binder: DocBinder, engine: sa.Engine
) -> None:
    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")
    WatchedConnection.sent.clear()
    produced = run.produce_file("a.txt", b"alpha")
    assert WatchedConnection.sent[0] == "BEGIN IMMEDIATE"
    assert WatchedConnection.sent[-1] == "COMMIT"
    assert _write_lock_is_free(engine)
    with engine.connect() as conn:
        stored = conn.execute(sa.select(file_items.c.id)).scalars().all()
    assert produced.item.id in stored


def test_a_commit_listener_sees_every_commit(binder: DocBinder, engine: sa.Engine) -> None:
    commits: list[object] = []

    def on_commit(conn: Any) -> None:
        commits.append(conn)

    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")
    event.listen(engine, "commit", on_commit)
    try:
        WatchedConnection.sent.clear()
        run.produce_file("a.txt", b"alpha")
    finally:
        event.remove(engine, "commit", on_commit)
    assert len(commits) == 1
    # SQLAlchemy ran the transaction: its BEGIN came through the engine's hook, and
    # the commit went to the driver's commit(), not as a statement of the lane.
    assert "COMMIT" not in WatchedConnection.sent
    run.produce_file("b.txt", b"beta")
    assert len(commits) == 1  # removed: the lane is back, and nothing is reported


def test_a_unit_left_without_commit_keeps_nothing_and_frees_the_lock(engine: sa.Engine) -> None:
    store, kept = _store_with_a_kept_file(engine)
    with store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "dropped"))
        assert not _write_lock_is_free(engine)  # the lane's BEGIN IMMEDIATE holds it
    assert _write_lock_is_free(engine)
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]


def test_a_sqlalchemy_statement_joins_the_transaction_the_lane_began(engine: sa.Engine) -> None:
    store, kept = _store_with_a_kept_file(engine)
    rolled_back, committed = attrs_copy(kept, "rolled-back"), attrs_copy(kept, "committed")
    with store.unit_of_work() as uow:
        uow.files.add(rolled_back)  # on the lane: BEGIN IMMEDIATE, then the insert
        assert uow.files.get(rolled_back.id) == rolled_back  # through SQLAlchemy, same transaction
        uow.rollback()
        assert uow.files.get(rolled_back.id) is None
        uow.files.add(committed)
        assert uow.files.get(committed.id) == committed
        uow.commit()
    assert _write_lock_is_free(engine)
    with store.read_unit_of_work() as uow:
        assert {item.id for item in uow.files.list(U1.mandate_id)} == {kept.id, committed.id}


def test_a_refused_commit_stores_nothing_and_frees_the_lock(
    binder: DocBinder, engine: sa.Engine
) -> None:
    def refuse(_conn: WatchedConnection, _sql: str) -> None:
        raise sqlite3.OperationalError("disk I/O error (test)")

    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")
    before = _rows(engine, file_items)
    WatchedConnection.trap = ("COMMIT", refuse, False)
    with pytest.raises(StorageError):
        run.produce_file("refused.txt", b"never kept")
    assert WatchedConnection.trap is None  # it fired
    assert _write_lock_is_free(engine)
    assert _rows(engine, file_items) == before
    assert run.produce_file("after.txt", b"kept").document_id is not None


def test_a_statement_listener_added_while_the_lane_transaction_is_open_joins_it(
    engine: sa.Engine,
) -> None:
    """Tracing switched on mid-unit counts from the next transaction; this one goes on."""
    store, kept = _store_with_a_kept_file(engine)
    added = attrs_copy(kept, "added")
    seen: list[str] = []

    def listen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement)

    try:
        with store.unit_of_work() as uow:
            uow.files.add(added)  # on the lane: BEGIN IMMEDIATE went to the driver
            event.listen(engine, "before_cursor_execute", listen)
            assert uow.files.get(added.id) == added  # through SQLAlchemy, same transaction
            uow.commit()
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert not any(sql.upper().startswith("BEGIN") for sql in seen)
    assert _write_lock_is_free(engine)
    with store.read_unit_of_work() as uow:
        assert {item.id for item in uow.files.list(U1.mandate_id)} == {kept.id, added.id}


def test_a_unit_never_joins_another_units_transaction_on_the_shared_memory_connection(
    tmp_path: Path,
) -> None:
    """``sqlite://`` has one connection for all units: an inner unit must fail, not end the outer's work."""
    made = create_engine_from_url("sqlite://")
    migrate(made)
    store = SqlMetadata(made)
    binder = binder_over(store, LocalDiskBlobStore(tmp_path / "b"))
    kept = binder.store_file(U1, "kept.txt", b"kept").item
    outer = attrs_copy(kept, "outer")
    with store.unit_of_work() as uow:
        uow.files.add(outer)  # the lane's BEGIN IMMEDIATE on the one connection
        inner = store.read_unit_of_work()
        with pytest.raises(StorageError, match="within a transaction"), inner:
            inner.files.list(U1.mandate_id)  # a SQLAlchemy statement, BEGIN through the hook
    # Refused loudly: the outer's insert is not silently rolled back under a commit that succeeds.
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]
    made.dispose()


def test_an_interrupted_commit_frees_the_lock_without_the_pools_reset(tmp_path: Path) -> None:
    """The unit ends its lane transaction itself; the pool's reset on return may be off."""
    WatchedConnection.sent = []
    made = create_engine_from_url(
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        connect_args={"factory": WatchedConnection},
        pool_reset_on_return=None,
    )
    migrate(made)
    store = SqlMetadata(made)
    binder = binder_over(store, LocalDiskBlobStore(tmp_path / "b"))
    kept = binder.store_file(U1, "kept.txt", b"kept").item
    WatchedConnection.trap = ("COMMIT", _interrupt, False)  # before SQLite runs it
    with pytest.raises(KeyboardInterrupt), store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "interrupted"))
        uow.commit()
    assert WatchedConnection.trap is None  # it fired
    assert _write_lock_is_free(made)
    # The pooled connection came back without a transaction: the next unit begins normally.
    assert binder.start_new_run(U1).produce_file("after.txt", b"kept").document_id is not None
    with store.read_unit_of_work() as uow:
        assert "interrupted.txt" not in {item.file_name for item in uow.files.list(U1.mandate_id)}
    made.dispose()


class _InterruptedCursor(sqlite3.Connection):
    """A connection whose next ``cursor()`` (SQLAlchemy's way in) raises ``KeyboardInterrupt`` once armed."""

    armed: ClassVar[bool] = False

    def cursor(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:  # type: ignore[override]
        if _InterruptedCursor.armed:
            _InterruptedCursor.armed = False
            raise KeyboardInterrupt
        return super().cursor(*args, **kwargs)


def test_an_interrupt_in_a_joined_sqlalchemy_statement_comes_through_as_itself(
    tmp_path: Path,
) -> None:
    """SQLAlchemy invalidates (closes) the connection on an interrupt; closing the unit copes."""
    made = create_engine_from_url(
        f"sqlite:///{tmp_path / 'db.sqlite'}", connect_args={"factory": _InterruptedCursor}
    )
    migrate(made)
    store = SqlMetadata(made)
    binder = binder_over(store, LocalDiskBlobStore(tmp_path / "b"))
    kept = binder.store_file(U1, "kept.txt", b"kept").item
    with pytest.raises(KeyboardInterrupt), store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "dropped"))  # on the lane
        _InterruptedCursor.armed = True
        uow.files.list(U1.mandate_id)  # through SQLAlchemy, joined
    assert not _InterruptedCursor.armed  # it fired
    assert _write_lock_is_free(made)
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]
    made.dispose()


def test_threads_on_the_in_memory_database_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    """``sqlite://`` has one connection for every unit: units of threads are serialised on it."""
    import threading

    made = create_engine_from_url("sqlite://")
    migrate(made)
    binder = binder_over(SqlMetadata(made), LocalDiskBlobStore(tmp_path / "blobs"))
    run = binder.start_new_run(U1)
    failures: list[BaseException] = []
    start = threading.Barrier(6)

    def produce(worker: int) -> None:
        start.wait()
        for n in range(15):
            try:
                run.produce_file(f"w{worker}-{n}.txt", f"{worker}/{n}".encode())
            except BaseException as exc:  # reported below
                failures.append(exc)

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert _rows(made, file_items) == 90
    with made.connect() as conn:
        numbers = sorted(
            conn.execute(
                sa.select(chat_messages.c.sequence_nr).where(
                    chat_messages.c.workflow_id == run.workflow.id
                )
            ).scalars()
        )
    assert numbers == list(range(1, 91))
    made.dispose()


@pytest.mark.parametrize("name", ["do_execute", "do_executemany"])
def test_a_dialect_execute_listener_sees_the_attach(
    binder: DocBinder, engine: sa.Engine, name: str
) -> None:
    """A ``do_execute``/``do_executemany`` hook (SQLAlchemy's DialectEvents) closes the lane too."""
    seen: list[str] = []

    def listen(_cursor: Any, statement: str, _parameters: Any, _context: Any) -> bool:
        seen.append(statement.split(" (")[0].split(" SET")[0])
        return False  # SQLAlchemy then runs the statement itself

    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm", label="writeFile:warm.txt")
    event.listen(engine, name, listen)
    try:
        WatchedConnection.sent.clear()
        run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
    finally:
        event.remove(engine, name, listen)
    if name == "do_execute":
        assert "INSERT INTO chat_messages" in seen
    # Nothing went past the hook to the driver connection directly.
    assert not any(sql.startswith(("INSERT", "UPDATE")) for sql in WatchedConnection.sent)


def _time_limit(conn: WatchedConnection, sql: str) -> None:
    """What a time-limit signal handler does: an ``Exception`` raised wherever Python is."""
    raise TimeoutError("time limit reached (test)")


def _labels(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        query = sa.select(chat_messages.c.documents_label).order_by(chat_messages.c.sequence_nr)
        return [str(label) for label in conn.execute(query).scalars()]


@pytest.mark.parametrize(
    "statement", ["UPDATE WORKFLOWS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"]
)
def test_an_exception_after_a_statement_of_the_attach_ran_keeps_none_of_that_message(
    engine: sa.Engine, statement: str
) -> None:
    """An ``Exception`` that lands after a statement ran (a signal handler's ``TimeoutError``)
    is not one the attach's undo can place: the refused message is never stored, and no
    number is given back while a stored message holds it."""
    store = SqlMetadata(engine)
    workflow = _stored_workflow(store)
    with store.unit_of_work() as uow:
        _second_message_trapped(uow, workflow, (statement, _time_limit, True), TimeoutError, 2)
        try:
            uow.workflows.add_message(make_message(workflow, "third"))
            uow.commit()
        except StorageError:
            pass  # refusing the whole unit is sound too
    with store.unit_of_work() as uow:
        uow.workflows.add_message(make_message(workflow, "later"))
        uow.commit()
    assert "second" not in _labels(engine)
    numbers = _numbers(engine)
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize(
    "statement", ["UPDATE WORKFLOWS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"]
)
def test_a_unit_goes_on_after_the_database_ended_its_transaction_and_stores_nothing(
    engine: sa.Engine, statement: str
) -> None:
    """With ``isolation_level = None`` a statement outside a transaction commits at once:
    a unit whose transaction the database ended must not store what the caller sends next."""
    store = SqlMetadata(engine)
    workflow = _stored_workflow(store)
    with store.unit_of_work() as uow:
        trap = (statement, _ends_the_transaction, False)
        _second_message_trapped(uow, workflow, trap, StorageError, 1)
        with pytest.raises(StorageError):
            uow.workflows.add_message(make_message(workflow, "third", files=1))
            uow.commit()
    assert _rows(engine, chat_messages) == 0
    assert _write_lock_is_free(engine)
    with store.unit_of_work() as uow:
        assert uow.workflows.add_message(make_message(workflow, "after")).sequence_nr == 1
        uow.commit()


def test_a_run_asks_for_a_label_it_saw_taken_with_a_suffix_at_once(
    binder: DocBinder, engine: sa.Engine
) -> None:
    """The default label: once a run saw it taken, no refused insert and no number given back."""

    def attaches(run: Run, name: str) -> list[str]:
        WatchedConnection.sent.clear()
        produced = run.produce_file(name, name.encode())
        assert produced.label is not None and produced.label.startswith("agent_tool_output#")
        return [sql.split(" (")[0].split(" SET")[0] for sql in WatchedConnection.sent]

    first = binder.start_new_run(U1)
    first.produce_file("a.txt", b"alpha")  # takes the label
    assert attaches(first, "b.txt").count("UPDATE workflows") == 1  # noted when a.txt was stored
    assert first.workflow is not None
    other = binder.start_run(U1, first.workflow.id)
    refused = attaches(other, "c.txt")  # learns it from the refusal
    assert refused.count("INSERT INTO chat_messages") == 2
    learned = attaches(other, "d.txt")
    assert learned.count("INSERT INTO chat_messages") == 1
    assert learned.count("UPDATE workflows") == 1
    assert _numbers(engine) == [1, 2, 3, 4]
