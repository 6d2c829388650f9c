"""The schema revision docbinder needs, and whether a database is at it, without Alembic.

Alembic is needed to change a schema, not to see that none is due: a database
whose version table (:data:`VERSION_TABLE`) holds exactly :data:`HEAD_REVISION`
is at head. :func:`at_head` reads that one row with plain SQLAlchemy, so a
command on an already migrated database never imports Alembic (ADR 0052).
Every other state (no table, no row, another revision, several rows)
answers ``False`` and the caller goes the Alembic way
(:mod:`docbinder.adapters.sql.migration`), which migrates or reports it.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.engine import Engine

from docbinder.adapters.sql.engine import SQLITE_BEGIN_OPTION
from docbinder.adapters.sql.errors import storage_error

VERSION_TABLE: Final = "docbinder_schema_version"
"""The table in which Alembic records the applied revision."""

HEAD_REVISION: Final = "0013"
"""The newest revision in ``migrations/versions``; a new revision file changes it (a test checks)."""


def at_head(engine: Engine) -> bool:
    """Whether the database of ``engine`` records exactly :data:`HEAD_REVISION`.

    Reads one table. A database that cannot be reached raises
    :class:`~docbinder.domain.errors.StorageError` (as the Alembic way would);
    one without the table, empty, behind, ahead or with several rows answers
    ``False``, and the caller's Alembic path migrates or reports it.
    """
    try:
        conn = engine.connect()
    except sa_exc.SQLAlchemyError as err:
        raise storage_error(err) from err
    with conn:
        conn.execution_options(**{SQLITE_BEGIN_OPTION: "DEFERRED"})  # a read: no write lock
        try:
            rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
        except sa_exc.SQLAlchemyError:
            return False
    return [tuple(row) for row in rows] == [(HEAD_REVISION,)]
