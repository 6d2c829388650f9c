"""The whole bridge as one contract: store, dedup, attach, format, resolve, content (C1–C9).

Every test here runs unchanged on every backend combination: a subclass
provides ``make_binder`` (a factory taking ``max_file_size``), for example over
a third-party blob store registered as an entry point::

    class TestMyStoreBridge(BridgeContract):
        @pytest.fixture
        def make_binder(self, tmp_path):
            def make(max_file_size=None):
                return build_binder(
                    database_url="memory://",
                    blob_url=f"mystore://{tmp_path}",
                    max_file_size=max_file_size,
                )
            return make

One test per row of SPEC section 4 is included, each with its log line.
Capability flag: :attr:`BridgeContract.supports_concurrency`.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import re
import threading
import unicodedata
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import ClassVar

import attrs
import pytest

from docbinder.application import DocBinder, NotAttachedCause, Run, RunContext, UnresolvedReason
from docbinder.application.binder import ToolFileResult
from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import (
    AccessDenied,
    BlobMissing,
    CountersWouldGoBack,
    FileItemNotFound,
    FileStillReferenced,
    InvalidInput,
    NoActiveWorkflow,
    SizeLimitExceeded,
    WorkflowNotFound,
)
from docbinder.domain.model import (
    DEFAULT_LABEL,
    EMPTY_SHA256,
    ChatMessage,
    ContentKind,
    FileItem,
    Principal,
    Provenance,
    Scope,
)

MakeBinder = Callable[..., DocBinder]


def _one_expired_one_held(
    binder: DocBinder, principal: Principal, old_bytes: bytes, held_bytes: bytes
) -> tuple[Run, ToolFileResult, ToolFileResult]:
    """A run with ``old.txt`` past a 1 s retention period and ``held.txt`` as old but held (B5)."""
    import time
    from datetime import timedelta

    run = binder.start_new_run(principal)
    old = run.produce_file("old.txt", old_bytes)
    held = run.produce_file("held.txt", held_bytes)
    binder.retention.set(
        Scope(principal.mandate_id, principal.feature_instance_id), timedelta(seconds=1)
    )
    binder.retention.hold("file", held.item.id, principal.mandate_id, "case 7")
    time.sleep(1.1)
    return run, old, held


class _DenyReadOf:
    """Authorizer wrapper that hides one FileItem (a rule change after it was stored)."""

    def __init__(self, file_id: str, inner: object) -> None:
        self.file_id = file_id
        self.inner = inner
        self.name = "deny-one"

    def is_allowed(self, principal, action, resource):  # type: ignore[no-untyped-def]
        if resource.id == self.file_id:
            return False
        return self.inner.is_allowed(principal, action, resource)  # type: ignore[attr-defined]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


class BridgeContract:
    """Subclasses provide the ``make_binder`` fixture: ``make_binder(max_file_size=None) -> DocBinder``.

    ``max_file_size`` is in bytes (``None``: unlimited).
    """

    supports_concurrency: ClassVar[bool] = True
    """Whether the backends take producers in several threads at once."""

    @pytest.fixture
    def binder(self, make_binder: MakeBinder) -> DocBinder:
        return make_binder()

    @pytest.fixture
    def u1(self) -> Principal:
        return Principal("u1", "m1", "f1", roles=("member",))

    @pytest.fixture
    def u2(self) -> Principal:
        return Principal("u2", "m2", None, roles=("member",))

    def test_produce_file_gives_item_document_and_exact_text(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        result = run.produce_file(
            "platform-overview.html", b"<html>x</html>", verb="Downloaded", label="datasource:web"
        )
        assert result.document_id is not None
        assert result.text == (
            "Downloaded 'platform-overview.html' (14 bytes)\n"
            f"  documentList ref: docItem:{result.document_id}\n"
            f"  file id: {result.item.id}"
        )
        item = result.item
        assert item.size == 14
        assert item.sha256 == hashlib.sha256(b"<html>x</html>").hexdigest()
        assert item.created_by == "u1"
        assert item.scope.mandate_id == "m1" and item.scope.feature_instance_id == "f1"
        assert item.mime_type == "text/html"
        # the run's in-memory workflow sees the message at once
        assert run.workflow is not None
        [message] = run.workflow.messages
        assert message.role == "assistant" and message.status == "step"
        assert message.documents_label == "datasource:web"
        assert message.documents[0].id == result.document_id
        assert message.documents[0].file_id == item.id
        # and the stored workflow has it too
        [stored] = binder.list_messages(u1, run.workflow.id)
        assert stored.id == message.id and stored.sequence_nr == 1

    # -- governance (B9 provenance, B12 quotas) ---------------------------------------------

    def test_provenance_names_the_tool_call_and_the_files_read_before(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        from docbinder.domain.model import arguments_sha256
        from docbinder.toolset import DocbinderToolset

        run = binder.start_new_run(u1)
        toolset = DocbinderToolset(run)
        csv = toolset.call("write_file", {"name": "q3.csv", "content": "r,v\nn,12\n"})
        unread = run.produce_file("unread.txt", b"never read")
        toolset.call("read_documents", {"documentList": list(csv.document_ids)})
        arguments = {"name": "summary.md", "content": "north grew 12%"}
        made = toolset.call("write_file", arguments, tool_call_id="call_9", model="m-1")
        item = binder.get_file(u1, made.file_ids[0])
        provenance = item.provenance
        assert provenance.tool == "write_file"
        assert (provenance.tool_call_id, provenance.model) == ("call_9", "m-1")
        assert provenance.args_sha256 == arguments_sha256(arguments)
        assert provenance.run_id == run.context.run_id is not None
        assert provenance.workflow_id == run.workflow.id  # type: ignore[union-attr]
        assert provenance.parents == csv.file_ids  # the CSV it read, not the file it did not
        assert unread.item.id not in provenance.parents
        # produced outside any tool call: no tool is claimed, the run is still known
        assert unread.item.provenance.tool is None
        assert unread.item.provenance.run_id == run.context.run_id
        # a host declares its own
        declared = run.produce_file(
            "x.bin", b"x", provenance=Provenance(tool="sandbox", tool_call_id="exec-1")
        )
        stored = binder.get_file(u1, declared.item.id).provenance
        assert (stored.tool, stored.tool_call_id) == ("sandbox", "exec-1")
        assert stored.parents == csv.file_ids
        structured = toolset.call("get_file_info", {"file_id": item.id}).structured
        assert structured is not None
        assert structured["files"][0]["provenance"]["toolCallId"] == "call_9"

    def test_a_quota_refusal_keeps_nothing_and_tells_the_model_what_to_do(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        from docbinder.domain.errors import QuotaExceeded
        from docbinder.domain.model import Scope
        from docbinder.toolset import DocbinderToolset

        run = binder.start_new_run(u1)
        binder.quotas.set(Scope("m1", "f1"), max_bytes=20, max_files=3)
        first = run.produce_file("a.txt", b"0123456789")
        again = run.produce_file("a.txt", b"0123456789")  # a reused duplicate counts once
        assert again.duplicate and again.item.id == first.item.id
        quota = binder.quotas.show(Scope("m1", "f1"))
        assert (quota.used_bytes, quota.used_files) == (10, 1)
        outcome = DocbinderToolset(run).call("write_file", {"name": "b.txt", "content": "x" * 11})
        assert outcome.is_error
        assert outcome.text.startswith("quota exceeded for mandate m1, feature instance f1:")
        assert "10 bytes are used and this needs 11 more" in outcome.text
        assert "docbinder files rm" in outcome.text
        with pytest.raises(QuotaExceeded):
            run.store_file("c.txt", b"y" * 11)
        assert [f.file_name for f in binder.list_files(u1)] == ["a.txt"]
        assert [m.documents[0].file_name for m in run.messages()] == ["a.txt", "a.txt"]
        # deleting frees the room again
        run.produce_file("b.txt", b"z" * 10)
        run.delete_file(first.item.id, force=True)
        assert binder.quotas.show(Scope("m1", "f1")).used_bytes == 10

    def test_an_expired_file_resolves_as_expired_at_once_and_gc_removes_it(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        from datetime import timedelta

        run, old, held = _one_expired_one_held(binder, u1, b"old", b"held")
        resolution = run.resolve([f"docItem:{old.document_id}", f"docItem:{held.document_id}"])
        assert [d.file.id for d in resolution.documents] == [held.item.id]
        [miss] = resolution.unresolved
        assert miss.reason is UnresolvedReason.EXPIRED
        assert miss.expired_at == old.item.created_at + timedelta(seconds=1)
        assert miss.expired_at.isoformat(timespec="seconds") in miss.message
        # at once, before any bytes are removed: the row and blob are still there
        assert binder.get_file(u1, old.item.id) == old.item
        report = binder.collect_garbage(dry_run=True, grace_seconds=0)
        assert report.expired_rows == (old.item.id,)
        assert binder.get_file(u1, old.item.id) == old.item
        applied = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
        assert applied.expired_rows == (old.item.id,)
        with pytest.raises(FileItemNotFound):
            binder.get_file(u1, old.item.id)
        assert not binder.blobs.exists(old.item.blob_key)
        assert binder.get_file(u1, held.item.id) == held.item
        # lifting the hold lets the held file expire too
        binder.retention.release("file", held.item.id, "m1")
        assert [e.item.id for e in binder.retention.expired()] == [held.item.id]

    def test_an_expired_file_is_not_served_by_its_file_id_either(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """Past its period a file's content is refused on every read by id, as the resolver
        answers ``expired``; its FileItem stays until ``gc``, and a hold keeps it served (B5)."""
        from datetime import timedelta

        from docbinder.domain.errors import FileExpired
        from docbinder.tools.consuming import read_file, search_in_file_content

        run, old, held = _one_expired_one_held(binder, u1, b"old secret line", b"held secret line")
        with pytest.raises(FileExpired) as refused:
            run.read_file(old.item.id)
        assert refused.value.expired_at == old.item.created_at + timedelta(seconds=1)
        assert "passed its retention period" in str(refused.value)
        assert isinstance(refused.value, FileItemNotFound)
        with pytest.raises(FileExpired):
            binder.open_file_item(u1, old.item.id)
        with pytest.raises(FileExpired):
            read_file(run, old.item.id)
        with pytest.raises(FileExpired):
            search_in_file_content(run, "secret", file_ids=[old.item.id])
        assert [m.file_id for m in search_in_file_content(run, "secret")] == [held.item.id]
        assert run.read_file(held.item.id) == b"held secret line"
        assert read_file(run, held.item.id) == "held secret line"
        assert binder.get_file(u1, old.item.id) == old.item  # until gc removes it

    def test_the_same_bytes_stored_after_their_file_expired_are_a_fresh_file(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """An expired file is about to be removed: a store of its bytes does not reuse it
        (it would resolve as ``expired`` and go with the next gc), ADR 0142."""
        import time
        from datetime import timedelta

        from docbinder.domain.model import Scope

        run = binder.start_new_run(u1)
        old = run.produce_file("report.txt", b"the same report")
        binder.retention.set(Scope("m1", "f1"), timedelta(seconds=1))
        binder.retention.hold("file", old.item.id, "m1", "case 3")
        time.sleep(1.1)
        # past its period, kept only by a hold: it goes when the hold is lifted, so no reuse
        assert binder.check_duplicate(u1, old.item.sha256, "report.txt").item is None
        again = run.produce_file("report.txt", b"the same report")
        binder.retention.release("file", old.item.id, "m1")
        assert not again.duplicate and again.item.id != old.item.id
        resolution = run.resolve([f"docItem:{again.document_id}"])
        assert [d.file.id for d in resolution.documents] == [again.item.id]
        binder.retention.set(Scope("m1", "f1"), timedelta(hours=1))
        later = run.produce_file("report.txt", b"the same report")  # within the period: reused
        assert later.duplicate and later.item.id in {old.item.id, again.item.id}
        binder.retention.set(Scope("m1", "f1"), timedelta(seconds=1))
        time.sleep(1.1)
        applied = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
        assert set(applied.expired_rows) == {old.item.id, again.item.id}

    def test_a_held_file_is_not_deleted_even_with_force(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        from docbinder.domain.errors import FileUnderLegalHold

        run = binder.start_new_run(u1)
        by_file = run.produce_file("contract.pdf", b"%PDF-1.4 contract")
        by_workflow = run.produce_file("mail.txt", b"the mail")
        workflow_id = run.context.workflow_id
        assert workflow_id is not None
        binder.retention.hold("file", by_file.item.id, "m1", "case 7")
        binder.retention.hold("workflow", workflow_id, "m1", "case 9")
        for produced, kind, target in (
            (by_file, "file", by_file.item.id),
            (by_workflow, "workflow", workflow_id),
        ):
            with pytest.raises(FileUnderLegalHold) as refused:
                binder.delete_file(u1, produced.item.id, force=True)
            assert f"retention release --{kind} {target}" in str(refused.value)
            assert binder.get_file(u1, produced.item.id) == produced.item
        # nor is its content replaced or appended to: the old bytes would go
        for change in (binder.update_file.replace, binder.update_file.append):
            with pytest.raises(FileUnderLegalHold):
                change(u1, by_file.item.id, b"overwritten")
        assert binder.get_file(u1, by_file.item.id) == by_file.item
        # nor a held version deleted with its name
        saved = binder.versions.save(u1, "evidence.txt", b"v0 evidence")
        binder.retention.hold("file", saved.item.id, "m1", "case 8")
        with pytest.raises(FileUnderLegalHold):
            binder.versions.delete(u1, "evidence.txt")
        assert binder.get_file(u1, saved.item.id) == saved.item
        binder.retention.release("workflow", workflow_id, "m1")
        binder.delete_file(u1, by_workflow.item.id, force=True)  # no hold names it now
        with pytest.raises(FileItemNotFound):
            binder.get_file(u1, by_workflow.item.id)
        assert binder.get_file(u1, by_file.item.id) == by_file.item

    def test_a_hold_names_a_file_or_workflow_of_its_own_mandate(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """Another mandate's ids, and unknown ones, cannot be held or released (ADR 0142):
        a hold gc would not see (it reads the holds of a file's own mandate) is never placed."""
        import time
        from datetime import timedelta

        from docbinder.domain.errors import WorkflowNotFound
        from docbinder.domain.model import Scope

        run = binder.start_new_run(u1)
        produced = run.produce_file("evidence.txt", b"evidence")
        workflow_id = run.context.workflow_id
        assert workflow_id is not None
        unknown = "00000000-0000-4000-8000-000000000000"
        for target in (produced.item.id, unknown):
            with pytest.raises(FileItemNotFound):
                binder.retention.hold("file", target, "m2", "case 9")
        with pytest.raises(FileItemNotFound):
            binder.retention.hold("file", unknown, "m1")
        for target in (workflow_id, unknown):
            with pytest.raises(WorkflowNotFound):
                binder.retention.hold("workflow", target, "m2", "case 9")
        assert binder.retention.holds("m2") == []
        binder.retention.hold("workflow", workflow_id, "m1", "case 9")
        assert binder.retention.release("workflow", workflow_id, "m2") is False
        binder.retention.set(Scope("m1", "f1"), timedelta(seconds=1))
        time.sleep(1.1)
        assert binder.retention.expired() == []  # the hold of m1 still stands
        assert binder.collect_garbage(dry_run=True, grace_seconds=0).expired_rows == ()
        assert binder.retention.release("workflow", workflow_id, "m1") is True
        assert [e.item.id for e in binder.retention.expired()] == [produced.item.id]

    def test_a_hold_placed_while_gc_runs_keeps_the_files_gc_had_listed(
        self, binder: DocBinder, u1: Principal, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import time
        from datetime import timedelta

        from docbinder.domain.model import Scope

        run = binder.start_new_run(u1)
        files = [run.produce_file(f"f{n}.txt", f"file {n}".encode()) for n in range(3)]
        binder.retention.set(Scope("m1", "f1"), timedelta(seconds=1))
        time.sleep(1.1)
        listed = binder.retention.expired

        def listed_then_held(**kwargs: object) -> object:
            found = listed(**kwargs)  # type: ignore[arg-type]
            # the hold comes after gc listed the expired files, before it deletes them
            workflow_id = run.context.workflow_id
            assert workflow_id is not None
            binder.retention.hold("workflow", workflow_id, "m1", "case 9")
            return found

        monkeypatch.setattr(binder.retention, "expired", listed_then_held)
        applied = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
        assert applied.expired_rows == ()
        for produced in files:
            assert binder.get_file(u1, produced.item.id) == produced.item
            assert binder.blobs.exists(produced.item.blob_key)

    def test_without_workflow_the_ref_line_is_omitted_and_one_warning_names_the_cause(
        self, binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
    ) -> None:
        run = binder.start_run(u1)
        with caplog.at_level(logging.WARNING, logger="docbinder"):
            result = run.produce_file("a.txt", b"hello", verb="Wrote")
        assert result.document_id is None
        assert result.text == f"Wrote 'a.txt' (5 bytes)\n  file id: {result.item.id}"
        assert result.not_attached is not None
        assert result.not_attached.cause is NotAttachedCause.NO_WORKFLOW
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "no workflow bound" in warnings[0].getMessage()
        # the file is still readable by file id
        assert run.read_file(result.item.id) == b"hello"

    def test_strict_attach_without_workflow_raises(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_run(u1)
        stored = run.store_file("a.txt", b"x")
        with pytest.raises(NoActiveWorkflow):
            run.attach(stored.item)

    def test_attach_needs_update_on_the_workflow(
        self, binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
    ) -> None:
        owner_run = binder.start_new_run(u1)
        assert owner_run.workflow is not None
        other = Principal("u3", "m1", "f1", roles=("member",))
        run = binder.start_run(other, owner_run.workflow.id)
        with caplog.at_level(logging.WARNING, logger="docbinder"):
            result = run.produce_file("b.txt", b"data", verb="Wrote")
        assert result.document_id is None
        assert "permission denied" in caplog.text
        with pytest.raises(AccessDenied):
            run.attach(result.item)

    def test_a_refused_attach_is_in_the_result_and_in_one_line_of_the_tool_text(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        owner_run = binder.start_new_run(u1)
        assert owner_run.workflow is not None
        other = Principal("u3", "m1", "f1", roles=("member",))
        run = binder.start_run(other, owner_run.workflow.id)
        result = run.produce_file("b.txt", b"data", verb="Wrote")
        assert result.document_id is None and result.reference is None and result.label is None
        assert result.not_attached is not None
        assert result.not_attached.cause is NotAttachedCause.PERMISSION_DENIED
        assert "u3" in result.not_attached.message
        assert result.text == (
            "Wrote 'b.txt' (4 bytes)\n"
            "  not in the workflow: stored, but this caller may not add files to the workflow; "
            "it has no reference to cite, use its file id\n"
            f"  file id: {result.item.id}"
        )
        assert "docItem:" not in result.text
        # stored: the caller reads it by file id; the workflow has nothing of it
        assert run.read_file(result.item.id) == b"data"
        assert binder.list_messages(u1, owner_run.workflow.id) == []

    def test_a_run_bound_to_a_workflow_that_is_not_stored_is_told_so(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        real = binder.start_new_run(u1)
        assert real.workflow is not None
        ghost = attrs.evolve(real.workflow, id=str(uuid.uuid4()))
        run = Run(binder, RunContext(u1, ghost))
        result = run.produce_file("c.txt", b"ghost", verb="Wrote")
        assert result.document_id is None
        assert result.not_attached is not None
        assert result.not_attached.cause is NotAttachedCause.WORKFLOW_NOT_FOUND
        assert "the workflow is no longer readable" in result.text.splitlines()[1]
        assert run.read_file(result.item.id) == b"ghost"

    # -- workflow counters (round / task / action, ADR 0026) ----------------------

    def test_documents_carry_the_counters_current_when_attached(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        assert run.counters == WorkflowCounters(1, 0, 0)
        run.produce_file("start.md", b"0", label="start")
        assert run.next_task() == WorkflowCounters(1, 1, 0)
        run.produce_file("task.md", b"1", label="task")
        assert run.next_action() == WorkflowCounters(1, 1, 1)
        one = run.store_file("one.csv", b"a\n1\n")
        two = run.store_file("two.csv", b"b\n2\n")
        run.persist_action_result([one, two], label="action result")
        assert run.advance(round=2, action=4) == WorkflowCounters(2, 0, 4)
        assert run.counters == WorkflowCounters(2, 0, 4)
        run.attach(run.store_file("late.md", b"2"), label="late")
        assert run.workflow is not None
        stored = binder.list_messages(u1, run.workflow.id)
        assert [
            (m.documents_label, m.round_number, m.task_number, m.action_number) for m in stored
        ] == [
            ("start", 1, 0, 0),
            ("task", 1, 1, 0),
            ("action result", 1, 1, 1),
            ("late", 2, 0, 4),
        ]
        numbers = [
            (d.file_name, d.round_number, d.task_number, d.action_number)
            for m in stored
            for d in m.documents
        ]
        assert numbers == [
            ("start.md", 1, 0, 0),
            ("task.md", 1, 1, 0),
            ("one.csv", 1, 1, 1),
            ("two.csv", 1, 1, 1),
            ("late.md", 2, 0, 4),
        ]
        # What the run holds in memory says the same as what was stored.
        assert [d.action_number for m in run.workflow.messages for d in m.documents] == [
            0,
            0,
            1,
            1,
            4,
        ]

    def test_counters_belong_to_the_workflow_and_survive_a_new_run(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        first = binder.start_new_run(u1)
        assert first.workflow is not None
        first.advance(round=3, task=2)
        second = binder.start_run(u1, first.workflow.id)
        assert second.counters == WorkflowCounters(3, 2, 0)
        assert second.next_action() == WorkflowCounters(3, 2, 1)
        # The first run attaches with the numbers as stored, not the ones it saw last.
        produced = first.produce_file("after.md", b"x")
        [doc] = binder.resolve(second.context, [produced.reference]).documents
        assert (doc.document.round_number, doc.document.task_number) == (3, 2)
        assert doc.document.action_number == 1
        assert first.counters == WorkflowCounters(3, 2, 1)
        assert binder.get_workflow(u1, first.workflow.id).counters == WorkflowCounters(3, 2, 1)
        with pytest.raises(CountersWouldGoBack):
            first.advance(task=1)
        assert binder.start_run(u1, first.workflow.id).counters == WorkflowCounters(3, 2, 1)

    def test_counters_never_go_back_in_message_order_while_runs_advance_and_attach(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """Runs on one workflow: half advance the task, half produce files, all at once."""
        if not self.supports_concurrency:
            pytest.skip("the backends are not thread-safe (supports_concurrency = False)")
        workflow = binder.start_new_run(u1).workflow
        assert workflow is not None
        threads, rounds = 6, 12
        barrier = threading.Barrier(threads)
        errors: list[BaseException] = []

        def work(i: int) -> None:
            run = binder.start_run(u1, workflow.id)
            barrier.wait(timeout=30)
            try:
                for n in range(rounds):
                    if i % 2:
                        run.next_task()
                    else:
                        assert run.produce_file(f"f{i}-{n}.md", f"{i}/{n}".encode()).document_id
            except BaseException as exc:
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert errors == []
        assert binder.get_workflow(u1, workflow.id).counters == WorkflowCounters(
            1, rounds * threads // 2, 0
        )
        messages = binder.list_messages(u1, workflow.id)
        assert len(messages) == rounds * threads // 2
        positions = [(m.sequence_nr, m.counters.as_tuple()) for m in messages]
        behind = [(a, b) for a, b in itertools.pairwise(positions) if b[1] < a[1]]
        assert behind == []
        assert all(
            (d.round_number, d.task_number, d.action_number) == m.counters.as_tuple()
            for m in messages
            for d in m.documents
        )

    @pytest.mark.parametrize(
        "values",
        [
            {"round": -1},
            {"task": True},
            {"action": "2"},
            {"round": 2.0},
            {"task": 2**31},
            {},
            {"round": None, "task": None, "action": None},
        ],
        ids=repr,
    )
    def test_counter_values_that_are_not_whole_numbers_are_refused(
        self, binder: DocBinder, u1: Principal, values: dict[str, object]
    ) -> None:
        run = binder.start_new_run(u1)
        assert run.workflow is not None
        with pytest.raises(InvalidInput):
            run.advance(**values)  # type: ignore[arg-type]
        assert binder.get_workflow(u1, run.workflow.id).counters == WorkflowCounters(1, 0, 0)

    def test_advancing_needs_a_workflow_and_update_on_it(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        owner = binder.start_new_run(u1)
        assert owner.workflow is not None
        with pytest.raises(NoActiveWorkflow):
            binder.start_run(u1).next_round()
        reader = binder.start_run(Principal("u3", "m1", "f1", roles=("member",)), owner.workflow.id)
        with pytest.raises(AccessDenied):
            reader.next_round()
        with pytest.raises(AccessDenied):
            reader.advance(round=5)
        assert binder.get_workflow(u1, owner.workflow.id).counters == WorkflowCounters(1, 0, 0)

    def test_labels_stay_unique_within_a_workflow(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        first = run.produce_file("r.md", b"one", label="writeFile:r.md")
        second = run.produce_file("r.md", b"two", label="writeFile:r.md")
        assert run.workflow is not None
        labels = [m.documents_label for m in run.workflow.messages]
        assert labels[0] == "writeFile:r.md"
        assert (
            labels[1].startswith("writeFile:r.md#") and len(labels[1]) == len("writeFile:r.md#") + 8
        )
        assert first.document_id != second.document_id

    def test_a_label_taken_by_another_run_or_this_one_is_suffixed(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """The first message under a label gets it; every later one, from any run, a suffix."""
        first_run = binder.start_new_run(u1)
        assert first_run.workflow is not None
        workflow_id = first_run.workflow.id
        first_run.produce_file("a.md", b"a")  # the default label
        second_run = binder.start_run(u1, workflow_id)  # knows nothing of the label yet
        later = [second_run.produce_file(f"{n}.md", n.encode()) for n in ("b", "c", "d")]
        later.append(first_run.produce_file("e.md", b"e"))
        labels = [r.label for r in later]
        assert all(
            label is not None
            and label.startswith(DEFAULT_LABEL + "#")
            and len(label) == len(DEFAULT_LABEL) + 9
            for label in labels
        ), labels
        stored = binder.list_messages(u1, workflow_id)
        assert [m.documents_label for m in stored] == [DEFAULT_LABEL, *labels]
        assert len(set(labels)) == 4

    def test_zero_byte_file(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        result = run.produce_file("empty.txt", b"")
        assert result.item.size == 0
        assert result.item.sha256 == EMPTY_SHA256
        assert result.document_id is not None

    def test_name_is_part_of_the_duplicate_key(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_run(u1)
        a = run.store_file("a.txt", b"same")
        b = run.store_file("b.txt", b"same")
        again = run.store_file("a.txt", [b"sa", b"me"])
        assert a.item.id != b.item.id
        assert again.duplicate and again.item.id == a.item.id
        # the duplicate's freshly written blob was removed again: one blob per FileItem
        assert sorted(binder.blobs.keys()) == sorted([a.item.blob_key, b.item.blob_key])

    def test_ghost_duplicate_other_feature_instance_gets_a_fresh_copy(
        self, binder: DocBinder
    ) -> None:
        f1 = Principal("u1", "m1", "f1")
        f2 = Principal("u1", "m1", "f2")
        in_f1 = binder.start_run(f1).store_file("q3.pdf", b"%PDF-1.4 same bytes")
        in_f2 = binder.start_run(f2).store_file("q3.pdf", b"%PDF-1.4 same bytes")
        assert not in_f2.duplicate
        assert in_f2.item.id != in_f1.item.id
        assert in_f2.item.scope.feature_instance_id == "f2"
        # each stays readable in its own scope, and only there
        assert binder.get_file(f1, in_f1.item.id) == in_f1.item
        assert binder.get_file(f2, in_f2.item.id) == in_f2.item
        with pytest.raises(FileItemNotFound):
            binder.get_file(f2, in_f1.item.id)

    def test_ghost_duplicate_unreadable_candidate_in_the_same_scope_is_no_duplicate(
        self,
        binder: DocBinder,
    ) -> None:
        # A candidate that matches the duplicate key but that get_file refuses must not be returned.
        member = Principal("u1", "m1", "f1", roles=("member",))
        first = binder.start_run(member).store_file("x.csv", b"1,2")
        binder.access.authorizer = _DenyReadOf(first.item.id, binder.access.authorizer)
        second = binder.start_run(member).store_file("x.csv", b"1,2")
        assert not second.duplicate
        assert second.item.id != first.item.id
        assert binder.get_file(member, second.item.id) == second.item

    def test_same_bytes_in_two_mandates_are_two_items(self, binder: DocBinder) -> None:
        u1 = Principal("u1", "m1", "f1")
        u2 = Principal("u2", "m2")
        one = binder.start_run(u1).store_file("q3.pdf", b"bytes")
        two = binder.start_run(u2).store_file("q3.pdf", b"bytes")
        assert one.item.id != two.item.id
        assert (one.item.created_by, two.item.created_by) == ("u1", "u2")
        binder.delete_file(u2, two.item.id)
        with binder.open_file(u1, one.item.id) as chunks:
            assert b"".join(chunks) == b"bytes"
        with pytest.raises(FileItemNotFound):
            binder.get_file(u2, two.item.id)

    def test_unicode_name_kept_byte_for_byte_and_retyped_name_resolves_nothing(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        name = "Étude d’opportunités v3.pptx"
        run = binder.start_new_run(u1)
        result = run.produce_file(name, b"slides")
        assert result.item.file_name.encode() == name.encode()
        resolution = run.resolve(["Étude d'opportunités v3.pptx"])
        assert resolution.documents == ()
        assert [u.reason for u in resolution.unresolved] == [UnresolvedReason.REJECTED_INPUT]
        assert [s.reference for s in resolution.suggestions] == [f"docItem:{result.document_id}"]
        assert resolution.suggestions[0].file_name == name

    def test_a_file_name_sent_as_a_reference_stays_unresolved_and_names_the_reference(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        invoice = run.produce_file("invoice-2026.pdf", b"%PDF-1.4 invoice")
        run.produce_file("notes.md", b"# notes")
        resolution = run.resolve([{"id": "invoice-2026.pdf"}, "invoice-2026.pdf", "other.pdf"])
        assert resolution.documents == ()  # never guessed
        first, second, third = resolution.unresolved
        hint = (
            "'invoice-2026.pdf' is a file name, not a reference; the document of that name is "
            f"docItem:{invoice.document_id}"
        )
        assert first.reason is UnresolvedReason.NOT_IN_WORKFLOW and first.message.endswith(hint)
        assert second.reason is UnresolvedReason.REJECTED_INPUT and second.message.endswith(hint)
        assert "file name" not in third.message

    def test_a_file_name_hint_reaches_every_document_of_the_workflow(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """Not only the newest ones the suggestions list: the oldest of many, a name with
        spaces sent as ``{"id": ...}``, another spelling, and a name two documents share."""
        run = binder.start_new_run(u1)
        oldest = run.produce_file("Städte Übersicht 2024.csv", b"Stadt;Zahl\n")
        first = run.produce_file("report.pdf", b"%PDF-1.4 first")
        second = run.produce_file("report.pdf", b"%PDF-1.4 second")
        for n in range(12):
            run.produce_file(f"f{n}.txt", f"file {n}".encode())
        nfd = unicodedata.normalize("NFD", "Städte Übersicht 2024.csv")
        resolution = run.resolve([{"id": "Städte Übersicht 2024.csv"}, nfd, "`report.pdf`"])
        assert resolution.documents == ()  # never guessed
        by_id, by_nfd, shared = resolution.unresolved
        hint = (
            "'Städte Übersicht 2024.csv' is a file name, not a reference; the document of that "
            f"name is docItem:{oldest.document_id}"
        )
        assert by_id.reason is UnresolvedReason.REJECTED_INPUT and by_id.message.endswith(hint)
        assert by_nfd.message.endswith(f"docItem:{oldest.document_id}")
        assert shared.message.endswith(
            "'report.pdf' is a file name, not a reference; 2 documents have that name: "
            f"docItem:{first.document_id}, docItem:{second.document_id}"
        )
        # a name under a name key, and a file id sent as a document id
        by_file_id, by_key = run.resolve(  # misses first, then what was rejected
            [{"fileName": "Städte Übersicht 2024.csv"}, f"docItem:{oldest.item.id}"]
        ).unresolved
        assert by_key.message.endswith(hint)
        assert by_file_id.message.endswith(
            f"{oldest.item.id} is a file id, not a document id; its document(s): "
            f"docItem:{oldest.document_id}"
        )
        # another workflow's document of that name or file is not named
        elsewhere = binder.start_new_run(u1).resolve(["report.pdf", f"docItem:{first.item.id}"])
        assert all("file" not in u.message for u in elsewhere.unresolved)

    def test_a_label_stored_decomposed_is_found_by_the_composed_spelling(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        nfd = unicodedata.normalize("NFD", "Kostenschätzung Q3.csv")
        nfc = unicodedata.normalize("NFC", nfd)
        run = binder.start_new_run(u1)
        result = run.produce_file(nfd, b"Posten;Betrag\n", verb="Wrote", label=f"writeFile:{nfd}")
        resolution = run.resolve(f"docList:writeFile:{nfc}")
        assert resolution.ok
        assert [d.document.id for d in resolution.documents] == [result.document_id]
        assert resolution.documents[0].reference == f"docList:writeFile:{nfc}"
        # the other way round, and together with the exact spelling: one document, no repeat
        both = run.resolve([f"docList:writeFile:{nfd}", f"docList:writeFile:{nfc}"])
        assert [d.document.id for d in both.documents] == [result.document_id]

    def test_look_alike_names_are_one_label_and_the_second_gets_a_suffix(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        nfc = unicodedata.normalize("NFC", "Résumé.csv")
        nfd = unicodedata.normalize("NFD", nfc)
        half = unicodedata.normalize("NFD", nfc[:2]) + nfc[2:]  # first é decomposed only
        run = binder.start_new_run(u1)
        first = run.produce_file(nfc, b"1", label=f"writeFile:{nfc}")
        second = run.produce_file(nfd, b"2", label=f"writeFile:{nfd}")
        assert second.item.file_name == nfd  # the file keeps its name byte for byte
        assert first.label == f"writeFile:{nfc}" and second.label is not None
        assert re.fullmatch(re.escape(f"writeFile:{nfc}#") + "[0-9a-f]{8}", second.label)
        for spelling in (nfc, nfd, half):  # every spelling names the label's first holder
            resolution = run.resolve(f"docList:writeFile:{spelling}")
            assert [d.document.id for d in resolution.documents] == [first.document_id]
        again = binder.start_run(u1, run.context.workflow_id).resolve(f"docList:{second.label}")
        assert [d.document.id for d in again.documents] == [second.document_id]

    def test_labels_stored_in_both_spellings_match_exactly_and_a_third_is_refused(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        # Messages written before labels were kept composed (or by another writer of the
        # store) may hold a decomposed label, and both spellings of one name side by side.
        nfc = unicodedata.normalize("NFC", "writeFile:Kostenschätzung Résumé.csv")
        nfd = unicodedata.normalize("NFD", nfc)
        half = unicodedata.normalize("NFD", nfc[:20]) + nfc[20:]  # ä decomposed, é composed
        assert len({nfc, nfd, half}) == 3
        run = binder.start_new_run(u1)
        assert run.workflow is not None
        only_nfd = binder.start_new_run(u1)
        assert only_nfd.workflow is not None
        rows = [(run, nfc), (run, nfd), (only_nfd, nfd)]
        items = [
            target.store_file(f"{n}.csv", label.encode()).item
            for n, (target, label) in enumerate(rows)
        ]
        stored: dict[str, str] = {}
        with binder.uow_factory() as uow:
            for (target, label), item in zip(rows, items, strict=True):
                assert target.workflow is not None
                message = ChatMessage.attaching(
                    target.workflow,
                    [item],
                    message_id=str(uuid.uuid4()),
                    document_ids=[str(uuid.uuid4())],
                    label=label,
                    published_at=datetime.now(UTC),
                )
                kept = uow.workflows.add_message(message)
                stored[f"{target.workflow.id}:{label}"] = kept.documents[0].id
            uow.commit()
        for label in (nfc, nfd):  # the exact spelling wins over its look-alike
            found = run.resolve(f"docList:{label}")
            assert [d.document.id for d in found.documents] == [
                stored[f"{run.workflow.id}:{label}"]
            ]
        refused = run.resolve(f"docList:{half}")
        assert refused.documents == ()
        [miss] = refused.unresolved
        assert miss.reason is UnresolvedReason.AMBIGUOUS_NAME
        assert ascii(nfc) in miss.message and ascii(nfd) in miss.message
        # one decomposed label alone is found by the spelling every keyboard produces
        alone = only_nfd.resolve(f"docList:{nfc}")
        assert [d.document.id for d in alone.documents] == [stored[f"{only_nfd.workflow.id}:{nfd}"]]

    def test_reference_from_another_workflow_is_not_resolved(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        w1 = binder.start_new_run(u1)
        produced = w1.produce_file("a.txt", b"a")
        w2 = binder.start_new_run(u1)
        ref = f"docItem:{produced.document_id}"
        assert [u.reason for u in w2.resolve([ref]).unresolved] == [
            UnresolvedReason.NOT_IN_WORKFLOW
        ]
        assert [d.document.id for d in w1.resolve([ref]).documents] == [produced.document_id]

    def test_other_mandate_gets_the_same_answer_as_for_a_random_id(self, binder: DocBinder) -> None:
        u1 = Principal("u1", "m1", "f1")
        u2 = Principal("u2", "m2")
        produced = binder.start_new_run(u1).produce_file("secret.txt", b"s")
        run2 = binder.start_new_run(u2)
        real = run2.resolve([f"docItem:{produced.document_id}"])
        fake = run2.resolve([f"docItem:{uuid.uuid4()}"])
        by_file = run2.resolve({"documents": [{"id": produced.item.id}]})
        assert real.documents == fake.documents == by_file.documents == ()
        shape = [(u.reason, u.message) for u in real.unresolved]
        assert shape == [(u.reason, u.message) for u in fake.unresolved]
        assert shape == [(u.reason, u.message) for u in by_file.unresolved]
        with pytest.raises(WorkflowNotFound):
            binder.start_run(u2, binder.start_new_run(u1).workflow.id)  # type: ignore[union-attr]

    def test_deleted_file_gives_a_reason_and_the_next_attach_works(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        first = run.produce_file("a.txt", b"a")
        second = run.produce_file("b.txt", b"b")
        assert run.workflow is not None
        message = run.persist_action_result([first.item, second.item], label="task:1")
        with pytest.raises(FileStillReferenced) as refused:
            binder.delete_file(u1, first.item.id)
        assert refused.value.references == 2  # its produce message and task:1
        assert binder.get_file(u1, first.item.id) == first.item
        binder.delete_file(u1, first.item.id, force=True)
        one = run.resolve(f"docItem:{first.document_id}")
        assert [u.reason for u in one.unresolved] == [UnresolvedReason.FILE_MISSING]
        listed = run.resolve("docList:task:1")
        assert [d.file.id for d in listed.documents] == [second.item.id]
        assert [u.document_id for u in listed.unresolved] == [message.documents[0].id]
        third = run.produce_file("c.txt", b"c")
        assert third.document_id is not None
        assert [d.document.id for d in run.resolve([third.reference]).documents] == [
            third.document_id
        ]

    def test_missing_blob_is_reported_when_the_content_is_read(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        # Resolving reads metadata only (ADR 0028); the content read reports the gap.
        run = binder.start_new_run(u1)
        produced = run.produce_file("a.txt", b"a")
        kept = run.produce_file("b.txt", b"b")
        binder.blobs.delete(produced.item.blob_key)
        resolution = run.resolve([produced.reference, kept.reference])
        assert resolution.ok
        assert [d.file.id for d in resolution.documents] == [produced.item.id, kept.item.id]
        content = run.get_content([produced.reference, kept.reference])
        assert [u.reason for u in content.unresolved] == [UnresolvedReason.BLOB_MISSING]
        assert [u.document_id for u in content.unresolved] == [produced.document_id]
        assert "missing from the blob store" in content.unresolved[0].message
        assert [d.file_id for d in content.documents] == [kept.item.id]
        with pytest.raises(BlobMissing, match=re.escape(produced.item.blob_key)):
            b"".join(run.open_file(produced.item.id))

    def test_resolve_keeps_order_and_drops_repeats(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        a = run.produce_file("a.txt", b"a", label="writeFile:a.txt")
        b = run.produce_file("b.txt", b"b")
        resolution = run.resolve(
            f"docItem:{b.document_id}, docList:writeFile:a.txt, docItem:{b.document_id}, file:{a.item.id}"
        )
        assert [d.document.id for d in resolution.documents] == [b.document_id, a.document_id]
        assert resolution.ok

    def test_file_reference_finds_the_documents_of_that_file(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        a = run.produce_file("a.txt", b"a")
        again = run.produce_file("a.txt", b"a")  # duplicate FileItem, second ChatDocument
        assert again.duplicate and again.item.id == a.item.id
        resolution = run.resolve(f"file:{a.item.id}")
        assert [d.document.id for d in resolution.documents] == [a.document_id, again.document_id]

    def test_persist_action_result_is_one_message_with_several_documents(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        items = [run.store_file(f"part{i}.txt", f"p{i}".encode()).item for i in range(3)]
        message = run.persist_action_result(items, label="task:summary")
        assert [d.file_id for d in message.documents] == [i.id for i in items]
        resolution = run.resolve("docList:task:summary")
        assert [d.file.id for d in resolution.documents] == [i.id for i in items]

    def test_bad_names_are_rejected_and_nothing_is_stored(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_run(u1)
        for bad in ["", "a\x00b", "x" * 1025]:
            with pytest.raises(InvalidInput):
                run.store_file(bad, b"data")
        assert list(binder.blobs.keys()) == []

    def test_names_with_path_separators_are_kept_and_never_steer_the_blob(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_run(u1)
        item = run.store_file("../../etc/passwd", b"x").item
        assert item.file_name == "../../etc/passwd"
        assert item.blob_key == f"{item.id[:2]}/{item.id}"

    def test_size_limit_keeps_nothing(self, make_binder: MakeBinder, u1: Principal) -> None:
        binder = make_binder(max_file_size=10)
        run = binder.start_run(u1)
        with pytest.raises(SizeLimitExceeded):
            run.store_file("big.bin", [b"x" * 6, b"x" * 6])
        assert list(binder.blobs.keys()) == []
        assert run.list_files() == []
        assert run.store_file("ok.bin", b"x" * 10).item.size == 10

    def test_viewer_cannot_store(self, binder: DocBinder) -> None:
        viewer = Principal("v", "m1", "f1", roles=("viewer",))
        with pytest.raises(AccessDenied):
            binder.start_run(viewer).store_file("a.txt", b"a")
        assert list(binder.blobs.keys()) == []

    def test_no_workflow_available(
        self, binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A consuming tool resolving without a bound workflow gets no_active_workflow for every reference."""
        produced = binder.start_new_run(u1).produce_file("a.txt", b"a")
        unbound = binder.start_run(u1)
        with caplog.at_level(logging.WARNING, logger="docbinder"):
            resolution = unbound.resolve(
                [produced.reference, "docList:x", f"file:{produced.item.id}"]
            )
        assert resolution.documents == ()
        assert [u.reason for u in resolution.unresolved] == [
            UnresolvedReason.NO_ACTIVE_WORKFLOW
        ] * 3
        assert _warnings(caplog) == [
            "no workflow available: 3 reference(s) unresolved (no_active_workflow) for user u1"
        ]

    def test_zero_content_parts_after_download(
        self, binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A successful download always yields a ChatDocument whose content reaches the consuming tool."""
        run = binder.start_new_run(u1)
        produced = run.produce_file(
            "platform-overview.html",
            b"<h1>Overview</h1><p>Agents</p>",
            verb="Downloaded",
            label="datasource:web",
        )
        content = run.get_content([produced.reference])
        assert [p.kind for p in content.parts] == [ContentKind.TEXT]
        assert "Overview" in (content.parts[0].text or "")
        # and when nothing resolves, the answer and the log say why, per reference
        with caplog.at_level(logging.WARNING, logger="docbinder"):
            empty = run.get_content(["docItem:00000000-0000-4000-8000-000000000000"])
        assert empty.parts == ()
        assert [u.reason for u in empty.unresolved] == [UnresolvedReason.NOT_IN_WORKFLOW]
        assert any(
            m.startswith(
                "0 content parts from 1 reference(s): docItem:00000000-0000-4000-8000-000000000000 (not_in_workflow)"
            )
            for m in _warnings(caplog)
        )

    def test_invalid_document_list_type_dict(
        self, binder: DocBinder, u1: Principal, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A dict-shaped documentList goes through the tolerant parser like every other shape."""
        run = binder.start_new_run(u1)
        produced = run.produce_file("a.txt", b"a")
        with caplog.at_level(logging.WARNING, logger="docbinder"):
            resolution = run.resolve({"documents": [{"id": produced.document_id, "name": "a.txt"}]})
            content = run.get_content({"documents": [{"id": produced.document_id}]})
        assert [d.document.id for d in resolution.documents] == [produced.document_id]
        assert [p.text for p in content.parts] == ["a"]
        assert _warnings(caplog) == []

    def test_listing_files_returns_entities(self, binder: DocBinder, u1: Principal) -> None:
        """Listing gives FileItem objects with attribute access, never dicts."""
        run = binder.start_run(u1)
        run.store_file("one.txt", b"1")
        run.store_file("two.txt", b"2")
        listed = run.list_files()
        assert all(isinstance(i, FileItem) for i in listed)
        assert sorted(i.file_name for i in listed) == ["one.txt", "two.txt"]

    def test_file_not_found_right_after_duplicate_detected(
        self, binder: DocBinder, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The ghost duplicate: a candidate from another feature instance is never handed back."""
        f1 = Principal("u1", "m1", "f1")
        f2 = Principal("u1", "m1", "f2")
        binder.start_run(f1).store_file("q3.pdf", b"%PDF-1.4 x")
        # Same user, same mandate, same bytes and name, other feature instance.
        with caplog.at_level(logging.INFO, logger="docbinder"):
            stored = binder.start_run(f2).store_file("q3.pdf", b"%PDF-1.4 x")
        assert not stored.duplicate
        assert binder.get_file(f2, stored.item.id) == stored.item  # no "File with ID ... not found"
        assert not any("duplicate detected" in r.getMessage() for r in caplog.records)
        # Within the same scope the duplicate is found, logged, and readable.
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="docbinder"):
            again = binder.start_run(f2).store_file("q3.pdf", b"%PDF-1.4 x")
        assert again.duplicate and again.item.id == stored.item.id
        assert binder.get_file(f2, again.item.id) == stored.item
        assert any(
            r.getMessage().startswith("duplicate detected for user u1") for r in caplog.records
        )

    def test_eight_threads_store_and_attach_the_same_file(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        """Eight concurrent producers of one summary.csv: one FileItem, eight documents, no error."""
        if not self.supports_concurrency:
            pytest.skip("the backends are not thread-safe (supports_concurrency = False)")
        workflow = binder.start_new_run(u1).workflow
        assert workflow is not None
        payload = b"region,revenue\n" + b"x" * (1024 - 15)
        barrier = threading.Barrier(8)
        results = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def worker() -> None:
            run = binder.start_run(u1, workflow.id)
            barrier.wait()
            try:
                result = run.produce_file("summary.csv", payload, label="writeFile:summary.csv")
            except BaseException as exc:  # collected and asserted below
                with lock:
                    errors.append(exc)
                return
            with lock:
                results.append(result)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert len(results) == 8
        assert len({r.item.id for r in results}) == 1
        assert all(r.document_id is not None for r in results)
        assert sum(not r.duplicate for r in results) == 1
        messages = binder.list_messages(u1, workflow.id)
        assert len(messages) == 8
        assert len({m.documents_label for m in messages}) == 8
        assert sorted(m.sequence_nr for m in messages) == list(range(1, 9))
        item = results[0].item
        assert binder.list_files(u1) == [item]
        assert list(binder.blobs.keys()) == [item.blob_key]
        resolved = binder.start_run(u1, workflow.id).resolve([r.reference for r in results])
        assert len(resolved.documents) == 8 and resolved.ok

    def test_unicode_names_survive_byte_for_byte(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        names = ["Étude d’opportunités v3.pptx", "Résumé_季度報告.pdf", "emoji 😀 ok.txt"]
        produced = [run.produce_file(n, n.encode()) for n in names]
        listed = {i.file_name.encode() for i in run.list_files()}
        assert listed == {n.encode() for n in names}
        resolution = run.resolve([p.reference for p in produced])
        assert [d.document.file_name.encode() for d in resolution.documents] == [
            n.encode() for n in names
        ]

    def test_store_results_can_be_attached_directly(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        first = run.store_file("a.txt", b"a")
        second = run.store_file("b.txt", b"b")
        message = run.persist_action_result([first, second], label="task:2")
        assert [d.file_id for d in message.documents] == [first.item.id, second.item.id]
        assert run.attach(first, label="again").file_id == first.item.id
        with pytest.raises(InvalidInput, match="expected a FileItem"):
            run.persist_action_result(["a.txt"], label="task:3")  # type: ignore[list-item]

    def test_can_attach_tells_whether_documents_may_be_added(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        own = binder.start_new_run(u1)
        assert own.can_attach()
        assert not binder.start_run(u1).can_attach()
        assert own.workflow is not None
        colleague = Principal("u3", "m1", "f1", roles=("member",))
        assert not binder.start_run(colleague, own.workflow.id).can_attach()
        admin = Principal("boss", "m1", None, roles=("admin",))
        assert binder.start_run(admin, own.workflow.id).can_attach()

    def test_upper_case_and_compact_uuids_name_the_same_document(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        produced = run.produce_file("a.txt", b"a")
        assert produced.document_id is not None
        shouted = f"DOCITEM:{produced.document_id.upper()}"
        compact = f"docItem:{produced.document_id.replace('-', '')}"
        resolution = run.resolve([shouted, compact, produced.document_id.upper()])
        assert [d.document.id for d in resolution.documents] == [produced.document_id]
        assert resolution.ok

    def test_a_duplicate_whose_blob_is_gone_is_replaced_by_a_fresh_copy(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        first = run.produce_file("report.csv", b"a,b\n1,2\n")
        binder.blobs.delete(first.item.blob_key)
        again = run.produce_file("report.csv", b"a,b\n1,2\n")
        assert not again.duplicate and again.item.id != first.item.id
        assert [p.text for p in run.get_content(again.reference).parts] == ["a,b\n1,2\n"]

    # -- issue 17 kind 7: model-facing references

    def test_tool_result_text_fed_back_names_exactly_its_own_document(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        produced = run.produce_file("report.txt", b"hello")
        resolution = run.resolve(produced.text)
        assert [d.document.id for d in resolution.documents] == [produced.document_id]
        assert resolution.ok, resolution.unresolved

    def test_several_tool_result_blocks_fed_back_name_their_documents_in_order(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        a = run.produce_file("a.txt", b"a")
        b = run.produce_file("b.txt", b"b")
        resolution = run.resolve({"documentList": a.text + "\n" + b.text})
        assert [d.document.id for d in resolution.documents] == [a.document_id, b.document_id]
        assert resolution.ok, resolution.unresolved

    def test_bare_file_item_id_resolves_to_its_document(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        produced = run.produce_file("report.txt", b"hello")
        resolution = run.resolve(produced.item.id)
        assert [d.document.id for d in resolution.documents] == [produced.document_id]
        assert resolution.ok
        # With a prefix the id must be a ChatDocument id (SPEC C7): no fallback.
        prefixed = run.resolve(f"docItem:{produced.item.id}")
        assert [u.reason for u in prefixed.unresolved] == [UnresolvedReason.NOT_IN_WORKFLOW]

    def test_bare_file_item_id_of_another_workflow_resolves_nothing(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        other = binder.start_new_run(u1).produce_file("secret.txt", b"s")
        run = binder.start_new_run(u1)
        resolution = run.resolve(other.item.id)
        assert resolution.documents == ()
        assert [u.reason for u in resolution.unresolved] == [UnresolvedReason.NOT_IN_WORKFLOW]

    def test_prose_around_references_is_ignored(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_new_run(u1)
        produced = run.produce_file("report.txt", b"hello")
        for text in (
            f"Please summarise docItem:{produced.document_id}; thanks!",
            f"docItem:{{{produced.document_id}}}",
            f"Could you read docItem:<{produced.document_id}>, please?",
        ):
            resolution = run.resolve(text)
            assert [d.document.id for d in resolution.documents] == [produced.document_id], text
            assert resolution.ok, (text, resolution.unresolved)

    # -- issue 17 kind 1: one text rule on every backend (ADR 0018)

    def test_nul_in_user_message_is_refused_before_anything_is_stored(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        with pytest.raises(InvalidInput, match="user_message must not contain NUL"):
            run.produce_file("report.txt", b"hello", user_message="totals\x00")
        assert list(binder.blobs.keys()) == []
        assert run.list_files() == []
        assert run.workflow is not None
        assert binder.list_messages(u1, run.workflow.id) == []

    @pytest.mark.parametrize(
        ("field", "kwargs"),
        [
            ("folder", {"folder": "a\x00b"}),
            ("folder", {"folder": "a\nb"}),
            ("folder", {"folder": "x\ud800"}),
            ("folder", {"folder": "f" * 1025}),
            ("tag", {"tags": ("ok", "bad\x00")}),
            ("tag", {"tags": ("\udfff",)}),
            ("tag", {"tags": ("x" * 256,)}),
            ("tags", {"tags": tuple(f"t{i}" for i in range(101))}),
        ],
    )
    def test_bad_folder_or_tags_are_refused_before_any_blob(
        self, binder: DocBinder, u1: Principal, field: str, kwargs: dict[str, object]
    ) -> None:
        run = binder.start_run(u1)
        with pytest.raises(InvalidInput, match=field):
            run.store_file("a.txt", b"a", **kwargs)  # type: ignore[arg-type]
        assert list(binder.blobs.keys()) == []
        assert run.list_files() == []

    def test_allowed_text_round_trips_unchanged_on_every_backend(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        text = "line 1\r\nline 2\ttab \x1b[31m \u202e \U0001f600 \u00e9"
        run = binder.start_new_run(u1)
        stored = run.store_file(
            "\U0001f600 r\u00e9sum\u00e9\t.txt", b"x", folder="\u05d0/\U0001f4c1", tags=("\u00df",)
        )
        run.attach(stored, label="writeFile:x", user_message=text)
        assert run.workflow is not None
        [message] = binder.list_messages(u1, run.workflow.id)
        assert message.message == text
        [item] = run.list_files()
        assert item.file_name == "\U0001f600 r\u00e9sum\u00e9\t.txt"
        assert (item.folder, item.tags) == ("\u05d0/\U0001f4c1", ("\u00df",))

    def test_nul_in_a_file_name_is_refused_like_any_control_character(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        for name in ("a\x00.txt", "a\x85.txt", "a\ud800.txt"):
            with pytest.raises(InvalidInput, match="file name"):
                run.produce_file(name, b"a")
        assert list(binder.blobs.keys()) == []

    # -- issue 17 kind 8: a huge listing limit is no driver error on any backend

    def test_huge_listing_limit_lists_everything(self, binder: DocBinder, u1: Principal) -> None:
        run = binder.start_run(u1)
        ids = [run.store_file(f"{i}.txt", f"{i}".encode()).item.id for i in range(3)]
        for limit in (10**20, 2**63, 2**31):
            assert sorted(i.id for i in run.list_files(limit=limit)) == sorted(ids)
        assert len(run.list_files(limit=2)) == 2

    def test_tool_result_of_a_file_named_like_a_reference_names_its_own_document(
        self, binder: DocBinder, u1: Principal
    ) -> None:
        run = binder.start_new_run(u1)
        produced = run.produce_file("docItem:evil.txt", b"x")
        resolution = run.resolve(produced.text)
        assert [d.document.id for d in resolution.documents] == [produced.document_id]
        assert resolution.ok, resolution.unresolved
