"""Replacing a FileItem's content in place (SPEC C10, ``replace_in_file``): :class:`ReplaceFileContent`."""

from __future__ import annotations

from docbinder.application.steps.content_switch import ContentSwitch, FileUpdate
from docbinder.application.steps.hashing import FileData
from docbinder.application.use_cases.get_file_for_update import GetFileForUpdate
from docbinder.domain.errors import Conflict
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import iter_chunks


class ReplaceFileContent:
    """Make new bytes the whole content of a FileItem the caller may update; it keeps its id.

    The rights come from :class:`GetFileForUpdate`, the switch to the new
    blob (and its fault order) from
    :class:`~docbinder.application.steps.content_switch.ContentSwitch`. Errors as
    :class:`~docbinder.application.use_cases.append_file_content.AppendFileContent`.
    """

    def __init__(self, get_file_for_update: GetFileForUpdate, switch: ContentSwitch) -> None:
        self._load = get_file_for_update
        self._switch = switch

    def __call__(
        self,
        principal: Principal,
        file_id: str,
        data: FileData,
        *,
        expected: FileItem | None = None,
    ) -> FileUpdate:
        """Make ``data`` the file's whole new content.

        ``expected`` is the FileItem the caller based ``data`` on (e.g. after
        reading and editing the text): if the stored file no longer has that
        content, :class:`Conflict` is raised and nothing changes.
        """
        item = self._load(principal, file_id)
        if expected is not None and not _same_content(item, expected):
            raise Conflict(
                f"file {file_id} changed since it was read; nothing was changed, read it again"
            )
        return self._switch.switch(principal, item, iter_chunks(data))


def _same_content(a: FileItem, b: FileItem) -> bool:
    return a.blob_key == b.blob_key and a.sha256 == b.sha256 and a.size == b.size
