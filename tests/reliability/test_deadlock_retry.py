"""A deadlock inside ``produce_file`` is run again, on PostgreSQL and MariaDB (issue 31, kind 9).

In concurrent produce / delete / replace races, 3 to 6 of 320 ``produce_file`` calls
failed with MariaDB error 1213 (nothing lost). Here a second connection provokes a real
deadlock: it holds the workflow's row, ``produce_file`` inserts its FileItem and then
waits for that row, and the second connection inserts the same FileItem id, waiting for
``produce_file``: a cycle. The server aborts ``produce_file``'s transaction (PostgreSQL
``40P01``: it waited first, so its deadlock check runs first; MariaDB ``1213``: the other
transaction wrote more rows), and the unit is run again and succeeds.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql.errors import is_transient, storage_error, translating
from docbinder.application.steps import transient
from docbinder.application.steps.transient import TRANSIENT_ATTEMPTS, run_again_if_aborted
from docbinder.domain.errors import FileItemNotFound, StorageError, TransactionAborted
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.metadata import UnitOfWork
from tests.contract.sql_backends import SqlBackend, provision
from tests.wiring import UnitOfWorkWrapper, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class _Touching:
    """``files`` whose ``lock``, ``lock_shared``, ``update`` or ``add`` of a row calls
    ``touched`` while holding it."""

    def __init__(self, inner: Any, touched: Any) -> None:
        self._inner, self._touched = inner, touched

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def lock(self, file_id: str) -> Any:
        row = self._inner.lock(file_id)
        self._touched()
        return row

    def update(self, item: FileItem, **kwargs: Any) -> Any:
        result = self._inner.update(item, **kwargs)
        self._touched()
        return result

    def lock_shared(self, file_ids: Any) -> Any:
        rows = self._inner.lock_shared(file_ids)
        self._touched()
        return rows

    def add(self, item: FileItem, *args: Any, **kwargs: Any) -> Any:
        result = self._inner.add(item, *args, **kwargs)
        self._touched(item)
        return result


class _Hooked(UnitOfWorkWrapper):
    def __init__(self, inner: UnitOfWork, on_add: Any) -> None:
        super().__init__(inner)
        self.files = _Touching(inner.files, lambda added=None: added and on_add(added))


class _Rival:
    """The second connection: holds the workflow row, then inserts the FileItem's id."""

    def __init__(self, db: SqlBackend, workflow_id: str) -> None:
        self.db, self.workflow_id = db, workflow_id
        self.locked, self.item_added = threading.Event(), threading.Event()
        self.item: FileItem | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def added(self, item: FileItem) -> None:
        if self.item is None:  # only the first run of the unit closes the cycle
            self.item = item
            self.item_added.set()

    def _run(self) -> None:
        try:
            with self.db.store.unit_of_work() as uow:
                session: Any = uow._session
                if self.db.name == "postgresql":
                    # Let produce_file's backend (1 s) run the deadlock check first.
                    session.execute(sa.text("SET LOCAL deadlock_timeout = '30s'"))
                else:
                    # InnoDB rolls back the transaction that wrote less: make it produce_file's.
                    session.execute(
                        sa.text(
                            "INSERT INTO ballast (n) VALUES "
                            + ",".join(f"({n})" for n in range(300))
                        )
                    )
                session.execute(
                    sa.text("SELECT id FROM workflows WHERE id = :w FOR UPDATE"),
                    {"w": self.workflow_id},
                )
                self.locked.set()
                assert self.item_added.wait(30)
                time.sleep(0.5)  # produce_file is waiting for the workflow row by now
                assert self.item is not None
                try:
                    uow.files.add(self.item)  # waits for produce_file's insert: the cycle
                except Exception as exc:  # the server may end this side instead
                    self.error = exc
                # never committed: leaving the block rolls back and frees the workflow row
        except BaseException as exc:
            self.error = exc


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_produce_file_survives_a_real_deadlock(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with provision(backend, tmp_path) as db:
        if backend == "mariadb":
            with db.engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE ballast (n INT PRIMARY KEY) ENGINE=InnoDB"))
        blobs = LocalDiskBlobStore(tmp_path / "blobs")
        plain = wire_binder(db.store.unit_of_work, blobs, db.store.read_unit_of_work)
        workflow = plain.start_new_run(U1).workflow
        assert workflow is not None
        rival = _Rival(db, workflow.id)
        units = 0

        def hooked() -> UnitOfWork:
            nonlocal units
            units += 1
            return _Hooked(db.store.unit_of_work(), rival.added)  # type: ignore[return-value]

        binder = wire_binder(hooked, blobs, db.store.read_unit_of_work)
        run = binder.start_run(U1, workflow.id)
        rival.thread.start()
        assert rival.locked.wait(30)

        with caplog.at_level(logging.INFO, logger=transient.__name__):
            result = run.produce_file("report.md", b"# the report\n").item

        rival.thread.join(30)
        assert rival.error is None
        [again] = [r.getMessage() for r in caplog.records if r.name == transient.__name__]
        assert "aborted it" in again and ("deadlock" in again.lower()), again
        stored = plain.get_file(U1, result.id)
        assert stored.file_name == "report.md"
        assert plain.start_run(U1, workflow.id).read_file(result.id) == b"# the report\n"
        messages = plain.list_messages(U1, workflow.id)
        assert [d.file_id for m in messages for d in m.documents] == [result.id]
        assert rival.item is not None and rival.item.id == result.id


def test_only_an_aborted_transaction_is_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transient, "PAUSE_SECONDS", 0.0)
    calls: list[str] = []

    def fails(error: Exception) -> Any:
        def run() -> None:
            calls.append(type(error).__name__)
            raise error

        return run

    with pytest.raises(StorageError):
        run_again_if_aborted(fails(StorageError("disk full")), "x")
    assert calls == ["StorageError"]  # a fault that is not transient: once
    calls.clear()
    with pytest.raises(TransactionAborted):
        run_again_if_aborted(fails(TransactionAborted("deadlock")), "x")
    assert calls == ["TransactionAborted"] * TRANSIENT_ATTEMPTS  # bounded
    outcomes = iter([TransactionAborted("deadlock"), None])

    def once_aborted() -> str:
        error = next(outcomes)
        if error is not None:
            raise error
        return "done"

    assert run_again_if_aborted(once_aborted, "x") == "done"


