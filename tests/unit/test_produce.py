"""The producer path records the FileItem and the ChatMessage in one writing unit of work.

A new file is stored and attached in one unit with one commit, without a
duplicate lookup: its insert under the duplicate key is the check (ADR 0032).
When the key is taken, the same unit looks the candidates up and ends before
the blob store is asked about them, and a second unit reuses the duplicate: two
units, one commit.
"""

from __future__ import annotations

import logging

import pytest

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.application.context import RunContext
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal
from tests.reliability.harness import Fault, FaultPlan, faulty_factory
from tests.unit.conftest import make_memory_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class Rig:
    """A memory binder whose units of work are counted (and can fail) through a fault plan."""

    def __init__(self) -> None:
        self.store = MemoryMetadataStore()
        self.plan = FaultPlan()
        self.binder: DocBinder = make_memory_binder(
            uow_factory=faulty_factory(self.store.unit_of_work, self.plan)
        )
        # Once per process: the store's identity and this database's registration.
        self.binder.store_file.registration.ensure()

    def counts(self) -> tuple[int, int]:
        """(units opened, commits) since the plan was armed."""
        return self.plan.calls["uow.open"], self.plan.calls["commit"]


@pytest.fixture
def rig() -> Rig:
    return Rig()


def test_a_new_file_is_stored_and_attached_with_one_unit_and_one_commit(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    rig.plan.arm()
    result = run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
    assert result.document_id is not None
    assert rig.counts() == (1, 1)
    # No lookup: the insert under the duplicate key found no file with that key.
    assert rig.plan.calls["files.find_duplicates"] == 0
    assert rig.plan.calls["files.add"] == 1
    assert run.resolve([result.reference]).documents[0].file == result.item


def test_a_duplicate_is_attached_with_one_unit_and_one_commit(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    first = run.produce_file("a.txt", b"alpha")
    rig.plan.arm()
    again = run.produce_file("a.txt", b"alpha")
    assert again.duplicate and again.item == first.item
    assert again.document_id not in (None, first.document_id)
    # The unit that found the candidate ends before the blob store is asked; one more reuses it.
    assert rig.counts() == (2, 1)
    # The refused insert is followed by the lookup in the same (first) unit.
    assert rig.plan.calls["files.add"] == 1
    assert rig.plan.calls["files.find_duplicates"] == 1
    assert len(list(rig.binder.blobs.keys())) == 1


def test_a_refused_commit_keeps_neither_the_file_nor_the_message(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    # The commit is refused; the lookup in a second unit finds no FileItem, so the blob goes too.
    rig.plan.arm(Fault("commit"))
    with pytest.raises(StorageError):
        run.produce_file("a.txt", b"alpha")
    rig.plan.disarm()
    assert rig.counts() == (2, 1)  # the refused writing unit, the lookup after it
    assert list(rig.binder.blobs.keys()) == []
    assert rig.store.files == {}
    assert rig.store.documents == {}
    assert run.workflow is not None and run.workflow.messages == ()


def test_without_a_workflow_the_file_is_stored_and_one_warning_names_the_cause(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    run = rig.binder.start_run(U1)
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        result = run.produce_file("a.txt", b"alpha")
    assert result.document_id is None
    assert rig.binder.get_file(U1, result.item.id) == result.item
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "no workflow bound" in warnings[0]


def test_the_run_sees_every_message_it_stored_in_order(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    bound = run.context.bound_workflow
    ids = [run.produce_file(f"f{n}.txt", bytes([n])).document_id for n in range(5)]
    assert run.workflow is not None
    assert [m.documents[0].id for m in run.workflow.messages] == ids
    assert [m.sequence_nr for m in run.workflow.messages] == [1, 2, 3, 4, 5]
    # The bound workflow is what the run started with; messages are added on read.
    assert run.context.bound_workflow is bound and bound is not None and bound.messages == ()
    assert run.workflow is run.workflow  # kept until the next append


def test_a_context_of_another_workflow_ignores_foreign_messages(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    other = rig.binder.start_new_run(U1)
    message = other.produce_file("x.txt", b"x")
    assert message.document_id is not None
    ctx = RunContext(U1, run.workflow)
    assert other.workflow is not None
    ctx.append_message(other.workflow.messages[0])
    assert ctx.workflow is not None and ctx.workflow.messages == ()


def test_large_chunks_hash_like_hashlib_in_order() -> None:
    import hashlib

    from docbinder.application.steps.hashing import OVERLAP_MIN_BYTES, HashingStream

    chunks = [bytes([n]) * (OVERLAP_MIN_BYTES + n) for n in range(4)] + [b"tail", b"x" * 10]
    stream = HashingStream(iter(chunks))
    assert list(stream) == chunks
    assert stream.sha256 == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert stream.size == sum(map(len, chunks))


def test_a_forked_child_hashes_large_chunks() -> None:
    import hashlib
    import os

    from docbinder.application.steps.hashing import OVERLAP_MIN_BYTES, HashingStream

    big = b"z" * (OVERLAP_MIN_BYTES * 2)
    list(HashingStream([big]))  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        import signal

        signal.alarm(20)  # a hang (a pool without threads) ends the child with SIGALRM
        stream = HashingStream([big, big])
        ok = b"".join(stream) == big * 2 and stream.sha256 == hashlib.sha256(big * 2).hexdigest()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("how", ["interpreter-shutdown", "closed"])
def test_large_chunks_hash_inline_when_the_pool_takes_no_more_work(how: str) -> None:
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from docbinder.application.steps.hashing import OVERLAP_MIN_BYTES, HashingStream, HashWorkers

    workers = HashWorkers(max_workers=1)
    if how == "closed":
        workers.close()
    else:
        refusing = ThreadPoolExecutor(max_workers=1)
        refusing.shutdown()  # as at interpreter exit: submit raises RuntimeError
        workers._pool = refusing
    chunks = [b"a" * OVERLAP_MIN_BYTES, b"b" * (OVERLAP_MIN_BYTES + 1)]
    stream = HashingStream(chunks, workers=workers)
    assert list(stream) == chunks
    assert stream.sha256 == hashlib.sha256(b"".join(chunks)).hexdigest()


def test_lone_surrogates_are_invalid_input_not_driver_errors(rig: Rig) -> None:
    from docbinder.domain.errors import InvalidInput

    run = rig.binder.start_new_run(U1)
    stored = run.store_file("a.txt", b"a")
    with pytest.raises(InvalidInput, match="lone surrogates"):
        run.attach(stored, label="ok", user_message="m\udfff")
    # A label is cleaned, not refused: the surrogate becomes U+FFFD.
    document = run.attach(stored, label="x\ud800")
    assert run.workflow is not None
    assert run.workflow.messages[-1].documents_label == "x\ufffd"
    assert document.file_id == stored.item.id


def test_a_context_shared_by_threads_never_caches_a_stale_view(rig: Rig) -> None:
    import sys
    import threading

    run = rig.binder.start_new_run(U1)
    bound = run.context.bound_workflow
    assert bound is not None
    template = run.produce_file("seed.txt", b"seed")
    assert run.workflow is not None
    message = run.workflow.messages[0]
    ctx = RunContext(U1, bound)
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            _ = ctx.workflow

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    readers = [threading.Thread(target=read) for _ in range(3)]
    try:
        for thread in readers:
            thread.start()
        for _ in range(3000):
            ctx.append_message(message)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
        sys.setswitchinterval(old)
    assert ctx.workflow is not None and len(ctx.workflow.messages) == 3000
    assert template.document_id is not None
