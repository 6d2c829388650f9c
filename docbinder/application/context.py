"""The run context: one place that binds principal and workflow (SPEC C4).

An agent run binds its principal and (optionally) its workflow once; every use
case receives the same :class:`RunContext`. "No workflow bound" is a named,
logged condition (:class:`NoActiveWorkflow`), never a ``None`` found deep
inside a service.
"""

from __future__ import annotations

import attrs

from docbinder.domain.errors import NoActiveWorkflow
from docbinder.domain.model import ChatMessage, ChatWorkflow, Principal


@attrs.define
class RunContext:
    """Principal + active workflow of one agent run.

    ``workflow`` is the in-memory workflow object of the run: it holds the
    messages this run created (appended as soon as they are stored), not
    necessarily every message of the workflow.
    """

    principal: Principal
    workflow: ChatWorkflow | None = None

    @property
    def workflow_id(self) -> str | None:
        """The bound workflow's id, or ``None``."""
        return self.workflow.id if self.workflow is not None else None

    def require_workflow(self, operation: str) -> ChatWorkflow:
        """The bound workflow; raises :class:`NoActiveWorkflow` if none is bound.

        The caller logs the condition once, in its own words (each entry point
        has one recognisable log line, SPEC C16).
        """
        if self.workflow is None:
            raise NoActiveWorkflow(f"{operation} needs an active workflow and none is bound")
        return self.workflow

    def append_message(self, message: ChatMessage) -> None:
        """Append a stored message to the in-memory workflow so this run sees it at once."""
        if self.workflow is not None and message.workflow_id == self.workflow.id:
            self.workflow = attrs.evolve(self.workflow, messages=(*self.workflow.messages, message))
