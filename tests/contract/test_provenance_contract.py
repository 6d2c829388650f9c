"""A produced FileItem names the ChatMessage that attached it, on every metadata backend (B9).

The message id is made when the attach is prepared and recorded with the
FileItem in the unit that inserts both; a file whose attach did not happen
names no message, and a reused duplicate keeps its first producer's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from docbinder.application import DocBinder
from docbinder.application.binder import Run
from docbinder.application.context import RunContext
from docbinder.domain.model import ChatMessage, ChatWorkflow, Principal, Provenance
from docbinder.serialization import to_wire
from tests.contract.sql_backends import backend_binder

ALICE = Principal("alice", "m1")


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mariadb"])
def binder(request: pytest.FixtureRequest) -> Iterator[DocBinder]:
    made, _ = backend_binder(request, request.param)
    try:
        yield made
    finally:
        made.close()


def _message_of(binder: DocBinder, run: Run, document_id: str | None) -> ChatMessage:
    assert document_id is not None
    [message] = [
        m
        for m in binder.list_messages(ALICE, run.context.workflow_id or "")
        if document_id in {d.id for d in m.documents}
    ]
    return message


def test_a_produced_file_names_its_message(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    run.produce_file("before.txt", b"zeta", label="before")
    produced = run.produce_file("chart.svg", b"<svg/>", label="chart")
    message = _message_of(binder, run, produced.document_id)
    stored = binder.get_file(ALICE, produced.item.id)
    assert stored.provenance.message_id == message.id
    assert produced.item.provenance.message_id == message.id
    assert [d.file_id for d in message.documents] == [stored.id]
    assert to_wire(stored)["provenance"]["messageId"] == message.id


def test_a_file_stored_without_a_workflow_names_no_message(binder: DocBinder) -> None:
    run = binder.start_run(ALICE)
    produced = run.produce_file("notes.txt", b"alpha", label="notes")
    assert produced.document_id is None
    assert binder.get_file(ALICE, produced.item.id).provenance.message_id is None
    plain = binder.start_new_run(ALICE).store_file("plain.txt", b"beta")
    assert binder.get_file(ALICE, plain.item.id).provenance.message_id is None
    assert to_wire(binder.get_file(ALICE, plain.item.id))["provenance"]["messageId"] is None


def test_a_file_whose_attach_failed_names_no_message(binder: DocBinder) -> None:
    # A run bound to a workflow the store does not have: the FileItem is inserted,
    # the message is refused in the same unit, and the file stays stored.
    ghost = ChatWorkflow("wf-ghost", ALICE.scope, ALICE.user_id, datetime.now(UTC))
    run = Run(binder, RunContext(ALICE, ghost, run_id="run-ghost"))
    produced = run.produce_file("orphan.txt", b"gamma", label="orphan")
    assert produced.document_id is None and produced.not_attached is not None
    assert produced.item.provenance.message_id is None
    stored = binder.get_file(ALICE, produced.item.id)
    assert stored.provenance.message_id is None
    assert stored.provenance.run_id == "run-ghost"


def test_a_reused_duplicate_keeps_its_first_message(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    first = run.produce_file("same.txt", b"delta", label="one")
    again = run.produce_file("same.txt", b"delta", label="two")
    assert again.duplicate and again.item.id == first.item.id
    assert again.document_id is not None and again.document_id != first.document_id
    first_message = _message_of(binder, run, first.document_id)
    assert binder.get_file(ALICE, first.item.id).provenance.message_id == first_message.id


def test_a_declared_message_id_wins(binder: DocBinder) -> None:
    run = binder.start_new_run(ALICE)
    produced = run.produce_file(
        "declared.txt", b"epsilon", label="declared", provenance=Provenance(message_id="msg-host")
    )
    assert binder.get_file(ALICE, produced.item.id).provenance.message_id == "msg-host"
