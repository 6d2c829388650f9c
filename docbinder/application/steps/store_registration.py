"""Registering this metadata database in the blob store, once per process: :class:`StoreRegistration`.

Also where the blob store's location is checked against the one this database
recorded (ADR 0030): :func:`check_location`, :class:`AdoptStoreLocation`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

import attrs

from docbinder.domain.errors import StoreMoved, UnsafeOperation
from docbinder.ports.blobs import BlobStore, LocatingBlobStore, is_own_key, location_fingerprint
from docbinder.ports.metadata import UnitOfWorkFactory, store_location_key

log = logging.getLogger(__name__)


@attrs.frozen
class LocationCheck:
    """The connected blob store's location against the one the database recorded (ADR 0030).

    ``supported``: the store implements
    :class:`~docbinder.ports.blobs.LocatingBlobStore`; ``here``: the
    fingerprint (:func:`~docbinder.ports.blobs.location_fingerprint`) of where
    it is now, ``None`` when it has no location marker (or no support);
    ``recorded``: the fingerprint the database recorded for ``store_id``,
    ``None`` when none was recorded yet (no write since locations exist).
    """

    store_id: str | None
    supported: bool
    here: str | None
    recorded: str | None

    @property
    def moved(self) -> bool:
        """Whether the store is provably not the one recorded: a copy, a restore or a move."""
        return (
            self.supported
            and self.store_id is not None
            and self.recorded is not None
            and self.here != self.recorded
        )

    @property
    def confirmed(self) -> bool:
        """Whether the store is provably the one recorded (the location matches)."""
        return self.supported and self.recorded is not None and self.here == self.recorded


def current_location(blobs: BlobStore, *, create: bool = False) -> tuple[bool, str | None]:
    """``(supported, fingerprint of where the store is now or None)``; one blob-store call at most.

    Call it outside any unit of work (S3: one ``HeadObject``). Raises
    :class:`StorageError` when the store cannot be read.
    """
    if not isinstance(blobs, LocatingBlobStore):
        return False, None
    where = blobs.location(create=create)
    return True, None if where is None else location_fingerprint(where)


def check_location(
    blobs: BlobStore, store_id: str | None, recorded: Mapping[str, str]
) -> LocationCheck:
    """Compare the store's location now with ``recorded`` (:meth:`MaintenanceRepository.store_locations`).

    Reads the blob store (outside any unit of work); creates nothing.
    """
    supported, here = current_location(blobs)
    return LocationCheck(
        store_id=store_id,
        supported=supported,
        here=here,
        recorded=None if store_id is None else recorded.get(store_location_key(store_id)),
    )


def moved_store_message(url: str) -> str:
    """The sentence naming the likely mistake when the store's location does not match."""
    return (
        f"blob store {url} has the identity of the store this database writes into but not "
        "its location: blob_url (DOCBINDER_BLOB_URL) probably points at a copy, a backup or "
        "a moved store (cp -a or rsync of the blob directory, a restored snapshot, aws s3 "
        "sync into another bucket or prefix), where files stored since the copy look lost; "
        "check blob_url; if the store was moved on purpose, accept it with `docbinder store "
        "adopt` (--force does not)"
    )


