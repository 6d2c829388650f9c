"""Create a workflow (SPEC C3/C4): :class:`CreateWorkflow`."""

from __future__ import annotations

import logging

from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.access import ResourceKind
from docbinder.domain.model import ChatWorkflow, Principal
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)


class CreateWorkflow:
    """Create a workflow in the principal's scope, behind the authorizer."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        clock: Clock,
        ids: IdFactory,
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._clock = clock
        self._ids = ids

    def __call__(self, principal: Principal, workflow_id: str | None = None) -> ChatWorkflow:
        """A new workflow in the principal's scope; :class:`AccessDenied` without ``create``.

        ``workflow_id`` lets a host bring its own id (default: a new one from
        the id factory); :class:`Conflict` if a workflow with that id exists.
        """
        self._access.require_create(principal, ResourceKind.WORKFLOW, principal.scope)
        workflow = ChatWorkflow(
            id=workflow_id if workflow_id is not None else self._ids.new_id(),
            scope=principal.scope,
            created_by=principal.user_id,
            created_at=self._clock.now(),
        )
        with self._uow() as uow:
            uow.workflows.add_workflow(workflow)
            uow.commit()
        log.info(
            "created workflow %s for user %s in scope %s",
            workflow.id,
            principal.user_id,
            principal.scope,
        )
        return workflow
