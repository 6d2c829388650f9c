"""Read a FileItem's bytes: :class:`OpenFile`."""

from __future__ import annotations

from collections.abc import Iterator

from docbinder.application.get_file import GetFile
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore


class OpenFile:
    """The bytes of a FileItem the principal may read, as a stream of chunks."""

    def __init__(self, get_file: GetFile, blobs: BlobStore) -> None:
        self._get = get_file
        self._blobs = blobs

    def __call__(
        self, principal: Principal, file_id: str, chunk_size: int = 1 << 20
    ) -> Iterator[bytes]:
        """Chunks of at most ``chunk_size`` bytes; :class:`FileItemNotFound`, :class:`BlobMissing`."""
        item = self._get(principal, file_id)
        return self._blobs.open(item.blob_key, chunk_size)
