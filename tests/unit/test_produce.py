"""The producer path records the FileItem and the ChatMessage in one unit of work."""

from __future__ import annotations

import logging
from types import TracebackType

import pytest

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application import DocBinder
from docbinder.application.context import RunContext
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal
from docbinder.ports.metadata import FileRepository, UnitOfWork, WorkflowRepository

U1 = Principal("u1", "m1", "f1", roles=("member",))


class CountingUnit:
    """A memory unit that counts what it was used for."""

    def __init__(self, inner: UnitOfWork, log: list[str], fail_commit: bool) -> None:
        self._inner = inner
        self._log = log
        self._fail_commit = fail_commit

    @property
    def files(self) -> FileRepository:
        return self._inner.files

    @property
    def workflows(self) -> WorkflowRepository:
        return self._inner.workflows

    def __enter__(self) -> CountingUnit:
        self._log.append("open")
        self._inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inner.__exit__(exc_type, exc, tb)

    def commit(self) -> None:
        self._log.append("commit")
        if self._fail_commit:
            raise StorageError("commit refused (test)")
        self._inner.commit()

    def rollback(self) -> None:
        self._inner.rollback()


class Rig:
    def __init__(self) -> None:
        self.store = MemoryMetadataStore()
        self.log: list[str] = []
        self.fail_commit = False
        self.binder = DocBinder(
            uow_factory=self._unit,
            blobs=MemoryBlobStore(),
            authorizer=RoleTableAuthorizer(),
            clock=UtcClock(),
            ids=UuidIdFactory(),
            extractor=DefaultContentExtractor(),
            mime=SniffingMimeDetector(),
        )

    def _unit(self) -> UnitOfWork:
        return CountingUnit(self.store.unit_of_work(), self.log, self.fail_commit)


@pytest.fixture
def rig() -> Rig:
    return Rig()


def test_a_new_file_is_stored_and_attached_with_one_unit_and_one_commit(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    rig.log.clear()
    result = run.produce_file("a.txt", b"alpha", label="writeFile:a.txt")
    assert result.document_id is not None
    assert rig.log == ["open", "commit"]
    assert run.resolve([result.reference]).documents[0].file == result.item


def test_a_duplicate_is_attached_with_one_unit_and_one_commit(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    first = run.produce_file("a.txt", b"alpha")
    rig.log.clear()
    again = run.produce_file("a.txt", b"alpha")
    assert again.duplicate and again.item == first.item
    assert again.document_id not in (None, first.document_id)
    assert rig.log == ["open", "commit"]
    assert len(list(rig.binder.blobs.keys())) == 1


def test_a_refused_commit_keeps_neither_the_file_nor_the_message(rig: Rig) -> None:
    run = rig.binder.start_new_run(U1)
    rig.fail_commit = True
    with pytest.raises(StorageError):
        run.produce_file("a.txt", b"alpha")
    rig.fail_commit = False
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

    from docbinder.application.files import OVERLAP_MIN_BYTES, HashingStream

    chunks = [bytes([n]) * (OVERLAP_MIN_BYTES + n) for n in range(4)] + [b"tail", b"x" * 10]
    stream = HashingStream(iter(chunks))
    assert list(stream) == chunks
    assert stream.sha256 == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert stream.size == sum(map(len, chunks))


def test_a_forked_child_hashes_large_chunks() -> None:
    import hashlib
    import os

    from docbinder.application.files import OVERLAP_MIN_BYTES, HashingStream

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
