"""Load: 16 threads store and attach into one workflow and scope on PostgreSQL and MariaDB.

Each worker repeatedly produces a small set of shared files (same bytes, same
name) and files of its own, for ``DOCBINDER_LOAD_SECONDS`` seconds (default 5).
Two users of the same scope take part (the workflow's owner, and an admin),
so duplicate detection must give exactly one FileItem per (bytes, name, user,
scope). Afterwards: zero errors and zero warnings, every attach resolvable,
``documents_label`` unique, sequence numbers 1..n, one blob per FileItem.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.domain.model import Principal
from tests.contract.sql_backends import SqlBackend, provision
from tests.reliability.harness import LEDGER, check_consistent, make_binder

LOAD_SECONDS = float(os.environ.get("DOCBINDER_LOAD_SECONDS", "5"))
WORKERS = 16
OWNER = Principal("owner", "m1", "f1", roles=("member",))
ADMIN = Principal("admin", "m1", "f1", roles=("admin",))
SHARED = [(f"shared-{i}.csv", f"region,revenue\nR{i},{i * 11}\n".encode()) for i in range(4)]


@attrs.frozen
class Op:
    user: str
    name: str
    sha256: str
    file_id: str
    document_id: str | None
    duplicate: bool


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(params=["postgresql", "mariadb"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path) as db:
        yield db


def test_sixteen_threads_attach_into_one_workflow(backend: SqlBackend, tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path / "blobs")
    binder = make_binder(backend.store.unit_of_work, store)
    workflow = binder.start_new_run(OWNER).workflow
    assert workflow is not None
    ops: list[Op] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    released: list[float] = []
    barrier = threading.Barrier(WORKERS, action=lambda: released.append(time.monotonic()))
    warnings = _Warnings()
    logger = logging.getLogger("docbinder")
    logger.addHandler(warnings)

    def worker(index: int) -> None:
        principal = OWNER if index % 2 == 0 else ADMIN
        try:
            run = binder.start_run(principal, workflow.id)
            barrier.wait(timeout=60)
            step = 0
            deadline = released[0] + LOAD_SECONDS
            while time.monotonic() < deadline:
                if step % 3 == 2:
                    name = f"w{index}-{step}.txt"
                    data = f"worker {index} step {step}\n".encode()
                else:
                    name, data = SHARED[(index + step) % len(SHARED)]
                result = run.produce_file(name, data, label=f"load:{name}")
                with lock:
                    ops.append(
                        Op(
                            principal.user_id,
                            name,
                            hashlib.sha256(data).hexdigest(),
                            result.item.id,
                            result.document_id,
                            result.duplicate,
                        )
                    )
                step += 1
        except BaseException as exc:  # collected and asserted below
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=LOAD_SECONDS + 300)
    finally:
        logger.removeHandler(warnings)
    elapsed = time.monotonic() - released[0] if released else 0.0

    assert errors == []
    assert warnings.messages == []
    assert all(not t.is_alive() for t in threads)
    assert len(ops) >= WORKERS
    assert all(op.document_id is not None for op in ops)

    # every attach is a message with a unique label and a gapless sequence number
    messages = binder.list_messages(OWNER, workflow.id)
    assert len(messages) == len(ops)
    assert len({m.documents_label for m in messages}) == len(messages)
    assert [m.sequence_nr for m in messages] == list(range(1, len(ops) + 1))
    assert {d.id for m in messages for d in m.documents} == {op.document_id for op in ops}

    # every attach resolves afterwards
    run = binder.start_run(OWNER, workflow.id)
    references = [f"docItem:{op.document_id}" for op in ops]
    for start in range(0, len(references), 200):
        resolution = run.resolve(references[start : start + 200])
        assert resolution.ok
        assert len(resolution.documents) == len(references[start : start + 200])

    # one FileItem per (bytes, name, user, scope), and one blob per FileItem
    state = check_consistent(backend.store.unit_of_work, store)
    by_key: dict[tuple[str, str, str, str | None], list[str]] = defaultdict(list)
    for item in state.items:
        key = (item.sha256, item.file_name, item.created_by, item.scope.feature_instance_id)
        by_key[key].append(item.id)
    assert all(len(ids) == 1 for ids in by_key.values()), by_key
    expected = {(op.sha256, op.name, op.user) for op in ops}
    assert {(k[0], k[1], k[2]) for k in by_key} == expected
    ids_per_key: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for op in ops:
        ids_per_key[(op.sha256, op.name, op.user)].add(op.file_id)
    assert all(len(ids) == 1 for ids in ids_per_key.values())
    assert state.leftovers == frozenset()
    assert sum(not op.duplicate for op in ops) == len(state.items)

    LEDGER.load.append(
        f"load {backend.name}: {WORKERS} threads, {elapsed:.1f} s, {len(ops)} store+attach "
        f"({len(ops) / elapsed:.0f}/s), {len(state.items)} FileItems, "
        f"{len(errors)} errors, {len(warnings.messages)} warnings"
    )
