"""The SQLite unit of work (one ``sqlite3`` transaction) and :class:`SqliteMetadata`, its factory."""

from __future__ import annotations

import contextlib
import sqlite3
from types import TracebackType
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine
from sqlalchemy.pool import StaticPool

from docbinder.adapters.sql.engine import (
    DEFAULT_BUSY_TIMEOUT_S,
    create_engine_from_url,
    install_sqlite_hooks,
    reset_pool_after_fork,
)
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sqlite.audit import SqliteAuditRepository
from docbinder.adapters.sqlite.files import SqliteFileRepository
from docbinder.adapters.sqlite.inline_blobs import SqliteInlineBlobRepository
from docbinder.adapters.sqlite.maintenance import SqliteMaintenanceRepository
from docbinder.adapters.sqlite.provider_copies import SqliteProviderCopyRepository
from docbinder.adapters.sqlite.quotas import SqliteQuotaRepository
from docbinder.adapters.sqlite.retention import SqliteRetentionRepository
from docbinder.adapters.sqlite.session import SharedConnectionLock, SqliteSession
from docbinder.adapters.sqlite.versions import SqliteVersionRepository
from docbinder.adapters.sqlite.workflows import SqliteWorkflowRepository
from docbinder.domain.errors import BinderClosed, ConfigurationError, StorageError
from docbinder.ports.metadata import (
    AuditRepository,
    FileRepository,
    InlineBlobRepository,
    MaintenanceRepository,
    ProviderCopyRepository,
    QuotaRepository,
    RetentionRepository,
    VersionRepository,
    WorkflowRepository,
)

WRITER_BEGIN = "BEGIN IMMEDIATE"
"""How a writing unit begins: it takes SQLite's write lock at once, waiting up to the busy timeout."""
READER_BEGIN = "BEGIN DEFERRED"
"""How a reading unit begins: it does not wait for writers (WAL lets readers and one writer work)."""


class SqliteUnitOfWork:
    """:class:`~docbinder.ports.metadata.UnitOfWork` over one ``sqlite3`` connection.

    The connection is private to this unit (never share a unit between
    threads). It is taken from the pool at the first statement; everything
    up to :meth:`commit` is one transaction, shared by the repositories of
    every role. Leaving the ``with`` block rolls back whatever was not
    committed and returns the connection to the pool. After ``commit()``
    the unit may go on: the next statement begins a new transaction.
    Driver faults surface as :class:`~docbinder.domain.errors.StorageError`.
    """

    def __init__(
        self,
        engine: Engine,
        begin_sql: str,
        shared: SharedConnectionLock | None = None,
        *,
        synced: bool = True,
    ) -> None:
        self._session = SqliteSession(engine, begin_sql, shared, synced=synced)
        # Typed as the ports: the protocol declares plain (invariant) attributes.
        self.files: FileRepository = SqliteFileRepository(self._session)
        self.workflows: WorkflowRepository = SqliteWorkflowRepository(self._session)
        self.versions: VersionRepository = SqliteVersionRepository(self._session)
        self._audit = SqliteAuditRepository(self._session)
        self.audit: AuditRepository = self._audit
        self.retention: RetentionRepository = SqliteRetentionRepository(self._session)
        self.provider_copies: ProviderCopyRepository = SqliteProviderCopyRepository(self._session)
        self.quotas: QuotaRepository = SqliteQuotaRepository(self._session)
        self.inline_blobs: InlineBlobRepository = SqliteInlineBlobRepository(self._session)
        self.maintenance: MaintenanceRepository = SqliteMaintenanceRepository(self._session)

    def __enter__(self) -> SqliteUnitOfWork:
        return self

    def session_on(self, engine: Engine) -> SqliteSession | None:
        """This unit's session if it is on ``engine`` (another adapter of the same database
        reads in its transaction: the link ledger, ADR 0128), else ``None``."""
        session = self._session
        return session if session.engine is engine else None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.rollback()
        except Exception:
            # Do not hide the exception that ended the block.
            if exc is None:
                raise
        finally:
            self._discard()

    def commit(self) -> None:
        """Commit the transaction; :class:`StorageError` if the database refuses.

        Also raises it, and commits nothing, when the database already ended
        the transaction under the unit (see :attr:`SqliteSession.lost
        <docbinder.adapters.sqlite.session.SqliteSession.lost>`).
        """
        session = self._session
        if not session.checked_out:
            return
        try:
            self._audit.before_commit()
            session.commit()
        except StorageError:
            self._discard()
            raise
        except (sqlite3.Error, sa_exc.SQLAlchemyError) as err:
            self._discard()
            raise storage_error(err) from err

    def rollback(self) -> None:
        """Roll back everything since the last commit."""
        self._audit.forget()
        if not self._session.checked_out:
            return
        try:
            self._session.rollback()
        except (sqlite3.Error, sa_exc.SQLAlchemyError) as err:
            self._discard()
            raise storage_error(err) from err

    def _discard(self) -> None:
        self._audit.forget()
        with contextlib.suppress(sqlite3.Error, sa_exc.SQLAlchemyError):
            self._session.close()


