"""The workflows a principal may read: :class:`ListWorkflows`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.paging import visible_newest_first
from docbinder.domain.access import Action
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import ChatWorkflow, Principal
from docbinder.ports.metadata import UnitOfWorkFactory


class ListWorkflows:
    """Readable workflows of the principal's mandate, newest first."""

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = uow_factory
        self._access = access

    def __call__(self, principal: Principal, *, limit: int | None = None) -> list[ChatWorkflow]:
        """At most ``limit`` (>= 0; ``None``: all) workflows; :class:`InvalidInput` otherwise."""
        if limit is not None and limit < 0:
            raise InvalidInput("limit must be 0 or more")

        def fetch(size: int, after: ChatWorkflow | None) -> list[ChatWorkflow]:
            with self._read() as uow:
                return uow.workflows.list_workflows(principal.mandate_id, limit=size, after=after)

        return visible_newest_first(
            fetch, lambda w: self._access.can_on_workflow(principal, Action.READ, w), limit
        )
