"""Schema migrations of the SQL metadata store, driven from Python (SPEC C12/C15).

The Alembic scripts ship in ``docbinder/adapters/sql/migrations``; Alembic is
configured in code (:func:`alembic_config`), so no ``alembic.ini`` is needed in
the working directory. The revision is kept in the table
:data:`VERSION_TABLE`, not Alembic's default ``alembic_version``, so
docbinder can share a database with an application that uses Alembic itself.

``migrate`` is what ``docbinder migrate`` runs; ``current_revision``,
``head_revision``, ``is_up_to_date`` and ``schema_differences`` are what
``docbinder doctor`` reports.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Connection, Engine

from docbinder.adapters.sql.engine import SQLITE_BEGIN_OPTION, create_engine_from_url
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sql.schema import TABLES, metadata
from docbinder.domain.errors import ConfigurationError

log = logging.getLogger("docbinder.sql")

VERSION_TABLE = "docbinder_schema_version"
"""The table in which Alembic records the applied revision."""

SCRIPT_LOCATION = Path(__file__).resolve().parent / "migrations"
"""Directory of the Alembic environment and revisions."""

_READ_ONLY = {SQLITE_BEGIN_OPTION: "DEFERRED"}

_OWN_TABLES = frozenset(t.name for t in TABLES)

EngineOrUrl = Engine | str | URL
"""Where to migrate: an engine, or a URL for :func:`create_engine_from_url`."""


def include_name(name: str | None, type_: str, _parent_names: Any) -> bool:
    """Alembic ``include_name`` hook: compare only docbinder's own tables.

    Other tables in the same database or schema are none of docbinder's
    business and never show up as differences.
    """
    if type_ == "table":
        return name in _OWN_TABLES
    return True


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for docbinder's scripts, optionally bound to an open ``connection``.

    The environment (``migrations/env.py``) runs only with a connection in
    ``config.attributes["connection"]``.
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPT_LOCATION))
    cfg.set_main_option("path_separator", "os")
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@contextmanager
def _engine(target: EngineOrUrl) -> Iterator[Engine]:
    if isinstance(target, Engine):
        yield target
        return
    engine = create_engine_from_url(target)
    try:
        yield engine
    finally:
        engine.dispose()


def head_revision() -> str:
    """The newest revision shipped with this version of docbinder (e.g. ``"0001"``)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revisions
        raise ConfigurationError("docbinder ships no schema revisions")
    return head


def migrate(target: EngineOrUrl, revision: str = "head") -> str | None:
    """Upgrade the schema at ``target`` to ``revision`` (default: the newest); return the new revision.

    Idempotent: a database already at ``revision`` is left alone. Runs in one
    transaction where the backend has transactional DDL (PostgreSQL, SQLite).
    Raises :class:`StorageError` when the database cannot be reached or
    refuses a statement, :class:`ConfigurationError` for an unknown revision.
    """
    with _engine(target) as engine:
        before = current_revision(engine)
        try:
            with engine.begin() as conn:
                command.upgrade(alembic_config(conn), revision)
        except CommandError as err:
            raise ConfigurationError(f"cannot migrate to revision {revision!r}: {err}") from err
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err
        after = current_revision(engine)
        if after != before:
            log.info(
                "migrated metadata schema of %s from %s to %s",
                engine.url.render_as_string(hide_password=True),
                before or "empty",
                after,
            )
        return after


def current_revision(target: EngineOrUrl) -> str | None:
    """The revision the database at ``target`` is at, or ``None`` if never migrated.

    Raises :class:`StorageError` when the database cannot be reached.
    """
    with _engine(target) as engine:
        try:
            with engine.connect() as conn:
                conn.execution_options(**_READ_ONLY)
                context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
                return context.get_current_revision()
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err


def is_up_to_date(target: EngineOrUrl) -> bool:
    """Whether the database at ``target`` is at :func:`head_revision`."""
    return current_revision(target) == head_revision()


def schema_differences(target: EngineOrUrl) -> list[Any]:
    """What Alembic's autogenerate finds between :mod:`~docbinder.adapters.sql.schema` and the database.

    An empty list means the database's docbinder tables match the model; the
    items are Alembic diff tuples (``("add_table", Table)``, ``("add_index",
    Index)``, ...). Raises :class:`StorageError` when the database cannot be
    reached.
    """
    with _engine(target) as engine:
        try:
            with engine.connect() as conn:
                conn.execution_options(**_READ_ONLY)
                context = MigrationContext.configure(
                    conn,
                    opts={
                        "version_table": VERSION_TABLE,
                        "compare_type": True,
                        "include_name": include_name,
                        "target_metadata": metadata,
                    },
                )
                return list(compare_metadata(context, metadata))
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err
