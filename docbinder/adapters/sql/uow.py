"""The SQL unit of work (one database transaction) and :class:`SqlMetadata`, its factory."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine

from docbinder.adapters.sql.audit import SqlAuditRepository
from docbinder.adapters.sql.engine import create_engine_from_url, reset_pool_after_fork
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sql.files import SqlFileRepository
from docbinder.adapters.sql.inline_blobs import SqlInlineBlobRepository
from docbinder.adapters.sql.maintenance import SqlMaintenanceRepository
from docbinder.adapters.sql.provider_copies import SqlProviderCopyRepository
from docbinder.adapters.sql.quotas import SqlQuotaRepository
from docbinder.adapters.sql.retention import SqlRetentionRepository
from docbinder.adapters.sql.session import SqlSession
from docbinder.adapters.sql.versions import SqlVersionRepository
from docbinder.adapters.sql.workflows import SqlWorkflowRepository
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


class SqlUnitOfWork:
    """:class:`~docbinder.ports.metadata.UnitOfWork` over one SQLAlchemy ``Connection``.

    The connection is private to this unit (never share a unit between
    threads). It is checked out on the first statement; everything up to
    :meth:`commit` is one transaction, shared by the repositories of every
    role. Leaving the ``with`` block rolls back whatever was not committed
    and returns the connection to the pool. After ``commit()`` the unit may
    go on: the next statement starts a new transaction. Driver faults
    surface as :class:`~docbinder.domain.errors.StorageError`. ``engine``
    gives the connections.
    """

    def __init__(self, engine: Engine) -> None:
        self._session = SqlSession(engine)
        # Typed as the ports: the protocol declares plain (invariant) attributes.
        self.files: FileRepository = SqlFileRepository(self._session)
        self.workflows: WorkflowRepository = SqlWorkflowRepository(self._session)
        self.versions: VersionRepository = SqlVersionRepository(self._session)
        self.audit: AuditRepository = SqlAuditRepository(self._session)
        self.retention: RetentionRepository = SqlRetentionRepository(self._session)
        self.provider_copies: ProviderCopyRepository = SqlProviderCopyRepository(self._session)
        self.quotas: QuotaRepository = SqlQuotaRepository(self._session)
        self.inline_blobs: InlineBlobRepository = SqlInlineBlobRepository(self._session)
        self.maintenance: MaintenanceRepository = SqlMaintenanceRepository(self._session)

    def __enter__(self) -> SqlUnitOfWork:
        return self

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
        """Commit the transaction; raises :class:`StorageError` if the database refuses.

        Also raises it, and commits nothing, when the database already ended
        the transaction under the unit (see :attr:`SqlSession.lost
        <docbinder.adapters.sql.session.SqlSession.lost>`).
        """
        session = self._session
        if not session.checked_out:
            return
        lost = session.lost
        if lost is not None:
            self._discard()
            raise StorageError(
                f"the database ended this transaction ({lost!r}); nothing of it was committed"
            ) from lost
        try:
            session.commit()
        except sa_exc.SQLAlchemyError as err:
            self._discard()
            raise storage_error(err) from err

    def rollback(self) -> None:
        """Roll back everything since the last commit."""
        if not self._session.checked_out:
            return
        try:
            self._session.rollback()
        except sa_exc.SQLAlchemyError as err:
            self._discard()
            raise storage_error(err) from err

    def _discard(self) -> None:
        with contextlib.suppress(sa_exc.SQLAlchemyError):
            self._session.close()


class SqlMetadata:
    """The SQL metadata store of PostgreSQL and MariaDB: an engine plus the factory of units of work.

    ``SqlMetadata(engine)`` or ``SqlMetadata.from_url(url)``;
    :meth:`unit_of_work` is the :data:`~docbinder.ports.metadata.UnitOfWorkFactory`
    to wire into the use cases. The schema must exist: run
    :func:`docbinder.adapters.sql.migrate` first (``docbinder migrate``).
    Safe to share between threads; each unit makes its own session.
    SQLite has an adapter of its own
    (:class:`docbinder.adapters.sqlite.SqliteMetadata`, ADR 0040): a SQLite
    engine raises :class:`~docbinder.domain.errors.ConfigurationError`.
    """

    def __init__(self, engine: Engine) -> None:
        if engine.dialect.name == "sqlite":
            raise ConfigurationError(
                "SQLite metadata is served by docbinder.adapters.sqlite.SqliteMetadata, "
                "not SqlMetadata"
            )
        reset_pool_after_fork(engine)
        self._engine = engine
        self._closed = False

    @classmethod
    def from_url(cls, url: str | URL, **engine_options: Any) -> SqlMetadata:
        """A store over :func:`create_engine_from_url` ``(url, **engine_options)``."""
        return cls(create_engine_from_url(url, **engine_options))

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and diagnostics)."""
        return self._engine

    @property
    def url(self) -> str:
        """The database URL with any password masked."""
        return self._engine.url.render_as_string(hide_password=True)

    def unit_of_work(self) -> SqlUnitOfWork:
        """A fresh unit of work for reading and writing."""
        self._require_open()
        return SqlUnitOfWork(self._engine)

    def read_unit_of_work(self) -> SqlUnitOfWork:
        """A fresh unit of work meant for reading only (on PostgreSQL and MariaDB, as :meth:`unit_of_work`)."""
        self._require_open()
        return SqlUnitOfWork(self._engine)

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
        :class:`~docbinder.domain.errors.BinderClosed` (without this, the engine
        would quietly open a new pool).
        """
        self._closed = True
        self._engine.dispose()

    def _require_open(self) -> None:
        if self._closed:
            raise BinderClosed(f"the SQL metadata store {self.url} was closed")
