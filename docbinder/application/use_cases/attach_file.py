"""Attaching FileItems to the run's workflow as ChatDocuments (SPEC C3, C9): :class:`AttachFile`.

The one attach of docbinder. Every path that ends in ChatMessage -> ChatDocument
-> file id goes through it: ``run.attach`` (:meth:`AttachFile.__call__`),
:class:`~docbinder.application.use_cases.persist_action_result.PersistActionResult`
(several files in one message) and
:class:`~docbinder.application.use_cases.produce_file.ProduceFile` (the attach inside
the transaction that records the FileItem, ADR 0011) compose it. An attach is
checked up front (:meth:`AttachFile.prepare`), adds its message inside a unit of
work (:meth:`PreparedAttach.add`) and is recorded in the run after the commit
(:meth:`PreparedAttach.finish`). The message itself is built by the domain
(:meth:`~docbinder.domain.model.ChatMessage.attaching`), and so is the label rule
(:func:`~docbinder.domain.model.clean_label`,
:func:`~docbinder.domain.model.suffixed_label`, ADR 0004).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

import attrs

from docbinder.application.context import RunContext
from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.results import NotAttached, NotAttachedCause
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.domain.access import Action
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import (
    AccessDenied,
    DuplicateLabel,
    FileItemNotFound,
    InvalidInput,
)
from docbinder.domain.model import (
    DEFAULT_LABEL,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Principal,
    check_message_text,
    clean_label,
)
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

__all__ = [
    "LABEL_ATTEMPTS",
    "AttachFile",
    "NotAttached",
    "NotAttachedCause",
    "PreparedAttach",
    "attach_file_as_chat_document",
    "log_attach_failure",
    "require_file_items",
]

log = logging.getLogger(__name__)

LABEL_ATTEMPTS = 4
"""Tries at a unique ``documents_label``: the label itself, then suffixed ones (ADR 0004)."""


class AttachFile:
    """Attach FileItems to the run's workflow: a new ChatMessage holding one ChatDocument each.

    The design's ``_attachFileAsChatDocument``. The message has role
    ``assistant`` (unless given), status ``step``, the workflow's current
    round/task/action numbers (ADR 0026), and a ``documents_label`` unique
    within the workflow: the ``label`` argument itself, or, if that is taken,
    ``<label>#<8 hex digits>`` (ADR 0004). Needs ``update`` permission on the
    workflow and ``read`` on every FileItem.

    :meth:`__call__` attaches one stored FileItem in a unit of work of its
    own. A use case that attaches inside its own unit of work (ProduceFile,
    PersistActionResult) calls :meth:`prepare` and works with the
    :class:`PreparedAttach` it returns.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        clock: Clock,
        ids: IdFactory,
        *,
        audit: AuditTrail = DISABLED,
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._clock = clock
        self._ids = ids
        self.audit = audit

    def __call__(
        self,
        ctx: RunContext,
        item: FileItem,
        *,
        label: str = DEFAULT_LABEL,
        user_message: str = "",
        role: str = "assistant",
    ) -> ChatDocument:
        """Attach the stored ``item``; return its new ChatDocument.

        Raises :class:`~docbinder.domain.errors.NoActiveWorkflow`,
        :class:`~docbinder.domain.errors.InvalidInput` (not a FileItem, a bad
        label or message), :class:`~docbinder.domain.errors.AccessDenied`,
        :class:`~docbinder.domain.errors.FileItemNotFound` (file not readable),
        :class:`~docbinder.domain.errors.StorageError`.
        """
        ctx.require_workflow("attaching a file")
        require_file_items([item])
        prepared = self.prepare(ctx, label=label, user_message=user_message, role=role)
        return prepared.commit([item]).documents[0]

    def prepare(
        self, ctx: RunContext, *, label: str, user_message: str = "", role: str = "assistant"
    ) -> PreparedAttach:
        """Check everything an attach needs that does not touch storage.

        Raises :class:`InvalidInput` (``user_message`` breaks the text rule of
        :func:`~docbinder.domain.model.check_text_field`), :class:`NoActiveWorkflow` (no
        workflow bound) and :class:`AccessDenied` (no ``update`` right on the
        workflow as the run holds it; recorded as ``access_refused`` with the
        log on, so a caller checking before it stores anything calls this);
        the label is cleaned (:func:`~docbinder.domain.model.clean_label`).
        """
        check_message_text(user_message, "user_message")
        workflow = ctx.require_workflow("attaching a file")
        if not self._access.can_on_workflow(ctx.principal, Action.UPDATE, workflow):
            self._note_refused(ctx.principal, workflow.id)
            raise AccessDenied(
                f"user {ctx.principal.user_id} may not update workflow {workflow.id}"
            )
        return PreparedAttach(
            self, ctx, workflow, clean_label(label), user_message, role, self._ids.new_id()
        )

    def _stored_rows(
        self, uow: UnitOfWork, ctx: RunContext, items: Sequence[FileItem]
    ) -> list[FileItem]:
        """The stored rows of ``items``, each read-checked; the caller's copies are not trusted.

        A deleted or forged FileItem gives the same :class:`FileItemNotFound`
        as a file of another tenant, so attaching reveals nothing about ids.
        The rows are held until ``uow`` ends
        (:meth:`~docbinder.ports.metadata.FileRepository.lock_shared`): a
        delete that counts the file's references waits for this attach and
        counts it, and one that committed first leaves the file absent here
        (ADR 0012).
        """
        rows = uow.files.lock_shared([item.id for item in items])
        checked: list[FileItem] = []
        for item in items:
            row = rows.get(item.id)
            if row is None or not self._access.can_read_file(ctx.principal, row):
                raise FileItemNotFound(f"file {item.id} not found")
            checked.append(row)
        return checked

    def _add_message(
        self, uow: UnitOfWork, prepared: PreparedAttach, items: Sequence[FileItem]
    ) -> ChatMessage:
        """See :meth:`PreparedAttach.add`."""
        ctx = prepared.context
        principal = ctx.principal
        for item in items:
            if not self._access.can_read_file(principal, item):
                raise FileItemNotFound(f"file {item.id} not found")
        message = ChatMessage.attaching(
            prepared.workflow,  # its id only: the stored counters replace its numbers
            items,
            message_id=prepared.message_id,
            document_ids=[self._ids.new_id() for _ in items],
            label=prepared.label,
            published_at=self._clock.now(),
            role=prepared.role,
            user_message=prepared.user_message,
        )
        # A label this run saw taken is asked for with a suffix at once (one refused
        # insert fewer for every later attach under the same label, e.g. the default).
        taken = ctx.label_taken(prepared.label)
        candidate = message.with_label_suffix(self._ids.new_id()) if taken else message
        admit = partial(self._access.require_workflow_update, principal)
        for attempt in range(LABEL_ATTEMPTS):
            try:
                return uow.workflows.add_message(candidate, admit)
            except DuplicateLabel:
                ctx.note_label_taken(prepared.label)
                if attempt == LABEL_ATTEMPTS - 1:
                    raise
                candidate = message.with_label_suffix(self._ids.new_id())
        raise AssertionError("unreachable")  # pragma: no cover

    def _note_refused(self, principal: Principal, workflow_id: str) -> None:
        """Record an ``access_refused`` event (operation ``attach``) for an attach ``principal`` may not make.

        With the log on only; appended at once, as every refusal (B11).
        """
        audit = self.audit
        if audit.enabled:
            audit.refused(
                audit.event(
                    AuditAction.ACCESS_REFUSED,
                    principal,
                    outcome="access_denied",
                    workflow_id=workflow_id,
                    detail={"operation": "attach"},
                )
            )

    def _record_attach(self, uow: UnitOfWork, ctx: RunContext, message: ChatMessage) -> None:
        """Record the attach of ``message``'s documents in ``uow``'s audit log (B11)."""
        audit = self.audit
        if not audit.enabled:
            return
        audit.record(
            uow,
            *(
                audit.event(
                    AuditAction.ATTACH,
                    ctx.principal,
                    file_id=document.file_id,
                    document_id=document.id,
                    workflow_id=message.workflow_id,
                    detail={"label": message.documents_label},
                )
                for document in message.documents
            ),
        )

    def _commit(self, prepared: PreparedAttach, items: Sequence[FileItem]) -> ChatMessage:
        """See :meth:`PreparedAttach.commit`; a unit the database aborted (a deadlock, a
        serialization failure) is run again (ADR 0077)."""

        def unit() -> ChatMessage:
            with self._uow() as uow:
                rows = self._stored_rows(uow, prepared.context, items)
                stored = self._add_message(uow, prepared, rows)
                self._record_attach(uow, prepared.context, stored)
                uow.commit()
            return stored

        workflow = prepared.context.workflow_id
        stored = run_again_if_aborted(unit, f"attaching to workflow {workflow}")
        prepared.finish(stored)
        return stored


