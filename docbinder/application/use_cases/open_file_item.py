"""A readable FileItem and its bytes, read together: :class:`OpenFileItem`."""

from __future__ import annotations

from collections.abc import Callable

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.expiry import admit_read, note_bytes_read, now
from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobReader, BlobStore, open_blob_range
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock

Span = Callable[[FileItem], tuple[int, int] | None]
"""Which bytes of a FileItem to open, decided once it is known: ``(offset, length)`` in
bytes, or ``None`` for all of them (e.g. from an HTTP ``Range`` and the item's size)."""


class OpenFileItem:
    """The FileItem the principal may read and a reader of exactly its bytes.

    For answers that send both, such as an HTTP response's ``ETag`` (the
    FileItem's SHA-256) and body: the reader holds the bytes of the FileItem
    returned, never those of a later replacement.
    """

    def __init__(
        self,
        get_file: GetFile,
        blobs: BlobStore,
        *,
        audit: AuditTrail = DISABLED,
        units: UnitOfWorkFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._get = get_file
        self._blobs = blobs
        self._audit = audit
        self._units = units
        self._clock = clock

    def __call__(
        self,
        principal: Principal,
        file_id: str,
        chunk_size: int = 1 << 20,
        span: Span | None = None,
    ) -> tuple[FileItem, BlobReader]:
        """``(item, reader)``; use the reader in a ``with`` block (or close it).

        Without ``span`` the reader gives every byte. With it, ``span(item)``
        names the bytes to read, ``(offset, length)``, and the reader gives
        only those, read from the blob store with a ranged read
        (:meth:`~docbinder.ports.blobs.BlobStore.open_range`), so nothing before
        ``offset`` is read. With the audit log on, the read is a ``read_bytes``
        event (B11). Raises :class:`FileItemNotFound` (absent or not
        readable, the same answer), :class:`FileExpired` (past its retention
        period, B5) and :class:`BlobMissing` at call time.
        """
        item = self._get(principal, file_id)
        at_once = admit_read(self._units, item, now(self._clock))
        reader = open_span(self._blobs, item, span, chunk_size)
        note_bytes_read(self._audit, principal, item, at_once)
        return item, reader


def open_span(
    blobs: BlobStore, item: FileItem, span: Span | None, chunk_size: int = 1 << 20
) -> BlobReader:
    """A reader of the bytes of ``item`` that ``span`` names (all of them without one).

    A store without a ranged read (written before it existed) is read from its
    start and the bytes before the range dropped, so the reader's bytes are the
    same either way. Errors as :meth:`~docbinder.ports.blobs.BlobStore.open_range`.
    """
    wanted = None if span is None else span(item)
    if wanted is None:
        return blobs.open(item.blob_key, chunk_size)
    offset, length = wanted
    return open_blob_range(blobs, item.blob_key, offset, length, chunk_size)
