"""Scans, missing-blob marks and identities on ``sqlite3``: the :class:`~docbinder.ports.metadata.MaintenanceRepository`.

The database's identity and the blob-store locations live in table
``docbinder_meta`` (ADR 0022, ADR 0030), the marks in ``gc_marks``; the
values and names are those of the SQLAlchemy adapter, so a database keeps
its identity whichever adapter reads it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from docbinder.adapters.sql.claim_rows import CLAIM, claim_history_change, claims_of
from docbinder.adapters.sql.schema import chat_documents, file_items, sqlite_utc_text
from docbinder.adapters.sqlite.files import load_file
from docbinder.adapters.sqlite.rows import select_sql, utc_from_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.adapters.sqlite.workflows import load_document
from docbinder.domain.errors import Conflict
from docbinder.domain.model import ChatDocument, FileItem
from docbinder.ports.metadata import store_location_key

SCAN_BATCH = 1000
"""Rows per keyset-paginated batch of the scans."""

_DATABASE_ID = "database_id"
_LOCATION = "database_location"
_FORMER = "former_database_id:"
_STORE_LOCATION = "store_location:"
_CLAIM = CLAIM


def sqlite_location(stat: os.stat_result) -> str:
    """What :func:`database_location` fingerprints for a SQLite file: ``st_dev`` and ``st_ino``.

    The inode alone is kept by a file-system image or volume clone (a
    snapshot mounted elsewhere, a copied disk image); the device number of
    the clone differs. A copy is a new file; a move or rename within one
    file system keeps both.
    """
    return f"sqlite device {stat.st_dev} inode {stat.st_ino}"


def database_location(session: SqliteSession) -> str:
    """A fingerprint (SHA-256 hex) of where the connected database lives, for ADR 0022.

    The main database file's device and inode (:func:`sqlite_location`); an
    in-memory database: its engine's connection pool, which the writing and
    reading units share.
    """
    files = [row[2] for row in session.all("PRAGMA database_list") if row[1] == "main"]
    if not files or not files[0]:
        where = f"sqlite memory {id(session.engine.pool)}"
    else:
        where = sqlite_location(os.stat(files[0]))
    return hashlib.sha256(where.encode()).hexdigest()


def _scan(session: SqliteSession, table_select: str) -> Iterator[Sequence[Any]]:
    """Every row of a table in id order, :data:`SCAN_BATCH` rows per keyset-paginated query.

    No cursor stays open between batches, so other statements of the unit
    may run while the caller iterates.
    """
    last: str | None = None
    while True:
        params: tuple[str, ...] = ()
        if last is None:
            sql = f"{table_select} ORDER BY id LIMIT {SCAN_BATCH}"
        else:
            sql, params = f"{table_select} WHERE id > ? ORDER BY id LIMIT {SCAN_BATCH}", (last,)
        with translating():
            rows = session.all(sql, params)
        yield from rows
        if len(rows) < SCAN_BATCH:
            return
        last = rows[-1][0]  # id is the first column of both scanned tables


class _Replaced(Exception):
    """Another unit replaced the stale database id first."""


class SqliteMaintenanceRepository:
    """Scans, missing-blob marks and identities in their tables; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def iter_files(self) -> Iterator[FileItem]:
        """Every item, in id order, read in keyset-paginated batches of :data:`SCAN_BATCH`."""
        for row in _scan(self._session, select_sql(file_items)):
            yield load_file(row)

    def iter_documents(self) -> Iterator[ChatDocument]:
        """Every ChatDocument, in id order, read in keyset-paginated batches (see ``iter_files``)."""
        for row in _scan(self._session, select_sql(chat_documents)):
            yield load_document(row)

    def database_id(self, *, create: bool = False) -> str | None:
        """``docbinder_meta`` row ``database_id`` if row ``database_location`` matches this database.

        See :func:`database_location` for the fingerprint. With ``create`` a
        missing id is inserted (a UUID), and a stale one (copied or moved
        database) is replaced by compare-and-set, the old one kept as row
        ``former_database_id:<id>``. Raises :class:`Conflict` when another
        unit replaced it meanwhile and the result still does not match.
        """
        session = self._session
        with translating():
            here = database_location(session)
            meta = self._meta()
            found = meta.get(_DATABASE_ID)
            if found is not None and meta.get(_LOCATION) == here:
                return found
            if not create:
                return None
            made = str(uuid.uuid4())
            try:
                with session.savepoint():
                    if found is None:
                        session.rowcount(
                            "INSERT INTO docbinder_meta (name, value) VALUES (?, ?)",
                            (_DATABASE_ID, made),
                        )
                    else:
                        self._replace_database_id(found, made)
                    self._set_meta(_LOCATION, here)
            except (sqlite3.IntegrityError, _Replaced):
                pass  # another unit made or replaced it first: read theirs
            meta = self._meta()
        again = meta.get(_DATABASE_ID)
        if again is None or meta.get(_LOCATION) != here:
            raise Conflict("the database identity was changed meanwhile; try again")
        return again

    def former_database_ids(self) -> tuple[str, ...]:
        """Values of the ``former_database_id:*`` rows, and the stored id if it is stale."""
        with translating():
            here = database_location(self._session)
            meta = self._meta()
        former = {value for name, value in meta.items() if name.startswith(_FORMER)}
        found = meta.get(_DATABASE_ID)
        if found is not None and meta.get(_LOCATION) != here:
            former.add(found)
        return tuple(sorted(former))

    def database_claims(self) -> tuple[str, ...]:
        """Rows ``database_claim`` and ``database_claim_old:<token>`` of ``docbinder_meta`` (ADR 0075)."""
        with translating():
            meta = self._meta()
        return claims_of(meta)

    def rotate_database_claim(self, expected: str | None, new: str) -> bool:
        """Compare-and-set row ``database_claim``; the old value gets a row ``database_claim_old:<token>``."""
        session = self._session
        with translating():
            if expected is None:
                inserted = session.rowcount(
                    "INSERT INTO docbinder_meta (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (_CLAIM, new),
                )
                return inserted > 0
            changed = session.rowcount(
                "UPDATE docbinder_meta SET value = ? WHERE name = ? AND value = ?",
                (new, _CLAIM, expected),
            )
            if changed == 0:
                return False
            (name, number), drop = claim_history_change(self._meta(), expected)
            session.rowcount(
                "INSERT INTO docbinder_meta (name, value) VALUES (?, ?)", (name, number)
            )
            for old in drop:
                session.rowcount("DELETE FROM docbinder_meta WHERE name = ?", (old,))
        return True

    def store_locations(self) -> dict[str, str]:
        """The ``docbinder_meta`` rows ``store_location:<store id>`` (ADR 0030)."""
        with translating():
            meta = self._meta()
        return {
            name[len(_STORE_LOCATION) :]: value
            for name, value in meta.items()
            if name.startswith(_STORE_LOCATION)
        }

    def record_store_location(self, store_id: str, location: str, *, replace: bool = False) -> str:
        """Insert (or with ``replace`` set) row ``store_location:<store id>``; return its value.

        The row is named by :func:`~docbinder.ports.metadata.store_location_key`;
        an existing row is kept unless ``replace``.
        """
        name = _STORE_LOCATION + store_location_key(store_id)
        session = self._session
        with translating():
            if replace:
                self._set_meta(name, location)
            else:
                session.rowcount(
                    "INSERT INTO docbinder_meta (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name, location),
                )
            row = session.one("SELECT value FROM docbinder_meta WHERE name = ?", (name,))
        return "" if row is None else str(row[0])

    def _meta(self) -> dict[str, str]:
        rows = self._session.all("SELECT name, value FROM docbinder_meta")
        return {str(name): str(value) for name, value in rows}

    def _set_meta(self, name: str, value: str) -> None:
        self._session.rowcount(
            "INSERT INTO docbinder_meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    def _replace_database_id(self, stale: str, made: str) -> None:
        """Compare-and-set ``database_id`` from ``stale`` to ``made``; keep ``stale`` as former."""
        changed = self._session.rowcount(
            "UPDATE docbinder_meta SET value = ? WHERE name = ? AND value = ?",
            (made, _DATABASE_ID, stale),
        )
        if changed == 0:
            raise _Replaced
        self._set_meta(_FORMER + stale, stale)

    def set_blob_store(self, file_id: str, blob_key: str, blob_store: str) -> bool:
        with translating():
            changed = self._session.rowcount(
                "UPDATE file_items SET blob_store = ? "
                "WHERE id = ? AND blob_key = ? AND blob_store IS NULL",
                (blob_store, file_id, blob_key),
            )
        return changed > 0

    def mark_missing(self, file_id: str, blob_key: str, at: datetime) -> datetime:
        session = self._session
        with translating():
            row = session.one(
                "SELECT blob_key, marked_at FROM gc_marks WHERE file_id = ?", (file_id,)
            )
            if row is not None and row[0] == blob_key:
                return utc_from_text(row[1])
            session.rowcount(
                "INSERT INTO gc_marks (file_id, blob_key, marked_at) VALUES (?, ?, ?) "
                "ON CONFLICT (file_id) DO UPDATE SET blob_key = excluded.blob_key, "
                "marked_at = excluded.marked_at",
                (file_id, blob_key, sqlite_utc_text(at)),
            )
        return at

    def clear_mark(self, file_id: str) -> None:
        with translating():
            self._session.rowcount("DELETE FROM gc_marks WHERE file_id = ?", (file_id,))

    def marks(self) -> dict[str, tuple[str, datetime]]:
        with translating():
            rows = self._session.all("SELECT file_id, blob_key, marked_at FROM gc_marks")
        return {file_id: (blob_key, utc_from_text(marked)) for file_id, blob_key, marked in rows}
