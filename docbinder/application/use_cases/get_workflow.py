"""Read a workflow (for a run, or to show it): :class:`GetWorkflow`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.access import Action
from docbinder.domain.errors import WorkflowNotFound
from docbinder.domain.model import ChatWorkflow, Principal, is_valid_id, shown_id
from docbinder.ports.metadata import UnitOfWorkFactory


class GetWorkflow:
    """A workflow the principal may read, without its messages.

    ``uow_factory`` should be the read-only factory, so that on SQLite the
    read does not queue for the write lock.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = uow_factory
        self._access = access

    def __call__(self, principal: Principal, workflow_id: str) -> ChatWorkflow:
        """The workflow without messages; :class:`WorkflowNotFound` if absent or not readable.

        An id that cannot exist (empty, control characters, not a string) gets
        the same answer as an unknown one.
        """
        if not is_valid_id(workflow_id):
            raise WorkflowNotFound(f"workflow {shown_id(workflow_id)} not found")
        with self._read() as uow:
            workflow = uow.workflows.get_workflow(workflow_id)
        if workflow is None or not self._access.can_on_workflow(principal, Action.READ, workflow):
            raise WorkflowNotFound(f"workflow {workflow_id} not found")
        return workflow
