"""``ChatMessage.placed`` gives what ``attrs.evolve`` gives, for the class and its subclasses."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Scope,
    WorkflowCounters,
)
from docbinder.testing.metadata_suite import make_file

_WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@attrs.frozen
class _TaggedMessage(ChatMessage):
    tag: str = "t"


@pytest.mark.parametrize("cls", [ChatMessage, _TaggedMessage])
def test_placing_at_the_messages_own_position_equals_evolve(cls: type[ChatMessage]) -> None:
    message = cls(
        id="m1",
        workflow_id="w1",
        documents_label="label",
        published_at=_WHEN,
        round_number=1,
        task_number=2,
        action_number=3,
    )
    placed = message.placed(7, WorkflowCounters(1, 2, 3))
    expected = attrs.evolve(message, sequence_nr=7)
    assert type(placed) is cls
    assert placed == expected
    assert hash(placed) == hash(expected)
    assert message.sequence_nr == 0


@pytest.mark.parametrize("number", [-1, True, 1.0, "1", None])
def test_placing_refuses_what_evolve_refuses(number: object) -> None:
    message = ChatMessage(id="m1", workflow_id="w1", documents_label="label", published_at=_WHEN)
    with pytest.raises(InvalidInput) as expected:
        attrs.evolve(message, sequence_nr=number)
    with pytest.raises(InvalidInput) as got:
        message.placed(number, WorkflowCounters(0, 0, 0))  # type: ignore[arg-type]
    assert str(got.value) == str(expected.value)


@attrs.frozen
class _TaggedFile(FileItem):
    tag: str = "t"


@pytest.mark.parametrize("file_class", [FileItem, _TaggedFile])
def test_a_document_for_a_file_equals_the_one_the_constructor_builds(
    file_class: type[FileItem],
) -> None:
    item = file_class(**attrs.asdict(make_file(file_name="Bericht Q1.pdf"), recurse=False))
    workflow = ChatWorkflow(
        id="w1",
        scope=Scope("m1", "fi1"),
        created_by="u1",
        created_at=_WHEN,
        current_round=4,
        current_task=5,
        current_action=6,
    )
    document = ChatDocument.for_file(item, document_id="d1", message_id="m1", workflow=workflow)
    expected = ChatDocument(
        id="d1",
        message_id="m1",
        workflow_id="w1",
        file_id=item.id,
        file_name="Bericht Q1.pdf",
        file_size=item.size,
        mime_type=item.mime_type,
        round_number=4,
        task_number=5,
        action_number=6,
    )
    assert type(document) is ChatDocument
    assert document == expected
    assert hash(document) == hash(expected)
    assert repr(document) == repr(expected)
    assert attrs.asdict(document) == attrs.asdict(expected)  # every field is set


@pytest.mark.parametrize("bad", ["", "a b", "x" * 129, "\x00", None])
def test_a_document_for_a_file_checks_its_two_new_ids(bad: object) -> None:
    workflow = ChatWorkflow(id="w1", scope=Scope("m1"), created_by="u1", created_at=_WHEN)
    for ids in ({"document_id": bad, "message_id": "m1"}, {"document_id": "d1", "message_id": bad}):
        with pytest.raises(InvalidInput):
            ChatDocument.for_file(make_file(), workflow=workflow, **ids)  # type: ignore[arg-type]
