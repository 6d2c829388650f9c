"""The claim a metadata database holds on its id in the blob store (ADR 0075).

A volume clone, a disk image or a snapshot of a database keeps everything
its identity is made of: the id stored inside it and, for SQLite, the file's
device and inode number. With a shared blob store (an S3 prefix, an NFS
directory) the clone's ``files rm --force`` would pass the provenance check
of :func:`~docbinder.application.steps.blob_rules.release_blob` and free the
original's blobs. The store is the one place both write to, so it
arbitrates: it keeps one claim record per database id
(:meth:`~docbinder.ports.blobs.BlobStore.database_claim`), and the database
keeps the tokens it wrote there
(:meth:`~docbinder.ports.metadata.MaintenanceRepository.database_claims`).
Every destructive operation first checks that the store's claim is one of
this database's tokens, then writes a new token to the database and the
store. After a clone, the first of the two databases to do so leaves the
other with tokens the store no longer holds: that one is refused
(:class:`~docbinder.domain.errors.DatabaseCloned`) before it deletes or
changes anything, and ``doctor`` names it.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Any

import attrs

from docbinder.domain.errors import DatabaseCloned, UnsafeOperation
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)

_ROTATING = threading.Lock()
"""Held while a claim is checked and rotated: of two threads, the second sees the first's
token in the database and in the store (across processes the window stays, ADR 0075)."""

CLAIMS_RECORD = ".docbinder-claims/"
"""Where the shipped stores keep the claim records (``<record><database id>``), for messages."""


@attrs.frozen
class ClaimState:
    """What the store and the database say about the claim on ``database_id``.

    ``held``: the token in the store (``None``: no claim yet); ``tokens``:
    the ones this database wrote, newest first. ``supported`` is false for a
    store without claim records (then nothing is checked).
    """

    supported: bool
    database_id: str | None
    held: str | None
    tokens: tuple[str, ...]

    @property
    def cloned(self) -> bool:
        """Whether another database with the same id wrote the store's claim since."""
        return self.supported and self.held is not None and self.held not in self.tokens


def read_claim(uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> ClaimState:
    """The claim on this database's id as the store and the database hold it; writes nothing.

    One reading unit of work, then one blob-store call outside it (and a
    second reading unit when the store's token is not among the database's:
    a concurrent rotation by this database commits its token before the
    store shows it). Raises
    what the store or the database raise
    (:class:`~docbinder.domain.errors.StorageError`).
    """
    reader: Any = getattr(blobs, "database_claim", None)
    with uow_factory() as uow:
        database_id = uow.maintenance.database_id()
        tokens = tuple(uow.maintenance.database_claims())
    if reader is None or getattr(blobs, "set_database_claim", None) is None:
        return ClaimState(False, database_id, None, tokens)
    held = None if database_id is None else reader(database_id)
    if held is not None and held not in tokens:
        # Another unit of this database may have rotated the claim between the two reads
        # (it commits the token before writing it to the store): read the tokens again.
        with uow_factory() as uow:
            tokens = tuple(uow.maintenance.database_claims())
    return ClaimState(True, database_id, held, tokens)


def cloned_message(url: str, database_id: str) -> str:
    """What a refusal and ``doctor`` say about a database whose claim another one holds."""
    return (
        f"blob store {url} holds a claim on database id {database_id} that this database did "
        "not write: another database with the same id (a volume clone, a disk image or a "
        "snapshot of this one, or the original this one was cloned from) deleted or changed "
        "files in this store since, and freeing blobs here could free the other's files. On "
        "the copy, give the database a new identity (SQLite: copy the file to a new one while "
        "nothing uses it, so it takes a new id and keeps the old one as a former id); then run "
        "`docbinder store claim` on the original, which rewrites the record "
        f"{CLAIMS_RECORD}{database_id}. If this database was restored from a backup in place "
        "and no copy of it runs, `docbinder store claim` alone (check database_url and "
        "blob_url)"
    )


def claim_for_destruction(uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> ClaimState:
    """Check that this database owns its id in the store, then rotate the claim; call before deleting.

    Called by every operation that can free a blob (``files rm``, a content
    update, a version delete, ``gc --apply``), before its own unit of work
    and outside any other. Raises :class:`DatabaseCloned` (nothing written)
    when the store's claim is none of this database's tokens. Otherwise a
    new token (32 hex digits) is set in the database by compare-and-set in
    a writing unit of work, committed, then written to the store; when
    another unit of this database rotated meanwhile, its token stands. A
    store without claim records, or a database without an id yet (it has
    no blob that :func:`~docbinder.application.steps.blob_rules.release_blob`
    would free), or a store without identity (nothing of this database is
    in it: a mistyped ``blob_url`` gets no record), is left as it is. Returns the state checked.
    :class:`~docbinder.domain.errors.StorageError` from either side
    propagates: the operation is not started. The check and the rotation
    hold a lock of this process, so its threads rotate one at a time.
    """
    with _ROTATING:  # one rotation at a time in this process: store writes stay in order
        return _claim(uow_factory, blobs)


def _claim(uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> ClaimState:
    state = read_claim(uow_factory, blobs)
    if not state.supported or state.database_id is None:
        return state
    if blobs.identity(create=False) is None:
        return state  # a store without identity holds no blob of this database: nothing to claim
    if state.cloned:
        raise DatabaseCloned(
            f"refused: {cloned_message(blobs.url, state.database_id)}", state.database_id
        )
    new = secrets.token_hex(16)
    current = state.tokens[0] if state.tokens else None
    with uow_factory() as uow:
        rotated = uow.maintenance.rotate_database_claim(current, new)
        if rotated:
            uow.commit()
    if rotated:
        blobs.set_database_claim(state.database_id, new)
    else:
        log.debug("claim on database id %s rotated by another unit meanwhile", state.database_id)
    return state


def take_claim(uow_factory: UnitOfWorkFactory, blobs: BlobStore) -> str:
    """Write a new claim token for this database's id to the database and the store; return the id.

    For ``docbinder store claim``: the operator says that no other database
    with this id writes into the store (a backup restored in place, or a
    clone given an id of its own). Makes the database id when it has none.
    Raises :class:`UnsafeOperation` for a store without claim records or
    without identity (nothing to claim: check ``blob_url``), and
    :class:`~docbinder.domain.errors.Conflict` when another unit rotated the
    claim meanwhile (try again).
    """
    from docbinder.domain.errors import Conflict

    if getattr(blobs, "set_database_claim", None) is None:
        raise UnsafeOperation(f"blob store {blobs.url} keeps no claim records: nothing to claim")
    if blobs.identity(create=False) is None:
        raise UnsafeOperation(
            f"blob store {blobs.url} has no identity: no file of this database is in it "
            "(check blob_url)"
        )
    new = secrets.token_hex(16)
    with uow_factory() as uow:
        database_id = uow.maintenance.database_id(create=True)
        if database_id is None:  # the port makes one with create; never go on without
            raise Conflict("the database identity could not be made; try again")
        tokens = uow.maintenance.database_claims()
        if not uow.maintenance.rotate_database_claim(tokens[0] if tokens else None, new):
            raise Conflict("the database claim was changed meanwhile; try again")
        uow.commit()
    blobs.set_database_claim(database_id, new)
    log.warning("database id %s claimed in %s on request", database_id, blobs.url)
    return database_id
