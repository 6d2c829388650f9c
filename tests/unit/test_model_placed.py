"""``ChatMessage.placed`` gives what ``attrs.evolve`` gives, for the class and its subclasses."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import ChatMessage, WorkflowCounters

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
