"""Resolving sends a fixed number of queries, however many references, and never asks the blob store.

SPEC C7 and ADR 0028: ``docItem`` ids, ``docList`` labels and ``file`` ids are
each looked up in one batch, then the FileItems of every document found in one
more. The statements sent while resolving 3 and 30 references of each kind are
counted with SQLAlchemy's ``before_cursor_execute`` event: one query per
reference would make the two counts differ. Each statement is then explained
on the same database (as in ``test_version_index.py``) so a batch that walks a
whole table instead of an index fails here too. The blob store records every
call: resolving reads metadata only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.application import DocBinder
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


class RecordingBlobStore(MemoryBlobStore):
    """The memory blob store, recording the name of every read or probe."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def open(self, key: str, chunk_size: int = 1 << 20) -> Any:
        self.calls.append("open")
        return super().open(key, chunk_size)

    def exists(self, key: str) -> bool:
        self.calls.append("exists")
        return super().exists(key)

    def stat(self, key: str) -> Any:
        self.calls.append("stat")
        return super().stat(key)


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path) as db:
        yield db


def _references(binder: DocBinder, count: int) -> tuple[Any, dict[str, list[str]]]:
    run = binder.start_new_run(ALICE)
    produced = [
        run.produce_file(f"f{n}.txt", f"content {n}".encode(), label=f"task:{n}")
        for n in range(count)
    ]
    shapes = {
        "docItem": [f"docItem:{p.document_id}" for p in produced],
        "docList": [f"docList:task:{n}" for n in range(count)],
        "file": [f"file:{p.item.id}" for p in produced],
        # Bare FileItem ids: looked up as documents first, then as files.
        "bare file ids": [p.item.id for p in produced],
    }
    return run, shapes


@pytest.mark.parametrize("shape", ["docItem", "docList", "file", "bare file ids"])
def test_queries_do_not_grow_with_the_number_of_references(backend: SqlBackend, shape: str) -> None:
    blobs = RecordingBlobStore()
    binder = wire_binder(backend.store.unit_of_work, blobs, backend.store.read_unit_of_work)
    counts: list[int] = []
    probes: list[str] = []
    for size in (3, 30):
        run, shapes = _references(binder, size)
        refs = shapes[shape]
        blobs.calls.clear()

        def resolve(run: Any = run, refs: list[str] = refs, size: int = size) -> None:
            resolution = run.resolve(refs)
            assert resolution.ok and len(resolution.documents) == size

        counts.append(len(statements_sent(backend.engine, resolve)))
        probes += blobs.calls
    assert counts[0] == counts[1], counts
    # BEGIN (SQLite), the workflow, the documents (twice for bare ids), the FileItems,
    # the mandate's retention policies (one query, B5; more only when it has some).
    assert 0 < counts[1] <= 6, counts
    assert probes == []


def test_one_resolve_of_every_kind_uses_indexes(backend: SqlBackend) -> None:
    blobs = RecordingBlobStore()
    binder = wire_binder(backend.store.unit_of_work, blobs, backend.store.read_unit_of_work)
    run, shapes = _references(binder, 5)
    mixed = [refs[n] for n, refs in enumerate(shapes.values())]

    def resolve() -> None:
        assert len(run.resolve(mixed).documents) == len(mixed)

    statements = [
        (sql, params)
        for sql, params in statements_sent(backend.engine, resolve)
        if "chat_documents" in sql
    ]
    # get_documents, documents_by_labels, documents_by_files
    assert len(statements) == 3, statements
    for statement, params in statements:
        plan = query_plan(backend, statement, params)
        if backend.name == "sqlite":
            assert "SCAN chat_documents" not in plan, (statement, plan)
            assert "SCAN chat_messages" not in plan, (statement, plan)
        elif backend.name == "postgresql":
            assert "Seq Scan" not in plan, (statement, plan)
        else:
            assert "possible_keys=None" not in plan, (statement, plan)
