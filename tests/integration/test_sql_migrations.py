"""Alembic migrations of the SQL metadata store on SQLite, PostgreSQL and MariaDB.

The schema the model describes (``docbinder.adapters.sql.schema``) and the one
the migrations build must agree: Alembic's autogenerate comparison finds no
difference on any backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from docbinder.adapters.sql import (
    VERSION_TABLE,
    create_engine_from_url,
    current_revision,
    head_revision,
    is_up_to_date,
    migrate,
    schema_differences,
)
from docbinder.adapters.sql.migration import SCRIPT_LOCATION, alembic_config, include_name
from docbinder.adapters.sql.schema import TABLES, metadata
from docbinder.domain.errors import ConfigurationError, StorageError
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, provision

OWN_TABLES = {t.name for t in TABLES}


@pytest.fixture(params=SQL_BACKENDS)
def empty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    """A fresh database that was never migrated."""
    with provision(request.param, tmp_path, migrated=False) as backend:
        yield backend


def table_names(backend: SqlBackend) -> set[str]:
    return set(sa.inspect(backend.engine).get_table_names())


def test_model_and_migrations_agree(empty: SqlBackend) -> None:
    migrate(empty.engine)
    with empty.engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={
                "version_table": VERSION_TABLE,
                "compare_type": True,
                "include_name": include_name,
            },
        )
        assert compare_metadata(context, metadata) == []
    assert schema_differences(empty.engine) == []


def test_comparison_detects_a_drifted_schema(empty: SqlBackend) -> None:
    migrate(empty.engine)
    with empty.engine.begin() as conn:
        conn.execute(
            sa.text(
                "DROP INDEX ix_file_items_mandate_created"
                + (" ON file_items" if empty.name == "mariadb" else "")
            )
        )
    diffs = schema_differences(empty.engine)
    assert [d[0] for d in diffs] == ["add_index"]
    assert diffs[0][1].name == "ix_file_items_mandate_created"


def test_unmigrated_database_reports_every_table_missing(empty: SqlBackend) -> None:
    diffs = schema_differences(empty.engine)
    assert sorted(d[1].name for d in diffs if d[0] == "add_table") == sorted(OWN_TABLES)


def test_revision_checks_and_idempotent_upgrade(empty: SqlBackend) -> None:
    assert current_revision(empty.engine) is None
    assert is_up_to_date(empty.engine) is False
    head = head_revision()
    assert migrate(empty.engine) == head
    assert current_revision(empty.engine) == head
    assert is_up_to_date(empty.engine) is True
    assert migrate(empty.engine) == head  # again: nothing to do
    names = table_names(empty)
    assert OWN_TABLES | {VERSION_TABLE} <= names
    assert "alembic_version" not in names


def test_downgrade_to_base_and_upgrade_again(empty: SqlBackend) -> None:
    migrate(empty.engine)
    with empty.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert table_names(empty) & OWN_TABLES == set()
    assert current_revision(empty.engine) is None
    migrate(empty.engine)
    assert schema_differences(empty.engine) == []


def test_foreign_tables_are_not_reported(empty: SqlBackend) -> None:
    migrate(empty.engine)
    with empty.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE host_app_table (id INTEGER PRIMARY KEY)"))
    assert schema_differences(empty.engine) == []


def test_migrate_by_url_without_alembic_ini_in_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "alembic.ini").exists()
    url = f"sqlite:///{tmp_path / 'by-url.db'}"
    assert migrate(url) == head_revision()
    assert current_revision(url) == head_revision()
    assert is_up_to_date(url) is True
    assert schema_differences(url) == []


def test_migrate_to_unknown_revision_raises_configuration_error(tmp_path: Path) -> None:
    engine = create_engine_from_url(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with pytest.raises(ConfigurationError, match="no-such-revision"):
            migrate(engine, "no-such-revision")
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://postgres@127.0.0.1:1/test?connect_timeout=2",
        "mysql+pymysql://root@127.0.0.1:1/test?connect_timeout=2",
    ],
)
def test_migrate_unreachable_server_raises_storage_error(url: str) -> None:
    with pytest.raises(StorageError) as caught:
        migrate(url)
    assert isinstance(caught.value.__cause__, sa.exc.OperationalError)
    with pytest.raises(StorageError):
        current_revision(url)


def test_in_memory_sqlite_can_be_migrated_and_used() -> None:
    from docbinder.adapters.sqlite import SqliteMetadata
    from docbinder.testing.metadata_suite import make_file

    store = SqliteMetadata.from_url("sqlite://")
    try:
        migrate(store.engine)
        item = make_file()
        with store.unit_of_work() as u:
            u.files.add(item)
            u.commit()
        with store.unit_of_work() as u:
            assert u.files.get(item.id) == item
    finally:
        store.dispose()


def test_migration_scripts_ship_with_the_package() -> None:
    assert (SCRIPT_LOCATION / "env.py").is_file()
    assert (SCRIPT_LOCATION / "script.py.mako").is_file()
    assert (SCRIPT_LOCATION / "versions" / "0001_initial.py").is_file()


def insert_file_at_0002(backend: SqlBackend, item: Any) -> None:
    """Insert ``item`` as a row of revision 0002's ``file_items`` (no column added later)."""
    from docbinder.adapters.sql.rows import to_row
    from docbinder.adapters.sql.schema import UtcDateTime
    from docbinder.domain.model import duplicate_key

    row = to_row(item)
    row.pop("provenance")
    row["dedup_key"] = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
    columns = [
        sa.column(name, UtcDateTime()) if name == "created_at" else sa.column(name) for name in row
    ]
    with backend.engine.begin() as conn:
        conn.execute(sa.insert(sa.table("file_items", *columns)).values(row))