@attrs.frozen
class PreparedAttach:
    """An attach :meth:`AttachFile.prepare` checked: run, workflow, clean label, text, role.

    ``message_id`` is the id the ChatMessage will have, made at prepare time so
    that a file produced in the same unit can name its message in its
    provenance before the message is inserted (B9).

    :meth:`commit` finishes it in a unit of work of its own; a use case with
    its own unit calls :meth:`add` inside it and :meth:`finish` after its
    commit.
    """

    attach: AttachFile = attrs.field(repr=False)
    context: RunContext
    workflow: ChatWorkflow
    label: str
    user_message: str
    role: str
    message_id: str

    def add(self, uow: UnitOfWork, items: Sequence[FileItem]) -> ChatMessage:
        """Add one ChatMessage with a ChatDocument per item inside ``uow``; no commit.

        The rights are checked on the workflow as stored, which the
        repository reads in ``uow`` before it inserts anything (``admit`` of
        :meth:`~docbinder.ports.metadata.WorkflowRepository.add_message`; on
        SQLite with the message's number, elsewhere just before it, ADR
        0038): :class:`WorkflowNotFound` if it is absent or not readable,
        :class:`AccessDenied` if it is readable but not updatable; nothing of
        the message is kept then. The run's in-memory workflow is not trusted
        for this: a caller can build a :class:`RunContext` around any
        :class:`ChatWorkflow` object (another tenant's id, a forged scope).
        The round/task/action numbers on the returned message and its
        documents are the ones read with its ``sequence_nr`` on the locked
        workflow row (ADR 0026).

        ``items`` must be stored rows read in this unit (or just inserted by
        it), not copies a caller handed in. Each is read-checked for the
        run's principal: :class:`FileItemNotFound` if one is not readable.
        A taken label is retried with ``#<8 hex>`` suffixes in the same unit
        (a failed insert leaves the unit usable, as the port promises);
        :class:`DuplicateLabel` after :data:`LABEL_ATTEMPTS` tries. A label
        the run already saw taken (:meth:`RunContext.label_taken`) is suffixed
        on the first try.
        """
        message = self.attach._add_message(uow, self, items)
        self.attach._record_attach(uow, self.context, message)
        return message

    def commit(self, items: Sequence[FileItem]) -> ChatMessage:
        """Attach the stored ``items`` in one unit of work of their own; return the stored message.

        The FileItems are read again in the unit and held until it ends (the
        caller's copies are not trusted; ADR 0012), the message is added as
        :meth:`add` adds it, the unit commits and :meth:`finish` records the
        message in the run. Raises :class:`FileItemNotFound` (a file absent
        or not readable), what :meth:`add` raises, and
        :class:`~docbinder.domain.errors.StorageError`.
        """
        return self.attach._commit(self, items)

    def finish(self, stored: ChatMessage) -> None:
        """After the commit: append ``stored`` to the run's in-memory workflow, note its label, log it."""
        ctx = self.context
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


