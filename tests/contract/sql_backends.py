"""Provisioning of isolated, migrated SQL databases for the metadata tests.

``provision(name, tmp_dir)`` yields a :class:`SqlBackend` for ``"sqlite"`` (a
file in ``tmp_dir``), ``"postgresql"`` (a fresh schema in the test database,
selected through ``search_path``) or ``"mariadb"`` (a fresh database on the
server); it is migrated with docbinder's own migrations and dropped again at
the end. A server that cannot be reached calls ``backend_unavailable`` (skip
locally, fail with ``CI=true``). Only the loopback URLs of ``tests/conftest.py``
are used.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.sql import SqlMetadata, create_engine_from_url, migrate
from docbinder.adapters.sql.schema import TABLES
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.application import DocBinder
from docbinder.ports.blobs import BlobStore
from tests.conftest import MYSQL_URL, POSTGRES_URL, backend_unavailable
from tests.wiring import wire_binder

SQL_BACKENDS = ("sqlite", "postgresql", "mariadb")
"""Names accepted by :func:`provision`."""


@attrs.define
class SqlBackend:
    """A migrated, private database: its URL (with credentials), engine and store.

    ``store`` is the metadata adapter of the backend: ``SqliteMetadata`` for
    SQLite, ``SqlMetadata`` for the servers; ``engine`` a SQLAlchemy engine
    on the same database.
    """

    name: str
    url: URL
    engine: Engine
    store: SqlMetadata | SqliteMetadata

    def clean(self) -> None:
        """Delete every row of docbinder's tables (children first)."""
        with self.engine.begin() as conn:
            for table in reversed(TABLES):
                conn.execute(sa.delete(table))


def _reachable(name: str, url: URL) -> Engine:
    engine = create_engine_from_url(url)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as err:
        engine.dispose()
        backend_unavailable(name, f"{url.render_as_string(hide_password=True)}: {err}")
    return engine


def _unique_name() -> str:
    return f"docbinder_t_{uuid.uuid4().hex[:12]}"


@contextmanager
def provision(name: str, tmp_dir: Path, *, migrated: bool = True) -> Iterator[SqlBackend]:
    """Yield a fresh database of backend ``name`` (migrated to head unless ``migrated=False``); drop it afterwards."""
    if name == "sqlite":
        url = make_url(f"sqlite:///{tmp_dir / 'metadata.db'}")
        yield from _serve(name, url, migrated)
    elif name == "postgresql":
        admin = _reachable(name, make_url(POSTGRES_URL).update_query_dict({"connect_timeout": "5"}))
        schema = _unique_name()
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        try:
            url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
            yield from _serve(name, url, migrated)
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    elif name == "mariadb":
        admin = _reachable(name, make_url(MYSQL_URL).update_query_dict({"connect_timeout": "5"}))
        database = _unique_name()
        with admin.begin() as conn:
            # The server's default charset and collation on purpose: the
            # migrations must set utf8mb4 / utf8mb4_bin on the tables themselves.
            conn.execute(sa.text(f"CREATE DATABASE `{database}`"))
        try:
            yield from _serve(name, make_url(MYSQL_URL).set(database=database), migrated)
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{database}`"))
            admin.dispose()
    else:  # pragma: no cover - a typo in a test
        raise ValueError(f"unknown SQL backend {name!r}")


def _serve(name: str, url: URL, migrated: bool) -> Iterator[SqlBackend]:
    engine = create_engine_from_url(url)
    try:
        if migrated:
            migrate(engine)
        store = SqliteMetadata(engine) if name == "sqlite" else SqlMetadata(engine)
        yield SqlBackend(name=name, url=url, engine=engine, store=store)
    finally:
        engine.dispose()


def binder_over(store: SqlMetadata | SqliteMetadata, blobs: BlobStore, **options: Any) -> DocBinder:
    """A binder wired as the container wires SQL metadata: writer, read and (SQLite) unsynced batch units."""
    batch = getattr(store, "unsynced_unit_of_work", None)
    if batch is not None:
        options.setdefault("batch_uow_factory", batch)
    return wire_binder(store.unit_of_work, blobs, store.read_unit_of_work, **options)


def statements_sent(engine: Engine, action: Callable[[], object]) -> list[tuple[str, Any]]:
    """The ``(statement, parameters)`` pairs sent to ``engine``'s database while ``action`` ran.

    PostgreSQL and MariaDB: captured with SQLAlchemy's ``before_cursor_execute``
    event, in order. SQLite (whose adapter sends its statements on ``sqlite3``,
    not through SQLAlchemy): SQLite's own trace callback on every connection
    checked out of ``engine``'s pool meanwhile, with the values written into
    the statement (parameters ``()``), ``COMMIT`` and ``ROLLBACK`` left out as
    SQLAlchemy's event leaves them out.
    """
    seen: list[tuple[str, Any]] = []
    if engine.dialect.name == "sqlite":

        def trace(statement: str) -> None:
            if statement.upper() not in ("COMMIT", "ROLLBACK"):
                seen.append((statement, ()))

        def checkout(dbapi_connection: Any, *_rest: Any) -> None:
            dbapi_connection.set_trace_callback(trace)

        def checkin(dbapi_connection: Any, *_rest: Any) -> None:
            dbapi_connection.set_trace_callback(None)

        sa.event.listen(engine, "checkout", checkout)
        sa.event.listen(engine, "checkin", checkin)
        try:
            action()
        finally:
            sa.event.remove(engine, "checkout", checkout)
            sa.event.remove(engine, "checkin", checkin)
        return seen

    def capture(_conn: Any, _cursor: Any, statement: str, params: Any, *_rest: Any) -> None:
        seen.append((statement, params))

    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        action()
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    return seen


def query_plan(backend: SqlBackend, statement: str, params: Any) -> str:
    """The database's plan for ``statement`` on one line.

    SQLite: ``EXPLAIN QUERY PLAN``; PostgreSQL: ``EXPLAIN`` with sequential
    scans disabled (a usable index is chosen even on a tiny table); MariaDB:
    ``EXPLAIN`` as ``table=... possible_keys=...`` per row.
    """
    with backend.engine.connect() as conn:
        if backend.name == "sqlite":
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            return " | ".join(str(row[-1]) for row in rows)
        if backend.name == "postgresql":
            conn.exec_driver_sql("SET enable_seqscan = off")
            rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
            return " | ".join(str(row[0]) for row in rows)
        result = conn.exec_driver_sql("EXPLAIN " + statement, params)
        keys = list(result.keys())
        return " | ".join(
            f"table={row[keys.index('table')]} possible_keys={row[keys.index('possible_keys')]}"
            for row in result
        )


def backend_binder(
    request: pytest.FixtureRequest, name: str, **options: Any
) -> tuple[DocBinder, MemoryMetadataStore | SqlBackend]:
    """A binder over memory blobs and the metadata backend ``name`` (``memory``, ``sqlite``,
    ``postgresql``, ``mariadb``), and that backend: a fresh memory store, or the module's
    cleaned SQL backend (its server's marker applied). ``options`` go to the wiring."""
    if name == "memory":
        store = MemoryMetadataStore()
        return wire_binder(store.unit_of_work, MemoryBlobStore(), **options), store
    if name == "postgresql":
        request.applymarker(pytest.mark.postgres)
    if name == "mariadb":
        request.applymarker(pytest.mark.mysql)
    backend: SqlBackend = request.getfixturevalue(f"{name}_backend")
    backend.clean()
    return binder_over(backend.store, MemoryBlobStore(), **options), backend
