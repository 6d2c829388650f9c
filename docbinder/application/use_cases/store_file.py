"""Storing a produced file (SPEC C1, C2, section 5): :class:`StoreFile`."""

from __future__ import annotations

from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.storing import FileStorer, StoredFile
from docbinder.domain.model import NO_PROVENANCE, Principal, Provenance


class StoreFile:
    """Store a produced file: blob first, then the FileItem (SPEC C1, section 5).

    The steps (one-pass hashing, the single recording transaction, what a
    failed commit means for the blob, the committed-blob record of ADR 0031)
    are :class:`~docbinder.application.steps.storing.FileStorer`'s, whose
    duplicates are decided by
    :class:`~docbinder.application.use_cases.check_duplicate.CheckDuplicate`.
    :class:`~docbinder.application.use_cases.produce_file.ProduceFile` runs the same
    storer; the composition root (:mod:`docbinder.container`) builds one for both.
    ``registration`` is the storer's store registration (the one every use
    case that writes blobs shares).
    """

    def __init__(self, storer: FileStorer) -> None:
        self._storer = storer
        self.registration = storer.registration

    def __call__(
        self,
        principal: Principal,
        file_name: str,
        data: FileData,
        *,
        mime_type: str | None = None,
        folder: str | None = None,
        tags: tuple[str, ...] = (),
        provenance: Provenance = NO_PROVENANCE,
    ) -> StoredFile:
        """Store ``data`` as ``file_name`` for ``principal`` in its scope.

        Returns the :class:`~docbinder.application.steps.storing.StoredFile` (the
        new FileItem, or the readable duplicate that was reused). Raises
        :class:`InvalidInput` (bad name, folder or tags, see
        :func:`~docbinder.domain.model.check_text_field`; checked before any blob is
        written), :class:`AccessDenied` (no
        ``create`` right), :class:`SizeLimitExceeded` (input over ``max_size``
        bytes; nothing kept), :class:`QuotaExceeded` (a quota of the scope
        would be passed, B12; nothing kept), :class:`StorageError` (backend fault; nothing
        kept, except a blob no FileItem names when the outcome of the commit
        could not be established: ``gc`` removes it). A new FileItem records
        ``provenance`` (B9); a reused duplicate keeps its own.
        """
        stored, _ = self._storer.store(
            principal,
            file_name,
            data,
            None,
            mime_type=mime_type,
            folder=folder,
            tags=tags,
            provenance=provenance,
        )
        return stored
