"""Workflow counters: the round, task and action a workflow is in (SPEC section 2, ADR 0026).

A workflow counts where its host's orchestration stands: a **round** (one
exchange started by the user), a **task** inside the round and an **action**
inside the task. Every ChatMessage and ChatDocument records the three numbers
current when it was attached (SPEC C3: "round/task/action numbers from the
workflow").

The numbers are ordered like section numbers: ``(round, task, action)``
compared left to right. They never go backwards: starting a new round resets
task and action to 0, starting a new task resets the action to 0, and a
change that would put the counters behind where they are is refused
(:class:`~docbinder.domain.errors.CountersWouldGoBack`). A new workflow starts
at round 1, task 0, action 0 ("round 1, no task started yet").
"""

from __future__ import annotations

import enum

import attrs

from docbinder.domain.errors import CountersWouldGoBack, InvalidInput

MAX_COUNTER = 2_147_483_647
"""Largest round, task or action number: a signed 32-bit integer (SQL ``INTEGER`` on every backend)."""


class CounterLevel(enum.StrEnum):
    """One of the three counters, highest first."""

    ROUND = "round"
    TASK = "task"
    ACTION = "action"


LEVELS: tuple[CounterLevel, ...] = (CounterLevel.ROUND, CounterLevel.TASK, CounterLevel.ACTION)
"""The levels in order, highest first."""


def check_counter(name: str, value: object) -> int:
    """Return ``value`` if it is a usable counter value, else raise :class:`InvalidInput`.

    Usable: an ``int`` (not a ``bool``) from 0 to :data:`MAX_COUNTER`.
    """
    if type(value) is int and 0 <= value <= MAX_COUNTER:  # the usual value; others go on
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be a whole number, got {type(value).__name__}")
    if value < 0 or value > MAX_COUNTER:
        raise InvalidInput(f"{name} must be between 0 and {MAX_COUNTER}, got {value}")
    return value


def _valid(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    check_counter(attribute.name, value)


@attrs.frozen
class WorkflowCounters:
    """The round, task and action numbers of a workflow at one moment."""

    round: int = attrs.field(validator=_valid)
    task: int = attrs.field(validator=_valid)
    action: int = attrs.field(validator=_valid)

    def as_tuple(self) -> tuple[int, int, int]:
        """``(round, task, action)``: the order in which counters are compared."""
        return (self.round, self.task, self.action)

    def __str__(self) -> str:
        return f"round {self.round}, task {self.task}, action {self.action}"


@attrs.frozen
class CounterStep:
    """One change of a workflow's counters, applied atomically by the metadata store.

    ``level`` is the highest counter that changes; ``value`` its new value, or
    ``None`` for one more than now; ``below`` the new values of the levels
    under it (one per lower level, in order). Levels above ``level`` keep their
    values. Build steps with :meth:`to` and :meth:`next`.
    """

    level: CounterLevel = attrs.field(converter=CounterLevel)
    value: int | None
    below: tuple[int, ...]

    def __attrs_post_init__(self) -> None:
        if self.value is not None:
            check_counter(self.level.value, self.value)
        lower = LEVELS[self.index + 1 :]
        if len(self.below) != len(lower):
            raise InvalidInput(f"a {self.level.value} step needs {len(lower)} lower value(s)")
        for level, value in zip(lower, self.below, strict=True):
            check_counter(level.value, value)

    @classmethod
    def to(
        cls, *, round: int | None = None, task: int | None = None, action: int | None = None
    ) -> CounterStep:
        """Set counters to absolute values; lower levels not given become 0.

        ``to(round=3)`` is round 3, task 0, action 0; ``to(task=2)`` keeps the
        round and sets task 2, action 0; ``to(round=3, action=1)`` is round 3,
        task 0, action 1. Raises :class:`InvalidInput` for a value that is not
        a whole number from 0 to :data:`MAX_COUNTER` (``True`` included) and
        when no level is given.
        """
        given = {CounterLevel.ROUND: round, CounterLevel.TASK: task, CounterLevel.ACTION: action}
        for level, value in given.items():
            if value is not None:
                check_counter(level.value, value)
        top = next((level for level in LEVELS if given[level] is not None), None)
        if top is None:
            raise InvalidInput("give at least one of round, task and action")
        lower = LEVELS[LEVELS.index(top) + 1 :]
        return cls(top, given[top], tuple(given[level] or 0 for level in lower))

    @classmethod
    def next(cls, level: CounterLevel | str) -> CounterStep:
        """One more at ``level``, lower levels back to 0 (``next("task")``: a new task)."""
        try:
            level = CounterLevel(level)
        except ValueError:
            raise InvalidInput(
                f"counter level must be one of round, task, action, got {level!r}"
            ) from None
        return cls(level, None, (0,) * (len(LEVELS) - 1 - LEVELS.index(level)))

    @property
    def index(self) -> int:
        """Position of :attr:`level` in :data:`LEVELS` (0 for round)."""
        return LEVELS.index(self.level)

    def apply(self, current: WorkflowCounters) -> WorkflowCounters:
        """The counters after this step, from ``current``.

        Raises :class:`CountersWouldGoBack` if an absolute step would put them
        behind ``current`` (equal is fine: nothing changes) and
        :class:`InvalidInput` if an increment would pass :data:`MAX_COUNTER`.
        """
        values = list(current.as_tuple())
        if self.value is None:
            if values[self.index] >= MAX_COUNTER:
                raise InvalidInput(f"{self.level.value} is already at its maximum {MAX_COUNTER}")
            new_value = values[self.index] + 1
        else:
            new_value = self.value
        values[self.index :] = [new_value, *self.below]
        result = WorkflowCounters(*values)
        if result.as_tuple() < current.as_tuple():
            raise CountersWouldGoBack(current, result)
        return result
