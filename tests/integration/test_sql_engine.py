"""``create_engine_from_url``: URL handling, drivers, SQLite connection setup and locking."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from docbinder.adapters.sql import SqlMetadata, create_engine_from_url, migrate, safe_url
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.domain.errors import ConfigurationError, MissingExtra, StorageError
from docbinder.testing.metadata_suite import make_file
from tests.contract.sql_backends import provision


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteMetadata]:
    store = SqliteMetadata.from_url(f"sqlite:///{tmp_path / 'meta.db'}", busy_timeout_s=0.3)
    migrate(store.engine)
    yield store
    store.dispose()


# -- URLs and drivers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("postgresql://u@127.0.0.1/db", "postgresql+psycopg"),
        ("postgres://u@127.0.0.1/db", "postgresql+psycopg"),
        ("postgresql+psycopg://u@127.0.0.1/db", "postgresql+psycopg"),
        ("mysql://u@127.0.0.1/db", "mysql+pymysql"),
        ("mysql+pymysql://u@127.0.0.1/db?charset=utf8mb4", "mysql+pymysql"),
        ("mariadb+pymysql://u@127.0.0.1/db", "mariadb+pymysql"),
        ("sqlite:///x.db", "sqlite"),
    ],
)
def test_urls_map_to_the_supported_drivers(url: str, driver: str) -> None:
    engine = create_engine_from_url(url)
    try:
        assert engine.url.drivername == driver
        if driver.endswith("pymysql"):
            assert engine.url.query["charset"] == "utf8mb4"
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "oracle://u@127.0.0.1/db",
        "postgresql+psycopg2://u@127.0.0.1/db",
        "mysql+mysqldb://u@127.0.0.1/db",
        "sqlite+aiosqlite:///x.db",
        "mysql+pymysql://u@127.0.0.1/db?charset=latin1",
    ],
)
def test_unsupported_urls_raise_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError):
        create_engine_from_url(url)


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("postgresql+psycopg://u@127.0.0.1/db", "psycopg", "postgres"),
        ("mysql+pymysql://u@127.0.0.1/db", "pymysql", "mysql"),
        ("mariadb://u@127.0.0.1/db", "pymysql", "mysql"),
    ],
)
def test_missing_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes "import <module>" fail
    with pytest.raises(MissingExtra) as caught:
        create_engine_from_url(url)
    assert caught.value.extra == extra
    assert f"pip install -e '.[{extra}]'" in str(caught.value)
    assert isinstance(caught.value, ImportError)


def test_passwords_are_masked() -> None:
    assert "s3cret" not in safe_url("postgresql+psycopg://user:s3cret@127.0.0.1/db")
    with pytest.raises(ConfigurationError) as caught:
        create_engine_from_url("oracle://user:s3cret@127.0.0.1/db")
    assert "s3cret" not in str(caught.value)


def test_making_an_engine_does_not_connect() -> None:
    # Nothing listens on port 1: only the first use may fail.
    engine = create_engine_from_url("postgresql+psycopg://u@127.0.0.1:1/db?connect_timeout=2")
    store = SqlMetadata(engine)
    with store.unit_of_work() as u, pytest.raises(StorageError) as caught:
        u.files.get("x")
    assert isinstance(caught.value.__cause__, sa.exc.OperationalError)
    engine.dispose()


def test_unreachable_mariadb_raises_storage_error() -> None:
    store = SqlMetadata.from_url("mysql+pymysql://root@127.0.0.1:1/db?connect_timeout=2")
    with store.unit_of_work() as u, pytest.raises(StorageError):
        u.workflows.get_workflow("x")
    store.dispose()


# -- SQLite connection setup ---------------------------------------------------------------


def test_sqlite_connections_use_wal_foreign_keys_and_busy_timeout(tmp_path: Path) -> None:
    engine = create_engine_from_url(f"sqlite:///{tmp_path / 'p.db'}", busy_timeout_s=12.5)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 12500
    finally:
        engine.dispose()


def test_sqlite_foreign_keys_are_enforced(sqlite_store: SqliteMetadata) -> None:
    with sqlite_store.engine.connect() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(
            sa.text(
                "INSERT INTO chat_messages (id, workflow_id, documents_label, label_hash, published_at, role,"
                " status, message, round_number, task_number, action_number, sequence_nr)"
                " VALUES ('m', 'no-such-workflow', 'l', 'h', '2024-01-01 00:00:00.000000', 'r', 's', '',"
                " 0, 0, 0, 1)"
            )
        )


def test_sqlite_writer_units_take_the_write_lock_at_their_first_statement(
    sqlite_store: SqliteMetadata,
) -> None:
    """A second writer waits for the first (BEGIN IMMEDIATE) and gives up after the busy timeout."""
    with sqlite_store.unit_of_work() as first:
        first.files.get("anything")  # only a read, yet the write lock is held
        with (
            sqlite_store.unit_of_work() as second,
            pytest.raises(StorageError, match="locked") as caught,
        ):
            second.files.get("anything")
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)


def test_sqlite_reader_units_do_not_wait_for_writers(sqlite_store: SqliteMetadata) -> None:
    item = make_file()
    with sqlite_store.unit_of_work() as writer:
        writer.files.add(item)
        with sqlite_store.read_unit_of_work() as reader:
            assert reader.files.get(item.id) is None  # not committed yet
        writer.commit()
    with sqlite_store.read_unit_of_work() as reader:
        assert reader.files.get(item.id) == item


def test_sqlite_read_unit_snapshot_then_write_conflict_is_a_storage_error(
    sqlite_store: SqliteMetadata,
) -> None:
    with sqlite_store.read_unit_of_work() as reader:
        reader.files.get("x")  # snapshot taken
        with sqlite_store.unit_of_work() as writer:
            writer.files.add(make_file())
            writer.commit()
        with pytest.raises(StorageError):
            reader.files.add(make_file(file_name="late.pdf"))


def test_sqlite_writers_from_threads_are_serialised_not_failed(tmp_path: Path) -> None:
    store = SqliteMetadata.from_url(f"sqlite:///{tmp_path / 'threads.db'}")
    migrate(store.engine)
    errors: list[BaseException] = []
    hold = threading.Event()

    def slow_writer() -> None:
        try:
            with store.unit_of_work() as u:
                u.files.add(make_file(file_name="slow.pdf"))
                hold.wait(5)
                u.commit()
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    thread = threading.Thread(target=slow_writer)
    thread.start()
    try:
        with store.unit_of_work() as u:
            hold.set()  # the other writer commits while this one waits for the lock
            u.files.add(make_file(file_name="fast.pdf"))
            u.commit()
    finally:
        thread.join(10)
        store.dispose()
    assert errors == []


def test_engine_made_elsewhere_gets_the_sqlite_setup(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'plain.db'}")
    store = SqliteMetadata(engine)
    try:
        migrate(engine)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        with store.unit_of_work() as u:
            u.files.add(make_file())
            with pytest.raises(Exception, match="same bytes"):
                u.files.add(make_file())
            u.files.add(make_file(file_name="second.pdf"))
            u.commit()
        with store.unit_of_work() as u:
            assert len(list(u.maintenance.iter_files())) == 2
    finally:
        store.dispose()


# -- server engines ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["postgresql", "mariadb"])
def test_server_connections_use_read_committed(name: str, tmp_path: Path) -> None:
    with provision(name, tmp_path, migrated=False) as backend, backend.engine.connect() as conn:
        assert conn.get_isolation_level() == "READ COMMITTED"


class _InterruptedAfterRunning(sqlite3.Connection):
    """A connection whose cursors raise ``KeyboardInterrupt`` once a statement ran, when armed."""

    armed = False

    def cursor(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(_InterruptedCursor)


class _InterruptedCursor(sqlite3.Cursor):
    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        cursor = super().execute(sql, *args)
        if _InterruptedAfterRunning.armed and sql.startswith("UPDATE"):
            _InterruptedAfterRunning.armed = False
            raise KeyboardInterrupt
        return cursor


def test_an_interrupted_statement_on_a_sqlite_engine_leaves_no_write_lock(tmp_path: Path) -> None:
    """SQLAlchemy closes the connection of an interrupted statement without its cursor; a
    SQLite connection with an active statement (``UPDATE ... RETURNING``, its row not read)
    would stay open and keep the write lock until the cursor is collected. The engine's
    hook closes the cursor first (ADR 0042), so the lock is free while the interrupt is
    still held."""
    engine = create_engine_from_url(
        f"sqlite:///{tmp_path / 'db.sqlite'}", connect_args={"factory": _InterruptedAfterRunning}
    )
    migrate(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO docbinder_meta (name, value) VALUES ('n', 'v')")
    held: list[BaseException] = []
    try:
        with engine.connect() as conn:
            _InterruptedAfterRunning.armed = True
            conn.exec_driver_sql("UPDATE docbinder_meta SET value = 'w' RETURNING name")
    except KeyboardInterrupt as interrupt:
        held.append(interrupt)  # keeps the traceback, and with it SQLAlchemy's frames
    assert held
    other = sqlite3.connect(str(tmp_path / "db.sqlite"), timeout=0.05, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()
    engine.dispose()
