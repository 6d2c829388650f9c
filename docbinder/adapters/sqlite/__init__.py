"""The SQLite metadata store on the standard library's ``sqlite3`` (the embedded default, SPEC C12).

Typical wiring::

    from docbinder.adapters.sql import migrate
    from docbinder.adapters.sqlite import SqliteMetadata

    store = SqliteMetadata.from_url("sqlite:///docbinder.db")
    migrate(store.engine)                 # what ``docbinder migrate`` does
    uow_factory = store.unit_of_work      # the UnitOfWorkFactory port

It shares the schema and migrations of :mod:`docbinder.adapters.sql` (the
SQLAlchemy adapter, which serves PostgreSQL and MariaDB) and takes its
connections from a SQLAlchemy engine's pool, but sends every statement and
transaction on ``sqlite3`` itself: one path, whatever listens to
SQLAlchemy's events (ADR 0040). The container picks it for ``sqlite:``
database URLs. Nothing connects at import time or when a store is made.
"""

from docbinder.adapters.sqlite.files import SqliteFileRepository
from docbinder.adapters.sqlite.maintenance import SqliteMaintenanceRepository
from docbinder.adapters.sqlite.uow import SqliteMetadata, SqliteUnitOfWork
from docbinder.adapters.sqlite.versions import SqliteVersionRepository
from docbinder.adapters.sqlite.workflows import SqliteWorkflowRepository

__all__ = [
    "SqliteFileRepository",
    "SqliteMaintenanceRepository",
    "SqliteMetadata",
    "SqliteUnitOfWork",
    "SqliteVersionRepository",
    "SqliteWorkflowRepository",
]