class SqliteMetadata:
    """The SQLite metadata store (the embedded default): units of work on ``sqlite3``.

    ``SqliteMetadata(engine)`` over a SQLite engine, or
    ``SqliteMetadata.from_url("sqlite:///path")``. The engine's pool gives
    the connections (configured by
    :func:`~docbinder.adapters.sql.engine.install_sqlite_hooks`: WAL,
    ``foreign_keys=ON``, the busy timeout, the driver's transaction handling
    off); every statement and transaction of a unit goes to the ``sqlite3``
    connection itself, never through SQLAlchemy's ``Connection`` (ADR 0040).
    The engine also serves the migrations, the extraction cache and
    ``doctor``. :meth:`unit_of_work` is the
    :data:`~docbinder.ports.metadata.UnitOfWorkFactory`. The schema must
    exist (:func:`docbinder.adapters.sql.migrate`). Safe to share between
    threads; each unit takes its own connection. ``sqlite://`` (in memory)
    is one connection that units of several threads take turns on
    (:class:`~docbinder.adapters.sqlite.session.SharedConnectionLock`).
    Needs SQLite 3.24 or later (``INSERT ... ON CONFLICT``).

    Raises :class:`ConfigurationError` for an engine of another database.
    """

    def __init__(self, engine: Engine) -> None:
        if engine.dialect.name != "sqlite":
            raise ConfigurationError(
                f"SqliteMetadata needs a SQLite engine, not {engine.dialect.name}: "
                "use docbinder.adapters.sql.SqlMetadata"
            )
        install_sqlite_hooks(engine)
        reset_pool_after_fork(engine)
        self._engine = engine
        self._shared = (
            SharedConnectionLock(DEFAULT_BUSY_TIMEOUT_S)
            if isinstance(engine.pool, StaticPool)
            else None
        )
        self._closed = False

    @classmethod
    def from_url(cls, url: str | URL, **engine_options: Any) -> SqliteMetadata:
        """A store over :func:`~docbinder.adapters.sql.create_engine_from_url` ``(url, **engine_options)``."""
        return cls(create_engine_from_url(url, **engine_options))

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine of the database (migrations, the extraction cache, diagnostics)."""
        return self._engine

    @property
    def url(self) -> str:
        """The database URL."""
        return self._engine.url.render_as_string(hide_password=True)

    def unit_of_work(self) -> SqliteUnitOfWork:
        """A fresh unit of work for reading and writing; it begins with ``BEGIN IMMEDIATE``.

        It takes the write lock at its first statement (waiting up to the busy timeout).
        """
        self._require_open()
        return SqliteUnitOfWork(self._engine, WRITER_BEGIN, self._shared)

    def unsynced_unit_of_work(self) -> SqliteUnitOfWork:
        """A writing unit (``BEGIN IMMEDIATE``) whose commit does not wait for the disk.

        For records a power cut may lose but never corrupt: the audit log's
        batches of read events (:class:`~docbinder.application.steps.auditing.AuditTrail`).
        Its commit is atomic and durable once any later commit syncs the log
        (``synced=False`` of :class:`SqliteSession`). :class:`BinderClosed` after
        :meth:`close`.
        """
        self._require_open()
        return SqliteUnitOfWork(self._engine, WRITER_BEGIN, self._shared, synced=False)

    def read_unit_of_work(self) -> SqliteUnitOfWork:
        """A fresh unit of work meant for reading only; it begins with ``BEGIN DEFERRED``.

        It does not wait for writers; a write inside it may fail with
        :class:`~docbinder.domain.errors.StorageError` ("database is locked")
        when another writer got there first.
        """
        self._require_open()
        return SqliteUnitOfWork(self._engine, READER_BEGIN, self._shared)

    def session(self, write: bool, *, synced: bool = True) -> SqliteSession:
        """A connection and transaction of its own, for an adapter beside the units of work.

        ``write`` begins it with ``BEGIN IMMEDIATE``, else ``BEGIN DEFERRED``;
        ``synced=False`` commits without waiting for the disk (see
        :class:`SqliteSession`). The caller closes it (:meth:`SqliteSession.close`).
        The link ledger and the resolution log use it
        (:mod:`docbinder.adapters.sqlite.links`, :mod:`docbinder.adapters.sqlite.resolutions`).
        :class:`~docbinder.domain.errors.BinderClosed` after :meth:`close`.
        """
        self._require_open()
        begin = WRITER_BEGIN if write else READER_BEGIN
        return SqliteSession(self._engine, begin, self._shared, synced=synced)

    def dispose(self) -> None:
        """Close the pooled connections (units in progress keep theirs)."""
        self._engine.dispose()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Dispose of the connection pool for good; idempotent.

        Units already open finish with their connection; a new one raises
        :class:`~docbinder.domain.errors.BinderClosed`.
        """
        self._closed = True
        self._engine.dispose()

    def _require_open(self) -> None:
        if self._closed:
            raise BinderClosed(f"the SQLite metadata store {self.url} was closed")
