"""Workflow use cases: create, load for a run, show."""

from __future__ import annotations

import logging

from docbinder.application.access import AccessPolicy
from docbinder.application.paging import visible_newest_first
from docbinder.domain.access import Action, ResourceKind
from docbinder.domain.errors import InvalidInput, WorkflowNotFound
from docbinder.domain.model import ChatMessage, ChatWorkflow, Principal, is_valid_id
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)


class Workflows:
    """Create and read workflows behind the authorizer.

    ``read_uow_factory`` (default: ``uow_factory``) serves the read-only
    methods, so on SQLite they do not queue for the write lock.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        clock: Clock,
        ids: IdFactory,
        read_uow_factory: UnitOfWorkFactory | None = None,
    ) -> None:
        self._uow = uow_factory
        self._read = read_uow_factory or uow_factory
        self._access = access
        self._clock = clock
        self._ids = ids

    def create(self, principal: Principal, workflow_id: str | None = None) -> ChatWorkflow:
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

    def get(self, principal: Principal, workflow_id: str) -> ChatWorkflow:
        """The workflow without messages; :class:`WorkflowNotFound` if absent or not readable.

        An id that cannot exist (empty, control characters, not a string) gets
        the same answer as an unknown one.
        """
        if not is_valid_id(workflow_id):
            raise WorkflowNotFound(f"workflow {workflow_id!r} not found")
        with self._read() as uow:
            workflow = uow.workflows.get_workflow(workflow_id)
        if workflow is None or not self._access.can_on_workflow(principal, Action.READ, workflow):
            raise WorkflowNotFound(f"workflow {workflow_id} not found")
        return workflow

    def messages(self, principal: Principal, workflow_id: str) -> list[ChatMessage]:
        """All messages of a readable workflow, by sequence number."""
        self.get(principal, workflow_id)
        with self._read() as uow:
            return uow.workflows.list_messages(workflow_id)

    def deleted_files(self, principal: Principal, messages: list[ChatMessage]) -> set[str]:
        """Ids of FileItems that documents of ``messages`` point at and that no longer exist.

        ``messages`` come from :meth:`messages` (a readable workflow); their
        documents resolve as ``file_missing`` (ADR 0012).
        """
        file_ids = [doc.file_id for msg in messages for doc in msg.documents]
        if not file_ids:
            return set()
        with self._read() as uow:
            present = uow.files.get_many(file_ids)
        return {file_id for file_id in file_ids if file_id not in present}

    def list(self, principal: Principal, *, limit: int | None = None) -> list[ChatWorkflow]:
        """Readable workflows of the principal's mandate, newest first; ``limit`` >= 0."""
        if limit is not None and limit < 0:
            raise InvalidInput("limit must be 0 or more")

        def fetch(size: int, after: ChatWorkflow | None) -> list[ChatWorkflow]:
            with self._read() as uow:
                return uow.workflows.list_workflows(principal.mandate_id, limit=size, after=after)

        return visible_newest_first(
            fetch, lambda w: self._access.can_on_workflow(principal, Action.READ, w), limit
        )
