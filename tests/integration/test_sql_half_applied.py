"""A migration that stopped midway (issue 17 kind 6), simulated on every SQL backend.

The stop is a real fault: the 5th ``CREATE`` statement of the initial migration
raises. MariaDB has no transactional DDL, so the tables made before it stay
without a version row; PostgreSQL and SQLite roll everything back. Either way
``migrate`` must end at head and ``doctor`` must say what state the schema is in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from docbinder.adapters.sql import (
    current_revision,
    half_applied,
    head_revision,
    migrate,
    schema_differences,
)
from docbinder.adapters.sql.migration import existing_tables
from docbinder.domain.errors import ConfigurationError, StorageError
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, provision
from tests.reliability.harness import invoke_cli


class _Stop(Exception):
    """The simulated crash."""


@pytest.fixture(params=SQL_BACKENDS)
def empty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path, migrated=False) as backend:
        yield backend


def _stop_midway(backend: SqlBackend, after: int = 4) -> None:
    seen = {"creates": 0}

    def crash(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("CREATE"):
            seen["creates"] += 1
            if seen["creates"] > after:
                raise _Stop("the process stopped here")

    event.listen(backend.engine, "before_cursor_execute", crash)
    try:
        with pytest.raises((_Stop, StorageError)):
            migrate(backend.engine)
    finally:
        event.remove(backend.engine, "before_cursor_execute", crash)


def _doctor(backend: SqlBackend, tmp_path: Path) -> dict[str, dict[str, str]]:
    url = backend.url.render_as_string(hide_password=False)
    where = ["--home", str(tmp_path / "h"), "--database-url", url, "--blob-url", "memory://"]
    result = invoke_cli([*where, "--json", "doctor"])
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_a_migration_stopped_midway_is_detected_and_completed(
    empty: SqlBackend, tmp_path: Path
) -> None:
    _stop_midway(empty)
    assert current_revision(empty.engine) is None
    left = existing_tables(empty.engine)
    if empty.name == "mariadb":
        assert left, "MariaDB keeps the tables created before the stop"
        diagnosis = half_applied(empty.engine)
        assert diagnosis is not None
        assert "a migration stopped midway" in diagnosis
        assert "`docbinder migrate` completes it" in diagnosis
        check = _doctor(empty, tmp_path)["migrations"]
        assert (check["status"], check["detail"]) == ("fail", diagnosis)
    else:
        assert left == [], "transactional DDL leaves nothing behind"
        assert half_applied(empty.engine) is None
    assert migrate(empty.engine) == head_revision()
    assert current_revision(empty.engine) == head_revision()
    assert schema_differences(empty.engine) == []
    assert half_applied(empty.engine) is None
    assert migrate(empty.engine) == head_revision()  # idempotent afterwards
    assert _doctor(empty, tmp_path)["migrations"]["status"] == "ok"


@pytest.mark.parametrize("after", [1, 2, 6, 9])
def test_every_stopping_point_is_completed(empty: SqlBackend, after: int) -> None:
    _stop_midway(empty, after)
    assert migrate(empty.engine) == head_revision()
    assert schema_differences(empty.engine) == []


def test_a_half_applied_schema_that_differs_gets_one_line_with_the_way_out(
    empty: SqlBackend, tmp_path: Path
) -> None:
    with empty.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE workflows (id VARCHAR(64) PRIMARY KEY)"))
    diagnosis = half_applied(empty.engine)
    assert diagnosis is not None and "\n" not in diagnosis
    assert "drop docbinder's tables" in diagnosis
    assert "run `docbinder migrate` again" in diagnosis
    with pytest.raises(ConfigurationError) as caught:
        migrate(empty.engine)
    assert str(caught.value) == diagnosis
    assert existing_tables(empty.engine) == ["workflows"]  # nothing was dropped
    url = empty.url.render_as_string(hide_password=False)
    result = invoke_cli(["--home", str(tmp_path / "h"), "--database-url", url, "migrate"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: {diagnosis}"]
