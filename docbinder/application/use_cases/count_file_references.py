"""How many ChatDocuments point at a FileItem: :class:`CountFileReferences`."""

from __future__ import annotations

from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.model import Principal
from docbinder.ports.metadata import UnitOfWorkFactory


class CountFileReferences:
    """The number of ChatDocuments (in any workflow) that point at a readable FileItem."""

    def __init__(self, uow_factory: UnitOfWorkFactory, get_file: GetFile) -> None:
        self._uow = uow_factory
        self._get = get_file

    def __call__(self, principal: Principal, file_id: str) -> int:
        """The count; :class:`FileItemNotFound` if the file is absent or not readable."""
        item = self._get(principal, file_id)
        with self._uow() as uow:
            return uow.workflows.count_documents_for_file(item.id)
