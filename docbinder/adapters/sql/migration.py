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

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import exc as sa_exc
from sqlalchemy import inspect
from sqlalchemy.engine import URL, Connection, Engine

from docbinder.adapters.sql.engine import SQLITE_BEGIN_OPTION, create_engine_from_url
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sql.revision import VERSION_TABLE as VERSION_TABLE
from docbinder.adapters.sql.schema import TABLES, metadata
from docbinder.domain.errors import ConfigurationError

log = logging.getLogger("docbinder.sql")

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
    On MariaDB/MySQL a migration that stopped midway leaves some of docbinder's
    tables without a version row; such a database is completed (see
    :func:`half_applied`) instead of failing with "table already exists".
    Raises :class:`StorageError` when the database cannot be reached or
    refuses a statement, :class:`ConfigurationError` for an unknown revision.
    """
    with _engine(target) as engine:
        before = current_revision(engine)
        if before is None and revision == "head" and existing_tables(engine):
            return _complete_half_applied(engine)
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


def existing_tables(target: EngineOrUrl) -> list[str]:
    """docbinder's own tables that exist at ``target`` (sorted); :class:`StorageError`."""
    with _engine(target) as engine:
        try:
            with engine.connect() as conn:
                conn.execution_options(**_READ_ONLY)
                names = set(inspect(conn).get_table_names())
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err
    return sorted(names & _OWN_TABLES)


_REPAIRABLE = frozenset({"add_table", "add_index"})


def _repairable(diff: Any) -> bool:
    """Whether completing the migration may apply ``diff``: it only adds, never changes.

    A missing table or index, or a missing nullable column (a later revision's
    added column whose ``ALTER TABLE`` never ran) can be added without touching data.
    """
    if not (isinstance(diff, tuple) and diff):
        return False
    if diff[0] in _REPAIRABLE:
        return True
    return diff[0] == "add_column" and len(diff) == 4 and bool(diff[3].nullable)


def half_applied(target: EngineOrUrl) -> str | None:
    """A one-line diagnosis when a migration stopped midway at ``target``, else ``None``.

    The state: some of docbinder's tables exist but no revision is recorded (backends
    without transactional DDL, MariaDB/MySQL, keep each finished statement; the
    version row is written last). The line says whether ``docbinder migrate``
    completes it (only tables or indexes are missing) or what to do instead.
    """
    with _engine(target) as engine:
        if current_revision(engine) is not None:
            return None
        tables = existing_tables(engine)
        if not tables:
            return None
        blocking = _blocking_differences(engine)
        where = f"tables {', '.join(tables)} exist but no schema revision is recorded"
        if not blocking:
            return f"a migration stopped midway ({where}); `docbinder migrate` completes it"
        return _way_out(where, blocking)


def _blocking_differences(engine: Engine) -> list[str]:
    return [
        _describe(diff) for diff in _flatten(schema_differences(engine)) if not _repairable(diff)
    ]


def _way_out(where: str, blocking: list[str]) -> str:
    return (
        f"a migration stopped midway ({where}) and the schema differs in ways "
        f"docbinder does not repair ({'; '.join(blocking[:3])}): back up the database, "
        f"drop docbinder's tables ({', '.join(t.name for t in reversed(TABLES))}) "
        "and run `docbinder migrate` again"
    )


def _flatten(diffs: list[Any]) -> Iterator[Any]:
    for diff in diffs:
        if isinstance(diff, list):  # column modifications come grouped
            yield from diff
        else:
            yield diff


def _describe(diff: Any) -> str:
    if isinstance(diff, tuple) and diff:
        subject = next((str(getattr(x, "name", "")) for x in diff[1:] if hasattr(x, "name")), "")
        return f"{diff[0]} {subject}".strip()
    return str(diff)[:80]


def _complete_half_applied(engine: Engine) -> str:
    """Create the missing tables and indexes, check the result, record the head revision."""
    blocking = _blocking_differences(engine)
    where = f"tables {', '.join(existing_tables(engine))} exist but no schema revision is recorded"
    if blocking:
        raise ConfigurationError(_way_out(where, blocking))
    head = head_revision()
    try:
        with engine.begin() as conn:
            diffs = list(_flatten(schema_differences(conn)))
            missing = [metadata.tables[d[1].name] for d in diffs if d[0] == "add_table"]
            metadata.create_all(conn, tables=missing, checkfirst=True)  # parents first
            created = {table.name for table in missing}
            operations = Operations(MigrationContext.configure(conn))
            for diff in diffs:  # nullable columns of tables that existed already
                if diff[0] == "add_column" and diff[2] not in created:
                    column = diff[3]
                    operations.add_column(diff[2], sa.Column(column.name, column.type))
            for diff in diffs:  # indexes of tables that existed already
                if diff[0] == "add_index" and diff[1].table.name not in created:
                    diff[1].create(conn)
        remaining = schema_differences(engine)
        if remaining:
            raise ConfigurationError(_way_out(where, [_describe(d) for d in _flatten(remaining)]))
        with engine.begin() as conn:
            command.stamp(alembic_config(conn), head)
    except sa_exc.SQLAlchemyError as err:
        raise storage_error(err) from err
    log.warning(
        "completed a migration that had stopped midway on %s (%s); schema at %s",
        engine.url.render_as_string(hide_password=True),
        where,
        head,
    )
    return head


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


def schema_differences(target: EngineOrUrl | Connection) -> list[Any]:
    """What Alembic's autogenerate finds between :mod:`~docbinder.adapters.sql.schema` and the database.

    An empty list means the database's docbinder tables match the model; the
    items are Alembic diff tuples (``("add_table", Table)``, ``("add_index",
    Index)``, ...). Raises :class:`StorageError` when the database cannot be
    reached.
    """
    if isinstance(target, Connection):
        return _compare(target)
    with _engine(target) as engine:
        try:
            with engine.connect() as conn:
                conn.execution_options(**_READ_ONLY)
                return _compare(conn)
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err


def _compare(conn: Connection) -> list[Any]:
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
