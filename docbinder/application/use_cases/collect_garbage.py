"""Maintenance: find and remove what a crash or a fault left behind (``docbinder gc``).

Blob first, then metadata (SPEC section 5) means a crash can leave a blob no
FileItem names (an orphan blob) but never a FileItem whose blob was not yet
written. A FileItem whose blob vanished later (an operator deleted it) is an
orphan row. Orphan blobs younger than ``grace_seconds`` are kept: they may
belong to a store that is still running.

``gc`` never treats "I cannot see it" as "it is garbage" (ADR 0012):

* it considers only FileItems whose ``blob_store`` is the identity of the
  store it is connected to (rows of another store are counted and reported,
  never touched; rows stored before identities existed are adopted once
  their blob is found here), and only keys of docbinder's own layout
  (:func:`~docbinder.ports.blobs.is_own_key`);
* it removes an unnamed blob only if the blob's provenance mark
  (:func:`~docbinder.ports.blobs.read_origin`) proves that this store wrote
  it for this database (or for no named database, while no other database is
  registered): a file somebody else put into the layout, a blob of another
  database sharing the store, or one copied from another store is reported,
  never removed (ADR 0022); a blob marked with an id this database had
  before it was copied or moved (``former_database_ids``) is not provably
  its own either: the copy it came from may still use that id; a compact
  mark (ADR 0036), which names no database, is verified against this
  database's id, its former ids, the databases registered in the store and
  "no database": one written by a database that is none of these is
  unproven (kept and listed) rather than counted as another database's;
* it never removes an unnamed blob the store records as committed
  (:meth:`~docbinder.ports.blobs.BlobStore.mark_committed`, set after the
  commit of the FileItem that named it, ADR 0031): a FileItem named it once,
  so a database that names it no more was most likely restored from a
  backup or copied; such blobs are reported (``committed_blobs``), never
  removed, and only unconfirmed ones (a crash between blob write and
  commit, a rolled-back write) are removed;
* it never runs with a grace period below :data:`MIN_GRACE_SECONDS` unless
  told that no store is running (``allow_short_grace``), and reads the rows
  again right before removing blobs, so a store that committed meanwhile
  keeps its blob;
* a FileItem whose blob is missing is first marked; only a later run, after
  the grace period, removes it if its blob is still missing;
* it refuses (:class:`~docbinder.domain.errors.UnsafeOperation`, naming the
  setting to check) when what it would remove looks like a configuration
  mistake: a store without identity facing rows, rows of another store
  identity whose blobs are in this store (its identity file was deleted or
  replaced), this database missing from the store's registrations while
  blobs of uncertain owner are there, one of the newest FileItems of this
  store without its blob (the store is an older copy: a backup or snapshot
  configured by mistake), an empty database facing a store with
  blobs, unnamed blobs without database mark in a store that another
  metadata database also writes into, an empty store facing its rows, or
  more than ``max_share`` of the rows or blobs at once. ``force`` overrides
  that (never the grace floor), and the report says what it overrode;
* it refuses (:class:`~docbinder.domain.errors.StoreMoved`, which ``force``
  does not override) to mark or remove anything when the store's location
  differs from the one the database recorded for its identity: the store is
  a copy, a backup or a moved store, in which every file stored since the
  copy looks lost (ADR 0030; ``docbinder store adopt`` accepts a store moved
  on purpose). A store without location support, or one whose location was
  never recorded, is guarded only by the rules above, as before.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta

import attrs

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.blob_rules import is_committed, release_blob
from docbinder.application.steps.database_claim import (
    claim_for_destruction,
    cloned_message,
    read_claim,
)
from docbinder.application.steps.expiry import hold_on
from docbinder.application.steps.provider_copies import CleanupReport, ProviderCopyCleaner
from docbinder.application.steps.store_registration import (
    LocationCheck,
    check_location,
    moved_store_message,
)
from docbinder.application.use_cases.manage_retention import ExpiredFile, ManageRetention
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import (
    BlobMissing,
    DatabaseCloned,
    InvalidInput,
    StoreMoved,
    UnsafeOperation,
)
from docbinder.domain.model import FileItem
from docbinder.ports.blobs import BlobStore, InliningBlobStore, is_own_key, read_origin
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 3600
"""Orphan blobs younger than this many seconds are left alone; a mark must be this old to sweep."""

MAX_GRACE_SECONDS = 1e10
"""Largest grace period, in seconds, ``gc`` accepts: as a retention period's bound, about 316 years."""

