"""The one connection of a SQL unit of work, and how it guards the writes that may be refused.

Every statement of every backend goes through SQLAlchemy's ``Connection``
(``Connection.execute`` for Core statements, ``Connection.exec_driver_sql``
for the prepared statements of :mod:`docbinder.adapters.sql.statements`), so
whatever listens to the engine's events (tracing, statement counters, test
fault injection) sees every statement and changes nothing about which ones
run (ADR 0040). What differs by backend is decided by the dialect alone:

* a block that may be refused (a uniqueness rule, a missing workflow, the
  caller's rights) runs in a savepoint on PostgreSQL and MariaDB, where a
  failed statement aborts (PostgreSQL) or may end (a deadlock on MariaDB)
  the transaction;
* on SQLite it runs without one: SQLite undoes a refused statement by itself
  and keeps the transaction open, and the unit holds the database's write
  lock from its first write, so a block of several statements is taken back
  by statements of its own (:meth:`SqlSession.undoable`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect, Engine

from docbinder.domain.errors import DocbinderError, StorageError

_Result = sa.CursorResult[*tuple[Any, ...]]
"""What a statement gives: SQLAlchemy's ``CursorResult`` of rows of any width."""

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


class SqlSession:
    """The SQLAlchemy ``Connection`` of one unit of work, checked out at its first statement.

    ``engine`` gives the connections (on SQLite an option engine whose
    ``begin`` hook sends ``BEGIN IMMEDIATE`` or ``BEGIN DEFERRED``);
    ``shared`` is the :class:`SharedConnectionLock` of an engine with one
    connection for every unit (``sqlite://``), else ``None``. The
    transaction begins with the first statement (SQLAlchemy's autobegin).
    Not thread-safe, like the unit that owns it.

    :attr:`lost` is set when the database ended the transaction under the
    unit (a failed ``ROLLBACK TO SAVEPOINT``, an interrupt, SQLite ending
    it by itself on a full disk or an I/O error): the unit then sends no
    statement and refuses to commit until it is rolled back. On SQLite this
    matters beyond the refusal: its connections run with the driver's
    transaction handling off (``isolation_level = None``), so a statement
    sent after SQLite ended the transaction would commit at once.
    """

    __slots__ = ("_conn", "_engine", "_held", "_shared", "_sqlite", "dialect", "lost")

    def __init__(self, engine: Engine, shared: SharedConnectionLock | None = None) -> None:
        self._engine = engine
        self._shared = shared
        self._held = False
        self._sqlite = engine.dialect.name == "sqlite"
        self._conn: Connection | None = None
        self.dialect: Dialect = engine.dialect
        """The engine's dialect (no connection needed)."""
        self.lost: BaseException | None = None
        """The error under which the database ended the current transaction, if it did."""

    @property
    def checked_out(self) -> bool:
        """Whether this unit holds a connection of the pool."""
        return self._conn is not None

    def connection(self) -> Connection:
        """The unit's connection, checked out now if this is the first use.

        Raises :class:`StorageError` while :attr:`lost` is set, and sets it
        (then raises) when SQLite no longer has the transaction SQLAlchemy
        began for the unit.
        """
        lost = self.lost
        if lost is not None:
            raise StorageError(
                f"this transaction can no longer commit ({lost!r}); roll it back first"
            ) from lost
        conn = self._conn
        if conn is None:
            if self._shared is not None and not self._held:
                self._shared.acquire()
                self._held = True
            conn = self._conn = self._engine.connect()
        elif self._sqlite and not _driver_keeps_transaction(conn):
            self._ended()
        return conn

    def execute(self, statement: Any, parameters: Any = None) -> _Result:
        """Run a Core ``statement`` with ``parameters`` (a dict, or a list of dicts for executemany)."""
        conn = self.connection()
        try:
            return conn.execute(statement, parameters)
        except sa_exc.DBAPIError:
            self._after_error(conn)
            raise

    def execute_driver_sql(self, sql: str, parameters: Any = ()) -> _Result:
        """Run SQL text in the driver's parameter style (``Connection.exec_driver_sql``)."""
        conn = self.connection()
        try:
            return conn.exec_driver_sql(sql, parameters)
        except sa_exc.DBAPIError:
            self._after_error(conn)
            raise

    def _after_error(self, conn: Connection) -> None:
        """After a driver error on SQLite: drop a connection whose ``BEGIN`` failed.

        When the engine's ``begin`` hook fails (``BEGIN IMMEDIATE`` waited
        out the busy timeout), SQLAlchemy began no transaction and does not
        autobegin on that ``Connection`` again; a later statement there
        would run outside any transaction. The next statement gets a fresh
        ``Connection`` instead, which begins again.
        """
        if self._sqlite and not conn.invalidated and not conn.in_transaction():
            self._conn = None
            conn.close()

    def _ended(self) -> None:
        """SQLite ended the transaction SQLAlchemy still holds: refuse, as lost."""
        err = StorageError("the database ended this transaction; nothing of it can commit")
        self.lost = err
        raise err

    def commit(self) -> None:
        """Commit the current transaction, if any; raises ``sqlalchemy.exc.DBAPIError`` on failure.

        On SQLite, :class:`StorageError` (and nothing committed) when SQLite
        ended the transaction by itself meanwhile: the driver's ``commit``
        would otherwise succeed with nothing to commit.
        """
        conn = self._conn
        if conn is None:
            return
        if self._sqlite and not _driver_keeps_transaction(conn):
            self._ended()
        conn.commit()

    def rollback(self) -> None:
        """Roll back the current transaction, if any, and forget :attr:`lost`."""
        self.lost = None
        conn = self._conn
        if conn is not None:
            conn.rollback()

    def close(self) -> None:
        """Return the connection to the pool (rolling back what was not committed).

        The next statement checks out a connection again.
        """
        conn, self._conn = self._conn, None
        self.lost = None
        try:
            if conn is not None:
                conn.close()
        finally:
            if self._held:
                self._held = False
                if self._shared is not None:
                    self._shared.release()

    @contextmanager
    def begin_nested(self) -> Iterator[None]:
        """A savepoint around the block: released on success, rolled back to on any error.

        Plain ``SAVEPOINT`` / ``RELEASE SAVEPOINT`` / ``ROLLBACK TO
        SAVEPOINT`` (SQL:1999; the statements ``Connection.begin_nested``
        sends, without its per-use compilation). Savepoints here never nest.

        If rolling back to the savepoint fails, the database has already ended
        the whole transaction (a deadlock victim on MariaDB, a full disk on
        SQLite, a statement interrupted by ``KeyboardInterrupt``): the original
        exception propagates unchanged and :attr:`lost` is set, so the unit
        refuses to commit instead of committing an empty transaction as if
        the work before the savepoint had been kept.
        """
        self.execute_driver_sql(_SAVEPOINT)
        try:
            yield
        except BaseException as exc:
            try:
                self.execute_driver_sql(_ROLLBACK_TO_SAVEPOINT)
            except Exception:
                self.lost = exc
            raise
        self.execute_driver_sql(_RELEASE_SAVEPOINT)

    def one_statement(self) -> AbstractContextManager[None]:
        """Guard a block that sends exactly one statement that may be refused.

        PostgreSQL, MariaDB: :meth:`begin_nested`. SQLite: no savepoint.
        SQLite makes every statement atomic; a refused one (a constraint)
        is undone alone and the transaction stays open. An error that made
        SQLite end the whole transaction is found by the next statement or
        the commit (see :meth:`connection`); any exception that is not a
        driver error (an interrupt arriving once the statement ran) sets
        :attr:`lost`: the statement cannot be undone alone, so the unit
        refuses to commit.
        """
        return self.undoable(_nothing_to_undo)

    def undoable(self, undo: Callable[[], None]) -> AbstractContextManager[None]:
        """Guard a block of several writes that stand or fall together.

        PostgreSQL, MariaDB: :meth:`begin_nested`. SQLite: no savepoint; the
        unit holds the database's write lock from its first write until it
        ends, so no other writer can have touched what the block wrote. When
        the block raises a driver error (``sqlalchemy.exc.DBAPIError``: the
        statement that raised it took no effect, so the block knows which of
        its statements ran) or a docbinder error it raised itself, ``undo``
        takes back what the block did, with statements of its own, and the
        transaction goes on as after ``ROLLBACK TO SAVEPOINT``, without the
        savepoint's two statements and the statement journal SQLite keeps for
        it (a temp file once it passes 64 KiB). :attr:`lost` is set, so the
        unit refuses to commit, when the database ended the transaction,
        when ``undo`` fails, and for any other exception: an interrupt, or an
        ``Exception`` a signal handler raises (a time limit's
        ``TimeoutError``), may arrive after a statement ran and before the
        block could note it, and ``undo`` would then leave that statement's
        work in place or give back a number a stored row holds.
        """
        if self._sqlite:
            return _Undoable(self, undo)
        return self.begin_nested()


def _driver_keeps_transaction(conn: Connection) -> bool:
    """False when SQLAlchemy holds a transaction on ``conn`` that the ``sqlite3`` connection lost.

    SQLite ends a transaction by itself on a full disk, an I/O error or an
    interrupt; ``sqlite3.Connection.in_transaction`` says whether one is
    open. An invalidated connection (SQLAlchemy closed it after an
    interrupt) is SQLAlchemy's to refuse.
    """
    if conn.invalidated or not conn.in_transaction():
        return True
    return bool(conn.connection.driver_connection.in_transaction)  # type: ignore[union-attr]


def _nothing_to_undo() -> None:
    """The undo of a block of one statement: SQLite took back the statement that failed."""


class _Undoable:
    """What :meth:`SqlSession.undoable` returns on SQLite; entered once.

    A plain context manager object, not a generator: every attach enters two.
    """

    __slots__ = ("_session", "_undo")

    def __init__(self, session: SqlSession, undo: Callable[[], None]) -> None:
        self._session = session
        self._undo = undo

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            return
        session = self._session
        if session.lost is not None:
            return
        if isinstance(exc, sa_exc.DBAPIError | DocbinderError):
            try:
                self._undo()
            except BaseException:
                session.lost = exc
            return
        session.lost = exc
