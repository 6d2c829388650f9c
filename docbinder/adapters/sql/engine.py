"""Engines for the supported metadata URLs.

``sqlite:///path`` (pysqlite, the embedded default), ``postgresql+psycopg://``
(psycopg 3) and ``mysql+pymysql://`` / ``mariadb+pymysql://`` (PyMySQL).
Creating an engine never connects; the first unit of work does.

SQLite transaction control follows "Enabling Non-Legacy SQLite Transactional
Modes" of SQLAlchemy's SQLite dialect documentation: the driver's own
``BEGIN`` handling is switched off (``isolation_level = None``) and the engine
emits ``BEGIN IMMEDIATE`` itself when a transaction starts. A writer thus takes
SQLite's single write lock before its first statement and waits for it up to
the busy timeout, instead of failing with ``SQLITE_BUSY`` when a deferred
read transaction later tries to become a write transaction. Units that only
read may start with a deferred ``BEGIN`` instead (execution option
:data:`SQLITE_BEGIN_OPTION`), so readers do not queue behind writers (WAL).
"""

from __future__ import annotations

import importlib
import os
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from docbinder.domain.errors import ConfigurationError, MissingExtra

DEFAULT_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for the write lock, in seconds."""

SQLITE_BEGIN_OPTION = "docbinder_sqlite_begin"
"""Execution option naming the ``BEGIN`` flavour on SQLite: ``"IMMEDIATE"`` (default) or ``"DEFERRED"``."""

_SQLITE_BEGIN_MODES = frozenset({"IMMEDIATE", "DEFERRED", "EXCLUSIVE"})

_DRIVERS: dict[str, tuple[str, str, str, str]] = {
    # backend: (driver name in the URL, module to import, pip extra, feature)
    "postgresql": ("psycopg", "psycopg", "postgres", "the PostgreSQL metadata store"),
    "mysql": ("pymysql", "pymysql", "mysql", "the MariaDB/MySQL metadata store"),
    "mariadb": ("pymysql", "pymysql", "mysql", "the MariaDB/MySQL metadata store"),
}


def _parse(url: str | URL) -> URL:
    try:
        return make_url(url)
    except (exc.ArgumentError, ValueError) as err:
        raise ConfigurationError(f"metadata URL is not a database URL: {err}") from err


def _require(module: str, extra: str, feature: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(feature, extra, module) from err


def safe_url(url: str | URL) -> str:
    """``url`` as text with any password masked, for messages and diagnostics."""
    return _parse(url).render_as_string(hide_password=True)


def create_engine_from_url(
    url: str | URL,
    *,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    **engine_options: Any,
) -> Engine:
    """Make an SQLAlchemy ``Engine`` for a metadata URL; connects to nothing.

    Accepted URLs:

    * ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``: WAL
      journal, ``foreign_keys=ON``, ``busy_timeout`` of ``busy_timeout_s``
      seconds, ``BEGIN IMMEDIATE`` for writing units (see the module doc).
      ``sqlite://`` (in memory) uses one shared connection; units of several
      threads take turns on it (:class:`~docbinder.adapters.sql.SqlMetadata`
      serialises them), so it suits tests, not concurrent work.
    * ``postgresql+psycopg://...`` (``postgresql://`` and ``postgres://``
      mean psycopg 3 too).
    * ``mysql+pymysql://...``, ``mariadb+pymysql://...`` (``mysql://`` and
      ``mariadb://`` mean PyMySQL); ``charset=utf8mb4`` is added when absent.

    Server backends use ``READ COMMITTED`` isolation (so a unit that lost a
    uniqueness race sees the winner's row when it looks again) and
    ``pool_pre_ping``. ``engine_options`` go to :func:`sqlalchemy.create_engine`
    and override these defaults.

    Raises :class:`ConfigurationError` for a malformed URL, an unsupported
    backend or driver, or a MariaDB charset other than ``utf8mb4``;
    :class:`MissingExtra` (naming the extra ``postgres`` or ``mysql``) when the
    driver is not installed.
    """
    parsed = _parse(url)
    backend = parsed.get_backend_name()
    if backend == "postgres":
        parsed = parsed.set(drivername="postgresql")
        backend = "postgresql"
    driver = parsed.get_driver_name() if "+" in parsed.drivername else None
    if backend == "sqlite":
        if driver not in (None, "pysqlite"):
            raise ConfigurationError(
                f"SQLite needs the built-in driver (sqlite://), not {driver!r}"
            )
        return _sqlite_engine(parsed, busy_timeout_s, engine_options)
    if backend not in _DRIVERS:
        raise ConfigurationError(
            f"unsupported metadata backend {backend!r} in {safe_url(parsed)}: "
            "use sqlite://, postgresql+psycopg:// or mysql+pymysql://"
        )
    wanted, module, extra, feature = _DRIVERS[backend]
    if driver not in (None, wanted):
        raise ConfigurationError(
            f"{backend} needs the {wanted!r} driver ({backend}+{wanted}://), not {driver!r}"
        )
    _require(module, extra, feature)
    parsed = parsed.set(drivername=f"{backend}+{wanted}")
    options: dict[str, Any] = {"pool_pre_ping": True, "isolation_level": "READ COMMITTED"}
    if backend in ("mysql", "mariadb"):
        charset = parsed.query.get("charset")
        if charset is None:
            parsed = parsed.update_query_dict({"charset": "utf8mb4"})
        elif charset != "utf8mb4":
            raise ConfigurationError(
                f"MariaDB/MySQL metadata needs charset=utf8mb4 (got {charset!r}): "
                "other charsets cannot hold every file name"
            )
    options.update(engine_options)
    return sa.create_engine(parsed, **options)


def _is_memory(url: URL) -> bool:
    database = url.database or ""
    return database in ("", ":memory:") or url.query.get("mode") == "memory"


def _sqlite_engine(url: URL, busy_timeout_s: float, engine_options: dict[str, Any]) -> Engine:
    # A SQLite connection is a file handle in this process: it cannot go
    # stale the way a server connection can, so no ping on every check-out.
    options: dict[str, Any] = {}
    connect_args: dict[str, Any] = {"timeout": busy_timeout_s, "check_same_thread": False}
    if _is_memory(url):
        # Every pysqlite connection to ":memory:" is a separate database; one
        # static connection makes the engine see a single database.
        options["poolclass"] = StaticPool
    connect_args.update(engine_options.pop("connect_args", {}))
    options["connect_args"] = connect_args
    options.update(engine_options)
    engine = sa.create_engine(url, **options)
    install_sqlite_hooks(engine, busy_timeout_s)
    return engine


_ENGINES_TO_RESET_AFTER_FORK: weakref.WeakSet[Engine] = weakref.WeakSet()


def _reset_pools_in_child() -> None:
    for engine in list(_ENGINES_TO_RESET_AFTER_FORK):
        # close=False: the parent still uses those connections; the child only forgets them.
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pools_in_child)


def reset_pool_after_fork(engine: Engine) -> None:
    """Make a forked child start ``engine`` with an empty pool.

    Pooled connections must not cross ``os.fork()`` (SQLAlchemy's pooling
    documentation, "Using Connection Pools with Multiprocessing or os.fork()";
    for SQLite also its "how to corrupt" notes on carrying an open database
    across ``fork``): a child that reused one could hang on a lock the parent
    holds or interleave with the parent on one server socket. In the child,
    the engine's pool is replaced with ``dispose(close=False)``, which leaves
    the parent's connections alone. Idempotent.
    """
    _ENGINES_TO_RESET_AFTER_FORK.add(engine)


def install_sqlite_hooks(engine: Engine, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
    """Configure a pysqlite engine as :func:`create_engine_from_url` does.

    On each new connection: the driver's implicit ``BEGIN`` off, WAL journal
    (file databases), ``foreign_keys=ON``, ``busy_timeout``; on each
    transaction start: ``BEGIN IMMEDIATE`` (or the flavour named by the
    :data:`SQLITE_BEGIN_OPTION` execution option). Idempotent. Connections
    already pooled are discarded so every later one is configured.
    """
    if engine.dialect.name != "sqlite" or event.contains(engine, "begin", _sqlite_begin):
        return
    timeout_ms = int(busy_timeout_s * 1000)

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {timeout_ms}")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")
        finally:
            cursor.close()

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", _sqlite_begin)
    engine.dispose()


def statements_listened(conn: sa.Connection) -> bool:
    """Whether anything listens to the statements of ``conn`` through SQLAlchemy's events.

    ``before_cursor_execute`` / ``after_cursor_execute`` on the connection or
    its engine, or ``handle_error``, ``do_execute``, ``do_executemany`` or
    ``do_execute_no_params`` on its dialect (tracing, statement counters,
    fault injection). While one does, every statement of a unit
    goes through SQLAlchemy's execution path so that it sees all of them;
    otherwise SQLite's ``BEGIN`` and the producer path's statements go to
    the driver connection (ADR 0029, ADR 0032).
    """
    return bool(
        conn.dispatch.before_cursor_execute
        or conn.dispatch.after_cursor_execute
        or _dialect_listened(conn.dialect)
    )


_LANE_DIALECT_EVENTS = ("handle_error", "do_execute", "do_executemany", "do_execute_no_params")
"""Dialect events that see statements (SQLAlchemy's ``DialectEvents``): any listener closes the lane."""


def _dialect_listened(dialect: sa.Dialect) -> bool:
    dispatch = dialect.dispatch
    return any(getattr(dispatch, name) for name in _LANE_DIALECT_EVENTS)


_LANE_EVENTS = (
    "engine_connect",
    "before_cursor_execute",
    "after_cursor_execute",
    "commit",
    "rollback",
    "savepoint",
    "release_savepoint",
    "rollback_savepoint",
)


def driver_lane_open(engine: Engine) -> bool:
    """Whether units on ``engine`` may run their transactions on SQLite's driver connection.

    ``engine`` is the engine listeners are registered on (the one
    :class:`~docbinder.adapters.sql.SqlMetadata` was made with, not the
    option engines it derives). True when nothing but docbinder's own
    ``BEGIN`` hook listens to its transaction events (``begin``,
    ``commit``, ``rollback``, the savepoint events), nothing to
    ``engine_connect`` and nothing to its statements (``before_cursor_execute``, ``after_cursor_execute``) or
    to its dialect's ``handle_error`` and ``do_execute*`` events. Then a unit's ``BEGIN``, statements
    and ``COMMIT`` go to the ``sqlite3`` connection, and no listener has
    anything to miss; with any listener, all of it goes through SQLAlchemy
    (ADR 0033). Costs a few µs: it reads the engine's own event lists, not a
    connection's joined ones.
    """
    dispatch = engine.dispatch
    for name in _LANE_EVENTS:
        if getattr(dispatch, name):
            return False
    if _dialect_listened(engine.dialect):
        return False
    return all(listener is _sqlite_begin for listener in dispatch.begin)


def sqlite_begin_sql(options: Mapping[str, Any]) -> str:
    """The ``BEGIN`` statement the :data:`SQLITE_BEGIN_OPTION` in ``options`` names.

    ``"BEGIN IMMEDIATE"`` when the option is absent. Raises
    :class:`ConfigurationError` for a flavour SQLite does not have
    (``DEFERRED``, ``IMMEDIATE`` and ``EXCLUSIVE``, per SQLite's
    "BEGIN TRANSACTION" documentation).
    """
    mode = str(options.get(SQLITE_BEGIN_OPTION, "IMMEDIATE")).upper()
    if mode not in _SQLITE_BEGIN_MODES:
        raise ConfigurationError(
            f"{SQLITE_BEGIN_OPTION} must be one of {sorted(_SQLITE_BEGIN_MODES)}"
        )
    return f"BEGIN {mode}"


def run_on_driver(dialect: sa.Dialect, driver: Any, sql: str, parameters: Any = ()) -> Any:
    """Run ``sql`` on the DBAPI connection ``driver``; return its cursor.

    A driver error is wrapped with ``sqlalchemy.exc.DBAPIError.instance``
    (an ``IntegrityError`` stays one), as SQLAlchemy wraps it for its own
    statements.
    """
    dbapi = dialect.loaded_dbapi
    try:
        return driver.execute(sql, parameters)
    except dbapi.Error as err:
        raise exc.DBAPIError.instance(sql, parameters, err, dbapi.Error, dialect=dialect) from err


_JOINING: ContextVar[sa.Connection | None] = ContextVar("docbinder_sqlite_joining", default=None)


def join_driver_transaction(conn: sa.Connection) -> None:
    """Begin ``conn``'s SQLAlchemy transaction inside the one its unit began on the driver (ADR 0033).

    The engine's ``BEGIN`` hook sends nothing for this one call, whatever
    listens (a listener added while the unit's transaction was open counts
    from the next one). Any other ``BEGIN`` on a driver connection that is
    already in a transaction still reaches SQLite and fails there ("cannot
    start a transaction within a transaction"): a unit never silently joins,
    commits or rolls back another unit's transaction on a shared connection
    (the ``StaticPool`` of ``sqlite://``, one connection for every unit).
    """
    token = _JOINING.set(conn)
    try:
        conn.begin()
    finally:
        _JOINING.reset(token)


def _sqlite_begin(conn: sa.Connection) -> None:
    if _JOINING.get() is conn and conn.connection.driver_connection.in_transaction:  # type: ignore[union-attr]
        # The unit began this transaction on the driver lane; SQLAlchemy joins it.
        return
    sql = sqlite_begin_sql(conn.get_execution_options())
    if statements_listened(conn):
        conn.exec_driver_sql(sql)
        return
    # The driver connection directly (about 30 µs of CPU less than exec_driver_sql).
    run_on_driver(conn.dialect, conn.connection.driver_connection, sql)
