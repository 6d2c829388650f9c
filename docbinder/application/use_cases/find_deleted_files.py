"""Which documents of a workflow point at deleted files: :class:`FindDeletedFiles`."""

from __future__ import annotations

from docbinder.domain.model import ChatMessage, Principal
from docbinder.ports.metadata import UnitOfWorkFactory


class FindDeletedFiles:
    """Ids of FileItems that documents of some messages point at and that no longer exist."""

    def __init__(self, uow_factory: UnitOfWorkFactory) -> None:
        self._read = uow_factory

    def __call__(self, principal: Principal, messages: list[ChatMessage]) -> set[str]:
        """The ids among the documents of ``messages`` whose FileItem is gone.

        ``messages`` come from :class:`~docbinder.application.use_cases.list_messages.ListMessages`
        (a readable workflow); their documents resolve as ``file_missing`` (ADR 0012).
        """
        file_ids = [doc.file_id for msg in messages for doc in msg.documents]
        if not file_ids:
            return set()
        with self._read() as uow:
            present = uow.files.get_many(file_ids)
        return {file_id for file_id in file_ids if file_id not in present}
