"""The steps every attach shares (SPEC C3, C9): :class:`Attacher`.

:class:`~docbinder.application.use_cases.attach_file.AttachFile`,
:class:`~docbinder.application.use_cases.persist_action_result.PersistActionResult` and
:class:`~docbinder.application.use_cases.produce_file.ProduceFile` all end in ChatMessage ->
ChatDocument -> file id through this one object, the single source of truth of
the bridge: check up front (:meth:`Attacher.plan`), add the message inside a
unit of work (:meth:`Attacher.add_message`), and record it in the run
(:meth:`Attacher.finish`). The message itself is built by the domain
(:meth:`~docbinder.domain.model.ChatMessage.attaching`), and so is the label
rule (:func:`~docbinder.domain.model.clean_label`,
:func:`~docbinder.domain.model.suffixed_label`, ADR 0004).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

import attrs

from docbinder.application.context import RunContext
from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.access import Action
from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    DuplicateLabel,
    FileItemNotFound,
    InvalidInput,
    NoActiveWorkflow,
)
from docbinder.domain.model import (
    ChatMessage,
    ChatWorkflow,
    FileItem,
    check_message_text,
    clean_label,
)
from docbinder.ports.metadata import UnitOfWork
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

_LABEL_ATTEMPTS = 4
"""Tries at a unique ``documents_label``: the label itself, then suffixed ones (ADR 0004)."""


class Attacher:
    """Bind FileItems to the active workflow as ChatDocuments of one new ChatMessage.

    The message has role ``assistant`` (unless given), status ``step``, the
    workflow's current round/task/action numbers, and a ``documents_label``
    unique within the workflow: the ``label`` argument itself, or, if that is
    taken, ``<label>#<8 hex digits>``. Needs ``update`` permission on the
    workflow and ``read`` on every FileItem. Not a use case itself: the use
    cases that attach are built around it.
    """

    def __init__(
        self,
        access: AccessPolicy,
        clock: Clock,
        ids: IdFactory,
    ) -> None:
        self._access = access
        self._clock = clock
        self._ids = ids

    def plan(
        self, ctx: RunContext, *, label: str, user_message: str = "", role: str = "assistant"
    ) -> AttachPlan:
        """Check everything an attach needs that does not touch storage.

        Raises :class:`InvalidInput` (``user_message`` breaks the text rule of
        :func:`~docbinder.domain.model.check_text_field`), :class:`NoActiveWorkflow` (no workflow bound) and
        :class:`AccessDenied` (no ``update`` right on the workflow); the label
        is cleaned (:func:`~docbinder.domain.model.clean_label`).
        """
        check_message_text(user_message, "user_message")
        workflow = ctx.require_workflow("attaching a file")
        if not self._access.can_on_workflow(ctx.principal, Action.UPDATE, workflow):
            raise AccessDenied(
                f"user {ctx.principal.user_id} may not update workflow {workflow.id}"
            )
        return AttachPlan(ctx, workflow, clean_label(label), user_message, role)

    def add_message(
        self, uow: UnitOfWork, plan: AttachPlan, items: Sequence[FileItem]
    ) -> ChatMessage:
        """Add one ChatMessage with a ChatDocument per item inside ``uow``; no commit.

        The rights are checked on the workflow as stored, which the
        repository reads in ``uow`` before it inserts anything (``admit`` of
        :meth:`~docbinder.ports.metadata.WorkflowRepository.add_message`; on
        SQLite with the message's number, elsewhere just before it, ADR 0038): :class:`WorkflowNotFound` if it is absent or not readable,
        :class:`AccessDenied` if it is readable but not updatable; nothing of
        the message is kept then. The run's in-memory workflow is not trusted
        for this: a caller can build a :class:`RunContext` around any
        :class:`ChatWorkflow` object (another tenant's id, a forged scope).
        The round/task/action numbers on the returned message and its
        documents are the ones read with its ``sequence_nr`` on the locked
        workflow row (ADR 0026).

        ``items`` must be stored rows read in this unit (or just inserted by
        it), not copies a caller handed in. Each is read-checked for the
        plan's principal: :class:`FileItemNotFound` if one is not readable.
        A taken label is retried with ``#<8 hex>`` suffixes in the same unit
        (a failed insert leaves the unit usable, as the port promises);
        :class:`DuplicateLabel` after :data:`_LABEL_ATTEMPTS` tries. A label
        the run already saw taken (:meth:`RunContext.label_taken`) is suffixed
        on the first try.
        """
        principal = plan.context.principal
        for item in items:
            if not self._access.can_read_file(principal, item):
                raise FileItemNotFound(f"file {item.id} not found")
        message_id = self._ids.new_id()
        message = ChatMessage.attaching(
            plan.workflow,  # its id only: the stored counters replace its numbers
            items,
            message_id=message_id,
            document_ids=[self._ids.new_id() for _ in items],
            label=plan.label,
            published_at=self._clock.now(),
            role=plan.role,
            user_message=plan.user_message,
        )
        ctx = plan.context
        # A label this run saw taken is asked for with a suffix at once (one refused
        # insert fewer for every later attach under the same label, e.g. the default).
        taken = ctx.label_taken(plan.label)
        candidate = message.with_label_suffix(self._ids.new_id()) if taken else message
        admit = partial(self._access.require_workflow_update, principal)
        for attempt in range(_LABEL_ATTEMPTS):
            try:
                return uow.workflows.add_message(candidate, admit)
            except DuplicateLabel:
                ctx.note_label_taken(plan.label)
                if attempt == _LABEL_ATTEMPTS - 1:
                    raise
                candidate = message.with_label_suffix(self._ids.new_id())
        raise AssertionError("unreachable")  # pragma: no cover

    def finish(self, ctx: RunContext, stored: ChatMessage) -> None:
        """After the commit: append ``stored`` to the run's in-memory workflow, note its label, log it."""
        ctx.append_message(stored)
        ctx.note_label_taken(stored.documents_label)
        ctx.set_counters(stored.counters)
        log.info(
            "attached %d document(s) to workflow %s as message %s (label %s)",
            len(stored.documents),
            stored.workflow_id,
            stored.id,
            stored.documents_label,
        )

    def stored_rows(
        self, uow: UnitOfWork, ctx: RunContext, items: Sequence[FileItem]
    ) -> list[FileItem]:
        """The stored rows of ``items``, each read-checked; the caller's copies are not trusted.

        A deleted or forged FileItem gives the same :class:`FileItemNotFound`
        as a file of another tenant, so attaching reveals nothing about ids.
        The rows are held until ``uow`` ends
        (:meth:`~docbinder.ports.metadata.FileRepository.lock_shared`): a
        delete that counts the file's references waits for this attach and
        counts it, and one that committed first leaves the file absent here.
        """
        rows = uow.files.lock_shared([item.id for item in items])
        checked: list[FileItem] = []
        for item in items:
            row = rows.get(item.id)
            if row is None or not self._access.can_read_file(ctx.principal, row):
                raise FileItemNotFound(f"file {item.id} not found")
            checked.append(row)
        return checked

    def can_attach(self, ctx: RunContext) -> bool:
        """Whether the run has a workflow and its principal may add messages to it."""
        workflow = ctx.bound_workflow
        return workflow is not None and self._access.can_on_workflow(
            ctx.principal, Action.UPDATE, workflow
        )


@attrs.frozen
class AttachPlan:
    """An attach checked up front by :meth:`Attacher.plan`: run, workflow, clean label."""

    context: RunContext
    workflow: ChatWorkflow
    label: str
    user_message: str
    role: str


def log_attach_failure(file_id: str, exc: Exception) -> None:
    """Log the one warning that names why an attach did not happen (SPEC C3).

    Causes: no workflow bound, permission denied (also a file that is not
    readable), invalid input, or a storage fault (anything else).
    """
    if isinstance(exc, NoActiveWorkflow):
        log.warning(
            "attach skipped: no workflow bound; file %s stays reachable by file id", file_id
        )
    elif isinstance(exc, AccessDenied | FileItemNotFound):
        log.warning("attach skipped: permission denied for file %s: %s", file_id, exc)
    elif isinstance(exc, InvalidInput):
        log.warning("attach failed: invalid input for file %s: %s", file_id, exc)
    elif isinstance(exc, DocbinderError):
        log.warning("attach failed: storage fault for file %s: %s", file_id, exc)
    else:
        log.warning("attach failed: storage fault for file %s: %r", file_id, exc)