class StoreRegistration:
    """Makes sure, once per process, that the blob store knows its identity and this database.

    :meth:`ensure` returns the store's identity (made on first use) and
    registers the metadata database's identity in the store, so that ``gc``
    run from another database sharing the store knows these blobs are not
    its orphans. Blob-store calls happen outside any unit of work; the
    database identity is read in a reading unit, and made in a writing unit
    only the first time ever, or when the database was copied or moved: a
    copy must not mark its blobs with the id of the database it was copied
    from (whose ``gc`` would take them for its own orphans), so
    :meth:`~docbinder.ports.metadata.MaintenanceRepository.database_id` gives
    ``None`` there and the writing unit makes a new id, keeping the old one
    as a former id (ADR 0022).

    It also records, the first time this database writes into a store that
    has a location (:class:`~docbinder.ports.blobs.LocatingBlobStore`), that
    location for the store's identity, and from then on refuses to write into
    a store with that identity elsewhere (:class:`StoreMoved`, ADR 0030):
    rows stored there would name blobs that exist only in the copy.
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, read_uow_factory: UnitOfWorkFactory, blobs: BlobStore
    ) -> None:
        self._uow = uow_factory
        self._read = read_uow_factory
        self._blobs = blobs
        self._lock = threading.Lock()
        self._registered = False

    def ensure(self) -> str | None:
        """The store's identity, after this database was registered in the store.

        Raises :class:`StorageError` when the store or the database fails,
        :class:`Conflict` when another process changed the database identity
        at the same moment (try again), and :class:`StoreMoved` (nothing
        written) when the store's location differs from the one recorded for
        its identity; the check is repeated on the next call until it passes.
        """
        store_id = self._blobs.identity(create=True)
        if self._registered:
            return store_id
        with self._lock:
            if not self._registered:
                supported, here = current_location(self._blobs, create=True)
                with self._read() as uow:
                    database_id = uow.maintenance.database_id()
                    recorded = uow.maintenance.store_locations().get(
                        store_location_key(store_id or "")
                    )
                unrecorded = store_id is not None and supported and recorded is None
                if database_id is None or unrecorded:
                    with self._uow() as uow:
                        database_id = uow.maintenance.database_id(create=True)
                        if unrecorded and store_id is not None and here is not None:
                            recorded = uow.maintenance.record_store_location(store_id, here)
                        uow.commit()
                if supported and store_id is not None and recorded != here:
                    raise StoreMoved(f"write refused: {moved_store_message(self._blobs.url)}")
                if database_id is not None:
                    self._blobs.register_database(database_id)
                self._registered = True
        return store_id


@attrs.frozen
class StoreAdoption:
    """What :class:`AdoptStoreLocation` did: the store, and the fingerprints before and after.

    ``previous`` is ``None`` when nothing was recorded; ``missing_blobs``
    counts this store's FileItems whose blob is not in it (accepted only
    with ``force``).
    """

    store_id: str
    url: str
    previous: str | None
    location: str
    missing_blobs: int


class AdoptStoreLocation:
    """Accept the connected blob store, where it is now, as the store of its identity (ADR 0030).

    For a store moved on purpose (copied to a new disk or bucket and the old
    place retired). It records the store's current location for its
    identity, after which writes, deletes and ``gc`` trust it again.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> None:
        self._uow = uow_factory
        self._blobs = blobs

    def __call__(self, *, force: bool = False) -> StoreAdoption:
        """Record the current location; return what changed.

        Raises :class:`UnsafeOperation` (nothing recorded) when the store has
        no identity or cannot tell its location (check ``blob_url``), and,
        unless ``force``, when FileItems of this store have no blob in it: a
        store that was moved whole holds all of them, an older copy does not.
        :class:`StorageError` for backend faults.
        """
        url = self._blobs.url
        store_id = self._blobs.identity(create=False)
        if store_id is None:
            raise UnsafeOperation(
                f"store adopt refused: blob store {url} has no docbinder store identity: "
                "blob_url (DOCBINDER_BLOB_URL) probably points at the wrong place"
            )
        supported, here = current_location(self._blobs, create=True)
        if not supported or here is None:
            raise UnsafeOperation(
                f"store adopt refused: blob store {url} cannot tell its location "
                "(its backend has no location support), so there is nothing to adopt"
            )
        own = {key for key in self._blobs.keys() if is_own_key(key)}
        with self._uow() as uow:
            rows = [i for i in uow.maintenance.iter_files() if i.blob_store == store_id]
        missing = sum(1 for i in rows if i.blob_key not in own)
        if missing and not force:
            raise UnsafeOperation(
                f"store adopt refused: {missing} of {len(rows)} FileItem(s) of blob store {url} "
                "have no blob in it, so it is not a whole move of the store (an older copy or "
                "backup?): check blob_url (DOCBINDER_BLOB_URL); --force adopts it anyway"
            )
        with self._uow() as uow:
            previous = uow.maintenance.store_locations().get(store_location_key(store_id))
            uow.maintenance.record_store_location(store_id, here, replace=True)
            uow.commit()
        log.warning(
            "blob store %s (%s) adopted at its current location (was %s)",
            url,
            store_id,
            previous or "not recorded",
        )
        return StoreAdoption(store_id, url, previous, here, missing)