def test_upgrade_adds_file_versions_and_keeps_existing_files(empty: SqlBackend) -> None:
    from docbinder.adapters.memory import MemoryBlobStore
    from docbinder.domain.model import Principal
    from docbinder.testing.metadata_suite import make_file
    from tests.wiring import wire_binder

    migrate(empty.engine, "0002")
    assert "file_versions" not in table_names(empty)
    item = make_file()
    insert_file_at_0002(empty, item)
    migrate(empty.engine)
    assert schema_differences(empty.engine) == []
    with empty.store.unit_of_work() as u:
        assert u.files.get(item.id) == item
        assert u.versions.version_of(item.id) is None
    binder = wire_binder(empty.store.unit_of_work, MemoryBlobStore())
    principal = Principal("alice", "m1")
    numbers = [binder.versions.save(principal, "a.txt", b"x").number for _ in range(2)]
    assert numbers == [0, 1]


def test_counters_stored_at_the_first_revision_carry_on_after_upgrading(
    empty: SqlBackend,
) -> None:
    """Round/task/action live in ``workflows`` since revision 0001: no migration adds them (ADR 0026)."""
    from docbinder.adapters.memory import MemoryBlobStore
    from docbinder.domain.model import Principal, Scope
    from docbinder.testing.metadata_suite import make_message, make_workflow
    from tests.wiring import wire_binder

    migrate(empty.engine, "0001")
    alice = Principal("alice", "m1")
    workflow = make_workflow(
        scope=Scope("m1"), created_by="alice", current_round=3, current_task=2, current_action=1
    )
    with empty.store.unit_of_work() as u:
        u.workflows.add_workflow(workflow)
        u.workflows.add_message(
            make_message(workflow, "old", round_number=3, task_number=2, action_number=1)
        )
        u.commit()
    migrate(empty.engine)
    assert schema_differences(empty.engine) == []
    binder = wire_binder(empty.store.unit_of_work, MemoryBlobStore())
    run = binder.start_run(alice, workflow.id)
    assert run.counters is not None and run.counters.as_tuple() == (3, 2, 1)
    assert run.next_action().as_tuple() == (3, 2, 2)
    produced = run.produce_file("new.md", b"n")
    [old, new] = binder.list_messages(alice, workflow.id)
    assert (old.round_number, old.task_number, old.action_number) == (3, 2, 1)
    assert new.documents[0].id == produced.document_id
    assert (new.round_number, new.task_number, new.action_number) == (3, 2, 2)


def test_upgrade_to_0013_stamps_last_read_policies_with_its_time(empty: SqlBackend) -> None:
    """Policies written before ``set_at`` existed: one from the last read counts from the upgrade."""
    from datetime import UTC, datetime, timedelta

    from docbinder.domain.governance import RetentionBasis
    from docbinder.domain.model import Scope

    migrate(empty.engine, "0012")
    rows = [("m1", "", None, 3600, "last_read"), ("m2", "", None, 3600, "created")]
    with empty.engine.begin() as conn:
        for mandate_id, feature_key, feature, seconds, basis in rows:
            conn.execute(
                sa.text(
                    "INSERT INTO retention_policies (mandate_id, feature_key, "
                    "feature_instance_id, max_age_seconds, basis) VALUES (:m, :k, :f, :s, :b)"
                ),
                {"m": mandate_id, "k": feature_key, "f": feature, "s": seconds, "b": basis},
            )
    before = datetime.now(UTC).replace(microsecond=0)
    migrate(empty.engine)
    after = datetime.now(UTC) + timedelta(seconds=1)
    assert schema_differences(empty.engine) == []
    with empty.store.unit_of_work() as u:
        [last_read] = u.retention.policies("m1")
        [created] = u.retention.policies("m2")
    assert last_read.scope == Scope("m1") and last_read.basis is RetentionBasis.LAST_READ
    assert last_read.set_at is not None and before <= last_read.set_at <= after
    assert created.set_at is None
    assert last_read.expires_nothing_by(after)
    with empty.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0012")
    columns = sa.inspect(empty.engine).get_columns("retention_policies")
    assert "set_at" not in {c["name"] for c in columns}
