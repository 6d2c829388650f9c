"""The messages of a workflow: :class:`ListMessages`."""

from __future__ import annotations

from docbinder.application.use_cases.get_workflow import GetWorkflow
from docbinder.domain.model import ChatMessage, Principal
from docbinder.ports.metadata import UnitOfWorkFactory


class ListMessages:
    """All messages of a workflow the principal may read, by sequence number."""

    def __init__(self, uow_factory: UnitOfWorkFactory, get_workflow: GetWorkflow) -> None:
        self._read = uow_factory
        self._get_workflow = get_workflow

    def __call__(self, principal: Principal, workflow_id: str) -> list[ChatMessage]:
        """The messages with their documents; :class:`WorkflowNotFound` if not readable."""
        self._get_workflow(principal, workflow_id)
        with self._read() as uow:
            return uow.workflows.list_messages(workflow_id)
