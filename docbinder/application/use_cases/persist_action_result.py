"""Attach several FileItems as one ChatMessage (the task-result path, SPEC C9): :class:`PersistActionResult`."""

from __future__ import annotations

from collections.abc import Sequence

from docbinder.application.context import RunContext
from docbinder.application.steps.attaching import Attacher
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import ChatMessage, FileItem
from docbinder.ports.metadata import UnitOfWorkFactory


class PersistActionResult:
    """A workflow action's result: its FileItems as the ChatDocuments of one new ChatMessage.

    The design's ``persistTaskResult`` pattern. One unit of work reads the
    FileItems again (the caller's copies are not trusted), checks them and
    adds the message; see :class:`~docbinder.application.steps.attaching.Attacher`
    for the label, numbering and rights.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, attacher: Attacher) -> None:
        self._uow = uow_factory
        self._attacher = attacher

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
        if not items:
            raise InvalidInput("an action result needs at least one file")
        for item in items:
            if not isinstance(item, FileItem):
                raise InvalidInput(
                    f"expected a FileItem, got {type(item).__name__}"
                    + (" (pass its .item)" if hasattr(item, "item") else "")
                )
        plan = self._attacher.plan(ctx, label=label, user_message=user_message, role=role)
        with self._uow() as uow:
            rows = self._attacher.stored_rows(uow, ctx, items)
            stored = self._attacher.add_message(uow, plan, rows)
            uow.commit()
        self._attacher.finish(ctx, stored)
        return stored
