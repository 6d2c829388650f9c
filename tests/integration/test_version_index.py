"""Version lookups go through an index on every SQL backend, never a scan of file_versions.

The statements a versioned save and the version reads send are captured and
explained on the same database: SQLite's ``EXPLAIN QUERY PLAN``, PostgreSQL's
``EXPLAIN`` with sequential scans disabled (so a usable index is chosen even
on a tiny table; an unusable one still shows as a scan) and MariaDB's
``EXPLAIN`` (its ``possible_keys``: on a table of a few rows MariaDB may still
prefer reading it whole, which says nothing about large ones). Cost that grows with the number of versions
would show up here as a scan; the timing side is ``bench/bench_adk_service.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.domain.model import Principal
from tests.contract.sql_backends import (
    SQL_BACKENDS,
    SqlBackend,
    provision,
    query_plan,
    statements_sent,
)
from tests.wiring import wire_binder

ALICE = Principal("alice", "m1", "app1")


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path) as db:
        yield db


def test_version_reads_and_saves_use_an_index(backend: SqlBackend) -> None:
    binder = wire_binder(backend.store.unit_of_work, MemoryBlobStore())
    versions = binder.versions
    for i in range(3):
        versions.save(ALICE, "a.txt", b"%d" % i, namespace="ns")

    def reads_and_a_save() -> None:
        versions.save(ALICE, "a.txt", b"next", namespace="ns")
        assert versions.latest(ALICE, "a.txt", "ns") is not None
        assert versions.get(ALICE, "a.txt", 1, "ns") is not None
        assert len(versions.list(ALICE, "a.txt", "ns")) == 4
        assert versions.names(ALICE, "ns") == ["a.txt"]

    statements = {
        sql: params
        for sql, params in statements_sent(backend.engine, reads_and_a_save)
        if sql.lstrip().upper().startswith("SELECT") and "file_versions" in sql
    }
    assert len(statements) >= 4
    for statement, params in statements.items():
        plan = query_plan(backend, statement, params)
        if backend.name == "sqlite":
            assert "SCAN file_versions" not in plan, (statement, plan)
            assert "INDEX" in plan, (statement, plan)
        elif backend.name == "postgresql":
            assert "Seq Scan on file_versions" not in plan, (statement, plan)
            assert "Index" in plan, (statement, plan)
        else:
            assert "possible_keys=None" not in plan, (statement, plan)
            assert "file_versions" in plan, (statement, plan)