class _Driver(Exception):
    def __init__(self, *args: Any, sqlstate: str | None = None) -> None:
        super().__init__(*args)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("error", "transient_"),
    [
        (_Driver(sqlstate="40P01"), True),  # PostgreSQL deadlock_detected
        (_Driver(sqlstate="40001"), True),  # PostgreSQL serialization_failure
        (_Driver(1213, "Deadlock found when trying to get lock"), True),  # MariaDB
        (_Driver(1205, "Lock wait timeout exceeded"), False),  # the statement only
        (_Driver(sqlstate="23505"), False),  # a unique violation
        (_Driver(2013, "Lost connection to server"), False),
    ],
)
def test_which_driver_errors_are_transient(error: Exception, transient_: bool) -> None:
    assert is_transient(error) is transient_
    assert isinstance(storage_error(error), TransactionAborted) is transient_


class _Cycle:
    """Closes a lock cycle around the first run of a deleting or updating unit.

    The rival connection holds the workflow's row; the unit holds the FileItem's row
    (its ``lock``, compare-and-set ``update`` or ``add``); the rival then asks for the
    FileItem's row (for an added one: inserts the same id) and the unit for the
    workflow's: a real deadlock, which the server ends by
    aborting the unit (PostgreSQL: the rival's deadlock check is put off; MariaDB: the
    rival has written more rows).
    """

    def __init__(self, db: SqlBackend, workflow_id: str, file_id: str) -> None:
        self.db, self.workflow_id, self.file_id = db, workflow_id, file_id
        self.locked, self.holding = threading.Event(), threading.Event()
        self.fired = False
        self.added: FileItem | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._rival, daemon=True)

    def unit(self) -> UnitOfWork:
        inner = self.db.store.unit_of_work()
        wrapper = UnitOfWorkWrapper(inner)
        wrapper.files = _Touching(  # type: ignore[attr-defined]
            inner.files, lambda added=None: self._touched(inner, added)
        )
        return wrapper  # type: ignore[return-value]

    def _touched(self, inner: Any, added: FileItem | None) -> None:
        if self.fired:  # only the first run of the unit closes the cycle
            return
        self.fired, self.added = True, added
        self.holding.set()
        time.sleep(0.5)  # the rival waits for the FileItem's row by now
        with translating():  # as every statement of the adapter is
            inner._session.execute(
                sa.text("SELECT id FROM workflows WHERE id = :w FOR UPDATE"),
                {"w": self.workflow_id},
            )

    def _rival(self) -> None:
        try:
            with self.db.store.unit_of_work() as uow:
                session: Any = uow._session
                if self.db.name == "postgresql":
                    session.execute(sa.text("SET LOCAL deadlock_timeout = '30s'"))
                else:
                    rows = ",".join(f"({n})" for n in range(300))
                    session.execute(sa.text(f"INSERT INTO ballast (n) VALUES {rows}"))
                session.execute(
                    sa.text("SELECT id FROM workflows WHERE id = :w FOR UPDATE"),
                    {"w": self.workflow_id},
                )
                self.locked.set()
                assert self.holding.wait(30)
                if self.added is not None:  # waits for the unit's insert: the cycle
                    uow.files.add(self.added)
                else:
                    session.execute(
                        sa.text("SELECT id FROM file_items WHERE id = :f FOR UPDATE"),
                        {"f": self.file_id},
                    )  # waits for the unit: the cycle
                # never committed: leaving the block rolls back and frees the workflow row
        except BaseException as exc:
            self.error = exc


