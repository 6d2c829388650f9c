"""The bridge: FileItems become ChatDocuments in a ChatMessage of the active workflow (SPEC C3, C9).

:class:`AttachFiles` is the single source of truth for every producer: one
agent tool output (:meth:`AttachFiles.attach`), a workflow action returning
several documents (:meth:`AttachFiles.persist_action_result`), and any other
producer all end in ChatMessage -> ChatDocument -> file id.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.application.context import RunContext
from docbinder.domain.access import Action
from docbinder.domain.counters import WorkflowCounters
from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    DuplicateLabel,
    FileItemNotFound,
    InvalidInput,
    NoActiveWorkflow,
    WorkflowNotFound,
)
from docbinder.domain.model import (
    CONTROL_CHARACTERS,
    MAX_LABEL_LENGTH,
    SURROGATES,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    check_message_text,
)
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

DEFAULT_LABEL = "agent_tool_output"
"""Label used when a producer gives none."""

_LABEL_ATTEMPTS = 4


class AttachFiles:
    """Bind FileItems to the active workflow as ChatDocuments of one new ChatMessage.

    The message has role ``assistant`` (unless given), status ``step``, the
    workflow's current round/task/action numbers, and a ``documents_label``
    unique within the workflow: the ``label`` argument itself, or, if that is
    taken, ``<label>#<8 hex digits>``. Needs ``update`` permission on the
    workflow and ``read`` on every FileItem. The stored message is appended to
    the run's in-memory workflow at once.
    """

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

    def attach(
        self,
        ctx: RunContext,
        item: FileItem,
        *,
        label: str = DEFAULT_LABEL,
        user_message: str = "",
        role: str = "assistant",
    ) -> ChatDocument:
        """Attach one FileItem; return its new ChatDocument.

        Raises :class:`NoActiveWorkflow`, :class:`AccessDenied`,
        :class:`FileItemNotFound` (file not readable), :class:`InvalidInput`
        (bad label), :class:`StorageError`.
        """
        message = self.persist_action_result(
            ctx, [item], label=label, user_message=user_message, role=role
        )
        return message.documents[0]

    def persist_action_result(
        self,
        ctx: RunContext,
        items: Sequence[FileItem],
        *,
        label: str,
        user_message: str = "",
        role: str = "assistant",
    ) -> ChatMessage:
        """Attach several FileItems as one ChatMessage (the task-result path, SPEC C9).

        Returns the stored message (with ``sequence_nr``); errors as :meth:`attach`.
        One unit of work reads the FileItems, checks them and adds the message.
        """
        ctx.require_workflow("attaching a file")
        if not items:
            raise InvalidInput("an action result needs at least one file")
        for item in items:
            if not isinstance(item, FileItem):
                raise InvalidInput(
                    f"expected a FileItem, got {type(item).__name__}"
                    + (" (pass its .item)" if hasattr(item, "item") else "")
                )
        plan = self.plan(ctx, label=label, user_message=user_message, role=role)
        with self._uow() as uow:
            rows = self._stored(uow, ctx, items)
            stored = self.add_message(uow, plan, rows)
            uow.commit()
        self.finish(ctx, stored)
        return stored

    def plan(
        self, ctx: RunContext, *, label: str, user_message: str = "", role: str = "assistant"
    ) -> AttachPlan:
        """Check everything an attach needs that does not touch storage.

        Raises :class:`InvalidInput` (``user_message`` breaks the text rule of
        :func:`~docbinder.domain.model.check_text_field`), :class:`NoActiveWorkflow` (no workflow bound) and
        :class:`AccessDenied` (no ``update`` right on the workflow); the label
        is cleaned (:func:`_clean_label`).
        """
        check_message_text(user_message, "user_message")
        workflow = ctx.require_workflow("attaching a file")
        if not self._access.can_on_workflow(ctx.principal, Action.UPDATE, workflow):
            raise AccessDenied(
                f"user {ctx.principal.user_id} may not update workflow {workflow.id}"
            )
        return AttachPlan(ctx, workflow, _clean_label(label), user_message, role)

    def add_message(
        self, uow: UnitOfWork, plan: AttachPlan, items: Sequence[FileItem]
    ) -> ChatMessage:
        """Add one ChatMessage with a ChatDocument per item inside ``uow``; no commit.

        The workflow is read again in ``uow`` and the rights are checked on the
        stored one (:class:`WorkflowNotFound`, :class:`AccessDenied`); its
        stored round/task/action numbers go on the message.

        ``items`` must be stored rows read in this unit (or just inserted by
        it), not copies a caller handed in. Each is read-checked for the
        plan's principal: :class:`FileItemNotFound` if one is not readable.
        A taken label is retried with ``#<8 hex>`` suffixes in the same unit
        (a failed insert leaves the unit usable, as the port promises);
        :class:`DuplicateLabel` after :data:`_LABEL_ATTEMPTS` tries.
        """
        for item in items:
            if not self._access.can_read_file(plan.context.principal, item):
                raise FileItemNotFound(f"file {item.id} not found")
        workflow = self._stored_workflow(uow, plan)
        message_id = self._ids.new_id()
        documents = tuple(
            ChatDocument(
                id=self._ids.new_id(),
                message_id=message_id,
                workflow_id=workflow.id,
                file_id=item.id,
                file_name=item.file_name,
                file_size=item.size,
                mime_type=item.mime_type,
                round_number=workflow.current_round,
                task_number=workflow.current_task,
                action_number=workflow.current_action,
            )
            for item in items
        )
        message = ChatMessage(
            id=message_id,
            workflow_id=workflow.id,
            documents_label=plan.label,
            published_at=self._clock.now(),
            role=plan.role,
            status="step",
            message=plan.user_message,
            documents=documents,
            round_number=workflow.current_round,
            task_number=workflow.current_task,
            action_number=workflow.current_action,
        )
        candidate = message
        for attempt in range(_LABEL_ATTEMPTS):
            try:
                return uow.workflows.add_message(candidate)
            except DuplicateLabel:
                if attempt == _LABEL_ATTEMPTS - 1:
                    raise
                suffix = self._ids.new_id().replace("-", "")[:8]
                candidate = attrs.evolve(message, documents_label=f"{plan.label}#{suffix}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _stored_workflow(self, uow: UnitOfWork, plan: AttachPlan) -> ChatWorkflow:
        """The workflow as stored, read in ``uow``, with the rights checked on it.

        The run's in-memory workflow is not trusted: a caller can build a
        :class:`RunContext` around any :class:`ChatWorkflow` object (another
        tenant's id, a forged scope). Raises :class:`WorkflowNotFound` if the
        stored workflow is absent or not readable by the principal (the same
        answer for both) and :class:`AccessDenied` if it is readable but not
        updatable.
        """
        principal = plan.context.principal
        workflow_id = plan.workflow.id
        stored = uow.workflows.get_workflow(workflow_id)
        if stored is None or not self._access.can_on_workflow(principal, Action.READ, stored):
            raise WorkflowNotFound(f"workflow {workflow_id} not found")
        if not self._access.can_on_workflow(principal, Action.UPDATE, stored):
            raise AccessDenied(f"user {principal.user_id} may not update workflow {workflow_id}")
        return stored

    def finish(self, ctx: RunContext, stored: ChatMessage) -> None:
        """After the commit: append ``stored`` to the run's in-memory workflow and log it."""
        ctx.append_message(stored)
        ctx.set_counters(
            WorkflowCounters(stored.round_number, stored.task_number, stored.action_number)
        )
        log.info(
            "attached %d document(s) to workflow %s as message %s (label %s)",
            len(stored.documents),
            stored.workflow_id,
            stored.id,
            stored.documents_label,
        )

    def _stored(
        self, uow: UnitOfWork, ctx: RunContext, items: Sequence[FileItem]
    ) -> list[FileItem]:
        """The stored rows of ``items``, each read-checked; the caller's copies are not trusted.

        A deleted or forged FileItem gives the same :class:`FileItemNotFound`
        as a file of another tenant, so attaching reveals nothing about ids.
        """
        rows = uow.files.get_many([item.id for item in items])
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
    """An attach checked up front by :meth:`AttachFiles.plan`: run, workflow, clean label."""

    context: RunContext
    workflow: ChatWorkflow
    label: str
    user_message: str
    role: str


def _clean_label(label: object) -> str:
    """A usable ``documents_label``: control characters become spaces, the length leaves room for a suffix.

    Labels are derived from file names (``writeFile:<name>``), which may hold a
    tab; the label rule forbids control characters, so they are replaced
    rather than letting the attach fail.
    """
    if not isinstance(label, str):
        return DEFAULT_LABEL
    cleaned = CONTROL_CHARACTERS.sub(" ", label)
    # A lone surrogate (from a badly decoded name) cannot be stored: U+FFFD instead.
    cleaned = SURROGATES.sub("\ufffd", cleaned)
    cleaned = cleaned[: MAX_LABEL_LENGTH - 9]
    return cleaned if cleaned.strip() else DEFAULT_LABEL


def attach_file_as_chat_document(
    attach: AttachFiles,
    ctx: RunContext,
    item: FileItem,
    *,
    label: str = DEFAULT_LABEL,
    user_message: str = "",
    role: str = "assistant",
) -> str | None:
    """Tool-facing bridge that never raises (SPEC C3).

    Returns the new ChatDocument id, or ``None`` after logging one warning
    that names the cause: no workflow bound, permission denied, or a storage
    fault.
    """
    try:
        return attach.attach(ctx, item, label=label, user_message=user_message, role=role).id
    except Exception as exc:  # a host adapter may raise anything; the tool must not see it
        log_attach_failure(item.id, exc)
    return None


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
