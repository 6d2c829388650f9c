"""SQLite's one write path, as SQLite itself sees it (ADR 0040).

The SQLite adapter (:mod:`docbinder.adapters.sqlite`) sends every statement
and transaction on the ``sqlite3`` connection; a write that may be refused
runs without a savepoint (SQLite undoes a refused statement by itself, and an
attach is taken back by statements of its own). These tests watch what
reaches SQLite through the connection's own trace callback
(``set_trace_callback``: every statement SQLite runs, ``BEGIN`` and
``COMMIT`` included) and break statements at the driver (a
``sqlite3.Connection`` subclass handed in as the connection factory), so they
check the guarantees of ADR 0011 there: a transaction the database ended
stores nothing, an interrupt comes through as itself, a refused insert or
label leaves the unit usable and the numbers dense.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
import sqlalchemy as sa

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql import create_engine_from_url, migrate
from docbinder.adapters.sql.schema import chat_messages, file_items
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.application import DocBinder, Run
from docbinder.domain.errors import Conflict, StorageError
from docbinder.domain.model import ChatWorkflow, FileItem, Principal
from docbinder.testing.metadata_suite import make_file, make_message, make_workflow
from tests.contract.sql_backends import binder_over

U1 = Principal("u1", "m1", None, roles=("member",))

Trap = Callable[[sqlite3.Connection, str], None]


class WatchedConnection(sqlite3.Connection):
    """A ``sqlite3`` connection that records what SQLite runs and can break one statement.

    :attr:`sent` is filled by SQLite's trace callback. :attr:`trap` is
    ``(prefix, action, after)``: ``action`` runs for the first statement sent
    with ``execute``/``executemany`` (the SQLite adapter's way in) that starts
    with ``prefix`` (upper case), before SQLite runs it or, with
    ``after=True``, once it took effect.
    """

    sent: ClassVar[list[str]] = []
    trap: ClassVar[tuple[str, Trap, bool] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_trace_callback(WatchedConnection.sent.append)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        after = self._sprung(sql)
        cursor = super().execute(sql, *args)
        if after is not None:
            after(self, sql)
        return cursor

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        after = self._sprung(sql)
        cursor = super().executemany(sql, *args)
        if after is not None:
            after(self, sql)
        return cursor

    def _sprung(self, sql: str) -> Trap | None:
        """Fire the trap for ``sql`` now (before), or return it to fire after the statement."""
        trap = WatchedConnection.trap
        if trap is None or not sql.upper().startswith(trap[0]):
            return None
        WatchedConnection.trap = None
        if trap[2]:
            return trap[1]
        trap[1](self, sql)
        return None


def _engine(path: Path, **options: Any) -> sa.Engine:
    WatchedConnection.sent = []
    WatchedConnection.trap = None
    made = create_engine_from_url(
        f"sqlite:///{path}", connect_args={"factory": WatchedConnection}, **options
    )
    migrate(made)
    return made


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    made = _engine(tmp_path / "db.sqlite")
    yield made
    made.dispose()


@pytest.fixture
def binder(engine: sa.Engine, tmp_path: Path) -> DocBinder:
    return binder_over(SqliteMetadata(engine), LocalDiskBlobStore(tmp_path / "blobs"))


def _sent() -> list[str]:
    """What SQLite ran since the last clear, each cut to its verb and table."""
    return [sql.split(" (")[0].split(" SET")[0] for sql in WatchedConnection.sent]


def _rows(engine: sa.Engine, table: sa.Table) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _store_with_a_kept_file(engine: sa.Engine) -> tuple[SqliteMetadata, FileItem]:
    """A store on ``engine`` holding one committed FileItem (``kept.txt``), and that FileItem."""
    store = SqliteMetadata(engine)
    binder = binder_over(store, LocalDiskBlobStore(Path(str(engine.url.database)).parent / "b"))
    return store, binder.store_file(U1, "kept.txt", b"kept").item


def _stored_workflow(store: SqliteMetadata) -> ChatWorkflow:
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


def _labels(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        query = sa.select(chat_messages.c.documents_label).order_by(chat_messages.c.sequence_nr)
        return [str(label) for label in conn.execute(query).scalars()]


def _ends_the_transaction(conn: sqlite3.Connection, sql: str) -> None:
    """What SQLite does on a full disk or an I/O error: the whole transaction is gone."""
    sqlite3.Connection.execute(conn, "ROLLBACK")
    raise sqlite3.OperationalError(f"database or disk is full (test, at {sql[:30]})")


def _interrupt(conn: sqlite3.Connection, sql: str) -> None:
    raise KeyboardInterrupt


def _time_limit(conn: sqlite3.Connection, sql: str) -> None:
    """What a time-limit signal handler does: an ``Exception`` raised wherever Python is."""
    raise TimeoutError("time limit reached (test)")


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


def attrs_copy(item: FileItem, name: str, *, file_id: str | None = None) -> FileItem:
    """``item`` under another name and id (a different duplicate key), not stored yet."""
    return attrs.evolve(
        item, id=file_id or str(uuid.uuid4()), file_name=f"{name}.txt", blob_key=f"x/{name}"
    )


# -- what a produced file sends ---------------------------------------------------------


def test_a_new_file_is_one_transaction_of_six_statements_without_a_savepoint(
    binder: DocBinder, engine: sa.Engine
) -> None:
    run = binder.start_new_run(U1)
    run.produce_file("warm.txt", b"warm")  # the store's registration, once per process
    WatchedConnection.sent.clear()
    produced = run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
    assert produced.document_id is not None
    sent = _sent()
    # The quotas of the file's scope are read first (ADR 0090): one indexed SELECT.
    assert sent[1].startswith("SELECT ") and "FROM quotas" in sent[1]
    assert [sent[0], *sent[2:]] == [
        "BEGIN IMMEDIATE",
        "INSERT INTO file_items",
        "UPDATE workflows",
        "INSERT INTO chat_messages",
        "INSERT INTO chat_documents",
        "COMMIT",
    ]
    assert _write_lock_is_free(engine)


def test_a_refused_label_gives_its_number_back_and_numbers_stay_dense(
    binder: DocBinder, engine: sa.Engine
) -> None:
    """A taken label is undone by the attach's own statements, and numbers stay dense."""
    first = binder.start_new_run(U1)
    first.produce_file("a.txt", b"alpha", label="same")
    assert first.workflow is not None
    run = binder.start_run(U1, first.workflow.id)  # a run that has not seen the label taken
    WatchedConnection.sent.clear()
    second = run.produce_file("b.txt", b"beta", label="same")
    assert second.label is not None and second.label.startswith("same")
    assert second.label != "same"
    sent = _sent()
    assert not any("SAVEPOINT" in sql for sql in sent)
    assert sent[-1] == "COMMIT"
    assert sent.count("UPDATE workflows") == 3  # taken, given back, taken again
    assert _numbers(engine) == [1, 2]
    assert _write_lock_is_free(engine)


def test_a_run_asks_for_a_label_it_saw_taken_with_a_suffix_at_once(
    binder: DocBinder, engine: sa.Engine
) -> None:
    """The default label: once a run saw it taken, no refused insert and no number given back."""

    def attaches(run: Run, name: str) -> list[str]:
        WatchedConnection.sent.clear()
        produced = run.produce_file(name, name.encode())
        assert produced.label is not None and produced.label.startswith("agent_tool_output#")
        return _sent()

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


# -- the database ends the transaction ----------------------------------------------------


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


@pytest.mark.parametrize(
    "statement", ["UPDATE WORKFLOWS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"]
)
def test_a_unit_goes_on_after_the_database_ended_its_transaction_and_stores_nothing(
    engine: sa.Engine, statement: str
) -> None:
    """SQLite runs with ``isolation_level = None``: a statement outside a transaction commits at
    once, so a unit whose transaction the database ended must not store what it sends next."""
    store = SqliteMetadata(engine)
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


def test_a_transaction_the_database_ended_outside_a_guarded_block_is_not_committed(
    engine: sa.Engine,
) -> None:
    """An unguarded write the database ended (a full disk during ``update_workflow``): the
    commit refuses, and the work before it is not reported as stored."""
    store = SqliteMetadata(engine)
    workflow = _stored_workflow(store)
    with store.unit_of_work() as uow:
        uow.workflows.add_message(make_message(workflow, "first"))
        WatchedConnection.trap = ("UPDATE WORKFLOWS", _ends_the_transaction, False)
        with pytest.raises(StorageError):
            uow.workflows.update_workflow(attrs.evolve(workflow, status="stopped"))
        with pytest.raises(StorageError, match="ended this transaction"):
            uow.commit()
    assert _rows(engine, chat_messages) == 0
    assert _write_lock_is_free(engine)


def test_a_begin_that_waited_out_the_busy_timeout_is_sent_again(tmp_path: Path) -> None:
    """A unit whose ``BEGIN IMMEDIATE`` failed begins again at its next statement; nothing it
    sends runs outside a transaction (it would commit at once)."""
    made = _engine(tmp_path / "db.sqlite", busy_timeout_s=0.1)
    store = SqliteMetadata(made)
    other = sqlite3.connect(str(made.url.database), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with store.unit_of_work() as uow:
            with pytest.raises(StorageError, match="locked"):
                uow.files.add(make_file())
            other.execute("ROLLBACK")
            WatchedConnection.sent.clear()
            uow.files.add(make_file(file_name="second.pdf"))
            sent = _sent()
            assert sent[0] == "BEGIN IMMEDIATE" and "FROM quotas" in sent[1]
            assert sent[2] == "INSERT INTO file_items"
            uow.rollback()
        assert _rows(made, file_items) == 0
    finally:
        other.close()
        made.dispose()


# -- interrupts and other exceptions ------------------------------------------------------


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


@pytest.mark.parametrize("statement", ["INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"])
def test_a_unit_whose_attach_was_interrupted_refuses_to_commit(
    engine: sa.Engine, statement: str
) -> None:
    """An interrupt caught inside the unit: what ran cannot be told apart, so nothing commits."""
    store = SqliteMetadata(engine)
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


@pytest.mark.parametrize(
    "statement", ["UPDATE WORKFLOWS", "INSERT INTO CHAT_MESSAGES", "INSERT INTO CHAT_DOCUMENTS"]
)
def test_an_exception_after_a_statement_of_the_attach_ran_keeps_none_of_that_message(
    engine: sa.Engine, statement: str
) -> None:
    """An ``Exception`` that lands after a statement ran (a signal handler's ``TimeoutError``)
    is not one the attach's undo can place: the refused message is never stored, and no
    number is given back while a stored message holds it."""
    store = SqliteMetadata(engine)
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


def test_an_interrupt_before_a_statement_comes_through_and_frees_the_lock(
    engine: sa.Engine,
) -> None:
    store, kept = _store_with_a_kept_file(engine)
    with pytest.raises(KeyboardInterrupt), store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "dropped"))
        WatchedConnection.trap = ("SELECT", _interrupt, False)
        uow.files.list(U1.mandate_id)
    assert WatchedConnection.trap is None  # it fired
    assert _write_lock_is_free(engine)
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]