@pytest.mark.parametrize("operation", ["delete_file", "replace", "version save", "attach"])
@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_a_deadlock_in_a_delete_an_update_a_version_save_or_an_attach_is_run_again(
    backend: str, operation: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with provision(backend, tmp_path) as db:
        if backend == "mariadb":
            with db.engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE ballast (n INT PRIMARY KEY) ENGINE=InnoDB"))
        blobs = LocalDiskBlobStore(tmp_path / "blobs")
        plain = wire_binder(db.store.unit_of_work, blobs, db.store.read_unit_of_work)
        run = plain.start_new_run(U1)
        item = run.produce_file("report.md", b"# the report\n").item
        assert run.workflow is not None
        cycle = _Cycle(db, run.workflow.id, item.id)
        binder = wire_binder(cycle.unit, blobs, db.store.read_unit_of_work)
        cycle.thread.start()
        assert cycle.locked.wait(30)

        with caplog.at_level(logging.INFO, logger=transient.__name__):
            if operation == "delete_file":
                binder.delete_file(U1, item.id, force=True)
            elif operation == "replace":
                binder.update_file.replace(U1, item.id, b"# the new report\n")
            elif operation == "version save":
                saved = binder.versions.save(U1, "notes.md", b"v1")
            else:
                attached = binder.start_run(U1, run.workflow.id).attach(item, label="again")

        cycle.thread.join(30)
        assert cycle.fired and cycle.error is None, cycle.error
        [again] = [r.getMessage() for r in caplog.records if r.name == transient.__name__]
        assert "aborted it" in again and "deadlock" in again.lower(), again
        if operation == "delete_file":
            with pytest.raises(FileItemNotFound):
                plain.get_file(U1, item.id)
        elif operation == "attach":
            messages = plain.list_messages(U1, run.workflow.id)
            assert [d.id for m in messages for d in m.documents][-1] == attached.id
            assert [m.documents_label for m in messages][1:] == ["again"]  # once
        elif operation == "version save":
            assert saved.version.version == 0
            assert plain.versions.read(U1, plain.versions.latest(U1, "notes.md")) == b"v1"
            assert cycle.added is not None and cycle.added.id == saved.item.id
        else:
            assert plain.start_run(U1, run.workflow.id).read_file(item.id) == b"# the new report\n"
