"""A readable FileItem and its bytes, read together: :class:`OpenFileItem`."""

from __future__ import annotations

from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobReader, BlobStore


class OpenFileItem:
    """The FileItem the principal may read and a reader of exactly its bytes.

    For answers that send both, such as an HTTP response's ``ETag`` (the
    FileItem's SHA-256) and body: the reader holds the bytes of the FileItem
    returned, never those of a later replacement.
    """

    def __init__(self, get_file: GetFile, blobs: BlobStore) -> None:
        self._get = get_file
        self._blobs = blobs

    def __call__(
        self, principal: Principal, file_id: str, chunk_size: int = 1 << 20
    ) -> tuple[FileItem, BlobReader]:
        """``(item, reader)``; use the reader in a ``with`` block (or close it).

        Raises :class:`FileItemNotFound` (absent or not readable, the same
        answer) and :class:`BlobMissing` at call time.
        """
        item = self._get(principal, file_id)
        return item, self._blobs.open(item.blob_key, chunk_size)
