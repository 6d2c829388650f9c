"""Remove extraction cache entries that no FileItem needs (feature B10, a step of ``docbinder gc``).

The cache is keyed by content hash (``sha256``); an entry whose hash no
FileItem has can serve no extraction. The cache itself and its payload are
:mod:`docbinder.application.steps.extraction_cache`.
"""

from __future__ import annotations

import logging

import attrs

from docbinder.ports.extractor import ExtractionCache
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)


@attrs.frozen
class CachePruneReport:
    """What pruning found: ``stale_hashes`` no FileItem has; ``removed`` entries (0 on a dry run)."""

    stale_hashes: tuple[str, ...]
    removed: int
    dry_run: bool


class PruneExtractionCache:
    """Remove cache entries whose content hash no FileItem has (a step of ``docbinder gc``).

    Safe by construction: the cache holds only what can be extracted again,
    so an entry removed while a FileItem with that hash is being stored costs
    one extraction, never content.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, cache: ExtractionCache) -> None:
        self._uow = uow_factory
        self._cache = cache

    def __call__(self, *, dry_run: bool = True) -> CachePruneReport:
        """Scan the cached hashes and every FileItem's hash once; remove the stale entries.

        The unit of work opens first, so a closed binder refuses (``BinderClosed``)
        even when the cache is empty.
        """
        with self._uow() as uow:
            cached = self._cache.hashes()
            if not cached:
                return CachePruneReport((), 0, dry_run)
            live = {item.sha256 for item in uow.maintenance.iter_files()}
        stale = tuple(sorted(cached - live))
        removed = 0 if dry_run or not stale else self._cache.remove(stale)
        if removed:
            log.info(
                "extraction cache: removed %d entries of %d unused hashes", removed, len(stale)
            )
        return CachePruneReport(stale, removed, dry_run)
