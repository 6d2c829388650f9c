"""Attach one FileItem to the run's workflow as a ChatDocument (SPEC C3): :class:`AttachFile`."""

from __future__ import annotations

from docbinder.application.context import RunContext
from docbinder.application.steps.attaching import log_attach_failure
from docbinder.application.use_cases.persist_action_result import PersistActionResult
from docbinder.domain.model import DEFAULT_LABEL, ChatDocument, FileItem


class AttachFile:
    """Attach one FileItem to the run's workflow: a new ChatMessage holding one ChatDocument.

    The design's ``_attachFileAsChatDocument``: the same path as
    :class:`~docbinder.application.use_cases.persist_action_result.PersistActionResult`
    with a single file, so both keep one source of truth.
    """

    def __init__(self, persist: PersistActionResult) -> None:
        self._persist = persist

    def __call__(
        self,
        ctx: RunContext,
        item: FileItem,
        *,
        label: str = DEFAULT_LABEL,
        user_message: str = "",
        role: str = "assistant",
    ) -> ChatDocument:
        """Attach ``item``; return its new ChatDocument.

        Raises :class:`~docbinder.domain.errors.NoActiveWorkflow`,
        :class:`~docbinder.domain.errors.AccessDenied`,
        :class:`~docbinder.domain.errors.FileItemNotFound` (file not readable),
        :class:`~docbinder.domain.errors.InvalidInput` (bad label or message),
        :class:`~docbinder.domain.errors.StorageError`.
        """
        message = self._persist(ctx, [item], label=label, user_message=user_message, role=role)
        return message.documents[0]


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
    that names the cause: no workflow bound, permission denied, or a storage
    fault.
    """
    try:
        return attach(ctx, item, label=label, user_message=user_message, role=role).id
    except Exception as exc:  # a host adapter may raise anything; the tool must not see it
        log_attach_failure(item.id, exc)
    return None
