"""Read a FileItem's bytes: :class:`OpenFile`."""

from __future__ import annotations

from docbinder.application.use_cases.open_file_item import OpenFileItem
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobReader


class OpenFile:
    """The bytes of a FileItem the principal may read, as a stream of chunks.

    :class:`OpenFileItem` without the item: the same read check, the same
    ``read_bytes`` audit event.
    """

    def __init__(self, open_item: OpenFileItem) -> None:
        self._open_item = open_item

    def __call__(self, principal: Principal, file_id: str, chunk_size: int = 1 << 20) -> BlobReader:
        """The file's bytes as a :class:`BlobReader` of chunks of at most ``chunk_size`` bytes.

        Use it in a ``with`` block, which closes the stream however the reading
        ends. Raises :class:`FileItemNotFound` (absent or not readable) and
        :class:`BlobMissing` at call time.
        """
        return self._open_item(principal, file_id, chunk_size)[1]
