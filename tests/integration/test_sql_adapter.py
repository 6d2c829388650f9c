"""SQL adapter details beyond the port contract: error translation, storage formats, indexes, isolation."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql import migrate, queries
from docbinder.adapters.sql.errors import (
    integrity_error,
    storage_error,
    translating,
    violated_constraint,
)
from docbinder.adapters.sql.rows import from_row, to_row
from docbinder.adapters.sql.schema import chat_messages, file_items, workflows
from docbinder.adapters.sqlite import SqliteMetadata
from docbinder.domain.errors import (
    Conflict,
    DuplicateFileItem,
    DuplicateLabel,
    StorageError,
    WorkflowNotFound,
)
from docbinder.domain.model import FileItem, Scope, duplicate_key
from docbinder.testing.metadata_suite import SHA_A, make_file, make_message, make_workflow
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, provision


@pytest.fixture(scope="module", params=SQL_BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path_factory.mktemp(request.param)) as b:
        yield b


@pytest.fixture
def db(backend: SqlBackend) -> SqlBackend:
    backend.clean()
    return backend


# -- translation of driver errors (the exact texts each driver produces) ------------------


def _integrity(orig: BaseException) -> sa_exc.IntegrityError:
    return sa_exc.IntegrityError("INSERT ...", {}, orig)


class _PgDiag:
    def __init__(self, constraint_name: str | None) -> None:
        self.constraint_name = constraint_name


class _PgError(Exception):
    """Shaped like a psycopg 3 error: ``sqlstate`` and ``diag.constraint_name``."""

    def __init__(self, sqlstate: str, constraint: str | None) -> None:
        super().__init__("duplicate key value violates unique constraint")
        self.sqlstate = sqlstate
        self.diag = _PgDiag(constraint)


@pytest.mark.parametrize(
    ("orig", "table", "expected"),
    [
        # MariaDB
        (
            pymysql.err.IntegrityError(
                1062, "Duplicate entry 'x' for key 'uq_file_items_dedup_key'"
            ),
            file_items,
            DuplicateFileItem,
        ),
        (
            pymysql.err.IntegrityError(1062, "Duplicate entry 'x' for key 'PRIMARY'"),
            file_items,
            Conflict,
        ),
        (
            pymysql.err.IntegrityError(
                1062, "Duplicate entry 'w-x' for key 'uq_chat_messages_label'"
            ),
            chat_messages,
            DuplicateLabel,
        ),
        # MySQL 8 names the table too
        (
            pymysql.err.IntegrityError(
                1062, "Duplicate entry 'x' for key 'file_items.uq_file_items_dedup_key'"
            ),
            file_items,
            DuplicateFileItem,
        ),
        (
            pymysql.err.IntegrityError(1062, "Duplicate entry 'x' for key 'chat_messages.PRIMARY'"),
            chat_messages,
            Conflict,
        ),
        (
            pymysql.err.IntegrityError(
                1452,
                "Cannot add or update a child row: a foreign key constraint fails (`db`.`chat_messages`, "
                "CONSTRAINT `fk_chat_messages_workflow_id_workflows` FOREIGN KEY (`workflow_id`) "
                "REFERENCES `workflows` (`id`))",
            ),
            chat_messages,
            WorkflowNotFound,
        ),
        (
            pymysql.err.IntegrityError(1048, "Column 'file_name' cannot be null"),
            file_items,
            StorageError,
        ),
        # PostgreSQL
        (_PgError("23505", "uq_file_items_dedup_key"), file_items, DuplicateFileItem),
        (_PgError("23505", "pk_file_items"), file_items, Conflict),
        (_PgError("23505", "uq_chat_messages_label"), chat_messages, DuplicateLabel),
        (_PgError("23505", "some_other_unique"), file_items, Conflict),
        (
            _PgError("23503", "fk_chat_messages_workflow_id_workflows"),
            chat_messages,
            WorkflowNotFound,
        ),
        (_PgError("23502", None), file_items, StorageError),
        # SQLite
        (
            Exception("UNIQUE constraint failed: file_items.dedup_key"),
            file_items,
            DuplicateFileItem,
        ),
        (Exception("UNIQUE constraint failed: file_items.id"), file_items, Conflict),
        (
            Exception(
                "UNIQUE constraint failed: chat_messages.workflow_id, chat_messages.label_hash"
            ),
            chat_messages,
            DuplicateLabel,
        ),
        (Exception("NOT NULL constraint failed: file_items.file_name"), file_items, StorageError),
        (Exception("FOREIGN KEY constraint failed"), chat_messages, StorageError),
    ],
)
def test_integrity_errors_are_translated(
    orig: BaseException, table: sa.Table, expected: type[Exception]
) -> None:
    error = integrity_error(_integrity(orig), table)
    assert type(error) is expected


def test_violated_constraint_reports_unique_flag() -> None:
    assert violated_constraint(_integrity(_PgError("23505", "pk_workflows")), workflows) == (
        "pk_workflows",
        True,
    )
    assert violated_constraint(
        _integrity(Exception("UNIQUE constraint failed: workflows.id")), workflows
    ) == (
        "pk_workflows",
        True,
    )


@pytest.mark.parametrize(
    "error",
    [
        sa_exc.OperationalError(
            "SELECT 1", {}, Exception("server closed the connection unexpectedly")
        ),
        sa_exc.ProgrammingError("SELECT 1", {}, Exception("syntax error")),
        sa_exc.InterfaceError("SELECT 1", {}, Exception("connection already closed")),
        sa_exc.PendingRollbackError("rolled back"),
    ],
)
def test_other_sqlalchemy_errors_become_storage_errors(error: sa_exc.SQLAlchemyError) -> None:
    with pytest.raises(StorageError) as caught, translating():
        raise error
    assert caught.value.__cause__ is error
    assert isinstance(caught.value, OSError)


def test_docbinder_errors_pass_through_translation() -> None:
    with pytest.raises(WorkflowNotFound), translating():
        raise WorkflowNotFound("x")


def test_missing_table_error_hints_at_migrate() -> None:
    error = sa_exc.OperationalError("SELECT", {}, Exception("no such table: file_items"))
    assert "docbinder migrate" in str(storage_error(error))


def test_unmigrated_database_gives_storage_error_with_hint(tmp_path: Path) -> None:
    store = SqliteMetadata.from_url(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        with store.unit_of_work() as u, pytest.raises(StorageError, match="docbinder migrate"):
            u.files.get("x")
    finally:
        store.dispose()


# -- real errors on every backend ------------------------------------------------------------


def test_real_integrity_errors_name_their_constraint(db: SqlBackend) -> None:
    item = make_file()
    with db.store.unit_of_work() as u:
        u.files.add(item)
        u.commit()
    with db.engine.connect() as conn:
        for row, expected in (
            (
                {
                    **to_row(make_file()),
                    "dedup_key": duplicate_key(SHA_A, "report.pdf", "user-1", Scope("mandate-1")),
                },
                "uq_file_items_dedup_key",
            ),
            (
                {**to_row(make_file(id=item.id, file_name="o.pdf")), "dedup_key": None},
                "pk_file_items",
            ),
        ):
            with pytest.raises(sa_exc.IntegrityError) as caught:
                conn.execute(sa.insert(file_items).values(row))
            assert violated_constraint(caught.value, file_items) == (expected, True)
            conn.rollback()


def test_corrupt_row_gives_storage_error(db: SqlBackend) -> None:
    item = make_file()
    with db.store.unit_of_work() as u:
        u.files.add(item)
        u.commit()
    with db.engine.begin() as conn:
        conn.execute(
            sa.update(file_items).where(file_items.c.id == item.id).values(tags="{not json")
        )
    with db.store.unit_of_work() as u, pytest.raises(StorageError, match="FileItem"):
        u.files.get(item.id)


def test_uncommitted_writes_are_invisible_to_other_units(db: SqlBackend) -> None:
    item = make_file()
    with db.store.unit_of_work() as writer:
        writer.files.add(item)
        # SQLite has one writer at a time: the observer is a read unit there
        with db.store.read_unit_of_work() as observer:
            assert observer.files.get(item.id) is None
            assert (
                observer.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1"))
                == []
            )
        writer.commit()
    with db.store.read_unit_of_work() as observer:
        assert observer.files.get(item.id) == item


def test_scans_are_paginated_and_allow_other_statements(
    db: SqlBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "SCAN_BATCH", 2)
    items = [make_file(file_name=f"{n}.pdf") for n in range(5)]
    workflow = make_workflow()
    with db.store.unit_of_work() as u:
        for item in items:
            u.files.add(item)
        u.workflows.add_workflow(workflow)
        message = u.workflows.add_message(make_message(workflow, files=5))
        u.commit()
    with db.store.unit_of_work() as u:
        seen = []
        for item in u.maintenance.iter_files():
            assert u.files.get(item.id) == item  # another statement mid-scan
            seen.append(item)
        assert sorted(seen, key=lambda f: f.id) == sorted(items, key=lambda f: f.id)
        assert len({f.id for f in seen}) == 5
        docs = list(u.maintenance.iter_documents())
        assert sorted(docs, key=lambda d: d.id) == sorted(message.documents, key=lambda d: d.id)


def test_limits_must_not_be_negative(db: SqlBackend) -> None:
    with db.store.unit_of_work() as u, pytest.raises(ValueError):
        u.files.list("mandate-1", limit=-1)


# -- storage formats --------------------------------------------------------------------------


def test_datetimes_are_stored_as_utc(db: SqlBackend) -> None:
    item = make_file()
    with db.store.unit_of_work() as u:
        u.files.add(item)
        u.commit()
    with db.engine.connect() as conn:
        raw = conn.execute(sa.text("SELECT created_at FROM file_items")).scalar_one()
    if db.name == "sqlite":
        assert raw == "2024-05-17 09:30:15.123456"
    elif db.name == "mariadb":
        assert raw == item.created_at.replace(tzinfo=None)
    else:
        assert raw == item.created_at  # timestamptz: the same instant


def test_row_converter_round_trip_without_database() -> None:
    item = make_file(scope=Scope("m", "f"), tags=("a", "ü"), folder="x")
    row = to_row(item)
    assert row["mandate_id"] == "m" and row["feature_instance_id"] == "f"
    assert "scope" not in row
    assert row["tags"] == '["a","\\u00fc"]'
    assert from_row({**row, "dedup_key": None}, FileItem) == item
    message = make_message("wf-1", files=2)
    assert "documents" not in to_row(message)
    assert from_row(to_row(message), type(message)) == attrs.evolve(message, documents=())


def test_mariadb_text_columns_are_utf8mb4_bin_and_datetimes_have_microseconds(
    tmp_path: Path,
) -> None:
    # Alembic's comparison does not see collations or DATETIME precision: check them here.
    with provision("mariadb", tmp_path) as db, db.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT table_name, column_name, data_type, character_set_name, collation_name,"
                " datetime_precision FROM information_schema.columns WHERE table_schema = DATABASE()"
                " AND table_name IN ('file_items', 'workflows', 'chat_messages', 'chat_documents')"
            )
        ).all()
    text_columns = [r for r in rows if r.character_set_name is not None]
    assert len(text_columns) > 20
    assert {(r.character_set_name, r.collation_name) for r in text_columns} == {
        ("utf8mb4", "utf8mb4_bin")
    }
    datetimes = [r for r in rows if r.data_type == "datetime"]
    assert len(datetimes) == 3
    assert {r.datetime_precision for r in datetimes} == {6}


def test_distinct_normalisations_are_distinct_in_raw_lookups(db: SqlBackend) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "é.txt"), unicodedata.normalize("NFD", "é.txt")
    items = [make_file(file_name=name) for name in (nfc, nfd, "A.TXT", "a.txt")]
    with db.store.unit_of_work() as u:
        for item in items:
            u.files.add(item)
        u.commit()
    with db.engine.connect() as conn:
        for item in items:
            ids = (
                conn.execute(
                    sa.select(file_items.c.id).where(file_items.c.file_name == item.file_name)
                )
                .scalars()
                .all()
            )
            assert ids == [item.id]


# -- index use ----------------------------------------------------------------------------------


def _plan(db: SqlBackend, sql: str, params: dict[str, Any]) -> str:
    """The backend's query plan for ``sql`` with bound parameters, as one string."""
    with db.engine.connect() as conn:
        if db.name == "sqlite":
            return " ".join(
                str(r[-1]) for r in conn.execute(sa.text("EXPLAIN QUERY PLAN " + sql), params)
            )
        if db.name == "postgresql":
            # on near-empty tables a sequential scan is cheaper; ask whether the index is usable
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            return " ".join(str(r[0]) for r in conn.execute(sa.text("EXPLAIN " + sql), params))
        return " ".join(
            str(r._mapping["key"]) for r in conn.execute(sa.text("EXPLAIN " + sql), params)
        )


