"""SQLAlchemy implementations of :class:`~docbinder.ports.metadata.FileRepository` and
:class:`~docbinder.ports.metadata.WorkflowRepository`.

Both work on the one connection of a :class:`~docbinder.adapters.sql.uow.SqlUnitOfWork`
(:class:`LazyConnection`) and issue SQLAlchemy Core statements against
:mod:`docbinder.adapters.sql.schema`; the ORM session is not used, since
nothing here maps objects (entities go through :mod:`docbinder.adapters.sql.rows`).
Every insert or update that can break a uniqueness rule runs in a savepoint
(``Connection.begin_nested``) or, on SQLite's driver lane, without one
(:meth:`LazyConnection.one_statement`, :meth:`LazyConnection.undoable`): when
it fails, only that work is undone, the error is translated
(:mod:`docbinder.adapters.sql.errors`) and the unit of work stays usable, so
the caller can look again and retry in the same unit.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import attrs
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.compiler import SQLCompiler

from docbinder.adapters.sql.engine import (
    driver_lane_open,
    join_driver_transaction,
    run_on_driver,
    sqlite_begin_sql,
    statements_listened,
)
from docbinder.adapters.sql.errors import integrity_error, translating
from docbinder.adapters.sql.rows import from_row, to_row
from docbinder.adapters.sql.schema import (
    chat_documents,
    chat_messages,
    docbinder_meta,
    file_items,
    file_versions,
    gc_marks,
    label_hash,
    workflows,
)
from docbinder.domain.access import Resource, ResourceKind
from docbinder.domain.counters import MAX_COUNTER, CounterStep, WorkflowCounters
from docbinder.domain.errors import (
    Conflict,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    StorageError,
    WorkflowNotFound,
)
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    FileVersion,
    Scope,
    VersionSeries,
    duplicate_key,
)
from docbinder.ports.metadata import store_location_key

T = TypeVar("T")

IN_CHUNK = 500
"""Ids per ``IN (...)`` list; longer lists are split (SQLite limits bound parameters)."""

SCAN_BATCH = 1000
"""Rows per keyset-paginated batch of the maintenance iterators."""


# Statements built once: SQLAlchemy then reuses their compiled form and cache
# key instead of coercing a new statement on every call.
_INSERT_FILE = sa.insert(file_items)
_GET_FILE = sa.select(file_items).where(file_items.c.id == sa.bindparam("id"))
_LOCK_FILE = _GET_FILE.with_for_update()
_SHARE_FILES = (
    sa.select(file_items)
    .where(file_items.c.id.in_(sa.bindparam("ids", expanding=True)))
    .with_for_update(read=True)
)
_INSERT_WORKFLOW = sa.insert(workflows)
_GET_WORKFLOW = sa.select(workflows).where(workflows.c.id == sa.bindparam("id"))
_INSERT_MESSAGE = sa.insert(chat_messages)
_INSERT_DOCUMENTS = sa.insert(chat_documents)
_BUMP_SEQUENCE = (
    sa.update(workflows)
    .where(workflows.c.id == sa.bindparam("wf"))
    .values(last_sequence_nr=workflows.c.last_sequence_nr + 1)
)
_INSERT_VERSION = sa.insert(file_versions)
_LATEST_VERSION = (
    sa.select(file_versions)
    .where(file_versions.c.series_key == sa.bindparam("key"))
    .order_by(file_versions.c.version.desc())
    .limit(1)
)
_GET_VERSION = sa.select(file_versions).where(
    file_versions.c.series_key == sa.bindparam("key"),
    file_versions.c.version == sa.bindparam("version"),
)
_LIST_VERSIONS = (
    sa.select(file_versions)
    .where(file_versions.c.series_key == sa.bindparam("key"))
    .order_by(file_versions.c.version)
)
_VERSION_OF = sa.select(file_versions).where(file_versions.c.file_id == sa.bindparam("id"))
_DELETE_VERSION_OF = sa.delete(file_versions).where(file_versions.c.file_id == sa.bindparam("id"))
_SERIES_NAMES = (
    sa.select(file_versions.c.series_name)
    .where(file_versions.c.space_key == sa.bindparam("space"))
    .distinct()
)
_UNBUMP_SEQUENCE = (
    sa.update(workflows)
    .where(
        workflows.c.id == sa.bindparam("wf"), workflows.c.last_sequence_nr == sa.bindparam("seq")
    )
    .values(last_sequence_nr=workflows.c.last_sequence_nr - 1)
)
_DELETE_MESSAGE = sa.delete(chat_messages).where(chat_messages.c.id == sa.bindparam("id"))
_DELETE_MESSAGE_DOCUMENTS = sa.delete(chat_documents).where(
    chat_documents.c.message_id == sa.bindparam("id")
)
_COUNTERS = (workflows.c.current_round, workflows.c.current_task, workflows.c.current_action)
# What numbering a message reads from the row it locks: the number, the counters, and
# the owner the attach checks its rights on (add_message's ``admit``, ADR 0038).
_POSITION = (
    workflows.c.last_sequence_nr,
    *_COUNTERS,
    workflows.c.mandate_id,
    workflows.c.feature_instance_id,
    workflows.c.created_by,
)
_READ_OWNER = sa.select(*_POSITION[-3:]).where(workflows.c.id == sa.bindparam("wf"))
_BUMP_SEQUENCE_RETURNING = _BUMP_SEQUENCE.returning(*_POSITION)
_READ_POSITION = sa.select(*_POSITION).where(workflows.c.id == sa.bindparam("wf"))
_READ_COUNTERS = sa.select(*_COUNTERS).where(workflows.c.id == sa.bindparam("wf"))
_DOCUMENTS_BY_LABELS = (
    sa.select(
        chat_documents,
        chat_messages.c.label_hash.label("message_label_hash"),
        chat_messages.c.documents_label.label("message_label"),
    )
    .join(chat_messages, chat_documents.c.message_id == chat_messages.c.id)
    .where(
        chat_messages.c.workflow_id == sa.bindparam("wf"),
        chat_messages.c.label_hash.in_(sa.bindparam("hashes", expanding=True)),
    )
)
# No ORDER BY (see ``documents_by_file``): the rows are put in order in Python.
_DOCUMENTS_BY_FILES = sa.select(chat_documents).where(
    chat_documents.c.workflow_id == sa.bindparam("wf"),
    chat_documents.c.file_id.in_(sa.bindparam("files", expanding=True)),
)


def _find_duplicates_statement(with_feature: bool) -> sa.Select[Any]:
    # The unique index on dedup_key finds the row; the other comparisons
    # make the match exact by definition rather than by hash.
    fi = file_items.c
    return sa.select(file_items).where(
        fi.dedup_key == sa.bindparam("key"),
        fi.sha256 == sa.bindparam("sha256"),
        fi.file_name == sa.bindparam("file_name"),
        fi.created_by == sa.bindparam("created_by"),
        fi.mandate_id == sa.bindparam("mandate_id"),
        fi.feature_instance_id == sa.bindparam("feature_instance_id")
        if with_feature
        else fi.feature_instance_id.is_(None),
    )


_FIND_DUPLICATES = {
    True: _find_duplicates_statement(True),
    False: _find_duplicates_statement(False),
}


_SAVEPOINT = "SAVEPOINT docbinder_statement"
_RELEASE_SAVEPOINT = "RELEASE SAVEPOINT docbinder_statement"
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT docbinder_statement"


class SharedConnectionLock:
    """Serialises the units of work of an engine that has one connection for all (``sqlite://``).

    An in-memory SQLite database lives in one connection (``StaticPool``), so
    units of different threads would otherwise send their statements into
    one transaction and commit or roll back each other's work. A unit holds
    this lock from its first statement until it ends; a unit of another
    thread waits up to ``timeout_s`` seconds (the busy timeout a file
    database would wait for its write lock), then gets
    :class:`~docbinder.domain.errors.StorageError`. Re-entrant in one thread.
    """

    def __init__(self, timeout_s: float) -> None:
        self._lock = threading.RLock()
        self._timeout_s = timeout_s

    def acquire(self) -> None:
        """Wait for the connection; :class:`StorageError` after ``timeout_s`` seconds."""
        if not self._lock.acquire(timeout=self._timeout_s):
            raise StorageError(
                f"the in-memory SQLite database (sqlite://) is in use by another thread for "
                f"more than {self._timeout_s:g} s; it serves one unit of work at a time: use a "
                "file database (sqlite:///path) for concurrent work"
            )

    def release(self) -> None:
        """Give the connection back."""
        self._lock.release()


@attrs.frozen
class UnitSettings:
    """What the units of work of one kind (writing or reading) of one store share.

    ``engine`` gives the connections (an option engine of SqlMetadata's);
    ``events`` is the engine listeners are registered on (see
    :func:`~docbinder.adapters.sql.engine.driver_lane_open`); ``begin_sql`` the
    ``BEGIN`` the driver lane sends on SQLite (empty elsewhere); ``shared`` the
    :class:`SharedConnectionLock` of an engine with one connection for all
    units (``sqlite://``), else ``None``. Made once per store by
    :meth:`for_engine`.
    """

    engine: Engine
    events: Engine
    begin_sql: str
    shared: SharedConnectionLock | None = None

    @classmethod
    def for_engine(
        cls,
        engine: Engine,
        events: Engine | None = None,
        shared: SharedConnectionLock | None = None,
    ) -> UnitSettings:
        """Settings for units on ``engine``; ``BEGIN`` from its execution options (SQLite only)."""
        sqlite = engine.dialect.name == "sqlite"
        begin_sql = sqlite_begin_sql(engine.get_execution_options()) if sqlite else ""
        return cls(engine, engine if events is None else events, begin_sql, shared)


class LazyConnection:
    """The connection of one unit of work, checked out of the pool at its first statement.

    Built from the :class:`UnitSettings` its kind of unit shares.

    Its transaction begins with the first statement (SQLAlchemy's autobegin;
    on SQLite the engine's ``begin`` hook makes that ``BEGIN IMMEDIATE`` or a
    deferred ``BEGIN``). Not thread-safe, like the unit that owns it.

    On SQLite, while nothing but docbinder listens to SQLAlchemy's statement
    and transaction events, the unit's transaction runs on the driver
    connection: :meth:`driver` sends its ``BEGIN``, the producer path's
    statements (the :class:`DriverStatement` writes) go there,
    and :meth:`commit` / :meth:`rollback` end it there (ADR 0029, 0032, 0033).
    A statement sent through SQLAlchemy meanwhile joins that transaction.
    """

    __slots__ = (
        "_begin_sql",
        "_conn",
        "_driver",
        "_engine",
        "_events",
        "_fairy",
        "_held",
        "_lane",
        "_own_begin",
        "_shared",
        "_sqlite",
        "lost",
    )

    def __init__(self, settings: UnitSettings) -> None:
        self._engine = settings.engine
        self._events = settings.events
        self._begin_sql = settings.begin_sql
        self._shared = settings.shared
        self._held = False
        self._sqlite = settings.engine.dialect.name == "sqlite"
        self._conn: Connection | None = None
        self._fairy: PoolProxiedConnection | None = None
        self._driver: Any = None
        self._lane: object = None
        self._own_begin = False
        self.lost: BaseException | None = None
        """The error under which the database ended the current transaction, if it did."""

    @property
    def dialect(self) -> Dialect:
        """The engine's dialect (no connection needed)."""
        return self._engine.dialect

    @property
    def checked_out(self) -> bool:
        """Whether this unit holds a connection of the pool."""
        return self._conn is not None or self._fairy is not None

    def connection(self) -> Connection:
        """The SQLAlchemy connection, checked out now if this is the first use.

        If the driver lane checked a connection out already (:meth:`driver`),
        SQLAlchemy's connection is made over that one, inside its transaction.
        """
        self._refuse_if_lost()
        conn = self._conn
        if conn is None:
            fairy, self._fairy = self._fairy, None
            if fairy is None:
                self._hold()
            conn = self._conn = (
                Connection(self._engine, fairy) if fairy is not None else self._engine.connect()
            )
        if self._own_begin and conn.get_transaction() is None:
            join_driver_transaction(conn)
        return conn

    def _refuse_if_lost(self) -> None:
        """Raise :class:`StorageError` while :attr:`lost` is set: the unit must be rolled back first.

        On SQLite the driver connection runs with ``isolation_level = None``:
        once the database ended the unit's transaction, each statement sent
        would commit on its own, although :meth:`SqlUnitOfWork.commit` then
        refuses; after an interrupt the work cannot be committed anyway. So
        nothing more is sent until ``rollback`` or ``close`` clears it.
        """
        lost = self.lost
        if lost is not None:
            raise StorageError(
                f"this transaction can no longer commit ({lost!r}); roll it back first"
            ) from lost

    def _ended(self) -> None:
        """The database ended the driver lane's transaction outside a guarded block: refuse, as lost.

        SQLite ends a transaction on its own on a full disk, an I/O error or
        an interrupt; a statement sent now would run outside any transaction
        and commit at once (``isolation_level = None``).
        """
        err = StorageError("the database ended this transaction; nothing of it can commit")
        self.lost = err
        raise err

    def close(self) -> None:
        """Return the connection to the pool (rolling back what was not committed).

        The next statement checks out a connection again.
        """
        conn, self._conn = self._conn, None
        fairy, self._fairy = self._fairy, None
        driver, self._driver = self._driver, None
        self._lane = None
        self._own_begin = False
        self.lost = None
        try:
            if driver is not None:
                # Ended here, not left to the pool's reset on return: that may be
                # off (pool_reset_on_return=None), and a lane transaction is not
                # one ``Connection.close`` knows of (a COMMIT interrupted before
                # it ran, a unit abandoned after a commit). A connection that
                # SQLAlchemy invalidated meanwhile is closed: nothing to end.
                try:
                    if driver.in_transaction:
                        driver.rollback()
                except self._engine.dialect.loaded_dbapi.Error:
                    pass
        finally:
            try:
                if conn is not None:
                    conn.close()
                if fairy is not None:
                    fairy.close()
            finally:
                if self._held:
                    self._held = False
                    if self._shared is not None:
                        self._shared.release()

    def _hold(self) -> None:
        """Take the engine's only connection for this unit (``sqlite://``); see :class:`SharedConnectionLock`."""
        if self._shared is not None and not self._held:
            self._shared.acquire()
            self._held = True

    def commit(self) -> None:
        """Commit the current transaction, if any; raises ``sqlalchemy.exc.DBAPIError`` on failure.

        A transaction SQLAlchemy knows of is committed through it; one that
        only the driver lane began (:meth:`driver`) with ``COMMIT`` on the
        driver connection.
        """
        own, self._own_begin = self._own_begin, False
        conn = self._conn
        if conn is not None and conn.in_transaction():
            conn.commit()
        elif own and self._driver.in_transaction:
            run_on_driver(self._engine.dialect, self._driver, "COMMIT")

    def rollback(self) -> None:
        """Roll back the current transaction, if any (as :meth:`commit`, with ``ROLLBACK``)."""
        own, self._own_begin = self._own_begin, False
        conn = self._conn
        if conn is not None and conn.in_transaction():
            conn.rollback()
        elif own and self._driver.in_transaction:
            run_on_driver(self._engine.dialect, self._driver, "ROLLBACK")

    def execute(self, statement: Any, parameters: Any = None) -> sa.CursorResult[Any]:
        """Run ``statement`` with ``parameters`` (a dict, or a list of dicts for executemany)."""
        return self.connection().execute(statement, parameters)

    def driver(self) -> Any | None:
        """On SQLite, the driver connection of this unit's transaction, begun now if needed; else ``None``.

        ``None`` also while anything but docbinder listens to SQLAlchemy's
        statement or transaction events (``before_cursor_execute``,
        ``after_cursor_execute``, ``handle_error``, ``begin``, ``commit``,
        ``rollback``, the savepoint events: tracing, statement counters,
        fault injection; :func:`~docbinder.adapters.sql.engine.driver_lane_open`):
        then the transaction and every statement go through SQLAlchemy, so
        the listeners see all of them. This is decided when the transaction
        begins (a listener added during a transaction counts from the next
        one). On the lane the unit's ``BEGIN`` (``IMMEDIATE`` or
        ``DEFERRED``, as the engine's hook would send it) goes to the driver
        connection too. A SQLite connection is a file handle: there is no
        disconnect for SQLAlchemy to detect, and :meth:`run_driver` wraps
        driver errors as SQLAlchemy would.
        """
        if not self._sqlite:
            return None
        self._refuse_if_lost()
        if self._own_begin:
            if not self._driver.in_transaction:
                self._ended()
            return self._driver
        conn = self._conn
        if (conn is None or conn.get_transaction() is None) and driver_lane_open(self._events):
            if conn is not None:
                driver = conn.connection.driver_connection
            else:
                if self._fairy is None:
                    self._hold()
                    self._fairy = self._engine.raw_connection()
                driver = self._fairy.driver_connection
            run_on_driver(self._engine.dialect, driver, self._begin_sql)
            self._driver, self._own_begin, self._lane = driver, True, None
            return driver
        conn = self.connection()
        transaction = conn.get_transaction()
        if transaction is None:
            transaction = conn.begin()  # BEGIN IMMEDIATE / DEFERRED through the engine's hook
        if transaction is not self._lane:
            # Decided once per transaction: a listener added meanwhile counts from the next.
            self._lane = transaction
            self._driver = None if statements_listened(conn) else conn.connection.driver_connection
        return self._driver

    def run_driver(self, driver: Any, sql: str, parameters: Any = (), many: bool = False) -> Any:
        """Run ``sql`` on ``driver`` (from :meth:`driver`); return the driver's cursor.

        A driver error is wrapped with ``sqlalchemy.exc.DBAPIError.instance``
        (an ``IntegrityError`` stays one), as SQLAlchemy wraps it for its own
        statements, so :mod:`docbinder.adapters.sql.errors` translates it the
        same way.
        """
        if not many:
            return run_on_driver(self._engine.dialect, driver, sql, parameters)
        dialect = self._engine.dialect
        dbapi = dialect.loaded_dbapi
        try:
            return driver.executemany(sql, parameters)
        except dbapi.Error as err:
            raise sa_exc.DBAPIError.instance(
                sql, parameters, err, dbapi.Error, dialect=dialect
            ) from err

    @contextmanager
    def begin_nested(self) -> Iterator[None]:
        """A savepoint around the block: released on success, rolled back to on any error.

        Plain ``SAVEPOINT`` / ``RELEASE SAVEPOINT`` / ``ROLLBACK TO SAVEPOINT``
        (SQL:1999; the same statements ``Connection.begin_nested`` sends),
        because SQLAlchemy compiles its savepoint clauses anew for every use.
        Savepoints here never nest. PostgreSQL and MariaDB get them through
        ``exec_driver_sql``; SQLite through :meth:`driver` when it gives one.

        If rolling back to the savepoint fails, the database has already ended
        the whole transaction (a deadlock victim on MariaDB, a full disk on
        SQLite, a statement interrupted by ``KeyboardInterrupt``): the original
        exception propagates unchanged and :attr:`lost` is set, so the unit
        refuses to commit instead of committing an empty transaction as if
        the work before the savepoint had been kept.
        """
        run = self._savepoint_runner()
        run(_SAVEPOINT)
        try:
            yield
        except BaseException as exc:
            try:
                run(_ROLLBACK_TO_SAVEPOINT)
            except Exception:
                self.lost = exc
            raise
        run(_RELEASE_SAVEPOINT)

    def one_statement(self) -> AbstractContextManager[None]:
        """Guard a block that sends exactly one statement: as :meth:`begin_nested`, cheaper on SQLite.

        SQLite undoes a failed statement by itself and keeps the transaction
        open (every statement is atomic; a constraint failure aborts only the
        statement), unless the error made it end the whole transaction (a
        full disk, an I/O error, an interrupt). So this is :meth:`undoable`
        with nothing to undo: on SQLite's driver lane no savepoint is sent;
        after a driver error the driver says whether the transaction is
        still open, and if it is not, :attr:`lost` is set exactly as a
        failed ``ROLLBACK TO SAVEPOINT`` would set it; any other exception
        (an interrupt that arrives once the statement ran) also sets
        :attr:`lost`: the statement cannot be undone alone, so the unit
        refuses to commit. Elsewhere (PostgreSQL, where a failed statement
        aborts the transaction; MariaDB; SQLite with statement listeners)
        this is :meth:`begin_nested`.
        """
        return self.undoable(_nothing_to_undo)

    def undoable(self, undo: Callable[[], None]) -> AbstractContextManager[None]:
        """Guard a block of several writes: as :meth:`begin_nested`, with ``undo`` instead of a savepoint on SQLite.

        On SQLite's driver lane (:meth:`driver`) the unit holds the database's
        write lock from its first write until it ends, so no other writer
        can have touched what the block wrote: when the block raises an
        ``Exception``, ``undo`` takes back what the block did (it must know
        which of its statements ran) and the transaction goes on, as after
        ``ROLLBACK TO SAVEPOINT``, without the savepoint's two statements
        and the statement journal SQLite keeps for it (a temp file once it
        passes 64 KiB; ADR 0037). :attr:`lost` is set, so the unit refuses
        to commit, when the database ended the transaction (a full disk, an
        I/O error), when ``undo`` fails, and for anything raised but a
        driver error (``sqlalchemy.exc.DBAPIError``: the statement that
        raised it did not take effect, so the block knows what ran) or a
        docbinder error the block raised itself: an interrupt, or an
        ``Exception`` a signal handler raises (a time limit's
        ``TimeoutError``), may arrive after a statement ran and before the
        block could note it, and ``undo`` would then leave that statement's
        work in place or give back a number a stored row holds. Elsewhere
        this is :meth:`begin_nested`.

        A plain context manager object (:class:`_Undoable`), not a generator:
        the producer path enters two per attach.
        """
        return _Undoable(self, undo)

    def _savepoint_runner(self) -> Callable[[str], Any]:
        driver = self.driver()
        if driver is None:
            return self.connection().exec_driver_sql
        return lambda sql: self.run_driver(driver, sql)


def _nothing_to_undo() -> None:
    """The undo of a block of one statement: SQLite took back the statement that failed."""


class _AdmitRaised(DocbinderError):
    """What ``add_message``'s ``admit`` raised, if not a docbinder error, carried out of its block.

    ``admit`` runs no statement, so whatever it raises is a refusal the block
    can undo (:meth:`LazyConnection.undoable` undoes a block only for docbinder
    and database errors, and on SQLite's driver lane refuses further work of
    the unit after any other exception). ``add_message`` raises :attr:`error`
    again once the block is undone, so the unit stays usable: a
    ``produce_file`` still stores its file when a custom authorizer fails.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _admit(admit: Callable[[Resource], None], owner: Resource) -> None:
    """Call ``admit`` on ``owner``; an exception other than a docbinder error comes as :class:`_AdmitRaised`."""
    try:
        admit(owner)
    except DocbinderError:
        raise
    except Exception as exc:
        raise _AdmitRaised(exc) from exc


class _Undoable:
    """What :meth:`LazyConnection.undoable` returns; entered once."""

    __slots__ = ("_driver", "_nested", "_session", "_undo")

    def __init__(self, session: LazyConnection, undo: Callable[[], None]) -> None:
        self._session = session
        self._undo = undo
        self._driver: Any = None
        self._nested: AbstractContextManager[None] | None = None

    def __enter__(self) -> None:
        session = self._session
        driver = self._driver = session.driver()
        if driver is None:
            nested = session.begin_nested()
            nested.__enter__()
            self._nested = nested

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        if self._nested is not None:
            return self._nested.__exit__(exc_type, exc, traceback)
        if exc is None:
            return None
        session = self._session
        if isinstance(exc, sa_exc.DBAPIError | DocbinderError):
            if not self._driver.in_transaction:
                session.lost = exc
                return None
            try:
                self._undo()
            except BaseException:
                session.lost = exc
            return None
        session.lost = exc
        return None


class DriverStatement:
    """A Core statement that SQLAlchemy compiles once per dialect, then sent as driver SQL.

    ``Connection.execute`` of a Core statement spends most of its CPU (about
    30-60 µs per statement, against 2-4 µs in the driver) looking the
    compiled form up by cache key, building the execution context and
    processing parameters. For the few statements of the producer path
    (inserts and the sequence-number update) this class keeps, per dialect
    and set of parameter names, what SQLAlchemy's compiler made of the
    statement (``Compiled.string``, the parameter order, each bind type's
    ``bind_processor`` for that dialect) and runs it with
    ``Connection.exec_driver_sql`` (PostgreSQL, MariaDB: transactions,
    events and the wrapping of driver errors such as ``IntegrityError`` and
    disconnects stay SQLAlchemy's), or, on SQLite's driver lane
    (:meth:`LazyConnection.driver`), on the driver connection itself with
    the same error wrapping. The SQL text is the one ``Connection.execute``
    would send. Result rows get no type processing: use it for statements
    whose result is a row count or integers.

    Parameters are one dict, or a list of dicts with the same keys
    (executemany). Thread-safe: the per-dialect entries are built once and
    only replaced by an equal one if two threads race.
    """

    __slots__ = ("_prepared", "_statement")

    def __init__(self, statement: sa.Insert | sa.Update | sa.Delete) -> None:
        self._statement = statement
        self._prepared: weakref.WeakKeyDictionary[Dialect, dict[tuple[str, ...], _Prepared]] = (
            weakref.WeakKeyDictionary()
        )

    def execute(
        self, session: LazyConnection, parameters: dict[str, Any] | list[dict[str, Any]]
    ) -> None:
        """Run with ``parameters``; raises what ``Connection.exec_driver_sql`` raises."""
        self._run(session, parameters)

    def rowcount(self, session: LazyConnection, parameters: dict[str, Any]) -> int:
        """Run with ``parameters``; the number of rows the driver says it matched."""
        result = self._run(session, parameters)
        count = result.rowcount
        return int(count) if isinstance(count, int) else 0

    def first(self, session: LazyConnection, parameters: dict[str, Any]) -> tuple[Any, ...] | None:
        """Run with ``parameters``; the first returned row as a plain tuple, or ``None``."""
        result = self._run(session, parameters)
        rows = result.fetchall()
        return tuple(rows[0]) if rows else None

    def _run(
        self, session: LazyConnection, parameters: dict[str, Any] | list[dict[str, Any]]
    ) -> Any:
        many = isinstance(parameters, list)
        rows = parameters if isinstance(parameters, list) else [parameters]
        prepared = self._prepare(session.dialect, tuple(rows[0]))
        driver = session.driver()
        if driver is not None:
            if many:
                return session.run_driver(
                    driver, prepared.sql, [prepared.bind(row) for row in rows], many=True
                )
            return session.run_driver(driver, prepared.sql, prepared.bind(rows[0]))
        conn = session.connection()
        if many:
            return conn.exec_driver_sql(prepared.sql, [prepared.bind(row) for row in rows])
        return conn.exec_driver_sql(prepared.sql, prepared.bind(rows[0]))

    def _prepare(self, dialect: Dialect, keys: tuple[str, ...]) -> _Prepared:
        per_dialect = self._prepared.get(dialect)
        if per_dialect is None:
            per_dialect = self._prepared.setdefault(dialect, {})
        prepared = per_dialect.get(keys)
        if prepared is None:
            compiled = self._statement.compile(dialect=dialect, column_keys=list(keys))
            if not isinstance(compiled, SQLCompiler):  # pragma: no cover - DML always is
                raise TypeError(f"expected an SQL compiler, got {type(compiled).__name__}")
            prepared = _Prepared(compiled, dialect, keys)
            per_dialect[keys] = prepared
        return prepared


class _Prepared:
    """One compiled form of a :class:`DriverStatement`: SQL text, parameter order, processors.

    ``keys`` are the names of the parameters a caller passes. Which driver
    parameter takes which of them, and the value of every other bind (the
    ``1`` of ``last_sequence_nr + 1``), is worked out once from what
    ``Compiled.construct_params`` gives for marker values; :meth:`bind` then
    only picks and processes values, which is what ``construct_params`` plus
    the processors would give.
    """

    __slots__ = ("_plan", "_positional", "sql")

    def __init__(self, compiled: SQLCompiler, dialect: Dialect, keys: Sequence[str]) -> None:
        self.sql = compiled.string
        processors: dict[str, Callable[[Any], Any]] = {}
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                processors[name] = process
        markers = {key: object() for key in keys}
        by_marker = {id(marker): key for key, marker in markers.items()}
        values = compiled.construct_params(markers)
        self._positional = bool(compiled.positional)
        names = tuple(compiled.positiontup or ()) if self._positional else tuple(values)
        plan: list[tuple[str, str | None, Any, Callable[[Any], Any] | None]] = []
        for name in names:
            value = values[name]
            processor = processors.get(name)
            key = by_marker.get(id(value))
            if key is not None:
                plan.append((name, key, None, processor))
            else:  # a value the statement itself holds: processed once, here
                plan.append((name, None, value if processor is None else processor(value), None))
        self._plan = tuple(plan)

    def bind(self, parameters: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        """The driver parameters for ``parameters`` (literal binds of the statement included)."""
        values = [
            fixed
            if key is None
            else (parameters[key] if process is None else process(parameters[key]))
            for _name, key, fixed, process in self._plan
        ]
        if self._positional:
            return tuple(values)
        return {name: value for (name, *_rest), value in zip(self._plan, values, strict=True)}


class DriverQuery:
    """A Core ``SELECT`` that, on SQLite's driver lane, is sent as driver SQL with result processing.

    Used for the workflow read that resolving and ``get_workflow`` start
    with (rights are checked on the stored row, ADR 0012; an attach gets the
    row from its numbering statement instead, ADR 0038). Off the lane (PostgreSQL, MariaDB, SQLite with statement listeners)
    it runs with ``Connection.execute`` as any other read. On the lane (see
    :meth:`LazyConnection.driver`), the statement compiled once per dialect
    goes to the driver connection, and each value of the row passes the
    ``result_processor`` its column type gives for the dialect (the
    ``UtcDateTime`` columns), so the row is the one ``Connection.execute``
    would give. Thread-safe as :class:`DriverStatement`.
    """

    __slots__ = ("_prepared", "_statement")

    def __init__(self, statement: sa.Select[Any]) -> None:
        self._statement = statement
        self._prepared: weakref.WeakKeyDictionary[Dialect, _PreparedQuery] = (
            weakref.WeakKeyDictionary()
        )

    def first(
        self, session: LazyConnection, parameters: dict[str, Any]
    ) -> Mapping[Any, Any] | None:
        """The first row as a mapping of column keys to values, or ``None``."""
        driver = session.driver()
        if driver is None:
            row = session.execute(self._statement, parameters).first()
            return None if row is None else row._mapping
        prepared = self._prepared.get(session.dialect)
        if prepared is None:
            prepared = _PreparedQuery(self._statement, session.dialect)
            self._prepared[session.dialect] = prepared
        cursor = session.run_driver(driver, prepared.sql, prepared.bind(parameters))
        try:
            values = cursor.fetchone()
        finally:
            cursor.close()
        return None if values is None else prepared.row(values)


class _PreparedQuery(_Prepared):
    """A :class:`_Prepared` ``SELECT`` plus its column keys and result processors."""

    __slots__ = ("_keys", "_results")

    def __init__(self, statement: sa.Select[Any], dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler):  # pragma: no cover - a SELECT always is
            raise TypeError(f"expected an SQL compiler, got {type(compiled).__name__}")
        required = [name for bind, name in compiled.bind_names.items() if bind.required]
        super().__init__(compiled, dialect, required)
        columns = list(statement.selected_columns)
        self._keys = tuple(str(column.key) for column in columns)
        self._results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
        )

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """The driver's row as ``{column key: processed value}``."""
        return {
            key: value if process is None else process(value)
            for key, process, value in zip(self._keys, self._results, values, strict=True)
        }


# The producer path's writes (see DriverStatement).
_DRIVER_INSERT_FILE = DriverStatement(_INSERT_FILE)
_DRIVER_INSERT_MESSAGE = DriverStatement(_INSERT_MESSAGE)
_DRIVER_INSERT_DOCUMENTS = DriverStatement(_INSERT_DOCUMENTS)
_DRIVER_BUMP_SEQUENCE = DriverStatement(_BUMP_SEQUENCE)
_DRIVER_BUMP_SEQUENCE_RETURNING = DriverStatement(_BUMP_SEQUENCE_RETURNING)
_DRIVER_GET_WORKFLOW = DriverQuery(_GET_WORKFLOW)
# What SQLite's driver lane sends to take back a refused message (LazyConnection.undoable).
_DRIVER_UNBUMP_SEQUENCE = DriverStatement(_UNBUMP_SEQUENCE)
_DRIVER_DELETE_MESSAGE = DriverStatement(_DELETE_MESSAGE)
_DRIVER_DELETE_MESSAGE_DOCUMENTS = DriverStatement(_DELETE_MESSAGE_DOCUMENTS)


def _load(row: sa.Row[Any], cls: type[T]) -> T:
    return _load_mapping(row._mapping, cls)


def _load_mapping(row: Mapping[Any, Any], cls: type[T]) -> T:
    try:
        return from_row(row, cls)
    except Exception as err:  # any validation or structuring failure means a corrupt row
        raise StorageError(f"a stored {cls.__name__} row is invalid: {err}") from err


def _version_row(version: FileVersion) -> dict[str, Any]:
    series = version.series
    return {
        "file_id": version.file_id,
        "mandate_id": series.scope.mandate_id,
        "feature_instance_id": series.scope.feature_instance_id,
        "namespace": series.namespace,
        "series_name": series.name,
        "series_key": series.key,
        "space_key": series.space_key,
        "version": version.version,
        "user_metadata": json.dumps(version.user_metadata, ensure_ascii=True),
        "host_data": json.dumps(version.host_data, ensure_ascii=True),
    }


def _load_version(row: sa.Row[Any] | None) -> FileVersion | None:
    if row is None:
        return None
    try:
        series = VersionSeries(
            Scope(row.mandate_id, row.feature_instance_id), row.series_name, row.namespace
        )
        return FileVersion(
            file_id=row.file_id,
            series=series,
            version=row.version,
            user_metadata=json.loads(row.user_metadata),
            host_data=json.loads(row.host_data),
        )
    except Exception as err:  # a corrupt row
        raise StorageError(f"a stored FileVersion row is invalid: {err}") from err


def _comparable_id(session: LazyConnection, table: sa.Table) -> sa.ColumnElement[Any]:
    # Ids are compared by code point, as Python does; PostgreSQL would
    # otherwise use the database's linguistic collation. SQLite and MariaDB
    # (utf8mb4_bin) compare binary UTF-8, which is code point order.
    ident: sa.ColumnElement[Any] = table.c.id
    if session.dialect.name == "postgresql":
        ident = ident.collate("C")
    return ident


def _newest_first_page(
    session: LazyConnection,
    table: sa.Table,
    mandate_id: str,
    limit: int | None,
    after: FileItem | ChatWorkflow | None,
) -> list[sa.Row[Any]]:
    """Rows of one mandate by (``created_at``, id) descending, behind ``after``, at most ``limit``.

    Uses the ``(mandate_id, created_at)`` index as a range: a later page costs
    what the first one does.
    """
    _check_limit(limit)
    ident = _comparable_id(session, table)
    stmt = sa.select(table).where(table.c.mandate_id == mandate_id)
    if after is not None:
        stmt = stmt.where(
            sa.or_(
                table.c.created_at < after.created_at,
                sa.and_(table.c.created_at == after.created_at, ident < after.id),
            )
        )
    stmt = stmt.order_by(table.c.created_at.desc(), ident.desc()).limit(limit)
    with translating():
        return list(session.execute(stmt).all())


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise InvalidInput("limit must be a non-negative integer or None")


_DATABASE_ID = "database_id"
_LOCATION = "database_location"
_FORMER = "former_database_id:"
_STORE_LOCATION = "store_location:"


def _store_location_name(store_id: str) -> str:
    """The ``docbinder_meta`` name of a store's location: ``store_location:<key>`` (64 at most)."""
    return _STORE_LOCATION + store_location_key(store_id)


class _Replaced(Exception):
    """Another unit replaced the stale database id first."""


def database_location(session: LazyConnection) -> str:
    """A fingerprint (SHA-256 hex) of where the connected database lives, for ADR 0022.

    SQLite: the device and inode number of the main database file
    (:func:`sqlite_location`; a copy is a new file, and a file-system image
    or volume clone is another device; a move or rename within one file
    system keeps both; an in-memory database: the engine object).
    PostgreSQL (:func:`postgres_location`): the cluster's
    ``system_identifier`` (``pg_control_system()``, ``None`` without the
    right to read it), ``current_database()``, its OID and
    ``current_schema()`` (so a ``pg_dump``/restore into another database,
    schema or cluster differs), and the running instance's
    ``inet_server_addr()``, ``inet_server_port()`` and ``data_directory``
    (``pg_settings``, ``None`` without the right to read it), so a physical
    copy (``cp -a`` of the data directory, ``pg_basebackup``, a promoted
    replica) served elsewhere differs too. MariaDB/MySQL: ``@@hostname``,
    ``@@port``, ``@@datadir`` and ``DATABASE()``. Others: the URL without
    password. Only server-side facts, never the client's connection string,
    so two clients that reach one database by different host names agree,
    as long as they reach the same server address (PostgreSQL: a client on
    the Unix socket and one over TCP, or over two interfaces, see different
    ``inet_server_addr()`` values and make the id rotate: space kept for
    ``gc``, never data lost).
    """
    conn = session.connection()
    dialect = session.dialect.name
    if dialect == "sqlite":
        files = [row[2] for row in conn.exec_driver_sql("PRAGMA database_list") if row[1] == "main"]
        if not files or not files[0]:
            where = f"sqlite memory {id(conn.engine)}"
        else:
            where = sqlite_location(os.stat(files[0]))
    elif dialect == "postgresql":
        system: object = None
        try:
            with session.begin_nested():
                system = conn.exec_driver_sql(
                    "SELECT system_identifier FROM pg_control_system()"
                ).scalar()
        except sa_exc.DBAPIError:
            system = None  # not allowed to read it: the instance's values below still count
        row = conn.exec_driver_sql(_POSTGRES_LOCATION).one()
        where = postgres_location(system, *row)
    elif dialect in ("mysql", "mariadb"):
        row = conn.exec_driver_sql("SELECT @@hostname, @@port, @@datadir, DATABASE()").one()
        where = f"mysql {row[0]}:{row[1]} {row[2]} database {row[3]}"
    else:
        where = conn.engine.url.set(password=None).render_as_string(hide_password=True)
    return hashlib.sha256(where.encode()).hexdigest()


_POSTGRES_LOCATION = (
    "SELECT current_database(), current_schema(), "
    "(SELECT oid FROM pg_database WHERE datname = current_database()), "
    "inet_server_addr(), inet_server_port(), "
    "(SELECT setting FROM pg_settings WHERE name = 'data_directory')"
)
"""The values :func:`postgres_location` takes after ``system``, in order; ``pg_settings``
shows ``data_directory`` only to roles allowed to read it (else the subquery is NULL)."""


def sqlite_location(stat: os.stat_result) -> str:
    """What :func:`database_location` fingerprints for a SQLite file: ``st_dev`` and ``st_ino``.

    The inode alone is kept by a file-system image or volume clone (a
    snapshot mounted elsewhere, a copied disk image); the device number of
    the clone differs.
    """
    return f"sqlite device {stat.st_dev} inode {stat.st_ino}"


def postgres_location(
    system: object,
    database: object,
    schema: object,
    oid: object,
    server_addr: object,
    server_port: object,
    data_directory: object,
) -> str:
    """What :func:`database_location` fingerprints for PostgreSQL, from the values of one query.

    ``system`` is ``pg_control_system().system_identifier``; the others are
    :data:`_POSTGRES_LOCATION`'s columns. ``None`` values (no right to read
    them; ``inet_server_addr()`` on a Unix socket) are part of the value.
    The cluster, database, OID and schema are the same in a physical copy;
    the address, port and data directory of the running instance tell it
    from the original while both run.
    """
    return (
        f"postgresql cluster {system} database {database} oid {oid} schema {schema} "
        f"server {server_addr}:{server_port} data {data_directory}"
    )


class SqlFileRepository:
    """FileItems in table ``file_items``; see the port for the contract."""

    def __init__(self, session: LazyConnection) -> None:
        self._session = session

    def add(self, item: FileItem, *, deduplicate: bool = True) -> None:
        row = to_row(item)
        row["dedup_key"] = (
            duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
            if deduplicate
            else None
        )
        with translating():
            try:
                with self._session.one_statement():
                    _DRIVER_INSERT_FILE.execute(self._session, row)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_items) from err

    def get(self, file_id: str) -> FileItem | None:
        with translating():
            row = self._session.execute(_GET_FILE, {"id": file_id}).first()
        return None if row is None else _load(row, FileItem)

    def get_many(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        wanted = list(dict.fromkeys(file_ids))
        found: dict[str, FileItem] = {}
        for row in _rows_by_id(self._session, file_items, wanted):
            item = _load(row, FileItem)
            found[item.id] = item
        return {file_id: found[file_id] for file_id in wanted if file_id in found}

    def find_duplicates(
        self, sha256: str, file_name: str, created_by: str, scope: Scope
    ) -> list[FileItem]:
        params = {
            "key": duplicate_key(sha256, file_name, created_by, scope),
            "sha256": sha256,
            "file_name": file_name,
            "created_by": created_by,
            "mandate_id": scope.mandate_id,
            "feature_instance_id": scope.feature_instance_id,
        }
        stmt = _FIND_DUPLICATES[scope.feature_instance_id is not None]
        with translating():
            rows = self._session.execute(stmt, params).all()
        return [_load(row, FileItem) for row in rows]

    def update(self, item: FileItem, *, if_blob_key: str | None = None) -> None:
        values = to_row(item)
        del values["id"]
        new_key = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
        # Items stored without deduplication stay out of duplicate detection.
        values["dedup_key"] = sa.case((file_items.c.dedup_key.is_(None), sa.null()), else_=new_key)
        stmt = sa.update(file_items).where(file_items.c.id == item.id).values(values)
        if if_blob_key is not None:
            # Compare-and-set in the statement itself: the row lock the UPDATE
            # takes makes a second writer re-check the key after the first commits.
            stmt = stmt.where(file_items.c.blob_key == if_blob_key)
        with translating():
            try:
                with self._session.begin_nested():
                    result = self._session.execute(stmt)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_items) from err
        if _rowcount(result) == 0:
            if if_blob_key is not None and self.get(item.id) is not None:
                raise Conflict(f"FileItem {item.id} no longer names blob {if_blob_key}")
            raise FileItemNotFound(f"no FileItem {item.id}")

    def delete(self, file_id: str, *, if_blob_key: str | None = None) -> bool:
        stmt = sa.delete(file_items).where(file_items.c.id == file_id)
        if if_blob_key is not None:
            stmt = stmt.where(file_items.c.blob_key == if_blob_key)
        with translating():
            result = self._session.execute(stmt)
            deleted = _rowcount(result) > 0
            if deleted:
                self._session.execute(sa.delete(gc_marks).where(gc_marks.c.file_id == file_id))
                self._session.execute(_DELETE_VERSION_OF, {"id": file_id})
        return deleted

    def database_id(self, *, create: bool = False) -> str | None:
        """``docbinder_meta`` row ``database_id`` if row ``database_location`` matches this database.

        See :func:`database_location` for the fingerprint. With ``create`` a
        missing id is inserted (a UUID), and a stale one (copied or moved
        database) is replaced by compare-and-set, the old one kept as row
        ``former_database_id:<id>``. Raises :class:`Conflict` when another
        unit replaced it meanwhile and the result still does not match.
        """
        with translating():
            here = database_location(self._session)
            meta = self._meta()
            found = meta.get(_DATABASE_ID)
            if found is not None and meta.get(_LOCATION) == here:
                return found
            if not create:
                return None
            made = str(uuid.uuid4())
            try:
                with self._session.begin_nested():
                    if found is None:
                        self._session.execute(
                            sa.insert(docbinder_meta), {"name": _DATABASE_ID, "value": made}
                        )
                    else:
                        self._replace_database_id(found, made)
                    self._set_meta(_LOCATION, here)
            except (sa_exc.IntegrityError, _Replaced):
                pass  # another unit made or replaced it first: read theirs
            meta = self._meta()
        again = meta.get(_DATABASE_ID)
        if again is None or meta.get(_LOCATION) != here:
            raise Conflict("the database identity was changed meanwhile; try again")
        return again

    def former_database_ids(self) -> tuple[str, ...]:
        """Values of the ``former_database_id:*`` rows, and the stored id if it is stale."""
        with translating():
            here = database_location(self._session)
            meta = self._meta()
        former = {value for name, value in meta.items() if name.startswith(_FORMER)}
        found = meta.get(_DATABASE_ID)
        if found is not None and meta.get(_LOCATION) != here:
            former.add(found)
        return tuple(sorted(former))

    def store_locations(self) -> dict[str, str]:
        """The ``docbinder_meta`` rows ``store_location:<store id>`` (ADR 0030)."""
        with translating():
            meta = self._meta()
        return {
            name[len(_STORE_LOCATION) :]: value
            for name, value in meta.items()
            if name.startswith(_STORE_LOCATION)
        }

    def record_store_location(self, store_id: str, location: str, *, replace: bool = False) -> str:
        """Insert (or with ``replace`` set) row ``store_location:<store id>``; return its value.

        An insert that loses to a concurrent one (primary key) keeps theirs.
        The row is named by :func:`~docbinder.ports.metadata.store_location_key`.
        """
        name = _store_location_name(store_id)
        dm = docbinder_meta.c
        with translating():
            if replace:
                self._set_meta(name, location)
            else:
                try:
                    with self._session.begin_nested():
                        self._session.execute(
                            sa.insert(docbinder_meta), {"name": name, "value": location}
                        )
                except sa_exc.IntegrityError:
                    pass  # recorded before (or by a concurrent unit): keep it
            value = self._session.execute(sa.select(dm.value).where(dm.name == name)).scalar()
        return str(value)

    def _meta(self) -> dict[str, str]:
        dm = docbinder_meta.c
        rows = self._session.execute(sa.select(dm.name, dm.value)).all()
        return {str(row.name): str(row.value) for row in rows}

    def _set_meta(self, name: str, value: str) -> None:
        dm = docbinder_meta.c
        changed = self._session.execute(
            sa.update(docbinder_meta).where(dm.name == name).values(value=value)
        )
        if _rowcount(changed) == 0:
            self._session.execute(sa.insert(docbinder_meta), {"name": name, "value": value})

    def _replace_database_id(self, stale: str, made: str) -> None:
        """Compare-and-set ``database_id`` from ``stale`` to ``made``; keep ``stale`` as former."""
        dm = docbinder_meta.c
        changed = self._session.execute(
            sa.update(docbinder_meta)
            .where(dm.name == _DATABASE_ID, dm.value == stale)
            .values(value=made)
        )
        if _rowcount(changed) == 0:
            raise _Replaced
        self._set_meta(_FORMER + stale, stale)

    def confirm(self, file_id: str, blob_key: str) -> FileItem | None:
        """Lock the row with a no-op ``UPDATE`` (compare-and-set on the blob key), then read it.

        The ``UPDATE`` takes the row's write lock until the transaction ends
        (PostgreSQL, InnoDB) or needs the database write lock (SQLite), so a
        delete or content update of the row waits for this unit. MariaDB
        counts matched rather than changed rows (SQLAlchemy sets
        ``CLIENT.FOUND_ROWS``), so the no-op still reports one row.
        """
        fi = file_items.c
        stmt = (
            sa.update(file_items)
            .where(fi.id == file_id, fi.blob_key == blob_key)
            .values(blob_key=fi.blob_key)
        )
        with translating():
            result = self._session.execute(stmt)
        if _rowcount(result) == 0:
            return None
        item = self.get(file_id)
        return item if item is not None and item.blob_key == blob_key else None

    def lock(self, file_id: str) -> FileItem | None:
        """``SELECT ... FOR UPDATE`` of the row (SQLAlchemy renders no clause on SQLite)."""
        with translating():
            row = self._session.execute(_LOCK_FILE, {"id": file_id}).first()
        return None if row is None else _load(row, FileItem)

    def lock_shared(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        """``SELECT ... FOR SHARE`` / ``LOCK IN SHARE MODE``, :data:`IN_CHUNK` ids per query."""
        wanted = list(dict.fromkeys(file_ids))
        found: dict[str, FileItem] = {}
        for start in range(0, len(wanted), IN_CHUNK):
            with translating():
                rows = self._session.execute(
                    _SHARE_FILES, {"ids": wanted[start : start + IN_CHUNK]}
                ).all()
            for row in rows:
                item = _load(row, FileItem)
                found[item.id] = item
        return {file_id: found[file_id] for file_id in wanted if file_id in found}

    def set_blob_store(self, file_id: str, blob_key: str, blob_store: str) -> bool:
        fi = file_items.c
        stmt = (
            sa.update(file_items)
            .where(fi.id == file_id, fi.blob_key == blob_key, fi.blob_store.is_(None))
            .values(blob_store=blob_store)
        )
        with translating():
            result = self._session.execute(stmt)
        return _rowcount(result) > 0

    def add_version(self, version: FileVersion) -> None:
        with translating():
            try:
                with self._session.begin_nested():
                    self._session.execute(_INSERT_VERSION, _version_row(version))
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_versions) from err

    def latest_version(self, series_key: str) -> FileVersion | None:
        with translating():
            row = self._session.execute(_LATEST_VERSION, {"key": series_key}).first()
        return _load_version(row)

    def get_version(self, series_key: str, version: int) -> FileVersion | None:
        with translating():
            row = self._session.execute(
                _GET_VERSION, {"key": series_key, "version": version}
            ).first()
        return _load_version(row)

    def list_versions(self, series_key: str) -> builtins.list[FileVersion]:
        with translating():
            rows = self._session.execute(_LIST_VERSIONS, {"key": series_key}).all()
        return [v for v in map(_load_version, rows) if v is not None]

    def version_of(self, file_id: str) -> FileVersion | None:
        with translating():
            row = self._session.execute(_VERSION_OF, {"id": file_id}).first()
        return _load_version(row)

    def series_names(self, space_key: str) -> builtins.list[str]:
        with translating():
            rows = self._session.execute(_SERIES_NAMES, {"space": space_key}).all()
        return sorted(row[0] for row in rows)

    def mark_missing(self, file_id: str, blob_key: str, at: datetime) -> datetime:
        gm = gc_marks.c
        with translating():
            row = self._session.execute(
                sa.select(gm.blob_key, gm.marked_at).where(gm.file_id == file_id)
            ).first()
            if row is not None and row.blob_key == blob_key:
                marked: datetime = row.marked_at
                return marked
            if row is not None:
                self._session.execute(sa.delete(gc_marks).where(gm.file_id == file_id))
            try:
                with self._session.begin_nested():
                    self._session.execute(
                        sa.insert(gc_marks),
                        {"file_id": file_id, "blob_key": blob_key, "marked_at": at},
                    )
            except sa_exc.IntegrityError:
                # Another gc marked it meanwhile: its mark stands.
                again = self._session.execute(
                    sa.select(gm.marked_at).where(gm.file_id == file_id)
                ).scalar_one_or_none()
                return again if again is not None else at
        return at

    def clear_mark(self, file_id: str) -> None:
        with translating():
            self._session.execute(sa.delete(gc_marks).where(gc_marks.c.file_id == file_id))

    def marks(self) -> dict[str, tuple[str, datetime]]:
        gm = gc_marks.c
        with translating():
            rows = self._session.execute(sa.select(gm.file_id, gm.blob_key, gm.marked_at)).all()
        return {row.file_id: (row.blob_key, row.marked_at) for row in rows}

    def list(
        self, mandate_id: str, *, limit: int | None = None, after: FileItem | None = None
    ) -> list[FileItem]:
        rows = _newest_first_page(self._session, file_items, mandate_id, limit, after)
        return [_load(row, FileItem) for row in rows]

    def iter_all(self) -> Iterator[FileItem]:
        """Every item, in id order, read in keyset-paginated batches of :data:`SCAN_BATCH`.

        Iterate inside the unit of work; other statements may run between
        items (no server-side cursor stays open).
        """
        for row in _scan(self._session, file_items):
            yield _load(row, FileItem)


class SqlWorkflowRepository:
    """Workflows, messages and documents in their tables; see the port for the contract."""

    def __init__(self, session: LazyConnection) -> None:
        self._session = session

    def add_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        row["last_sequence_nr"] = 0
        with translating():
            try:
                with self._session.begin_nested():
                    self._session.execute(_INSERT_WORKFLOW, row)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, workflows) from err

    def get_workflow(self, workflow_id: str) -> ChatWorkflow | None:
        with translating():
            row = _DRIVER_GET_WORKFLOW.first(self._session, {"id": workflow_id})
        return None if row is None else _load_mapping(row, ChatWorkflow)

    def update_workflow(self, workflow: ChatWorkflow) -> None:
        row = to_row(workflow)
        values = {
            name: row[name]
            for name in ("status", "current_round", "current_task", "current_action")
        }
        stmt = sa.update(workflows).where(workflows.c.id == workflow.id).values(values)
        with translating():
            result = self._session.execute(stmt)
        if _rowcount(result) == 0:
            raise WorkflowNotFound(f"no workflow {workflow.id}")

    def advance_counters(self, workflow_id: str, step: CounterStep) -> WorkflowCounters:
        """One conditional ``UPDATE`` of the counters, then a read of the row it locked.

        An increment is ``SET level = level + 1`` (below ``MAX_COUNTER``); an
        absolute step sets the values only ``WHERE`` the stored counters are
        not ahead of them, compared left to right. Either way the database
        decides on the row as it is when the ``UPDATE`` gets its lock, so
        concurrent units never lose an advance. When no row changed, the
        stored counters say why (:class:`WorkflowNotFound`,
        :class:`CountersWouldGoBack`, :class:`InvalidInput` at the maximum).
        """
        columns = _COUNTERS[step.index :]
        top = columns[0]
        values: dict[str, Any] = {c.name: v for c, v in zip(columns[1:], step.below, strict=True)}
        if step.value is None:
            values[top.name] = top + 1
            condition = top < MAX_COUNTER
        else:
            values[top.name] = step.value
            condition = _not_ahead(columns, (step.value, *step.below))
        stmt = sa.update(workflows).where(workflows.c.id == workflow_id, condition).values(values)
        with translating():
            changed = _rowcount(self._session.execute(stmt))
            row = self._session.execute(_READ_COUNTERS, {"wf": workflow_id}).first()
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        stored = WorkflowCounters(row.current_round, row.current_task, row.current_action)
        if changed == 0:
            step.apply(stored)  # raises the reason: behind, or at the maximum
            raise StorageError(
                f"the counters of workflow {workflow_id} could not be advanced; try again"
            )
        return stored

    def add_message(
        self, message: ChatMessage, admit: Callable[[Resource], None] | None = None
    ) -> ChatMessage:
        """Insert the message and its documents; return it with its number and position.

        The number comes from incrementing ``workflows.last_sequence_nr``; that
        ``UPDATE`` locks the workflow row until the unit ends, so concurrent
        units adding to one workflow queue there and never share a number. The
        round/task/action numbers are read from the same locked row by the same
        statement (``RETURNING``), so they never fall behind those of a message
        numbered earlier (ADR 0026). On SQLite the same statement returns the
        workflow's scope and creator, which ``admit`` gets before the message
        is inserted: the unit holds the database's write lock from its first
        write anyway. Where the database locks rows (PostgreSQL, MariaDB)
        they are read first, without a lock, and ``admit`` runs before the
        numbering statement, so a caller it refuses never waits for a row
        lock of that workflow, nor holds one (ADR 0038). Everything runs as one undoable block
        (:meth:`LazyConnection.undoable`: a savepoint, or on SQLite's driver
        lane the block's own undo): on ``DuplicateLabel``, ``Conflict`` (taken
        message or document id), ``WorkflowNotFound`` or a docbinder error
        or any other exception from ``admit`` (:class:`_AdmitRaised` carries
        it through the block) nothing of the message is kept, the number is
        not used up and the unit stays usable.
        """
        wf = message.workflow_id
        table = chat_messages
        done: list[int] = []  # the number taken, then the message id's row count
        if admit is not None and self._session.dialect.name != "sqlite":
            admit(self._owner(wf))  # nothing written yet: whatever it raises leaves nothing
            admit = None

        def undo() -> None:
            # Only on SQLite's driver lane (LazyConnection.undoable): the unit holds
            # the write lock, so the rows and the counter are as this block left them.
            if len(done) == 2:
                _DRIVER_DELETE_MESSAGE_DOCUMENTS.execute(self._session, {"id": message.id})
                _DRIVER_DELETE_MESSAGE.execute(self._session, {"id": message.id})
            if (
                done
                and _DRIVER_UNBUMP_SEQUENCE.rowcount(self._session, {"wf": wf, "seq": done[0]}) != 1
            ):
                raise StorageError(f"the message number of workflow {wf} could not be given back")

        with translating():
            try:
                with self._session.undoable(undo):
                    seq, counters, owner = self._take_position(wf)
                    done.append(seq)
                    if admit is not None:
                        _admit(admit, owner)
                    stored = message.placed(seq, counters)
                    row = to_row(stored)
                    row["label_hash"] = label_hash(stored.documents_label)
                    _DRIVER_INSERT_MESSAGE.execute(self._session, row)
                    done.append(1)
                    if stored.documents:
                        table = chat_documents
                        doc_rows = [
                            {**to_row(doc), "sequence_nr": seq, "position": position}
                            for position, doc in enumerate(stored.documents)
                        ]
                        _DRIVER_INSERT_DOCUMENTS.execute(self._session, doc_rows)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, table) from err
            except _AdmitRaised as carried:
                error = carried.error
                raise error from error.__cause__
        return stored

    def _owner(self, workflow_id: str) -> Resource:
        """The stored workflow's owner, read without a lock; :class:`WorkflowNotFound` if absent."""
        with translating():
            row: tuple[Any, ...] | None = self._session.execute(
                _READ_OWNER, {"wf": workflow_id}
            ).first()
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        mandate_id, feature_instance_id, created_by = tuple(row)
        return _owner_resource(workflow_id, mandate_id, feature_instance_id, created_by)

    def _take_position(self, workflow_id: str) -> tuple[int, WorkflowCounters, Resource]:
        """The next ``sequence_nr``, the counters and the owner, from the row the increment locks.

        One ``UPDATE … RETURNING`` where the dialect has it (SQLite ≥ 3.35,
        PostgreSQL); ``UPDATE`` then ``SELECT`` of the row it locked elsewhere
        (MariaDB: a unit reads its own change, made on the latest committed
        row). :class:`WorkflowNotFound` if the workflow is absent.
        """
        params = {"wf": workflow_id}
        row: tuple[Any, ...] | None
        if self._session.dialect.update_returning:
            row = _DRIVER_BUMP_SEQUENCE_RETURNING.first(self._session, params)
        elif _DRIVER_BUMP_SEQUENCE.rowcount(self._session, params) == 0:
            row = None
        else:
            found = self._session.execute(_READ_POSITION, params).first()
            row = None if found is None else tuple(found)
        if row is None:
            raise WorkflowNotFound(f"no workflow {workflow_id}")
        # Both statements return the _POSITION columns, in that order.
        sequence_nr, current_round, current_task, current_action, mandate, feature, owner = row
        return (
            int(sequence_nr),
            WorkflowCounters(current_round, current_task, current_action),
            _owner_resource(workflow_id, mandate, feature, owner),
        )

    def get_documents(
        self, workflow_id: str, document_ids: Sequence[str]
    ) -> dict[str, ChatDocument]:
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, ChatDocument] = {}
        # Primary-key lookup only: with a workflow condition in the query,
        # planners may walk the workflow's index instead, which grows with the
        # workflow. Other workflows' rows are dropped here.
        for row in _rows_by_id(self._session, chat_documents, wanted):
            if row.workflow_id == workflow_id:
                doc = _load(row, ChatDocument)
                found[doc.id] = doc
        return {doc_id: found[doc_id] for doc_id in wanted if doc_id in found}

    def documents_by_label(self, workflow_id: str, label: str) -> list[ChatDocument]:
        d, m = chat_documents.c, chat_messages.c
        stmt = (
            sa.select(chat_documents)
            .join(chat_messages, d.message_id == m.id)
            .where(
                m.workflow_id == workflow_id,
                m.label_hash == label_hash(label),
                m.documents_label == label,
            )
            .order_by(d.position)
        )
        return self._documents(stmt)

    def documents_by_file(self, workflow_id: str, file_id: str) -> list[ChatDocument]:
        d = chat_documents.c
        # No ORDER BY in SQL: it would tempt the planner into the workflow's
        # ordering index (a walk over every document); the few rows of one
        # file are put in order here instead.
        stmt = sa.select(chat_documents).where(d.workflow_id == workflow_id, d.file_id == file_id)
        with translating():
            rows = list(self._session.execute(stmt).all())
        rows.sort(key=lambda row: (row.sequence_nr, row.position))
        return [_load(row, ChatDocument) for row in rows]

    def documents_by_labels(
        self, workflow_id: str, labels: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` labels on the ``(workflow_id, label_hash)`` index.

        The label itself is compared in Python against the one asked for, as
        :meth:`documents_by_label` compares it in SQL.
        """
        wanted = {label_hash(label): label for label in dict.fromkeys(labels)}
        hashes = list(wanted)
        rows: list[sa.Row[Any]] = []
        for start in range(0, len(hashes), IN_CHUNK):
            params = {"wf": workflow_id, "hashes": hashes[start : start + IN_CHUNK]}
            with translating():
                rows.extend(self._session.execute(_DOCUMENTS_BY_LABELS, params).all())
        found: dict[str, list[tuple[int, ChatDocument]]] = {}
        for row in rows:
            label = row.message_label
            if wanted.get(row.message_label_hash) == label:
                found.setdefault(label, []).append((row.position, _load(row, ChatDocument)))
        return {
            label: [doc for _, doc in sorted(found[label], key=lambda pair: pair[0])]
            for label in wanted.values()
            if label in found
        }

    def documents_by_files(
        self, workflow_id: str, file_ids: Sequence[str]
    ) -> dict[str, list[ChatDocument]]:
        """One query per :data:`IN_CHUNK` ids on the ``(workflow_id, file_id)`` index."""
        wanted = list(dict.fromkeys(file_ids))
        rows: list[sa.Row[Any]] = []
        for start in range(0, len(wanted), IN_CHUNK):
            params = {"wf": workflow_id, "files": wanted[start : start + IN_CHUNK]}
            with translating():
                rows.extend(self._session.execute(_DOCUMENTS_BY_FILES, params).all())
        rows.sort(key=lambda row: (row.sequence_nr, row.position))
        found: dict[str, list[ChatDocument]] = {}
        for row in rows:
            found.setdefault(row.file_id, []).append(_load(row, ChatDocument))
        return {file_id: found[file_id] for file_id in wanted if file_id in found}

    def recent_documents(self, workflow_id: str, limit: int) -> list[ChatDocument]:
        _check_limit(limit)
        if limit == 0:
            return []
        d = chat_documents.c
        stmt = (
            sa.select(chat_documents)
            .where(d.workflow_id == workflow_id)
            .order_by(d.sequence_nr.desc(), d.position.desc())
            .limit(limit)
        )
        return self._documents(stmt)

    def list_messages(self, workflow_id: str) -> list[ChatMessage]:
        m, d = chat_messages.c, chat_documents.c
        with translating():
            message_rows = self._session.execute(
                sa.select(chat_messages).where(m.workflow_id == workflow_id).order_by(m.sequence_nr)
            ).all()
            document_rows = self._session.execute(
                sa.select(chat_documents)
                .where(d.workflow_id == workflow_id)
                .order_by(d.sequence_nr, d.position)
            ).all()
        documents: dict[str, list[ChatDocument]] = {}
        for row in document_rows:
            doc = _load(row, ChatDocument)
            documents.setdefault(doc.message_id, []).append(doc)
        messages = []
        for row in message_rows:
            message = _load(row, ChatMessage)
            messages.append(attrs.evolve(message, documents=tuple(documents.get(message.id, ()))))
        return messages

    def list_workflows(
        self, mandate_id: str, *, limit: int | None = None, after: ChatWorkflow | None = None
    ) -> list[ChatWorkflow]:
        rows = _newest_first_page(self._session, workflows, mandate_id, limit, after)
        return [_load(row, ChatWorkflow) for row in rows]

    def iter_documents(self) -> Iterator[ChatDocument]:
        """Every ChatDocument, in id order, read in keyset-paginated batches (see ``iter_all``)."""
        for row in _scan(self._session, chat_documents):
            yield _load(row, ChatDocument)

    def count_documents_for_file(self, file_id: str) -> int:
        stmt = (
            sa.select(sa.func.count())
            .select_from(chat_documents)
            .where(chat_documents.c.file_id == file_id)
        )
        with translating():
            return int(self._session.execute(stmt).scalar_one())

    def _documents(self, stmt: sa.Select[Any]) -> list[ChatDocument]:
        with translating():
            rows = self._session.execute(stmt).all()
        return [_load(row, ChatDocument) for row in rows]


def _owner_resource(
    workflow_id: str, mandate_id: str, feature_instance_id: str | None, created_by: str
) -> Resource:
    """The access-control resource of a stored workflow, from its columns."""
    return Resource(
        ResourceKind.WORKFLOW, Scope(mandate_id, feature_instance_id), created_by, workflow_id
    )


def _rows_by_id(
    session: LazyConnection, table: sa.Table, ids: Sequence[str]
) -> Iterator[sa.Row[Any]]:
    """The rows of ``table`` whose primary key ``id`` is in ``ids``, :data:`IN_CHUNK` ids per query."""
    for start in range(0, len(ids), IN_CHUNK):
        stmt = sa.select(table).where(table.c.id.in_(ids[start : start + IN_CHUNK]))
        with translating():
            rows = session.execute(stmt).all()
        yield from rows


def _not_ahead(
    columns: Sequence[sa.ColumnElement[int]], values: Sequence[int]
) -> sa.ColumnElement[bool]:
    """``(columns) <= (values)`` compared left to right, written out (portable to every backend)."""
    if not columns:
        return sa.true()
    first, value = columns[0], values[0]
    return sa.or_(first < value, sa.and_(first == value, _not_ahead(columns[1:], values[1:])))


def _rowcount(result: sa.Result[Any]) -> int:
    count = getattr(result, "rowcount", -1)
    return int(count)


def _scan(session: LazyConnection, table: sa.Table) -> Iterator[sa.Row[Any]]:
    last: str | None = None
    while True:
        stmt = sa.select(table).order_by(table.c.id).limit(SCAN_BATCH)
        if last is not None:
            stmt = stmt.where(table.c.id > last)
        with translating():
            rows = session.execute(stmt).all()
        yield from rows
        if len(rows) < SCAN_BATCH:
            return
        last = rows[-1]._mapping["id"]
