"""The counter rules of the domain: steps, their validation and the never-backwards rule (ADR 0026)."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from docbinder.domain.counters import (
    MAX_COUNTER,
    CounterLevel,
    CounterStep,
    WorkflowCounters,
    check_counter,
)
from docbinder.domain.errors import Conflict, CountersWouldGoBack, InvalidInput
from docbinder.domain.model import ChatMessage, ChatWorkflow, Scope


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (CounterStep.to(round=4), (4, 0, 0)),
        (CounterStep.to(task=6), (2, 6, 0)),
        (CounterStep.to(action=9), (2, 5, 9)),
        (CounterStep.to(round=3, action=8), (3, 0, 8)),
        (CounterStep.to(round=2, task=5, action=7), (2, 5, 7)),
        (CounterStep.next("round"), (3, 0, 0)),
        (CounterStep.next("task"), (2, 6, 0)),
        (CounterStep.next(CounterLevel.ACTION), (2, 5, 8)),
    ],
    ids=repr,
)
def test_steps_from_round_2_task_5_action_7(step: CounterStep, expected: tuple[int, ...]) -> None:
    assert step.apply(WorkflowCounters(2, 5, 7)).as_tuple() == expected


@pytest.mark.parametrize(
    "step",
    [CounterStep.to(round=1), CounterStep.to(task=4), CounterStep.to(round=2, task=5, action=6)],
    ids=repr,
)
def test_a_step_behind_is_refused_naming_both_positions(step: CounterStep) -> None:
    with pytest.raises(CountersWouldGoBack) as caught:
        step.apply(WorkflowCounters(2, 5, 7))
    assert isinstance(caught.value, Conflict)
    assert caught.value.current == WorkflowCounters(2, 5, 7)
    assert "round 2, task 5, action 7" in str(caught.value)


@pytest.mark.parametrize("value", [-1, True, False, 1.0, "1", None, MAX_COUNTER + 1, [1]], ids=repr)
def test_values_that_are_not_counter_numbers_are_refused(value: object) -> None:
    if value is None:
        with pytest.raises(InvalidInput, match="at least one"):
            CounterStep.to(task=value)  # type: ignore[arg-type]
        return
    with pytest.raises(InvalidInput):
        CounterStep.to(task=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        check_counter("task", value)
    with pytest.raises(InvalidInput):
        WorkflowCounters(1, value, 0)  # type: ignore[arg-type]


def test_unknown_levels_and_malformed_steps_are_refused() -> None:
    with pytest.raises(InvalidInput, match="round, task, action"):
        CounterStep.next("phase")
    with pytest.raises(InvalidInput):
        CounterStep(CounterLevel.ROUND, 2, (0,))  # one lower value missing
    with pytest.raises(InvalidInput):
        CounterStep(CounterLevel.ACTION, -3, ())


def test_the_largest_number_can_be_set_but_not_passed() -> None:
    at_max = CounterStep.to(action=MAX_COUNTER).apply(WorkflowCounters(1, 0, 0))
    assert at_max.action == MAX_COUNTER
    with pytest.raises(InvalidInput, match="maximum"):
        CounterStep.next("action").apply(at_max)
    assert CounterStep.next("task").apply(at_max).as_tuple() == (1, 1, 0)


def test_a_workflow_exposes_its_counters_and_starts_in_round_one() -> None:
    workflow = ChatWorkflow("wf", Scope("m"), "u", datetime(2024, 1, 1, tzinfo=UTC))
    assert workflow.counters == WorkflowCounters(1, 0, 0)
    assert str(workflow.counters) == "round 1, task 0, action 0"


def test_a_placed_message_and_its_documents_carry_the_position_given() -> None:
    from docbinder.testing.metadata_suite import make_message

    workflow = ChatWorkflow("wf", Scope("m"), "u", datetime(2024, 1, 1, tzinfo=UTC))
    message = make_message(workflow, files=2)
    assert message.counters == WorkflowCounters(1, 0, 0)
    placed = message.placed(7, WorkflowCounters(3, 2, 1))
    assert placed.sequence_nr == 7 and placed.counters == WorkflowCounters(3, 2, 1)
    assert [(d.round_number, d.task_number, d.action_number) for d in placed.documents] == [
        (3, 2, 1),
        (3, 2, 1),
    ]
    assert [d.id for d in placed.documents] == [d.id for d in message.documents]
    # Everything else stays; documents already at that position are the same objects.
    assert message == attrs.evolve(
        placed,
        sequence_nr=0,
        round_number=1,
        task_number=0,
        action_number=0,
        documents=message.documents,
    )
    same = message.placed(1, WorkflowCounters(1, 0, 0))
    assert same.documents[0] is message.documents[0]
    assert attrs.evolve(same, sequence_nr=0) == message


@pytest.mark.parametrize("number", [-1, True, 1.0, "1", None])
def test_placing_at_the_same_position_still_checks_the_number(number: object) -> None:
    from docbinder.testing.metadata_suite import make_message

    workflow = ChatWorkflow("wf", Scope("m"), "u", datetime(2024, 1, 1, tzinfo=UTC))
    message = make_message(workflow, files=1)
    with pytest.raises(InvalidInput, match="sequence_nr must be a non-negative integer"):
        message.placed(number, WorkflowCounters(1, 0, 0))  # type: ignore[arg-type]


def test_placing_at_the_same_position_equals_a_rebuilt_message() -> None:
    from docbinder.testing.metadata_suite import make_message

    workflow = ChatWorkflow("wf", Scope("m"), "u", datetime(2024, 1, 1, tzinfo=UTC))
    message = make_message(workflow, files=3)
    placed = message.placed(12, WorkflowCounters(1, 0, 0))
    rebuilt = ChatMessage(**{**attrs.asdict(message, recurse=False), "sequence_nr": 12})
    assert placed == rebuilt and hash(placed) == hash(rebuilt)
    assert placed.sequence_nr == 12 and message.sequence_nr == 0
    assert attrs.fields_dict(ChatMessage).keys() == {
        name for name in attrs.asdict(placed, recurse=False)
    }


_COUNTER = st.integers(0, 50)
_STEPS = st.one_of(
    st.sampled_from(list(CounterLevel)).map(CounterStep.next),
    st.builds(
        lambda r, t, a: CounterStep.to(round=r, task=t, action=a),
        st.none() | _COUNTER,
        st.none() | _COUNTER,
        _COUNTER,
    ),
)


@given(st.tuples(_COUNTER, _COUNTER, _COUNTER), st.lists(_STEPS, max_size=12))
def test_counters_never_go_backwards(start: tuple[int, int, int], steps: list[CounterStep]) -> None:
    counters = WorkflowCounters(*start)
    for step in steps:
        try:
            after = step.apply(counters)
        except CountersWouldGoBack:
            continue
        assert after.as_tuple() >= counters.as_tuple()
        if step.value is None:
            assert after.as_tuple() > counters.as_tuple()
        counters = after