def require_file_items(items: Sequence[object]) -> None:
    """Raise :class:`InvalidInput` unless ``items`` holds at least one value, each a FileItem.

    A value that carries its FileItem (a ``StoredFile``) gets a hint to pass
    its ``.item``.
    """
    if not items:
        raise InvalidInput("an action result needs at least one file")
    for item in items:
        if not isinstance(item, FileItem):
            raise InvalidInput(
                f"expected a FileItem, got {type(item).__name__}"
                + (" (pass its .item)" if hasattr(item, "item") else "")
            )


def attach_file_as_chat_document(
    attach: AttachFile,
    ctx: RunContext,
    item: FileItem,
    *,
    label: str = DEFAULT_LABEL,
    user_message: str = "",
    role: str = "assistant",
) -> str | None:
    """Tool-facing bridge that never raises (SPEC C3).

    Returns the new ChatDocument id, or ``None`` after logging one warning
    that names the cause (:func:`log_attach_failure`): no workflow bound,
    permission denied, invalid input or a storage fault.
    """
    try:
        return attach(ctx, item, label=label, user_message=user_message, role=role).id
    except Exception as exc:  # a host adapter may raise anything; the tool must not see it
        log_attach_failure(item.id, exc)
    return None


def log_attach_failure(file_id: str, exc: Exception) -> NotAttached:
    """Log the one warning that names why an attach did not happen (SPEC C3); return it.

    Causes: :class:`NotAttachedCause` (no workflow bound, workflow not found,
    permission denied, invalid input, storage fault).
    """
    refusal = NotAttached.from_error(exc)
    if refusal.cause is NotAttachedCause.NO_WORKFLOW:
        log.warning(
            "attach skipped: no workflow bound; file %s stays reachable by file id", file_id
        )
    elif refusal.cause is NotAttachedCause.WORKFLOW_NOT_FOUND:
        log.warning("attach skipped: workflow not found for file %s: %s", file_id, exc)
    elif refusal.cause is NotAttachedCause.PERMISSION_DENIED:
        log.warning("attach skipped: permission denied for file %s: %s", file_id, exc)
    elif refusal.cause is NotAttachedCause.INVALID_INPUT:
        log.warning("attach failed: invalid input for file %s: %s", file_id, exc)
    else:
        log.warning("attach failed: storage fault for file %s: %s", file_id, refusal.message)
    return refusal
