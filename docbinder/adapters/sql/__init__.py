"""SQLAlchemy 2 metadata store of PostgreSQL and MariaDB/MySQL, and the schema every SQL store shares (SPEC C12).

Every statement and transaction of a unit goes through SQLAlchemy's
``Connection``, whatever listens to the engine (ADR 0040). The schema, its
Alembic migrations, the engines for every supported URL (SQLite's included)
and the row converter here are shared with SQLite's own adapter,
:mod:`docbinder.adapters.sqlite`, which serves ``sqlite:`` URLs.

Typical wiring::

    from docbinder.adapters.sql import SqlMetadata, migrate

    store = SqlMetadata.from_url("postgresql+psycopg://user@host/db")
    migrate(store.engine)                 # what ``docbinder migrate`` does
    uow_factory = store.unit_of_work      # the UnitOfWorkFactory port

PostgreSQL needs the ``postgres`` extra (psycopg 3), MariaDB/MySQL the
``mysql`` extra (PyMySQL); without it :class:`~docbinder.domain.errors.MissingExtra`
names the extra. Nothing connects at import time or when an engine is made.
"""

from typing import TYPE_CHECKING, Any

from docbinder.adapters.sql.engine import create_engine_from_url, safe_url
from docbinder.adapters.sql.files import SqlFileRepository
from docbinder.adapters.sql.maintenance import SqlMaintenanceRepository
from docbinder.adapters.sql.revision import VERSION_TABLE
from docbinder.adapters.sql.uow import SqlMetadata, SqlUnitOfWork
from docbinder.adapters.sql.versions import SqlVersionRepository
from docbinder.adapters.sql.workflows import SqlWorkflowRepository

if TYPE_CHECKING:
    from docbinder.adapters.sql.migration import (
        current_revision,
        half_applied,
        head_revision,
        is_up_to_date,
        migrate,
        schema_differences,
    )

_MIGRATION = frozenset(
    {
        "current_revision",
        "half_applied",
        "head_revision",
        "is_up_to_date",
        "migrate",
        "schema_differences",
    }
)
"""Names of :mod:`~docbinder.adapters.sql.migration`, imported (with Alembic) on first use."""


def __getattr__(name: str) -> Any:
    """The migration functions, loaded on first use so that using the store never imports Alembic."""
    if name in _MIGRATION:
        from docbinder.adapters.sql import migration

        return getattr(migration, name)
    raise AttributeError(f"module 'docbinder.adapters.sql' has no attribute {name!r}")


__all__ = [
    "VERSION_TABLE",
    "SqlFileRepository",
    "SqlMaintenanceRepository",
    "SqlMetadata",
    "SqlUnitOfWork",
    "SqlVersionRepository",
    "SqlWorkflowRepository",
    "create_engine_from_url",
    "current_revision",
    "half_applied",
    "head_revision",
    "is_up_to_date",
    "migrate",
    "safe_url",
    "schema_differences",
]
