"""The duplicate check that respects access (SPEC C2): :class:`CheckDuplicate`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.duplicate_rules import DuplicateCheck, choose_duplicate
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory

__all__ = ["CheckDuplicate", "DuplicateCheck"]


class CheckDuplicate:
    """The duplicate check that respects access (SPEC C2, the ghost-duplicate fix).

    Candidates match SHA-256 + file name + creator + the caller's scope
    exactly (feature instance when the caller has one, else the mandate). A
    candidate counts only if the caller can read it through
    :meth:`AccessPolicy.can_read_file`, the same decision :class:`GetFile` uses,
    and, when a blob store is given, only if its blob is still there: a
    duplicate whose bytes are gone would hand back a FileItem that cannot be
    read, so a fresh copy is stored instead. The choice is
    :func:`~docbinder.application.steps.duplicate_rules.choose_duplicate`, which
    :class:`~docbinder.application.steps.storing.FileStorer` applies too.

    The blob store is asked only after the unit of work that read the
    candidates has ended, so no transaction (and on SQLite no write lock)
    ever waits on the blob store's network. The answer is a snapshot: a
    caller that reuses the candidate confirms it inside its own writing unit
    (:meth:`~docbinder.ports.metadata.FileRepository.confirm`).
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, access: AccessPolicy, blobs: BlobStore | None = None
    ) -> None:
        self._uow = uow_factory
        self._access = access
        self._blobs = blobs

    def __call__(self, principal: Principal, sha256: str, file_name: str) -> DuplicateCheck:
        """Look up a readable duplicate of (``sha256``, ``file_name``) for ``principal``."""
        with self._uow() as uow:
            candidates = uow.files.find_duplicates(
                sha256, file_name, principal.user_id, principal.scope
            )
        return choose_duplicate(self._access, self._blobs, principal, file_name, candidates)
