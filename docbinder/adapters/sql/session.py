"""The one connection of a SQL unit of work (PostgreSQL, MariaDB), and its savepoints.

Every statement goes through SQLAlchemy's ``Connection``
(``Connection.execute`` for Core statements, ``Connection.exec_driver_sql``
for the prepared statements of :mod:`docbinder.adapters.sql.statements`), so
whatever listens to the engine's events (tracing, statement counters, test
fault injection) sees every statement and changes nothing about which ones
run (ADR 0040). A block of writes that may be refused (a uniqueness rule, a
missing workflow) runs in a savepoint: on PostgreSQL a failed statement
aborts the whole transaction, on MariaDB a deadlock may end it. SQLite has
an adapter of its own (:mod:`docbinder.adapters.sqlite`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect, Engine

from docbinder.domain.errors import StorageError

_Result = sa.CursorResult[*tuple[Any, ...]]
"""What a statement gives: SQLAlchemy's ``CursorResult`` of rows of any width."""

_SAVEPOINT = "SAVEPOINT docbinder_statement"
_RELEASE_SAVEPOINT = "RELEASE SAVEPOINT docbinder_statement"
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT docbinder_statement"


class SqlSession:
    """The SQLAlchemy ``Connection`` of one unit of work, checked out at its first statement.

    The transaction begins with the first statement (SQLAlchemy's
    autobegin). Not thread-safe, like the unit that owns it. :attr:`lost`
    is set when the database ended the transaction under a savepoint (a
    failed ``ROLLBACK TO SAVEPOINT``: a deadlock victim, an interrupted
    statement): the unit then sends no statement and refuses to commit
    until it is rolled back.
    """

    __slots__ = ("_conn", "_engine", "dialect", "lost")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None
        self.dialect: Dialect = engine.dialect
        """The engine's dialect (no connection needed)."""
        self.lost: BaseException | None = None
        """The error under which the database ended the current transaction, if it did."""

    @property
    def engine(self) -> Engine:
        """The engine this unit takes its connection from."""
        return self._engine

    @property
    def checked_out(self) -> bool:
        """Whether this unit holds a connection of the pool."""
        return self._conn is not None

    def connection(self) -> Connection:
        """The unit's connection, checked out now if this is the first use.

        Raises :class:`StorageError` while :attr:`lost` is set.
        """
        lost = self.lost
        if lost is not None:
            raise StorageError(
                f"this transaction can no longer commit ({lost!r}); roll it back first"
            ) from lost
        conn = self._conn
        if conn is None:
            conn = self._conn = self._engine.connect()
        return conn

    def execute(self, statement: Any, parameters: Any = None) -> _Result:
        """Run a Core ``statement`` with ``parameters`` (a dict, or a list of dicts for executemany)."""
        return self.connection().execute(statement, parameters)

    def execute_driver_sql(self, sql: str, parameters: Any = ()) -> _Result:
        """Run SQL text in the driver's parameter style (``Connection.exec_driver_sql``)."""
        return self.connection().exec_driver_sql(sql, parameters)

    def commit(self) -> None:
        """Commit the current transaction, if any; raises ``sqlalchemy.exc.DBAPIError`` on failure."""
        if self._conn is not None:
            self._conn.commit()

    def rollback(self) -> None:
        """Roll back the current transaction, if any, and forget :attr:`lost`."""
        self.lost = None
        if self._conn is not None:
            self._conn.rollback()

    def close(self) -> None:
        """Return the connection to the pool (rolling back what was not committed).

        The next statement checks out a connection again.
        """
        conn, self._conn = self._conn, None
        self.lost = None
        if conn is not None:
            conn.close()

    @contextmanager
    def begin_nested(self) -> Iterator[None]:
        """A savepoint around the block: released on success, rolled back to on any error.

        Plain ``SAVEPOINT`` / ``RELEASE SAVEPOINT`` / ``ROLLBACK TO
        SAVEPOINT`` (SQL:1999; the statements ``Connection.begin_nested``
        sends, without its per-use compilation). Savepoints here never nest.

        If rolling back to the savepoint fails, the database has already ended
        the whole transaction (a deadlock victim on MariaDB, a statement
        interrupted by ``KeyboardInterrupt``): the original exception
        propagates unchanged and :attr:`lost` is set, so the unit refuses to
        commit instead of committing an empty transaction as if the work
        before the savepoint had been kept.
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
