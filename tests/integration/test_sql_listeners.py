"""Listening to SQLAlchemy's events changes nothing about what reaches the database (ADR 0040).

A host may trace SQL (OpenTelemetry's SQLAlchemy instrumentation), count
statements or inject faults through the engine's events. PostgreSQL and
MariaDB run on SQLAlchemy's ``Connection``, so listeners see every statement;
SQLite's adapter runs on ``sqlite3`` and a listener sees none. Either way the
listeners change nothing. The same files are
attached twice, each time into a fresh database: once with nothing listening,
once with listeners on every statement, transaction and error event. What the
database received is recorded below SQLAlchemy, at the driver: SQLite's own
trace callback (``sqlite3.Connection.set_trace_callback``: every statement
SQLite runs, ``BEGIN`` and ``COMMIT`` included), and for PostgreSQL (psycopg)
and MariaDB (PyMySQL) the driver's cursors and its ``commit``/``rollback``,
through connection classes of their own. Both runs must send the same
statements in the same transactions, on every SQL backend.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql import create_engine_from_url
from docbinder.domain.model import Principal
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, binder_over, provision

U1 = Principal("u1", "m1", None, roles=("member",))

LISTENED_EVENTS = (
    "engine_connect",
    "begin",
    "commit",
    "rollback",
    "savepoint",
    "release_savepoint",
    "rollback_savepoint",
    "before_cursor_execute",
    "after_cursor_execute",
    "handle_error",
    "do_execute",
    "do_executemany",
    "do_execute_no_params",
)
"""Everything a tracer, a statement counter or a fault injector may listen to."""


class Sent:
    """What the database received, in order, as the driver reports it (``COMMIT``/``ROLLBACK`` included)."""

    statements: ClassVar[list[str]] = []


class TracedSqlite(sqlite3.Connection):
    """A ``sqlite3`` connection whose trace callback records every statement SQLite runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_trace_callback(Sent.statements.append)


def _postgres_connection() -> Callable[..., Any]:
    import psycopg

    class RecordingCursor(psycopg.Cursor[Any]):
        def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            Sent.statements.append(str(query))
            return super().execute(query, *args, **kwargs)

        def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            Sent.statements.append(str(query))
            return super().executemany(query, *args, **kwargs)

    class RecordingConnection(psycopg.Connection[Any]):
        def commit(self) -> None:
            Sent.statements.append("COMMIT")
            super().commit()

        def rollback(self) -> None:
            Sent.statements.append("ROLLBACK")
            super().rollback()

    def connect(*args: Any, **kwargs: Any) -> Any:
        conn = RecordingConnection.connect(*args, **kwargs)
        conn.cursor_factory = RecordingCursor
        return conn

    return connect


def _mariadb_connection() -> Callable[..., Any]:
    import pymysql

    class RecordingCursor(pymysql.cursors.Cursor):
        def execute(self, query: Any, args: Any = None) -> Any:
            Sent.statements.append(str(query))
            return super().execute(query, args)

    class RecordingConnection(pymysql.connections.Connection):  # type: ignore[misc]
        def commit(self) -> None:
            Sent.statements.append("COMMIT")
            super().commit()

        def rollback(self) -> None:
            Sent.statements.append("ROLLBACK")
            super().rollback()

    return lambda *args, **kwargs: RecordingConnection(
        *args, **{**kwargs, "cursorclass": RecordingCursor}
    )


def _recorded_engine(backend: SqlBackend) -> sa.Engine:
    """An engine on ``backend``'s database whose driver connections record what they send."""
    if backend.name == "sqlite":
        return create_engine_from_url(backend.url, connect_args={"factory": TracedSqlite})
    connect = _postgres_connection() if backend.name == "postgresql" else _mariadb_connection()
    cargs, cparams = backend.engine.dialect.create_connect_args(backend.engine.url)
    return create_engine_from_url(backend.url, creator=lambda: connect(*cargs, **cparams))


_LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b|\bNULL\b")


def _normalised(statement: str) -> str:
    """``statement`` on one line, its literal values (``NULL`` too) replaced by ``?``."""
    return _LITERALS.sub("?", " ".join(statement.split()))


def _transactions(sent: list[str]) -> list[list[str]]:
    """``sent`` cut into transactions, literal values (SQLite's trace expands them) replaced by ``?``.

    A transaction ends at each ``COMMIT`` or ``ROLLBACK`` (SQLite's trace, the
    server drivers' ``commit``/``rollback``).
    """
    transactions: list[list[str]] = [[]]
    for statement in sent:
        text = _normalised(statement)
        transactions[-1].append(text)
        if text.upper() in ("COMMIT", "ROLLBACK"):
            transactions.append([])
    return [t for t in transactions if t]


