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

import contextlib
import importlib
import os
import weakref
from collections.abc import Mapping
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
      threads take turns on it (:class:`~docbinder.adapters.sqlite.SqliteMetadata`
      serialises them), so it suits tests, not concurrent work. SQLite's
      metadata store takes its connections from this engine's pool.
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
    transaction start through SQLAlchemy: ``BEGIN IMMEDIATE`` (or the flavour
    named by the :data:`SQLITE_BEGIN_OPTION` execution option); on an
    interrupt inside a statement: its cursor closed
    (:func:`_close_interrupted_cursor`, ADR 0042). Idempotent. Connections
    already pooled are discarded so every later one is configured. The
    metadata store's own units (:mod:`docbinder.adapters.sqlite`) send their
    ``BEGIN`` themselves; the hooks serve what uses the engine through
    SQLAlchemy (migrations, the extraction cache, hosts).
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
    event.listen(engine, "handle_error", _close_interrupted_cursor)
    engine.dispose()


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


def _sqlite_begin(conn: sa.Connection) -> None:
    """Send ``BEGIN`` (the flavour of :func:`sqlite_begin_sql`) when SQLAlchemy begins a transaction.

    SQLAlchemy's recipe for SQLite's transaction modes, with the statement
    sent on the driver connection: it is transaction control, as the
    driver's ``commit()`` that sends ``COMMIT`` is, and listeners learn of
    both through the ``begin`` and ``commit`` events, never as statements
    (ADR 0040). A driver error is wrapped with
    ``sqlalchemy.exc.DBAPIError.instance``, as SQLAlchemy wraps its own.
    """
    sql = sqlite_begin_sql(conn.get_execution_options())
    dialect = conn.dialect
    try:
        conn.connection.driver_connection.execute(sql)  # type: ignore[union-attr]
    except dialect.loaded_dbapi.Error as err:
        raise exc.DBAPIError.instance(
            sql, (), err, dialect.loaded_dbapi.Error, dialect=dialect
        ) from err


def _close_interrupted_cursor(context: sa.engine.ExceptionContext) -> None:
    """Close the cursor of a statement whose connection SQLAlchemy is about to close.

    On an interrupt inside a statement (``KeyboardInterrupt``,
    ``SystemExit``, and ``TimeoutError``, which SQLAlchemy counts among them)
    or a disconnect, SQLAlchemy invalidates the connection (closes it)
    without closing the cursor. A SQLite connection closed while one of its
    statements is still active (``UPDATE ... RETURNING`` with its row not
    fetched yet) is not closed but kept as a "zombie" until that statement is finalized
    (``sqlite3_close_v2``), and keeps its transaction and the database's
    write lock until the garbage collector frees the cursor. Closed here,
    the statement is reset and the connection really closes: SQLite rolls
    the transaction back and the lock is free at once.
    """
    # The execution context's cursor: ``ExceptionContext.cursor`` is not filled in (2.1).
    execution = context.execution_context
    cursor = getattr(execution, "cursor", None)
    if cursor is None or not context.is_disconnect:
        return
    with contextlib.suppress(Exception):  # best effort: the invalidation follows anyway
        cursor.close()
