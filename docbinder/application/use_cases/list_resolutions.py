"""A workflow's recent resolutions, for whoever may read it: :class:`ListResolutions`."""

from __future__ import annotations

from docbinder.application.use_cases.get_workflow import GetWorkflow
from docbinder.domain.model import Principal
from docbinder.domain.resolutions import ResolutionRecord
from docbinder.ports.resolutions import ResolutionLog

DEFAULT_LIMIT = 20


class ListResolutions:
    """The newest resolutions of a workflow the principal may read (the inspector page).

    ``resolutions`` is ``None`` when the binder keeps none: the answer is then empty.
    """

    def __init__(self, get_workflow: GetWorkflow, resolutions: ResolutionLog | None) -> None:
        self._get_workflow = get_workflow
        self.resolutions = resolutions

    def __call__(
        self, principal: Principal, workflow_id: str, limit: int = DEFAULT_LIMIT
    ) -> list[ResolutionRecord]:
        """At most ``limit`` records, newest first; :class:`WorkflowNotFound` if not readable."""
        self._get_workflow(principal, workflow_id)
        if self.resolutions is None:
            return []
        return self.resolutions.recent(workflow_id, limit)
