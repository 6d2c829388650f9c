"""Scans, missing-blob marks and identities: the SQL :class:`~docbinder.ports.metadata.MaintenanceRepository`.

SQLite's own is :mod:`docbinder.adapters.sqlite.maintenance`, with the same
rows and names.

The database's identity and the blob-store locations live in table
``docbinder_meta`` (ADR 0022, ADR 0030), the marks in ``gc_marks``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.claim_rows import CLAIM as _CLAIM
from docbinder.adapters.sql.claim_rows import claim_history_change, claims_of
from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.queries import load, rowcount, scan
from docbinder.adapters.sql.schema import chat_documents, docbinder_meta, file_items, gc_marks
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.errors import Conflict
from docbinder.domain.model import ChatDocument, FileItem
from docbinder.ports.metadata import store_location_key

_DATABASE_ID = "database_id"
_LOCATION = "database_location"
_FORMER = "former_database_id:"
_STORE_LOCATION = "store_location:"


def _store_location_name(store_id: str) -> str:
    """The ``docbinder_meta`` name of a store's location: ``store_location:<key>`` (64 at most)."""
    return _STORE_LOCATION + store_location_key(store_id)


class _Replaced(Exception):
    """Another unit replaced the stale database id first."""


def database_location(session: SqlSession) -> str:
    """A fingerprint (SHA-256 hex) of where the connected database lives, for ADR 0022.

    PostgreSQL (:func:`postgres_location`): the cluster's
    ``system_identifier`` (``pg_control_system()``, ``None`` without the
    right to read it), ``current_database()``, its OID and
    ``current_schema()`` (so a ``pg_dump``/restore into another database,
    schema or cluster differs), and the running instance's
    ``inet_server_addr()``, ``inet_server_port()`` and ``data_directory``
    (``pg_settings``, ``None`` without the right to read it), so a physical
    copy (``cp -a`` of the data directory, ``pg_basebackup``, a promoted
    replica) served elsewhere differs too. MariaDB/MySQL: ``@@hostname``,
    ``@@port``, ``@@datadir`` and ``DATABASE()``. Others: the URL without
    password. Only server-side facts, never the client's connection string,
    so two clients that reach one database by different host names agree,
    as long as they reach the same server address (PostgreSQL: a client on
    the Unix socket and one over TCP, or over two interfaces, see different
    ``inet_server_addr()`` values and make the id rotate: space kept for
    ``gc``, never data lost).
    """
    run = session.execute_driver_sql
    dialect = session.dialect.name
    if dialect == "postgresql":
        system: object = None
        try:
            with session.begin_nested():
                system = run("SELECT system_identifier FROM pg_control_system()").scalar()
        except sa_exc.DBAPIError:
            system = None  # not allowed to read it: the instance's values below still count
        row = run(_POSTGRES_LOCATION).one()
        where = postgres_location(system, *row)
    elif dialect in ("mysql", "mariadb"):
        row = run("SELECT @@hostname, @@port, @@datadir, DATABASE()").one()
        where = f"mysql {row[0]}:{row[1]} {row[2]} database {row[3]}"
    else:
        url = session.connection().engine.url
        where = url.set(password=None).render_as_string(hide_password=True)
    return hashlib.sha256(where.encode()).hexdigest()


_POSTGRES_LOCATION = (
    "SELECT current_database(), current_schema(), "
    "(SELECT oid FROM pg_database WHERE datname = current_database()), "
    "inet_server_addr(), inet_server_port(), "
    "(SELECT setting FROM pg_settings WHERE name = 'data_directory')"
)
"""The values :func:`postgres_location` takes after ``system``, in order; ``pg_settings``
shows ``data_directory`` only to roles allowed to read it (else the subquery is NULL)."""


def postgres_location(
    system: object,
    database: object,
    schema: object,
    oid: object,
    server_addr: object,
    server_port: object,
    data_directory: object,
) -> str:
    """What :func:`database_location` fingerprints for PostgreSQL, from the values of one query.

    ``system`` is ``pg_control_system().system_identifier``; the others are
    :data:`_POSTGRES_LOCATION`'s columns. ``None`` values (no right to read
    them; ``inet_server_addr()`` on a Unix socket) are part of the value.
    The cluster, database, OID and schema are the same in a physical copy;
    the address, port and data directory of the running instance tell it
    from the original while both run.
    """
    return (
        f"postgresql cluster {system} database {database} oid {oid} schema {schema} "
        f"server {server_addr}:{server_port} data {data_directory}"
    )


