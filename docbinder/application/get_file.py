"""Reading a FileItem behind the one visibility decision: :class:`GetFile`."""

from __future__ import annotations

from collections.abc import Iterator

from docbinder.application.access import AccessPolicy
from docbinder.application.paging import visible_newest_first
from docbinder.domain.errors import FileItemNotFound, InvalidInput
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory


class GetFile:
    """Read access to FileItems: metadata and bytes, behind the one visibility decision."""

    def __init__(
        self, uow_factory: UnitOfWorkFactory, blobs: BlobStore, access: AccessPolicy
    ) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._access = access

    def __call__(self, principal: Principal, file_id: str) -> FileItem:
        """The FileItem; :class:`FileItemNotFound` if absent or not readable (same message)."""
        with self._uow() as uow:
            item = uow.files.get(file_id)
        if item is None or not self._access.can_read_file(principal, item):
            raise FileItemNotFound(f"file {file_id} not found")
        return item

    def open(
        self, principal: Principal, file_id: str, chunk_size: int = 1 << 20
    ) -> Iterator[bytes]:
        """The file's bytes as chunks; :class:`FileItemNotFound`, :class:`BlobMissing`."""
        item = self(principal, file_id)
        return self._blobs.open(item.blob_key, chunk_size)

    def list(self, principal: Principal, *, limit: int | None = None) -> list[FileItem]:
        """FileItems of the principal's mandate it may read, newest first, at most ``limit``.

        Raises :class:`InvalidInput` for a negative ``limit``.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(f"limit must be a non-negative whole number, got {limit!r}")

        def fetch(size: int, after: FileItem | None) -> list[FileItem]:
            with self._uow() as uow:
                return uow.files.list(principal.mandate_id, limit=size, after=after)

        return visible_newest_first(
            fetch, lambda item: self._access.can_read_file(principal, item), limit
        )
