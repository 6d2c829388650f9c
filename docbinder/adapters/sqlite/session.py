"""The ``sqlite3`` connection of one unit of work: its transaction and its guarded writes.

A unit takes a connection from its engine's pool at its first statement
(``Engine.raw_connection``: the pool, its size, its reset on return and its
fork handling are SQLAlchemy's; the connection is configured by
:func:`~docbinder.adapters.sql.engine.install_sqlite_hooks`), sends
``BEGIN IMMEDIATE`` (writers) or ``BEGIN DEFERRED`` (readers) and every
statement on the ``sqlite3`` connection itself, and ends with ``COMMIT`` or
``ROLLBACK`` there (ADR 0040). SQLAlchemy's statement and transaction events
are not involved, whatever listens to the engine.

The connection runs with the driver's transaction handling off
(``isolation_level = None``): a statement sent outside a transaction would
commit at once. So the unit compares its transaction with the driver's
(``sqlite3.Connection.in_transaction``) before every statement and its
commit: once SQLite ended the transaction by itself (a full disk, an I/O
error, an interrupt), the unit is :attr:`~SqliteSession.lost` and sends
nothing more until it is rolled back.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.pool import PoolProxiedConnection

from docbinder.adapters.sql.errors import storage_error
from docbinder.domain.errors import DocbinderError, StorageError

_SAVEPOINT = "SAVEPOINT docbinder_block"
_RELEASE_SAVEPOINT = "RELEASE SAVEPOINT docbinder_block"
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT docbinder_block"


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


class _Translating:
    """The context manager :func:`translating` returns (one shared object: it keeps no state)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(exc, sqlite3.Error | sa_exc.SQLAlchemyError):
            raise storage_error(exc) from exc


_TRANSLATING = _Translating()


def translating() -> AbstractContextManager[None]:
    """Re-raise a ``sqlite3`` (or pool) error inside the block as :class:`StorageError` (chained).

    docbinder errors pass through unchanged; a missing table adds the hint
    to run ``docbinder migrate``
    (:func:`~docbinder.adapters.sql.errors.storage_error`).
    """
    return _TRANSLATING