class SqlMaintenanceRepository:
    """Scans, missing-blob marks and identities in their tables; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def iter_files(self) -> Iterator[FileItem]:
        """Every item, in id order, read in keyset-paginated batches of :data:`SCAN_BATCH`.

        Iterate inside the unit of work; other statements may run between
        items (no server-side cursor stays open).
        """
        for row in scan(self._session, file_items):
            yield load(row, FileItem)

    def iter_documents(self) -> Iterator[ChatDocument]:
        """Every ChatDocument, in id order, read in keyset-paginated batches (see ``iter_files``)."""
        for row in scan(self._session, chat_documents):
            yield load(row, ChatDocument)

    def database_id(self, *, create: bool = False) -> str | None:
        """``docbinder_meta`` row ``database_id`` if row ``database_location`` matches this database.

        See :func:`database_location` for the fingerprint. With ``create`` a
        missing id is inserted (a UUID), and a stale one (copied or moved
        database) is replaced by compare-and-set, the old one kept as row
        ``former_database_id:<id>``. Raises :class:`Conflict` when another
        unit replaced it meanwhile and the result still does not match.
        """
        with translating():
            here = database_location(self._session)
            meta = self._meta()
            found = meta.get(_DATABASE_ID)
            if found is not None and meta.get(_LOCATION) == here:
                return found
            if not create:
                return None
            made = str(uuid.uuid4())
            try:
                with self._session.begin_nested():
                    if found is None:
                        self._session.execute(
                            sa.insert(docbinder_meta), {"name": _DATABASE_ID, "value": made}
                        )
                    else:
                        self._replace_database_id(found, made)
                    self._set_meta(_LOCATION, here)
            except (sa_exc.IntegrityError, _Replaced):
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
        """Compare-and-set row ``database_claim``; the old value gets a row ``database_claim_old:<token>``.

        The first claim is an insert that loses to a concurrent one (primary key).
        """
        dm = docbinder_meta.c
        with translating():
            if expected is None:
                try:
                    with self._session.begin_nested():
                        self._session.execute(
                            sa.insert(docbinder_meta), {"name": _CLAIM, "value": new}
                        )
                except sa_exc.IntegrityError:
                    return False
                return True
            changed = self._session.execute(
                sa.update(docbinder_meta)
                .where(dm.name == _CLAIM, dm.value == expected)
                .values(value=new)
            )
            if rowcount(changed) == 0:
                return False
            (name, number), drop = claim_history_change(self._meta(), expected)
            self._session.execute(sa.insert(docbinder_meta), {"name": name, "value": number})
            if drop:
                self._session.execute(sa.delete(docbinder_meta).where(dm.name.in_(drop)))
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

        An insert that loses to a concurrent one (primary key) keeps theirs.
        The row is named by :func:`~docbinder.ports.metadata.store_location_key`.
        """
        name = _store_location_name(store_id)
        dm = docbinder_meta.c
        with translating():
            if replace:
                self._set_meta(name, location)
            else:
                try:
                    with self._session.begin_nested():
                        self._session.execute(
                            sa.insert(docbinder_meta), {"name": name, "value": location}
                        )
                except sa_exc.IntegrityError:
                    pass  # recorded before (or by a concurrent unit): keep it
            value = self._session.execute(sa.select(dm.value).where(dm.name == name)).scalar()
        return str(value)

    def _meta(self) -> dict[str, str]:
        dm = docbinder_meta.c
        rows = self._session.execute(sa.select(dm.name, dm.value)).all()
        return {str(row.name): str(row.value) for row in rows}

    def _set_meta(self, name: str, value: str) -> None:
        dm = docbinder_meta.c
        changed = self._session.execute(
            sa.update(docbinder_meta).where(dm.name == name).values(value=value)
        )
        if rowcount(changed) == 0:
            self._session.execute(sa.insert(docbinder_meta), {"name": name, "value": value})

    def _replace_database_id(self, stale: str, made: str) -> None:
        """Compare-and-set ``database_id`` from ``stale`` to ``made``; keep ``stale`` as former."""
        dm = docbinder_meta.c
        changed = self._session.execute(
            sa.update(docbinder_meta)
            .where(dm.name == _DATABASE_ID, dm.value == stale)
            .values(value=made)
        )
        if rowcount(changed) == 0:
            raise _Replaced
        self._set_meta(_FORMER + stale, stale)

    def set_blob_store(self, file_id: str, blob_key: str, blob_store: str) -> bool:
        fi = file_items.c
        stmt = (
            sa.update(file_items)
            .where(fi.id == file_id, fi.blob_key == blob_key, fi.blob_store.is_(None))
            .values(blob_store=blob_store)
        )
        with translating():
            result = self._session.execute(stmt)
        return rowcount(result) > 0

    def mark_missing(self, file_id: str, blob_key: str, at: datetime) -> datetime:
        gm = gc_marks.c
        with translating():
            row = self._session.execute(
                sa.select(gm.blob_key, gm.marked_at).where(gm.file_id == file_id)
            ).first()
            if row is not None and row.blob_key == blob_key:
                marked: datetime = row.marked_at
                return marked
            if row is not None:
                self._session.execute(sa.delete(gc_marks).where(gm.file_id == file_id))
            try:
                with self._session.begin_nested():
                    self._session.execute(
                        sa.insert(gc_marks),
                        {"file_id": file_id, "blob_key": blob_key, "marked_at": at},
                    )
            except sa_exc.IntegrityError:
                # Another gc marked it meanwhile: its mark stands.
                again = self._session.execute(
                    sa.select(gm.marked_at).where(gm.file_id == file_id)
                ).scalar_one_or_none()
                return again if again is not None else at
        return at

    def clear_mark(self, file_id: str) -> None:
        with translating():
            self._session.execute(sa.delete(gc_marks).where(gc_marks.c.file_id == file_id))

    def marks(self) -> dict[str, tuple[str, datetime]]:
        gm = gc_marks.c
        with translating():
            rows = self._session.execute(sa.select(gm.file_id, gm.blob_key, gm.marked_at)).all()
        return {row.file_id: (row.blob_key, row.marked_at) for row in rows}
