"""Registering this metadata database in the blob store, once per process: :class:`StoreRegistration`."""

from __future__ import annotations

import threading

from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory


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
    :meth:`~docbinder.ports.metadata.FileRepository.database_id` gives
    ``None`` there and the writing unit makes a new id, keeping the old one
    as a former id (ADR 0022).
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
        at the same moment (try again).
        """
        store_id = self._blobs.identity(create=True)
        if self._registered:
            return store_id
        with self._lock:
            if not self._registered:
                with self._read() as uow:
                    database_id = uow.files.database_id()
                if database_id is None:
                    with self._uow() as uow:
                        database_id = uow.files.database_id(create=True)
                        uow.commit()
                if database_id is not None:
                    self._blobs.register_database(database_id)
                self._registered = True
        return store_id
