"""When the database ends a transaction under a savepoint, nothing is reported as stored.

A deadlock victim on MariaDB, a full disk or an interrupted statement ends the
whole transaction; rolling back to the savepoint then fails. The unit must not
commit what is left (nothing) as if the FileItem had been kept, and an
interrupt must come through as itself (ADR 0011). The faults are injected
through SQLAlchemy's statement events, which PostgreSQL's and MariaDB's
adapter (``SqlMetadata``) runs on; SQLite's adapter runs on ``sqlite3`` and is
broken at the driver in ``test_sql_sqlite_write_path.py`` (the same cases:
``test_a_transaction_the_database_ended_stores_nothing``,
``test_an_interrupt_after_the_file_insert_ran_comes_through_and_stores_nothing``,
``test_an_interrupt_after_a_statement_of_the_attach_ran_stores_nothing``). A
full SQLite database is real here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql.schema import chat_messages, file_items
from docbinder.application import DocBinder
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, binder_over, provision

U1 = Principal("u1", "m1", None, roles=("member",))


@pytest.fixture(scope="module", params=[name for name in SQL_BACKENDS if name != "sqlite"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path_factory.mktemp(request.param)) as db:
        yield db


@pytest.fixture
def binder(backend: SqlBackend, tmp_path: Path) -> DocBinder:
    backend.clean()
    return binder_over(backend.store, LocalDiskBlobStore(tmp_path / "blobs"))


def _rows(backend: SqlBackend, table: sa.Table) -> int:
    with backend.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _hook(backend: SqlBackend, prefix: str, action: Callable[[Any], None]) -> Callable[[], None]:
    """Run ``action(cursor)`` before the first statement starting with ``prefix``; return an undo."""
    fired: list[bool] = []

    def before(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if not fired and statement.lstrip().upper().startswith(prefix):
            fired.append(True)
            action(cursor)

    event.listen(backend.engine, "before_cursor_execute", before)
    return lambda: event.remove(backend.engine, "before_cursor_execute", before)


def _database_ends_the_transaction(cursor: Any) -> None:
    cursor.execute("ROLLBACK")
    raise sa_exc.OperationalError("INSERT", {}, Exception("transaction rolled back (test)"))


def test_a_transaction_ended_under_the_message_savepoint_stores_nothing(
    binder: DocBinder, backend: SqlBackend
) -> None:
    run = binder.start_new_run(U1)
    undo = _hook(backend, "INSERT INTO CHAT_MESSAGES", _database_ends_the_transaction)
    try:
        with pytest.raises(StorageError):
            run.produce_file("lost.txt", b"never kept")
    finally:
        undo()
    assert _rows(backend, file_items) == 0
    assert _rows(backend, chat_messages) == 0
    assert list(binder.blobs.keys()) == []
    after = run.produce_file("after.txt", b"kept")
    assert after.document_id is not None
    assert binder.get_file(U1, after.item.id) == after.item


@pytest.mark.parametrize("statement", ["INSERT INTO FILE_ITEMS", "INSERT INTO CHAT_MESSAGES"])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_inside_a_statement_comes_through_as_itself(
    binder: DocBinder, backend: SqlBackend, statement: str, interrupt: type[BaseException]
) -> None:
    run = binder.start_new_run(U1)

    def stop(_cursor: Any) -> None:
        raise interrupt()

    undo = _hook(backend, statement, stop)
    try:
        with pytest.raises(interrupt):
            run.produce_file("stopped.txt", b"interrupted")
    finally:
        undo()
    assert _rows(backend, file_items) == 0
    assert list(binder.blobs.keys()) == []
    assert run.produce_file("after.txt", b"kept").document_id is not None


def test_a_full_sqlite_database_stores_nothing(tmp_path: Path) -> None:
    from docbinder.container import build_binder

    db = tmp_path / "db.sqlite"
    built = build_binder(
        database_url=f"sqlite:///{db}", blob_url=(tmp_path / "blobs").as_uri(), home=str(tmp_path)
    )
    run = built.start_new_run(U1)
    run.produce_file("warm.txt", b"w")
    pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
    engine = built.uow_factory.__self__.engine  # type: ignore[attr-defined]

    def limit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 8}")

    event.listen(engine, "connect", limit)
    engine.dispose()
    with pytest.raises(StorageError):
        run.produce_file("f.txt", b"small", user_message="x" * 200_000)
    names = [row[0] for row in sqlite3.connect(db).execute("SELECT file_name FROM file_items")]
    assert names == ["warm.txt"]
    assert len(list(built.blobs.keys())) == 1