MIN_GRACE_SECONDS = 300
"""Smallest grace period, in seconds, that ``gc`` accepts unless told no store is running.

A store's blob is visible, and ages, before its FileItem commits. In between,
a store checks for a duplicate (one blob-store request: at most 29 s on S3 with
the default timeouts, ``docbinder.adapters.s3.blobs.worst_case_seconds``) and
opens its writing unit (SQLite waits up to its 30 s busy timeout for the write
lock), for at most 4 rounds when concurrent writers keep changing the
candidate: 4 x (29 s + 30 s) = 236 s, rounded up to 300 s. Not covered: the
upload itself on S3, whose ``LastModified`` is the start of a multipart upload;
the default grace (:data:`DEFAULT_GRACE_SECONDS`) is for that.
"""

NEWEST_ROWS_CHECKED = 3
"""How many of this store's newest FileItems must have their blobs before gc marks or removes rows.

A store is written before its rows commit (SPEC section 5), so the newest
rows' blobs are the last a store can lack: when one of them is missing, the
connected store is most likely an older copy of the real one (a backup, a
restored snapshot), in which every row stored since looks blob-less.
"""

DEFAULT_MAX_SHARE = 0.5
"""Largest share (0..1) of this store's rows, or of its blobs, one run may mark or remove."""


COMMITTED_ORPHANS_HINT = (
    "was the database restored from a backup or copied? check database_url "
    "(DOCBINDER_DATABASE_URL); a delete whose blob removal failed leaves such a blob too "
    "(its warning names it). They are kept: remove them by hand only once sure"
)
"""What ``gc`` says about unnamed blobs the store records as committed (ADR 0031)."""


@attrs.frozen
class GcReport:
    """What ``gc`` found (and, unless ``dry_run``, did).

    ``orphan_blobs``: keys of docbinder's layout no FileItem names, older than
    the grace period (removed); ``young_blobs``: such keys inside the grace
    period (kept); ``orphan_rows``: ids of FileItems whose blob stayed missing
    since a mark older than the grace period (removed); ``marked_rows``: ids
    of FileItems whose blob is missing and that are marked (newly or still
    inside the grace period; kept); ``bytes_freed`` in bytes.
    ``store_id`` is the connected store's identity (``None``: it has none);
    ``foreign_rows`` counts rows of other stores by identity (never touched);
    ``unattributed_rows`` counts rows without identity whose blob is not in
    this store (never touched); ``adopted_rows`` counts rows without identity
    whose blob was found here (their identity is recorded); ``other_keys``
    counts keys outside docbinder's layout (never touched). ``refusal`` says
    why an apply would be refused (set in a dry run, or when ``force``
    overrode it: then ``forced`` is true).
    ``other_database_blobs`` counts unnamed blobs whose mark names another
    metadata database (theirs; never touched); ``unproven_blobs`` are
    unnamed keys of docbinder's layout whose mark does not prove this store
    wrote them (another program's files, blobs copied from another store or
    written before marks existed, and blobs with a compact mark (ADR 0036) of
    a database neither this one, a former id of it nor registered in the
    store; never touched); ``displaced_rows`` counts,
    by store identity, rows of another store whose blobs are in this one
    (the store's identity file was deleted or replaced); ``short_grace`` is
    true when the grace floor was lowered on request.
    ``former_database_blobs`` counts unnamed blobs marked with an id this
    database had before it was copied or moved (the copy it came from may
    still use that id; never touched); ``database_moved`` is true when the
    database was copied or moved since its last write (a new id is made on
    the next write).
    ``store_moved`` is true when the store's location differs from the one
    recorded for its identity (a dry run then carries the refusal; an apply
    raises :class:`~docbinder.domain.errors.StoreMoved`); ``location_checked``
    is true when it matched (false: no location support, or none recorded
    yet, so only the other guards applied).
    ``committed_blobs`` are unnamed blobs of this database older than the
    grace period that the store records as committed (ADR 0031): a FileItem
    named each once, so the database was probably restored from a backup or
    copied (or a delete could not remove the blob); never touched.
    """

    orphan_blobs: tuple[str, ...]
    young_blobs: tuple[str, ...]
    orphan_rows: tuple[str, ...]
    bytes_freed: int
    dry_run: bool
    marked_rows: tuple[str, ...] = ()
    store_id: str | None = None
    foreign_rows: tuple[tuple[str, int], ...] = ()
    unattributed_rows: int = 0
    adopted_rows: int = 0
    other_keys: int = 0
    refusal: str | None = None
    forced: bool = False
    other_database_blobs: int = 0
    unproven_blobs: tuple[str, ...] = ()
    displaced_rows: tuple[tuple[str, int], ...] = ()
    short_grace: bool = False
    former_database_blobs: int = 0
    database_moved: bool = False
    store_moved: bool = False
    location_checked: bool = False
    committed_blobs: tuple[str, ...] = ()
    expired_rows: tuple[str, ...] = ()
    provider_copies_deleted: int = 0
    """Copies at model providers of deleted FileItems deleted by this run (B22)."""
    provider_copies_kept: int = 0
    """Copies still to delete: their provider is not registered or refused (retried by the next run)."""
    """FileItems of this store past their retention period for longer than the grace
    period and not held (B5): removed, with their blob, as ``files rm --force`` does
    (listed only, in a dry run)."""
    inline_blobs: int = 0
    """Blobs kept in the metadata database (the inline tier, ADR 0110) after this run;
    they are judged like every other blob (``orphan_blobs`` and ``committed_blobs`` may
    name some)."""
    inline_bytes: int = 0
    """Their bytes in all."""


