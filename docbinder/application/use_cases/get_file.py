"""Read a FileItem behind the one visibility decision: :class:`GetFile`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.errors import FileItemNotFound
from docbinder.domain.model import FileItem, Principal, is_valid_id, shown_id
from docbinder.ports.metadata import UnitOfWorkFactory


class GetFile:
    """A FileItem's metadata, if the principal may read it (SPEC C2's ``getFile`` cross-check).

    Every other read (:class:`~docbinder.application.use_cases.open_file.OpenFile`, the
    duplicate check, resolving) uses the same decision,
    :meth:`~docbinder.application.steps.access.AccessPolicy.can_read_file`.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._uow = uow_factory
        self._access = access

    def __call__(self, principal: Principal, file_id: str) -> FileItem:
        """The FileItem; :class:`FileItemNotFound` if absent or not readable (same message).

        An id no FileItem can have (:func:`~docbinder.domain.model.is_valid_id`:
        NUL, a lone surrogate, whitespace, more than 128 characters) gets the
        same answer on every backend, without asking one.
        """
        if not is_valid_id(file_id):
            raise FileItemNotFound(f"file {shown_id(file_id)} not found")
        with self._uow() as uow:
            item = uow.files.get(file_id)
        if item is None or not self._access.can_read_file(principal, item):
            raise FileItemNotFound(f"file {file_id} not found")
        return item