class SqliteSession:
    """The connection and transaction of one SQLite unit of work.

    ``engine`` is the SQLite engine whose pool gives the connections,
    ``begin_sql`` the unit's ``BEGIN`` (``BEGIN IMMEDIATE`` or ``BEGIN
    DEFERRED``), ``shared`` the :class:`SharedConnectionLock` of an engine
    with one connection for all units (``sqlite://``), else ``None``. Not
    thread-safe, like the unit that owns it.

    ``synced=False`` commits without waiting for the disk (``PRAGMA synchronous =
    NORMAL`` while the session holds the connection), for records a power cut may
    lose but never corrupt (the resolution log): in WAL mode such a commit is
    atomic, and durable once any later commit syncs the log (SQLite's documentation
    of ``PRAGMA synchronous``). :meth:`close` gives the connection its own level
    back; a connection where that fails is discarded, never returned to the pool
    with weaker durability for the units after it.
    """

    __slots__ = (
        "_began",
        "_begin_sql",
        "_conn",
        "_engine",
        "_fairy",
        "_held",
        "_level",
        "_shared",
        "_synced",
        "lost",
    )

    def __init__(
        self,
        engine: Engine,
        begin_sql: str,
        shared: SharedConnectionLock | None = None,
        *,
        synced: bool = True,
    ) -> None:
        self._engine = engine
        self._begin_sql = begin_sql
        self._shared = shared
        self._synced = synced
        self._level: int | None = None
        self._held = False
        self._fairy: PoolProxiedConnection | None = None
        self._conn: sqlite3.Connection | None = None
        self._began = False
        self.lost: BaseException | None = None
        """The error under which the current transaction ended or became unaccountable, if any."""

    @property
    def engine(self) -> Engine:
        """The engine whose pool gives this unit's connection."""
        return self._engine

    @property
    def checked_out(self) -> bool:
        """Whether this unit holds a connection of the pool."""
        return self._fairy is not None

    def connection(self) -> sqlite3.Connection:
        """The unit's ``sqlite3`` connection inside its transaction, begun now if needed.

        Raises :class:`StorageError` while :attr:`lost` is set, and sets it
        (then raises) when SQLite no longer has the transaction the unit
        began. A ``BEGIN`` that fails (the busy timeout ran out) leaves no
        transaction; the next statement sends ``BEGIN`` again.
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
            fairy = self._fairy = self._engine.raw_connection()
            conn = fairy.driver_connection
            if not isinstance(conn, sqlite3.Connection):  # pragma: no cover - a pysqlite engine
                raise StorageError("the SQLite engine gave no sqlite3 connection")
            self._conn = conn
        if not self._began:
            if not self._synced and self._level is None:  # outside a transaction, as SQLite needs
                row = conn.execute("PRAGMA synchronous").fetchone()
                self._level = int(row[0]) if row is not None else 2
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(self._begin_sql)
            self._began = True
        elif not conn.in_transaction:
            self._ended()
        return conn

    def _ended(self) -> None:
        err = StorageError("the database ended this transaction; nothing of it can commit")
        self.lost = err
        raise err

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        """Run one statement; a driver error that ended the transaction sets :attr:`lost`.

        Any other exception from inside the driver call (an interrupt, a
        signal handler's ``TimeoutError``) sets :attr:`lost` too: whether the
        statement ran cannot be told, so nothing of the unit may commit.
        """
        conn = self.connection()
        try:
            return conn.execute(sql, parameters)
        except sqlite3.Error as err:
            if not conn.in_transaction:
                self.lost = err
            raise
        except BaseException as exc:
            self.lost = exc
            raise

    def executemany(self, sql: str, rows: list[Any]) -> sqlite3.Cursor:
        """As :meth:`execute`, once per parameter set in ``rows``."""
        conn = self.connection()
        try:
            return conn.executemany(sql, rows)
        except sqlite3.Error as err:
            if not conn.in_transaction:
                self.lost = err
            raise
        except BaseException as exc:
            self.lost = exc
            raise

    def one(self, sql: str, parameters: Any = ()) -> tuple[Any, ...] | None:
        """The first row of a query (or of a statement's ``RETURNING``), or ``None``; the cursor closed."""
        cursor = self.execute(sql, parameters)
        try:
            row = cursor.fetchone()
            # A RETURNING statement stays active until its rows are read.
            cursor.fetchall()
        finally:
            cursor.close()
        return None if row is None else tuple(row)

    def all(self, sql: str, parameters: Any = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        cursor = self.execute(sql, parameters)
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    def rowcount(self, sql: str, parameters: Any = ()) -> int:
        """Run a write; the number of rows it changed."""
        cursor = self.execute(sql, parameters)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def commit(self) -> None:
        """Commit the transaction, if one was begun.

        :class:`StorageError` (and nothing committed) when the unit is lost or
        SQLite ended the transaction by itself; a driver error of ``COMMIT``
        propagates (the transaction stays open and is rolled back when the
        unit ends).
        """
        if not self._began:
            return
        lost = self.lost
        if lost is not None:
            raise StorageError(
                f"the database ended this transaction ({lost!r}); nothing of it was committed"
            ) from lost
        conn = self._conn
        assert conn is not None
        if not conn.in_transaction:
            self._ended()
        conn.execute("COMMIT")
        self._began = False

    def rollback(self) -> None:
        """Roll back the transaction, if one was begun, and forget :attr:`lost`."""
        self.lost = None
        if not self._began:
            return
        self._began = False
        conn = self._conn
        if conn is not None and conn.in_transaction:
            conn.execute("ROLLBACK")

    def close(self) -> None:
        """Roll back what was not committed and return the connection to the pool.

        Ended here, not left to the pool's reset on return, which may be off
        (``pool_reset_on_return=None``). The next statement checks out a
        connection again.
        """
        fairy, self._fairy = self._fairy, None
        conn, self._conn = self._conn, None
        began, self._began = self._began, False
        self.lost = None
        try:
            if conn is not None and began:
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # a connection that cannot roll back is closed by the pool's reset
        finally:
            try:
                level, self._level = self._level, None
                if level is not None and conn is not None and fairy is not None:
                    try:
                        conn.execute(f"PRAGMA synchronous = {level}")
                    except BaseException:
                        fairy.invalidate()  # closed, not pooled: no unit gets its level
                        raise
                if fairy is not None:
                    fairy.close()
            finally:
                if self._held:
                    self._held = False
                    if self._shared is not None:
                        self._shared.release()

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A savepoint around a block of several statements that may be refused (not the producer path).

        Released on success, rolled back to on any error. If rolling back to
        it fails, SQLite has ended the whole transaction: the original
        exception propagates and :attr:`lost` is set.
        """
        self.execute(_SAVEPOINT).close()
        try:
            yield
        except BaseException as exc:
            try:
                self.execute(_ROLLBACK_TO_SAVEPOINT).close()
            except Exception:
                self.lost = exc
            raise
        self.execute(_RELEASE_SAVEPOINT).close()

    def one_statement(self) -> AbstractContextManager[None]:
        """Guard a block that sends exactly one statement that may be refused.

        SQLite makes every statement atomic: a refused one (a constraint) is
        undone alone and the transaction stays open, so no savepoint is
        needed. An error that made SQLite end the transaction sets
        :attr:`lost` (:meth:`execute`).
        """
        return _Undoable(self, _nothing_to_undo)

    def undoable(self, undo: Callable[[], None]) -> AbstractContextManager[None]:
        """Guard a block of several writes that stand or fall together, without a savepoint.

        The unit holds the database's write lock from its first write until it
        ends, so no other writer can have touched what the block wrote. When
        the block raises a driver error (``sqlite3.Error``: the statement that
        raised it took no effect, so the block knows which of its statements
        ran) or a docbinder error it raised itself, ``undo`` takes back what
        the block did with statements of its own, and the transaction goes on
        as after ``ROLLBACK TO SAVEPOINT``, without the savepoint's two
        statements and the statement journal SQLite keeps for it (a temp file
        once it passes 64 KiB). :attr:`lost` is set, so the unit refuses to
        commit, when SQLite ended the transaction, when ``undo`` fails, and
        for any other exception: an interrupt, or an ``Exception`` a signal
        handler raises, may arrive after a statement ran and before the block
        could note it, and ``undo`` would then leave that statement's work in
        place or give back a number a stored row holds.
        """
        return _Undoable(self, undo)


def _nothing_to_undo() -> None:
    """The undo of a block of one statement: SQLite took back the statement that failed."""


class _Undoable:
    """What :meth:`SqliteSession.undoable` returns; entered once.

    A plain context manager object, not a generator: every attach enters two.
    """

    __slots__ = ("_session", "_undo")

    def __init__(self, session: SqliteSession, undo: Callable[[], None]) -> None:
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
        if isinstance(exc, sqlite3.Error | DocbinderError):
            try:
                self._undo()
            except BaseException:
                session.lost = exc
            return
        session.lost = exc
