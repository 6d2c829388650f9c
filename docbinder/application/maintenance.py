"""Maintenance: find and remove what a crash or a fault left behind (``docbinder gc``).

Blob first, then metadata (SPEC section 5) means a crash can leave a blob no
FileItem names (an orphan blob) but never a FileItem whose blob was not yet
written. A FileItem whose blob vanished later (an operator deleted it) is an
orphan row. Orphan blobs younger than ``grace_seconds`` are kept: they may
belong to a store that is still running.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import attrs

from docbinder.domain.errors import BlobMissing
from docbinder.domain.model import FileItem
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 3600
"""Orphan blobs younger than this many seconds are left alone."""


@attrs.frozen
class GcReport:
    """What ``gc`` found (and, unless ``dry_run``, removed).

    ``orphan_blobs``: blob keys no FileItem names, older than the grace period;
    ``young_blobs``: such keys still inside the grace period (kept);
    ``orphan_rows``: ids of FileItems whose blob is missing; ``bytes_freed``.
    """

    orphan_blobs: tuple[str, ...]
    young_blobs: tuple[str, ...]
    orphan_rows: tuple[str, ...]
    bytes_freed: int
    dry_run: bool


class CollectGarbage:
    """Find orphan blobs and orphan FileItem rows; remove them unless ``dry_run``."""

    def __init__(self, uow_factory: UnitOfWorkFactory, blobs: BlobStore, clock: Clock) -> None:
        self._uow = uow_factory
        self._blobs = blobs
        self._clock = clock

    def __call__(
        self, *, dry_run: bool = True, grace_seconds: float = DEFAULT_GRACE_SECONDS
    ) -> GcReport:
        """Scan every FileItem and every blob key once; memory grows with the number of FileItems."""
        with self._uow() as uow:
            items = list(uow.files.iter_all())
        named = {item.blob_key for item in items}
        cutoff = self._clock.now() - timedelta(seconds=grace_seconds)
        orphans: list[str] = []
        young: list[str] = []
        freed = 0
        for key in self._blobs.keys():
            if key in named:
                continue
            try:
                stat = self._blobs.stat(key)
            except BlobMissing:
                continue
            if stat.modified_at > cutoff:
                young.append(key)
                continue
            orphans.append(key)
            freed += stat.size
        suspects = [item for item in items if not self._blobs.exists(item.blob_key)]
        if not dry_run:
            for key in orphans:
                self._blobs.delete(key)
                log.info("gc removed orphan blob %s", key)
        orphan_rows = self._orphan_rows(suspects, dry_run) if suspects else []
        return GcReport(tuple(orphans), tuple(young), tuple(orphan_rows), freed, dry_run)

    def _orphan_rows(self, suspects: list[FileItem], dry_run: bool) -> list[str]:
        """The suspects that still name a missing blob when read again; removed unless ``dry_run``.

        The scan is a snapshot: since it was taken, a FileItem may have been
        deleted, or switched to a new blob by an update (which then removed the
        old one). Only a row that still names the same, still missing, blob is
        an orphan; a row that moved on is live data and is kept.
        """
        found: list[str] = []
        with self._uow() as uow:
            for item in suspects:
                current = uow.files.get(item.id)
                if (
                    current is None
                    or current.blob_key != item.blob_key
                    or self._blobs.exists(current.blob_key)
                ):
                    continue
                if dry_run:
                    found.append(item.id)
                # Only if it still names the missing blob when the row is deleted.
                elif uow.files.delete(item.id, if_blob_key=item.blob_key):
                    found.append(item.id)
                    log.info("gc removed FileItem %s whose blob was missing", item.id)
            if found and not dry_run:
                uow.commit()
        return found
