"""Access checks used by every use case: one decision per question, shared by all paths."""

from __future__ import annotations

from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.errors import AccessDenied, WorkflowNotFound
from docbinder.domain.model import ChatWorkflow, FileItem, Principal, Scope
from docbinder.ports.authorizer import Authorizer


class AccessPolicy:
    """Wraps an :class:`Authorizer` with the questions the use cases ask.

    ``can_read_file`` is the one visibility decision used by ``get_file``, the
    duplicate check, listing, resolving and content extraction (SPEC C2), so a
    duplicate can never be something ``get_file`` would refuse.
    """

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def can_read_file(self, principal: Principal, item: FileItem) -> bool:
        """Whether ``principal`` may read ``item``."""
        return self.authorizer.is_allowed(principal, Action.READ, Resource.of_file(item))

    def can_on_file(self, principal: Principal, action: Action, item: FileItem) -> bool:
        """Whether ``principal`` may perform ``action`` on ``item``."""
        return self.authorizer.is_allowed(principal, action, Resource.of_file(item))

    def can_on_workflow(self, principal: Principal, action: Action, workflow: ChatWorkflow) -> bool:
        """Whether ``principal`` may perform ``action`` on ``workflow``."""
        return self.authorizer.is_allowed(principal, action, Resource.of_workflow(workflow))

    def require_create(self, principal: Principal, kind: ResourceKind, scope: Scope) -> None:
        """Raise :class:`AccessDenied` unless ``principal`` may create a ``kind`` in ``scope``."""
        resource = Resource(kind, scope, principal.user_id)
        if not self.authorizer.is_allowed(principal, Action.CREATE, resource):
            raise AccessDenied(
                f"user {principal.user_id} may not create a {kind.value} in scope {scope}"
            )

    def require_workflow_update(self, principal: Principal, workflow: Resource) -> None:
        """Raise unless ``principal`` may add messages to the stored ``workflow``.

        ``workflow`` is the :class:`Resource` of a workflow as stored.
        :class:`WorkflowNotFound` if ``principal`` may not even read it (the
        same answer as for an absent workflow, so ids of other tenants stay
        unconfirmed), :class:`AccessDenied` if it may read but not update it.
        """
        if not self.authorizer.is_allowed(principal, Action.READ, workflow):
            raise WorkflowNotFound(f"workflow {workflow.id} not found")
        if not self.authorizer.is_allowed(principal, Action.UPDATE, workflow):
            raise AccessDenied(f"user {principal.user_id} may not update workflow {workflow.id}")
