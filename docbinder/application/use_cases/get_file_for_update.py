"""Reading a FileItem to change it in place (SPEC C10): :class:`GetFileForUpdate`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.domain.access import Action
from docbinder.domain.errors import AccessDenied, FileItemNotFound
from docbinder.domain.model import FileItem, Principal, is_valid_id, shown_id
from docbinder.ports.metadata import UnitOfWorkFactory


class GetFileForUpdate:
    """The FileItem ``principal`` may read and update, before an append or a replace.

    Needs ``read`` and ``update`` on the FileItem (through the same
    :class:`AccessPolicy` as every other use case). A caller that edits the
    content (``replace_in_file``) passes the returned FileItem as ``expected``
    to :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._uow = uow_factory
        self._access = access

    def __call__(self, principal: Principal, file_id: str) -> FileItem:
        """The FileItem ``file_id``.

        Raises :class:`FileItemNotFound` (absent or not readable),
        :class:`AccessDenied` (readable, but no ``update`` right).
        """
        if not is_valid_id(file_id):  # same answer on every backend, none asked
            raise FileItemNotFound(f"file {shown_id(file_id)} not found")
        with self._uow() as uow:
            item = uow.files.get(file_id)
        if item is None or not self._access.can_read_file(principal, item):
            raise FileItemNotFound(f"file {file_id} not found")
        if not self._access.can_on_file(principal, Action.UPDATE, item):
            raise AccessDenied(f"user {principal.user_id} may not update file {file_id}")
        return item
