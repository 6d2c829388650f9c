"""Appending to a FileItem in place (SPEC C10, ``write_file`` append): :class:`AppendFileContent`."""

from __future__ import annotations

import itertools

from docbinder.application.steps.content_switch import ContentSwitch, FileUpdate
from docbinder.application.steps.hashing import FileData
from docbinder.application.use_cases.get_file_for_update import GetFileForUpdate
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore, iter_chunks


class AppendFileContent:
    """Append bytes to a FileItem the caller may update; the FileItem keeps its id.

    The rights come from :class:`GetFileForUpdate`, the switch to the new
    blob (and its fault order) from
    :class:`~docbinder.application.steps.content_switch.ContentSwitch`.

    Errors: :class:`FileItemNotFound` (absent or not readable),
    :class:`AccessDenied` (no ``update`` right), :class:`SizeLimitExceeded`,
    :class:`Conflict` (the file changed meanwhile, or the new content would
    make it a duplicate of another FileItem of the same name, creator and
    scope), :class:`BlobMissing`, :class:`StorageError`. On every error the
    FileItem is unchanged and no new blob is left behind.
    """

    def __init__(
        self, get_file_for_update: GetFileForUpdate, switch: ContentSwitch, blobs: BlobStore
    ) -> None:
        self._load = get_file_for_update
        self._switch = switch
        self._blobs = blobs

    def __call__(self, principal: Principal, file_id: str, data: FileData) -> FileUpdate:
        """Append ``data`` (bytes, chunks or a binary file object) to the file's content.

        The old content is streamed from the blob store into the new blob,
        followed by ``data``; nothing is read whole into memory.
        """
        item = self._load(principal, file_id)
        with self._blobs.open(item.blob_key) as old:
            return self._switch.switch(principal, item, itertools.chain(old, iter_chunks(data)))
