"""The run context: one place that binds principal and workflow (SPEC C4).

An agent run binds its principal and (optionally) its workflow once; every use
case receives the same :class:`RunContext`. "No workflow bound" is a named,
logged condition (:class:`NoActiveWorkflow`), never a ``None`` found deep
inside a service.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import attrs

from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import NoActiveWorkflow
from docbinder.domain.model import ChatMessage, ChatWorkflow, Principal


class RunContext:
    """Principal + active workflow of one agent run.

    :attr:`workflow` is the in-memory workflow object of the run: the
    workflow as bound, plus the messages this run created (appended as soon as
    they are stored), not necessarily every message of the workflow. It is
    built when read and kept until the next append, so a run that adds many
    messages does not copy its message list on every attach. ``run_id``
    identifies the run in the provenance of the files it produces (B9);
    :attr:`read_files` are the files whose content it read so far. Safe to share
    between threads: a view never misses a message appended before it was read.
    """

    __slots__ = ("_added", "_bound", "_lock", "_read", "_taken", "_view", "principal", "run_id")

    def __init__(
        self,
        principal: Principal,
        workflow: ChatWorkflow | None = None,
        *,
        run_id: str | None = None,
    ) -> None:
        self.principal = principal
        self.run_id = run_id
        self._read: dict[str, None] = {}
        self._bound = workflow
        self._added: list[ChatMessage] = []
        self._view = workflow
        self._lock = threading.Lock()
        self._taken: set[str] = set()

    def __repr__(self) -> str:
        return (
            f"RunContext(principal={self.principal!r}, workflow_id={self.workflow_id!r}, "
            f"run_id={self.run_id!r})"
        )

    @property
    def workflow(self) -> ChatWorkflow | None:
        """The bound workflow with the messages this run stored, or ``None``."""
        with self._lock:
            if self._view is None and self._bound is not None:
                self._view = attrs.evolve(
                    self._bound, messages=(*self._bound.messages, *self._added)
                )
            return self._view

    @property
    def bound_workflow(self) -> ChatWorkflow | None:
        """The workflow as bound at the start of the run (id, scope), or ``None``.

        Its round/task/action are the newest this run has seen: at the start,
        or stored by this run's last advance or attach (:meth:`set_counters`).

        Cheaper than :attr:`workflow`: the messages this run added are not included.
        """
        return self._bound

    @property
    def workflow_id(self) -> str | None:
        """The bound workflow's id, or ``None``."""
        return self._bound.id if self._bound is not None else None

    def require_workflow(self, operation: str) -> ChatWorkflow:
        """The bound workflow (as :attr:`bound_workflow`); :class:`NoActiveWorkflow` if none.

        The caller logs the condition once, in its own words (each entry point
        has one recognisable log line, SPEC C16).
        """
        if self._bound is None:
            raise NoActiveWorkflow(f"{operation} needs an active workflow and none is bound")
        return self._bound

    def set_counters(self, counters: WorkflowCounters) -> None:
        """Record the workflow's counters as just stored (after an advance), if they moved on.

        The in-memory workflow never goes back: counters behind the ones it has
        (an older read racing a newer one) are ignored.
        """
        with self._lock:
            bound = self._bound
            if bound is None or counters.as_tuple() <= bound.counters.as_tuple():
                return
            self._bound = attrs.evolve(
                bound,
                current_round=counters.round,
                current_task=counters.task,
                current_action=counters.action,
            )
            self._view = None

    def note_read(self, file_ids: Iterable[str]) -> None:
        """Remember that this run read the content of these FileItems (the parents of what it produces next).

        ``file_ids`` is an iterable of ids; order of first reading is kept.
        """
        with self._lock:
            for file_id in file_ids:
                self._read.setdefault(file_id, None)

    @property
    def read_files(self) -> tuple[str, ...]:
        """Ids of the FileItems whose content this run read, in the order first read."""
        with self._lock:
            return tuple(self._read)

    def label_taken(self, label: str) -> bool:
        """Whether this run has seen ``label`` taken in its workflow (see :meth:`note_label_taken`)."""
        return label in self._taken

    def note_label_taken(self, label: str) -> None:
        """Remember that a message of the workflow holds ``label`` (a stored one, or a refusal).

        The attach then asks for the label with a suffix straight away instead
        of being refused first (ADR 0004's rule, one insert fewer). A label is
        never freed while its message exists; should that message be deleted,
        this run still suffixes it, which the rule allows.
        """
        with self._lock:
            self._taken.add(label)

    def append_message(self, message: ChatMessage) -> None:
        """Append a stored message to the in-memory workflow so this run sees it at once."""
        if self._bound is not None and message.workflow_id == self._bound.id:
            with self._lock:
                self._added.append(message)
                self._view = None
