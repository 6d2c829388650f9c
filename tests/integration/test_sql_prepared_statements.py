"""A prepared statement sends what ``Connection.execute`` of its Core statement would send.

:class:`~docbinder.adapters.sql.statements.PreparedStatement` compiles once per
dialect and binds by a plan of its own (ADR 0040). For every prepared statement
of the producer path and each supported dialect, its SQL text and driver
parameters are compared with SQLAlchemy's: ``Compiled.string``,
``construct_params`` and the compiled statement's own bind processors
(PostgreSQL and MariaDB; SQLite has an adapter of its own).
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.sql.compiler import SQLCompiler

from docbinder.adapters.sql import statements
from docbinder.adapters.sql.rows import to_row
from docbinder.adapters.sql.schema import label_hash
from docbinder.testing.metadata_suite import make_file, make_message, make_workflow

DIALECTS = {
    "postgresql": postgresql.psycopg.dialect(),  # type: ignore[attr-defined]
    "mariadb": mysql.pymysql.dialect(),  # type: ignore[attr-defined]
}


def _cases() -> list[tuple[str, statements.PreparedStatement, sa.Executable, dict[str, Any]]]:
    item = make_file(folder="a/b", tags=("x", "ü"))
    message = make_message(make_workflow(), "writeFile:a.txt", files=2)
    message_row = {**to_row(message), "sequence_nr": 3, "label_hash": label_hash("l")}
    document_row = {**to_row(message.documents[0]), "sequence_nr": 3, "position": 0}
    return [
        (
            "file",
            statements.PREPARED_INSERT_FILE,
            statements.INSERT_FILE,
            {**to_row(item), "dedup_key": "d" * 64},
        ),
        ("message", statements.PREPARED_INSERT_MESSAGE, statements.INSERT_MESSAGE, message_row),
        (
            "document",
            statements.PREPARED_INSERT_DOCUMENTS,
            statements.INSERT_DOCUMENTS,
            document_row,
        ),
        ("bump", statements.PREPARED_BUMP_SEQUENCE, statements.BUMP_SEQUENCE, {"wf": "w-1"}),
        (
            "bump-returning",
            statements.PREPARED_BUMP_SEQUENCE_RETURNING,
            statements.BUMP_SEQUENCE_RETURNING,
            {"wf": "w-1"},
        ),
    ]


def _sqlalchemy_sends(
    statement: sa.Executable, dialect: sa.Dialect, parameters: dict[str, Any]
) -> tuple[str, Any]:
    """The SQL text and driver parameters SQLAlchemy's own execution would make."""
    compiled = statement.compile(dialect=dialect, column_keys=list(parameters))
    assert isinstance(compiled, SQLCompiler)
    values = compiled.construct_params(parameters)
    processors = compiled._bind_processors
    processed = {
        name: processors[name](value) if name in processors else value
        for name, value in values.items()
    }
    if compiled.positional:
        return compiled.string, tuple(processed[name] for name in compiled.positiontup or ())
    return compiled.string, processed


@pytest.mark.parametrize("dialect_name", sorted(DIALECTS))
@pytest.mark.parametrize("case", [c[0] for c in _cases()])
def test_a_prepared_statement_binds_what_sqlalchemy_binds(dialect_name: str, case: str) -> None:
    dialect = DIALECTS[dialect_name]
    [(_, prepared, statement, parameters)] = [c for c in _cases() if c[0] == case]
    made = prepared._prepare(dialect, tuple(parameters))
    assert (made.sql, made.bind(parameters)) == _sqlalchemy_sends(statement, dialect, parameters)