# -- the commit and the lock ------------------------------------------------------------------


def test_a_unit_left_without_commit_keeps_nothing_and_frees_the_lock(engine: sa.Engine) -> None:
    store, kept = _store_with_a_kept_file(engine)
    with store.unit_of_work() as uow:
        uow.files.add(attrs_copy(kept, "dropped"))
        assert not _write_lock_is_free(engine)  # BEGIN IMMEDIATE holds it
    assert _write_lock_is_free(engine)
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]


def test_a_refused_commit_stores_nothing_and_frees_the_lock(
    binder: DocBinder, engine: sa.Engine
) -> None:
    def refuse(_conn: sqlite3.Connection, _sql: str) -> None:
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


def test_an_interrupted_commit_frees_the_lock_without_the_pools_reset(tmp_path: Path) -> None:
    """The pool's reset on return may be off: an interrupted commit still leaves no lock behind."""
    made = _engine(tmp_path / "db.sqlite", pool_reset_on_return=None)
    store = SqliteMetadata(made)
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


# -- sqlite:// (one connection for every unit) --------------------------------------------------


def test_a_unit_never_joins_another_units_transaction_on_the_shared_memory_connection(
    tmp_path: Path,
) -> None:
    """``sqlite://`` has one connection for all units: an inner unit must fail, not end the outer's work."""
    made = create_engine_from_url("sqlite://")
    migrate(made)
    store = SqliteMetadata(made)
    binder = binder_over(store, LocalDiskBlobStore(tmp_path / "b"))
    kept = binder.store_file(U1, "kept.txt", b"kept").item
    outer = attrs_copy(kept, "outer")
    with store.unit_of_work() as uow:
        uow.files.add(outer)  # BEGIN IMMEDIATE on the one connection
        inner = store.read_unit_of_work()
        with pytest.raises(StorageError, match="within a transaction"), inner:
            inner.files.list(U1.mandate_id)
        # Refused loudly: the outer's work is not committed as if it had been kept.
        with pytest.raises(StorageError):
            uow.files.add(attrs_copy(kept, "after-inner"))
            uow.commit()
    with store.read_unit_of_work() as uow:
        assert [item.id for item in uow.files.list(U1.mandate_id)] == [kept.id]
    made.dispose()


def test_threads_on_the_in_memory_database_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    """``sqlite://`` has one connection for every unit: units of threads are serialised on it."""
    made = create_engine_from_url("sqlite://")
    migrate(made)
    binder = binder_over(SqliteMetadata(made), LocalDiskBlobStore(tmp_path / "blobs"))
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
    assert run.workflow is not None
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