def _attach_the_files(backend: SqlBackend, tmp_path: Path, *, listened: bool) -> dict[str, Any]:
    """Attach the same files as every run does; what the driver sent, and what listeners saw."""
    backend.clean()
    engine = _recorded_engine(backend)
    heard: list[str] = []
    statements: list[str] = []

    def hear(name: str) -> Callable[..., None]:
        def listener(*args: Any, **_kwargs: Any) -> None:
            heard.append(name)
            if name == "before_cursor_execute":
                statements.append(args[2])

        return listener

    listeners = [(name, hear(name)) for name in LISTENED_EVENTS]
    try:
        binder = binder_over(type(backend.store)(engine), LocalDiskBlobStore(tmp_path / "blobs"))
        run = binder.start_new_run(U1)
        run.produce_file("warm.txt", b"warm")  # the store's registration, once per process
        assert run.workflow is not None
        if listened:
            for name, listener in listeners:
                event.listen(engine, name, listener)
        Sent.statements.clear()
        run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
        run.produce_file("b.txt", b"beta")
        # Another run of the workflow has not seen the label taken: refused, then suffixed.
        other = binder.start_run(U1, run.workflow.id)
        other.produce_file("c.txt", b"gamma", label="writeFile:a.txt")
        # The same bytes under the same name: the insert is refused, the duplicate reused.
        again = run.produce_file("a.txt", b"alpha", label="writeFile:again")
        assert again.duplicate
        binder.list_files(U1)
        sent = list(Sent.statements)
    finally:
        if listened:
            for name, listener in listeners:
                event.remove(engine, name, listener)
        engine.dispose()
    return {"transactions": _transactions(sent), "heard": heard, "statements": statements}


@pytest.fixture(scope="module", params=SQL_BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path_factory.mktemp(request.param)) as db:
        yield db


def test_listeners_change_no_statement_and_no_transaction(
    backend: SqlBackend, tmp_path: Path
) -> None:
    quiet = _attach_the_files(backend, tmp_path / "quiet", listened=False)
    listened = _attach_the_files(backend, tmp_path / "listened", listened=True)
    assert quiet["transactions"] == listened["transactions"]
    assert len(quiet["transactions"]) >= 5  # the five attaches at least (one of them two units)
    assert quiet["heard"] == []
    if backend.name == "sqlite":
        # SQLite's adapter sends nothing through SQLAlchemy: nothing to hear, nothing changed.
        assert listened["heard"] == []
        return
    assert set(listened["heard"]) >= {"begin", "commit", "before_cursor_execute"}
    # The listener heard every statement but transaction control (BEGIN, COMMIT, ROLLBACK:
    # the begin, commit and rollback events) and the pool's ping (";" on PostgreSQL).
    ran = [
        s
        for t in listened["transactions"]
        for s in t
        if s not in ("COMMIT", "ROLLBACK", ";") and not s.startswith("BEGIN")
    ]
    assert [_normalised(s) for s in listened["statements"]] == ran


def test_a_produced_file_is_one_transaction(backend: SqlBackend, tmp_path: Path) -> None:
    """The shape of one new file's transaction, per backend (ADR 0040, ADR 0038)."""
    sent = _attach_the_files(backend, tmp_path, listened=False)["transactions"]
    first = [s.split(" (")[0].split(" SET")[0] for s in sent[0]]
    writes = [s for s in first if s.startswith(("INSERT", "UPDATE", "SAVEPOINT", "RELEASE"))]
    if backend.name == "sqlite":
        # The quotas of the file's scope are read first (ADR 0090; none here: no lock taken).
        assert first[1].startswith("SELECT ") and "FROM quotas" in first[1]
        assert [first[0], *first[2:]] == [
            "BEGIN IMMEDIATE",
            "INSERT INTO file_items",
            "UPDATE workflows",
            "INSERT INTO chat_messages",
            "INSERT INTO chat_documents",
            "COMMIT",
        ]
    else:
        # A savepoint around the FileItem insert and around the attach; the owner is read
        # before the numbering UPDATE locks the workflow's row.
        assert writes[:3] == [
            "SAVEPOINT docbinder_statement",
            "INSERT INTO file_items",
            "RELEASE SAVEPOINT docbinder_statement",
        ]
        assert "UPDATE workflows" in writes
        assert first[-1] == "COMMIT"
