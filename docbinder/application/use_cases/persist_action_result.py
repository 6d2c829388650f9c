"""Attach several FileItems as one ChatMessage (the task-result path, SPEC C9): :class:`PersistActionResult`."""

from __future__ import annotations

from collections.abc import Sequence

from docbinder.application.context import RunContext
from docbinder.application.use_cases.attach_file import AttachFile, require_file_items
from docbinder.domain.model import ChatMessage, FileItem


class PersistActionResult:
    """A workflow action's result: its FileItems as the ChatDocuments of one new ChatMessage.

    The design's ``persistTaskResult`` pattern, composed of
    :class:`~docbinder.application.use_cases.attach_file.AttachFile`: one unit of
    work reads the FileItems again (the caller's copies are not trusted),
    checks them and adds the message; see ``AttachFile`` for the label,
    numbering and rights.
    """

    def __init__(self, attach_file: AttachFile) -> None:
        self._attach = attach_file

    def __call__(
        self,
        ctx: RunContext,
        items: Sequence[FileItem],
        *,
        label: str,
        user_message: str = "",
        role: str = "assistant",
    ) -> ChatMessage:
        """Attach ``items`` (at least one) as one message; return it as stored (with ``sequence_nr``).

        Raises :class:`~docbinder.domain.errors.NoActiveWorkflow`,
        :class:`~docbinder.domain.errors.AccessDenied`,
        :class:`~docbinder.domain.errors.FileItemNotFound` (a file not readable),
        :class:`~docbinder.domain.errors.InvalidInput` (no items, something that is
        not a FileItem, a bad label or message),
        :class:`~docbinder.domain.errors.StorageError`.
        """
        ctx.require_workflow("attaching a file")
        require_file_items(items)
        prepared = self._attach.prepare(ctx, label=label, user_message=user_message, role=role)
        return prepared.commit(items)