def test_duplicate_lookup_uses_the_unique_index(db: SqlBackend) -> None:
    with db.store.unit_of_work() as u:
        for n in range(20):
            u.files.add(make_file(file_name=f"{n}.pdf"))
        u.commit()
    key = duplicate_key(SHA_A, "3.pdf", "user-1", Scope("mandate-1"))
    plan = _plan(db, "SELECT * FROM file_items WHERE dedup_key = :key", {"key": key})
    assert "uq_file_items_dedup_key" in plan, plan


def test_recent_documents_walk_an_index(db: SqlBackend) -> None:
    sql = "SELECT * FROM chat_documents WHERE workflow_id = :wf ORDER BY sequence_nr DESC, position DESC LIMIT 5"
    plan = _plan(db, sql, {"wf": "wf-1"})
    assert "ix_chat_documents_order" in plan, plan


def test_documents_by_file_use_an_index(db: SqlBackend) -> None:
    workflow = make_workflow()
    with db.store.unit_of_work() as u:
        u.workflows.add_workflow(workflow)
        for _ in range(10):
            u.workflows.add_message(make_message(workflow, files=10))
        u.commit()
    analyze = {"mariadb": "ANALYZE TABLE chat_documents", "postgresql": "ANALYZE chat_documents"}
    with db.engine.begin() as conn:  # planners choose by statistics
        result = conn.execute(sa.text(analyze.get(db.name, "ANALYZE")))
        if result.returns_rows:
            result.all()
    sql = "SELECT * FROM chat_documents WHERE workflow_id = :wf AND file_id = :f"
    plan = _plan(db, sql, {"wf": workflow.id, "f": "file-1"})
    assert "ix_chat_documents_file" in plan, plan


def test_migrated_store_from_url_string(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    migrate(url)
    store = SqliteMetadata.from_url(url)
    try:
        assert store.url == url
        with store.unit_of_work() as u:
            assert u.files.list("nobody") == []
    finally:
        store.dispose()


def test_the_in_memory_database_has_one_identity_for_writing_and_reading_units() -> None:
    """``sqlite://`` is one database for every unit: a reading unit must not take the identity
    a writing unit made for a copy's (which would make ``gc`` keep this database's blobs)."""
    store = SqliteMetadata.from_url("sqlite://")
    try:
        migrate(store.engine)
        with store.unit_of_work() as u:
            made = u.maintenance.database_id(create=True)
            u.commit()
        with store.read_unit_of_work() as u:
            assert u.maintenance.database_id() == made
            assert u.maintenance.former_database_ids() == ()
    finally:
        store.dispose()
