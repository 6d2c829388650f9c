"""Saving the next version of a file name (feature row B1, ADR 0013): :class:`SaveFileVersion`.

A file name in a scope (and a namespace inside it, see
:class:`~docbinder.domain.model.VersionSeries`) can have several versions.
Each version is its own FileItem with its own blob, numbered 0, 1, 2, ... in
save order; saving identical bytes twice gives two versions (versioned saves
take no part in the duplicate check of SPEC C2, whose semantics for ordinary
stores are unchanged).

Numbering is race-free on every backend: a save reads the latest number
through the ``(series_key, version)`` index and inserts the next one; the
unique rule on that pair makes a concurrent save of the same number fail with
:class:`VersionTaken`, and the loser retries in a fresh transaction (the blob
is written once, before the first attempt). Reading the latest version and
saving the next one are index lookups whatever the number of versions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from docbinder.application.provenance import provenance_for
from docbinder.application.steps.hashing import FileData
from docbinder.application.steps.storing import FileStorer
from docbinder.application.steps.transient import run_again_if_aborted
from docbinder.domain.errors import (
    StorageError,
    TransactionAborted,
    VersionTaken,
)
from docbinder.domain.model import FileItem, FileVersion, Principal, Provenance, VersionSeries
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_SAVE_ATTEMPTS = 1000
"""How many times a save retries after losing a version number to a concurrent save."""


@attrs.frozen
class StoredVersion:
    """A version and its FileItem (creation time, MIME type, size, blob)."""

    item: FileItem
    version: FileVersion

    @property
    def number(self) -> int:
        """The version number (0 for the first save)."""
        return self.version.version


class SaveFileVersion:
    """Store bytes as the next version of a file name in the principal's scope.

    A series lives in the principal's scope (``principal.scope``); the
    ``namespace`` argument picks a sub-space of it (``""`` by default). The
    MIME type is decided as in ``StoreFile``: the blob is written and the
    FileItem built by the :class:`~docbinder.application.steps.storing.FileStorer`
    the composition root shares with ``StoreFile`` and ``ProduceFile``.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, storer: FileStorer) -> None:
        self._uow = uow_factory
        self._storer = storer

    def __call__(
        self,
        principal: Principal,
        name: str,
        data: FileData,
        *,
        namespace: str = "",
        file_name: str | None = None,
        mime_type: str | None = None,
        user_metadata: dict[str, Any] | None = None,
        host_data: dict[str, Any] | None = None,
        then: Callable[[UnitOfWork, StoredVersion], T] | None = None,
        provenance: Provenance | None = None,
    ) -> tuple[StoredVersion, T | None]:
        """Store ``data`` as the next version of ``name``; return it and ``then``'s result.

        ``provenance`` (B9) is what the producer declares (a harvested file's
        sandbox and path, :mod:`docbinder.harvest`); without it the bound tool
        call is recorded, and without that nothing.

        ``file_name`` (default ``name``) is the FileItem's file name.
        ``mime_type`` as in ``StoreFile`` (declared, else detected, else
        guessed). ``then(uow, stored)`` runs inside the recording
        transaction, like ``FileStorer.store``'s ``then``. Raises
        :class:`InvalidInput` (bad name, namespace or metadata),
        :class:`AccessDenied`, :class:`SizeLimitExceeded`,
        :class:`StorageError`; nothing is kept when it raises (a blob left
        by an interrupted commit is removed by ``gc``). After the commit the
        new blob is recorded as committed in the store (ADR 0031).
        """
        series = VersionSeries(principal.scope, name, namespace)
        user_metadata = dict(user_metadata or {})
        host_data = dict(host_data or {})
        # Validate the metadata before anything is written (the id is a placeholder).
        FileVersion("unsaved", series, 0, user_metadata, host_data)
        storer = self._storer
        blob = storer.write_blob(principal, data)
        file_id, key = blob.file_id, blob.key
        committing = False
        stored: StoredVersion | None = None
        result: T | None = None
        try:
            item = storer.new_item(
                principal,
                blob,
                file_name if file_name is not None else name,
                mime_type,
                # A host that binds its tool call (ADK's provenance plugin) declares it here.
                provenance=provenance_for(provenance, run_id=None, workflow_id=None, parents=()),
            )

            def save_unit() -> tuple[StoredVersion, T | None] | None:
                """One numbering and recording unit; ``None`` when the number was taken."""
                nonlocal committing, stored, result
                try:
                    with self._uow() as uow:
                        latest = uow.versions.latest_version(series.key)
                        number = 0 if latest is None else latest.version + 1
                        version = FileVersion(file_id, series, number, user_metadata, host_data)
                        uow.files.add(item, deduplicate=False)
                        storer.write_inline(uow, blob, item)
                        try:
                            uow.versions.add_version(version)
                        except VersionTaken:
                            uow.rollback()
                            return None
                        stored = StoredVersion(item, version)
                        result = then(uow, stored) if then is not None else None
                        committing = True
                        uow.commit()
                        return stored, result
                except TransactionAborted:
                    committing = False  # the database ended the unit: nothing of it committed
                    raise

            for _attempt in range(MAX_SAVE_ATTEMPTS):
                saved = run_again_if_aborted(save_unit, f"saving a version of {name!r}")
                if saved is None:
                    continue
                stored, result = saved
                number = stored.version.version
                storer.confirm_new(blob)  # after the commit, outside the unit (ADR 0031)
                log.info(
                    "saved version %d of %r (file %s, %d bytes) for user %s in scope %s",
                    number,
                    name,
                    file_id,
                    item.size,
                    principal.user_id,
                    principal.scope,
                )
                return stored, result
            raise StorageError(
                f"could not number a version of {name!r}: "
                f"{MAX_SAVE_ATTEMPTS} concurrent saves took every number first"
            )
        except Exception as exc:
            if committing:
                known, found = storer.look_up_after_failed_commit(file_id, key, exc)
                if found is not None and stored is not None:
                    storer.confirm_new(blob)
                    return stored, result
                if not known:
                    raise  # unknown: the blob stays for gc
            storer.discard_new(blob)
            raise
        except BaseException:
            if committing:
                if blob.inline is None:
                    log.warning("orphan blob left for gc: %s (commit interrupted)", key)
            else:
                storer.discard_new(blob)
            raise