@attrs.frozen
class _Scan:
    store_id: str | None
    database_id: str | None
    former_ids: tuple[str, ...]
    registered: bool
    other_databases: int
    mine: list[FileItem]
    adopt: list[FileItem]
    foreign: Counter[str]
    unattributed: int
    own_keys: set[str]
    other_keys: int
    orphans: list[str]
    anonymous: list[str]
    other_database: list[str]
    unproven: list[str]
    former: list[str]
    committed: list[str]
    displaced: Counter[str]
    young: list[str]
    freed: int
    suspects: list[FileItem]
    total_rows: int
    location: LocationCheck


class CollectGarbage:
    """Find orphan blobs and FileItems without blob of the connected store; remove them unless ``dry_run``."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        clock: Clock,
        retention: ManageRetention | None = None,
        audit: AuditTrail = DISABLED,
        provider_copies: ProviderCopyCleaner | None = None,
    ) -> None:
        self._copies = provider_copies
        self._retention = retention
        self._audit = audit
        self._uow = uow_factory
        self._blobs = blobs
        self._clock = clock

    def __call__(
        self,
        *,
        dry_run: bool = True,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        force: bool = False,
        max_share: float = DEFAULT_MAX_SHARE,
        allow_short_grace: bool = False,
    ) -> GcReport:
        """Scan every FileItem and every blob key once; memory grows with the number of FileItems.

        ``grace_seconds`` below :data:`MIN_GRACE_SECONDS` needs
        ``allow_short_grace`` (the caller knows no store or update writes into
        this blob store meanwhile), else :class:`UnsafeOperation` when not
        ``dry_run``; ``force`` does not lower the floor. Raises
        :class:`~docbinder.domain.errors.DatabaseCloned` (nothing marked or
        removed, ``force`` or not) when not ``dry_run`` and another database
        with this database's id holds its claim in the blob store (ADR 0075);
        a dry run carries it as the refusal. Raises
        :class:`UnsafeOperation` (nothing removed) when not ``dry_run``, not
        ``force`` and the run looks like a configuration mistake (see the
        module docstring); :class:`StorageError` for backend faults;
        :class:`InvalidInput` for a ``grace_seconds`` that is not a number from
        0 to :data:`MAX_GRACE_SECONDS`.
        """
        if not 0 <= grace_seconds <= MAX_GRACE_SECONDS:  # NaN included
            raise InvalidInput(
                f"the grace period must be from 0 to {MAX_GRACE_SECONDS:g} seconds "
                f"(about 316 years), got {grace_seconds!r}"
            )
        short_grace = grace_seconds < MIN_GRACE_SECONDS
        if short_grace and not dry_run and not allow_short_grace:
            raise UnsafeOperation(
                f"gc refused: a grace period of {grace_seconds:g} s is below the floor of "
                f"{MIN_GRACE_SECONDS} s: a store still running may own a blob that young, or "
                "be about to commit the FileItem of a blob gc would remove; nothing was removed "
                "(--below-grace-floor overrides, only while no docbinder process writes into "
                f"{self._blobs.url}; --force does not)"
            )
        # A clone shares this database's id and marks (ADR 0075): the store's claim decides.
        claim = read_claim(self._uow, self._blobs)
        if claim.cloned and claim.database_id is not None and not dry_run:
            raise DatabaseCloned(
                f"gc refused: {cloned_message(self._blobs.url, claim.database_id)}; nothing "
                "was marked or removed",
                claim.database_id,
            )
        scan = self._scan(grace_seconds)
        if scan.location.moved and not dry_run:
            raise StoreMoved(
                f"gc refused: {moved_store_message(self._blobs.url)}; nothing was marked or removed"
            )
        absent = [i for i in scan.suspects if not self._blobs.exists(i.blob_key)]
        now = self._clock.now()
        cutoff_marks = now - timedelta(seconds=grace_seconds)
        with self._uow() as uow:
            marks = uow.maintenance.marks()
            # The scan is a snapshot: keep only rows that still name the missing blob
            # (an update may have switched a row to a new blob since).
            current = uow.files.get_many([i.id for i in absent])
        missing = [
            i
            for i in absent
            if (row := current.get(i.id)) is not None
            and row.blob_key == i.blob_key
            and row.blob_store == i.blob_store
        ]
        due = [
            i
            for i in missing
            if (mark := marks.get(i.id)) is not None
            and mark[0] == i.blob_key
            and mark[1] <= cutoff_marks
        ]
        if scan.committed:
            log.warning(
                "gc kept %d blob(s) this database committed that no FileItem names: %s",
                len(scan.committed),
                COMMITTED_ORPHANS_HINT,
            )
        if scan.location.moved:
            refusal: str | None = moved_store_message(self._blobs.url)
        else:
            refusal = self._refusal(scan, missing, max_share)
        if claim.cloned and claim.database_id is not None:
            cloned = cloned_message(self._blobs.url, claim.database_id)
            refusal = cloned if refusal is None else f"{refusal}; and {cloned}"
        if refusal is not None and not dry_run and not force:
            raise UnsafeOperation(f"gc refused: {refusal}; nothing was removed (--force overrides)")
        removed_rows: list[str] = []
        marked: list[str] = [i.id for i in missing if i not in due]
        expired = self._expired(scan.store_id, grace_seconds)
        if dry_run:
            removed_rows = [i.id for i in due]
            expired_rows = [e.item.id for e in expired]
        else:
            if refusal is not None:
                log.warning("gc --force overrides: %s", refusal)
            if short_grace:
                log.warning(
                    "gc runs with a grace period of %g s, below the floor of %d s, on request",
                    grace_seconds,
                    MIN_GRACE_SECONDS,
                )
            if expired or due or scan.orphans:
                # Only a pass that frees something checks and rotates the claim: an idle gc
                # loop would otherwise outrun the tokens the database keeps (ADR 0075).
                claim_for_destruction(self._uow, self._blobs)
            expired_rows = self._remove_expired(expired, grace_seconds)
            self._adopt(scan)
            removed_rows, marked = self._sweep(scan, missing, due)
            removed_blobs = self._remove_blobs(scan.orphans)
        copies = self._delete_provider_copies(dry_run)
        inline_blobs, inline_bytes = (
            self._blobs.inline_totals() if isinstance(self._blobs, InliningBlobStore) else (0, 0)
        )
        return GcReport(
            inline_blobs=inline_blobs,
            inline_bytes=inline_bytes,
            orphan_blobs=tuple(scan.orphans if dry_run else removed_blobs),
            young_blobs=tuple(scan.young),
            orphan_rows=tuple(removed_rows),
            bytes_freed=scan.freed,
            dry_run=dry_run,
            marked_rows=tuple(marked),
            store_id=scan.store_id,
            foreign_rows=tuple(sorted(scan.foreign.items())),
            unattributed_rows=scan.unattributed,
            adopted_rows=len(scan.adopt),
            other_keys=scan.other_keys,
            refusal=refusal,
            forced=refusal is not None and force and not dry_run,
            other_database_blobs=len(scan.other_database),
            unproven_blobs=tuple(scan.unproven),
            displaced_rows=tuple(sorted(scan.displaced.items())),
            short_grace=short_grace and not dry_run,
            former_database_blobs=len(scan.former),
            database_moved=scan.database_id is None and bool(scan.former_ids),
            store_moved=scan.location.moved,
            location_checked=scan.location.confirmed,
            committed_blobs=tuple(scan.committed),
            expired_rows=tuple(expired_rows),
            provider_copies_deleted=copies.deleted + copies.already_gone,
            provider_copies_kept=copies.kept,
        )

    def _delete_provider_copies(self, dry_run: bool) -> CleanupReport:
        """Delete the provider copies of deleted FileItems still recorded (B22); a dry run counts them."""
        if self._copies is None:
            return CleanupReport()
        if dry_run:
            with self._uow() as uow:
                return CleanupReport(kept=len(uow.provider_copies.deleting(1000)))
        return self._copies.retry()

    def _expired(self, store_id: str | None, grace_seconds: float) -> list[ExpiredFile]:
        """The expired, unheld FileItems of the connected store, past the grace period (B5)."""
        if self._retention is None:
            return []
        found = self._retention.expired(grace=timedelta(seconds=grace_seconds))
        return [e for e in found if e.item.blob_store == store_id]

    def _remove_expired(self, expired: list[ExpiredFile], grace_seconds: float) -> list[str]:
        """Delete each expired FileItem, then release its blob as a delete does.

        Each in its own unit, after locking the row: only if it still names its
        blob and, read again now, is still expired and under no hold
        (:meth:`ManageRetention.still_due`), so a hold placed while gc runs holds.
        """
        removed: list[str] = []
        grace = timedelta(seconds=grace_seconds)
        for entry in expired:
            item = entry.item
            with self._uow() as uow:
                if uow.files.lock(item.id) is None:
                    continue
                if self._retention is None or not self._retention.still_due(uow, item, grace):
                    log.info("gc keeps file %s: no longer expired or now held", item.id)
                    continue
                if not uow.files.delete(item.id, if_blob_key=item.blob_key):
                    continue
                if self._audit.enabled:
                    self._audit.record(
                        uow,
                        self._audit.event(
                            AuditAction.DELETE,
                            None,
                            outcome="expired",
                            file_id=item.id,
                            mandate_id=item.scope.mandate_id,
                            detail={"expiredAt": entry.expired_at.isoformat()},
                        ),
                    )
                if self._copies is not None:
                    self._copies.mark(uow, item)
                database_id = uow.maintenance.database_id()
                locations = uow.maintenance.store_locations()
                uow.commit()
            release_blob(self._blobs, item.blob_key, database_id, locations)
            log.info("gc removed expired file %s (expired %s)", item.id, entry.expired_at)
            removed.append(item.id)
        return removed

    def _remove_blobs(self, orphans: list[str]) -> list[str]:
        """Delete the orphan blobs no row names now; return the keys removed.

        The rows are read again first: a store or update that committed since
        the scan names its blob and keeps it (the grace period covers only the
        stores that have not committed yet).
        """
        if not orphans:
            return []
        with self._uow() as uow:
            named = {item.blob_key for item in uow.maintenance.iter_files()}
        removed: list[str] = []
        for key in orphans:
            if key in named:
                log.info("gc kept blob %s: a FileItem committed meanwhile names it", key)
                continue
            self._blobs.delete(key)
            removed.append(key)
            log.info("gc removed orphan blob %s", key)
        return removed

    def _scan(self, grace_seconds: float) -> _Scan:
        store_id = self._blobs.identity(create=False)
        own_keys: set[str] = set()
        other_keys = 0
        for key in self._blobs.keys():
            if is_own_key(key):
                own_keys.add(key)
            else:
                other_keys += 1
        # Rows are read after the listing: a key listed was written before this read,
        # so a row naming it (a finished store or update) is in it; a store still
        # between its blob write and its commit is what the grace period is for.
        with self._uow() as uow:
            items = list(uow.maintenance.iter_files())
            database_id = uow.maintenance.database_id()
            former_ids = uow.maintenance.former_database_ids()
            recorded = uow.maintenance.store_locations()
        # Where the store is now against where this database first wrote into it
        # (ADR 0030): a copy carries the identity but not the location.
        location = check_location(self._blobs, store_id, recorded)
        databases = self._blobs.databases()
        other_databases = len(databases - {database_id})
        mine = [i for i in items if store_id is not None and i.blob_store == store_id]
        legacy = [i for i in items if i.blob_store is None]
        adopt = [i for i in legacy if store_id is not None and i.blob_key in own_keys]
        foreign = Counter(
            i.blob_store for i in items if i.blob_store is not None and i.blob_store != store_id
        )
        # Rows of another identity whose blobs are here: this store's identity was
        # deleted or replaced (a new one is made on the next write). Inline blobs live
        # in the database, beside whatever store blob_url names (ADR 0110): they tell
        # nothing of that store's identity.
        inline = self._blobs.inline_keys() if isinstance(self._blobs, InliningBlobStore) else set()
        displaced = Counter(
            i.blob_store or ""
            for i in items
            if i.blob_store is not None
            and i.blob_store != store_id
            and i.blob_key in own_keys
            and i.blob_key not in inline
        )
        # Every row of every store protects its key: a key named anywhere is never an orphan.
        named = {item.blob_key for item in items}
        cutoff = self._clock.now() - timedelta(seconds=grace_seconds)
        orphans: list[str] = []
        anonymous: list[str] = []
        other_database: list[str] = []
        unproven: list[str] = []
        former: list[str] = []
        committed: list[str] = []
        young: list[str] = []
        freed = 0
        # A compact mark (ADR 0036) names no database: it is verified against each
        # database this one knows of. One of an unknown, unregistered database
        # verifies against none and is unproven: kept, as another database's would be.
        candidates: list[str | None] = [database_id] if database_id is not None else []
        candidates += sorted({*former_ids, *databases} - {database_id})
        candidates.append(None)
        for key in sorted(own_keys - named):
            try:
                stat = self._blobs.stat(key)
            except BlobMissing:
                continue
            if stat.modified_at > cutoff:
                young.append(key)
                continue
            origin = read_origin(stat.origin, key, store_id, candidates)
            if origin is None or store_id is None or origin.store_id != store_id:
                unproven.append(key)  # not provably written by this store: never removed
                continue
            if origin.database_id is not None and origin.database_id in former_ids:
                # Marked with an id this database had before it was copied or moved:
                # the copy it came from may still use that id and name the blob.
                former.append(key)
                continue
            if origin.database_id is not None and origin.database_id != database_id:
                other_database.append(key)  # another database's blob: theirs to collect
                continue
            try:
                confirmed = is_committed(self._blobs, key)
            except BlobMissing:
                continue
            if confirmed:
                # A FileItem naming it committed once (ADR 0031): a restored or copied
                # database names it no more; kept and reported, never removed.
                committed.append(key)
                continue
            if origin.database_id is None:
                anonymous.append(key)  # this store's, database unknown: see the refusals
            orphans.append(key)
            freed += stat.size
        suspects = [i for i in mine if i.blob_key not in own_keys]
        return _Scan(
            store_id=store_id,
            database_id=database_id,
            former_ids=former_ids,
            registered=database_id is not None and database_id in databases,
            other_databases=other_databases,
            mine=mine,
            adopt=adopt,
            foreign=foreign,
            unattributed=len(legacy) - len(adopt),
            own_keys=own_keys,
            other_keys=other_keys,
            orphans=orphans,
            anonymous=anonymous,
            other_database=other_database,
            unproven=unproven,
            former=former,
            committed=committed,
            displaced=displaced,
            young=young,
            freed=freed,
            suspects=suspects,
            total_rows=len(items),
            location=location,
        )

    def _refusal(self, scan: _Scan, lacking: list[FileItem], max_share: float) -> str | None:
        """Why removing what ``scan`` found looks like a configuration mistake, or ``None``.

        ``lacking``: this store's FileItems whose blob is missing.
        """
        url = self._blobs.url
        missing = len(lacking)
        if scan.displaced:
            return self._identity_lost(scan)
        if scan.store_id is None and scan.total_rows:
            # Nothing of this database can be attributed to the store: the signal of
            # a wrong blob_url, refused even when nothing would be removed.
            return (
                f"blob store {url} has no docbinder store identity but the database holds "
                f"{scan.total_rows} FileItem(s): blob_url (DOCBINDER_BLOB_URL) probably "
                "points at the wrong place"
            )
        rows_here = len(scan.mine) + len(scan.adopt)
        uncertain = (
            len(scan.anonymous) + len(scan.other_database) + len(scan.unproven) + len(scan.former)
        )
        if (
            not scan.registered
            and scan.database_id is not None
            and scan.store_id is not None
            and rows_here
            and uncertain
        ):
            # This database wrote here (it has rows in this store) and registers itself
            # before its first write: its registration is gone, and with it perhaps
            # those of the databases that own the blobs no row of this one names.
            return (
                f"this database ({scan.database_id}) holds {rows_here} FileItem(s) of blob "
                f"store {url} but is missing from the store's registrations "
                f"(.docbinder-databases/{scan.database_id}), and the store holds {uncertain} "
                "blob(s) no FileItem of this database names: the registrations were probably "
                "lost by a move or copy that left out .docbinder-databases; restore it from "
                "the original store, and check blob_url (DOCBINDER_BLOB_URL)"
            )
        if rows_here == 0 and (scan.orphans or scan.other_database or scan.committed):
            # Blobs another database wrote are never removed, but facing them with
            # no row of this store is what a wrong database_url looks like.
            return (
                f"the database holds no FileItem of blob store {url} but the store holds "
                f"{len(scan.own_keys)} blob(s): database_url (DOCBINDER_DATABASE_URL) probably "
                "points at the wrong database"
            )
        if missing and scan.committed:
            # A row without blob facing a blob a FileItem of this database named once
            # (ADR 0031): a backup restored in place, in which a file whose content was
            # replaced since names its former blob, while its current bytes are the
            # committed blob no row names. Removing the row would lose the file.
            return (
                f"{missing} FileItem(s) of blob store {url} have no blob while "
                f"{len(scan.committed)} blob(s) this database committed are named by no "
                "FileItem: the database or the blob store was probably restored from a "
                "backup or copied (a file whose content changed since names its former "
                "blob); check database_url (DOCBINDER_DATABASE_URL) and blob_url "
                "(DOCBINDER_BLOB_URL) and restore the newest backups (use --force only if "
                "these files were really deleted)"
            )
        if not scan.orphans and not missing:
            return None
        stale = _newest_without_blob(scan.mine, lacking)
        if stale:
            return (
                f"{len(stale)} of the {NEWEST_ROWS_CHECKED} newest FileItem(s) of blob store "
                f"{url} have no blob ({', '.join(stale)}), and a store always holds the blobs "
                "of its newest FileItems: blob_url (DOCBINDER_BLOB_URL) probably points at an "
                "older copy of the store (a backup or restored snapshot), in which every file "
                "stored since looks lost; check it (use --force only if these blobs were "
                "really deleted)"
            )
        if scan.anonymous and scan.other_databases:
            return (
                f"blob store {url} is also written by {scan.other_databases} other metadata "
                f"database(s), and {len(scan.anonymous)} blob(s) no FileItem of this database "
                "names carry no database mark, so they may be theirs: give "
                "each database its own blob_url (DOCBINDER_BLOB_URL: another prefix or "
                "directory), or check database_url (DOCBINDER_DATABASE_URL)"
            )
        if missing and not scan.own_keys:
            return (
                f"blob store {url} holds no blobs but {len(scan.mine)} FileItem(s) were stored "
                "in it: check blob_url (DOCBINDER_BLOB_URL), or whether the store was emptied"
            )
        if missing > max_share * max(1, len(scan.mine)):
            return (
                f"{missing} of {len(scan.mine)} FileItem(s) of blob store {url} have no blob "
                f"(more than {max_share:.0%}): check blob_url (DOCBINDER_BLOB_URL)"
            )
        if len(scan.orphans) > max_share * max(1, len(scan.own_keys)):
            return (
                f"{len(scan.orphans)} of {len(scan.own_keys)} blob(s) in {url} are named by no "
                f"FileItem (more than {max_share:.0%}): check database_url (DOCBINDER_DATABASE_URL)"
            )
        return None

    def _identity_lost(self, scan: _Scan) -> str:
        """The refusal for rows of another store identity whose blobs are in this store."""
        url = self._blobs.url
        (old, count), *_rest = scan.displaced.most_common()
        now = (
            f"whose identity is now {scan.store_id}"
            if scan.store_id is not None
            else "which has no identity now"
        )
        restore = (
            f"put it back: write {old} into {url}/.docbinder-store (stop every docbinder "
            "process writing there first)"
        )
        return (
            f"{count} FileItem(s) recorded in blob store {old} have their blobs "
            f"in {url}, {now}: the store's identity file .docbinder-store was probably deleted "
            f"or replaced (a new identity is made on the next write); {restore}; FileItems "
            "stored since carry the new identity and are then reported as another store's "
            "(--force runs gc without touching either)"
        )

    def _adopt(self, scan: _Scan) -> None:
        """Record the store identity on rows without one whose blob is in this store."""
        if not scan.adopt or scan.store_id is None:
            return
        with self._uow() as uow:
            for item in scan.adopt:
                uow.maintenance.set_blob_store(item.id, item.blob_key, scan.store_id)
            uow.commit()
        log.info("gc recorded store %s on %d older FileItem(s)", scan.store_id, len(scan.adopt))

    def _sweep(
        self, scan: _Scan, missing: list[FileItem], due: list[FileItem]
    ) -> tuple[list[str], list[str]]:
        """Mark rows newly found without blob, remove those marked long enough; clear stale marks.

        The scan is a snapshot: since it was taken, a FileItem may have been
        deleted, or switched to a new blob by an update (which then removed the
        old one). Only a row that still names the same, still missing, blob is
        marked or removed; a row that moved on is live data and is kept. The
        blob store was asked before this unit began, so it holds the write
        lock without waiting on the network.
        """
        removed: list[str] = []
        marked: list[str] = []
        due_ids = {i.id for i in due}
        missing_ids = {i.id for i in missing}
        mine_ids = {i.id for i in scan.mine}
        with self._uow() as uow:
            for item in missing:
                current = uow.files.lock(item.id) if item.id in due_ids else uow.files.get(item.id)
                if (
                    current is None
                    or current.blob_key != item.blob_key
                    or current.blob_store != item.blob_store
                ):
                    continue
                if item.id in due_ids and hold_on(uow, current) is not None:
                    # a held row stays, bytes or not: the hold says nothing of it may go (B5)
                    log.warning(
                        "gc keeps FileItem %s: its blob is missing, but a legal hold names it",
                        item.id,
                    )
                    continue
                if item.id in due_ids:
                    if uow.files.delete(item.id, if_blob_key=item.blob_key):
                        if self._copies is not None:
                            self._copies.mark(uow, item)
                        removed.append(item.id)
                        log.info("gc removed FileItem %s whose blob stayed missing", item.id)
                    continue
                uow.maintenance.mark_missing(item.id, item.blob_key, self._clock.now())
                marked.append(item.id)
                log.info("gc marked FileItem %s: blob %s is missing", item.id, item.blob_key)
            for file_id in uow.maintenance.marks():
                if file_id in mine_ids and file_id not in missing_ids:
                    uow.maintenance.clear_mark(file_id)
            uow.commit()
        return removed, marked


def _newest_without_blob(rows: list[FileItem], lacking: list[FileItem]) -> list[str]:
    """Ids of the :data:`NEWEST_ROWS_CHECKED` newest ``rows`` (``created_at``, id) in ``lacking``."""
    newest = sorted(rows, key=lambda i: (i.created_at, i.id), reverse=True)
    without = {i.id for i in lacking}
    return [i.id for i in newest[:NEWEST_ROWS_CHECKED] if i.id in without]
