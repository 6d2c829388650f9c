"""Use case AdvanceCounters: move the bound workflow's round, task or action forward (ADR 0026)."""

from __future__ import annotations

import logging

from docbinder.application.context import RunContext
from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.access import Action
from docbinder.domain.counters import CounterStep, WorkflowCounters
from docbinder.domain.errors import AccessDenied, InvalidInput, WorkflowNotFound
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)


class AdvanceCounters:
    """Apply a :class:`CounterStep` to the run's workflow as stored; return the new counters.

    The counters belong to the workflow, not to the run: every run of the
    workflow sees them, and a new run (``binder.start_run(principal,
    workflow_id)``) starts from them. Messages and documents attached
    afterwards carry the new numbers. Needs ``update`` permission on the
    workflow, checked on the stored workflow (as attaching does).
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._uow = uow_factory
        self._access = access

    def __call__(self, ctx: RunContext, step: CounterStep) -> WorkflowCounters:
        """Advance and commit; the run's in-memory workflow gets the new counters.

        Raises :class:`NoActiveWorkflow` (no workflow bound),
        :class:`WorkflowNotFound` (absent or not readable, one answer),
        :class:`AccessDenied` (readable but not updatable),
        :class:`CountersWouldGoBack` (nothing changed), :class:`InvalidInput`
        (not a :class:`CounterStep`, an increment past the maximum) and
        :class:`StorageError`.
        """
        if not isinstance(step, CounterStep):
            raise InvalidInput(f"expected a CounterStep, got {type(step).__name__}")
        workflow_id = ctx.require_workflow("advancing the workflow's counters").id
        principal = ctx.principal
        with self._uow() as uow:
            stored = uow.workflows.get_workflow(workflow_id)
            if stored is None or not self._access.can_on_workflow(principal, Action.READ, stored):
                raise WorkflowNotFound(f"workflow {workflow_id} not found")
            if not self._access.can_on_workflow(principal, Action.UPDATE, stored):
                raise AccessDenied(
                    f"user {principal.user_id} may not update workflow {workflow_id}"
                )
            counters = uow.workflows.advance_counters(workflow_id, step)
            uow.commit()
        ctx.set_counters(counters)
        log.info("workflow %s advanced to %s", workflow_id, counters)
        return counters
