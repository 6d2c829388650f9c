"""Read a FileItem's bytes: :class:`OpenFile`."""

from __future__ import annotations

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.expiry import note_bytes_read
from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobReader, BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory


class OpenFile:
    """The bytes of a FileItem the principal may read, as a stream of chunks."""

    def __init__(
        self,
        get_file: GetFile,
        blobs: BlobStore,
        *,
        audit: AuditTrail = DISABLED,
        units: UnitOfWorkFactory | None = None,
    ) -> None:
        self._get = get_file
        self._blobs = blobs
        self._audit = audit
        self._units = units

    def __call__(self, principal: Principal, file_id: str, chunk_size: int = 1 << 20) -> BlobReader:
        """The file's bytes as a :class:`BlobReader` of chunks of at most ``chunk_size`` bytes.

        Use it in a ``with`` block, which closes the stream however the reading
        ends. Raises :class:`FileItemNotFound` (absent or not readable) and
        :class:`BlobMissing` at call time.
        """
        item = self._get(principal, file_id)
        reader = self._blobs.open(item.blob_key, chunk_size)
        note_bytes_read(self._audit, self._units, principal, item)
        return reader
