"""The :class:`~docbinder.ports.links.LinkLedger` on ``sqlite3``: link marks in ``link_marks``.

The same table and rows as :class:`~docbinder.adapters.sql.links.SqlLinkLedger`
(revision 0007), written and read on the SQLite adapter's own connections
(:class:`~docbinder.adapters.sqlite.session.SqliteSession`, ADR 0040), so a
redemption's revocation check is one statement on a pooled connection instead of
a SQLAlchemy Core execution (ADR 0122). Each call is its own short transaction:
reads ``BEGIN DEFERRED``, writes ``BEGIN IMMEDIATE``. A second insert of the same
mark is the primary key's refusal, which makes one-time redemption race-free
across processes. Driver errors become :class:`~docbinder.domain.errors.StorageError`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from docbinder.adapters.sql.links import check_hex
from docbinder.adapters.sql.schema import sqlite_utc_text
from docbinder.adapters.sqlite.rows import utc_from_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.adapters.sqlite.uow import SqliteUnitOfWork
from docbinder.ports.metadata import UnitOfWork

_REVOKED = "revoked"
_USED = "used"
_VOUCHED = "vouched"

_INSERT = "INSERT INTO link_marks (link_id, kind, expires_at, marked_at) VALUES (?, ?, ?, ?)"
_FIND = "SELECT expires_at FROM link_marks WHERE link_id = ? AND kind = ?"
_DROP_OTHER_VOUCHES = (
    "DELETE FROM link_marks WHERE kind = 'vouched' AND link_id LIKE ? AND link_id != ?"
)
_EXTEND = (
    "UPDATE link_marks SET expires_at = ?, marked_at = ? "
    "WHERE link_id = ? AND kind = 'vouched' AND expires_at < ?"
)
_PRUNE = "DELETE FROM link_marks WHERE expires_at < ?"


def _now_text() -> str | None:
    return sqlite_utc_text(datetime.now(UTC))


class SqliteLinkLedger:
    """Link marks in ``link_marks`` (primary key ``(link_id, kind)``) over ``sqlite3``. Thread-safe.

    ``session`` gives a fresh :class:`SqliteSession`: ``session(True)`` one that
    begins ``BEGIN IMMEDIATE`` (writes), ``session(False)`` ``BEGIN DEFERRED``
    (:meth:`docbinder.adapters.sqlite.SqliteMetadata.session`).
    """

    def __init__(
        self, session: Callable[[bool], SqliteSession], engine: Engine | None = None
    ) -> None:
        self._session = session
        self._engine = engine

    def _find(self, link_id: str, kind: str) -> str | None:
        session = self._session(False)
        try:
            with translating():
                row = session.one(_FIND, (link_id, kind))
        finally:
            session.close()
        return None if row is None else str(row[0])

    def _mark(self, link_id: str, kind: str, expires_at: datetime) -> bool:
        session = self._session(True)
        try:
            with translating():
                try:
                    session.execute(
                        _INSERT, (link_id, kind, sqlite_utc_text(expires_at), _now_text())
                    ).close()
                except sqlite3.IntegrityError:
                    return False
                session.commit()
        finally:
            session.close()
        return True

    def revoke(self, link_id: str, expires_at: datetime) -> bool:
        """Mark ``link_id`` revoked; ``False`` if it was already."""
        return self._mark(link_id, _REVOKED, expires_at)

    def is_revoked(self, link_id: str) -> bool:
        """Whether ``link_id`` is revoked."""
        return self._find(link_id, _REVOKED) is not None

    def is_revoked_within(self, uow: UnitOfWork, link_id: str) -> bool:
        """Whether ``link_id`` is revoked, read in ``uow``'s transaction when it is a
        :class:`~docbinder.adapters.sqlite.SqliteUnitOfWork` on this ledger's engine
        (ADR 0128), else as :meth:`is_revoked`."""
        if self._engine is not None and isinstance(uow, SqliteUnitOfWork):
            session = uow.session_on(self._engine)
            if session is not None:
                with translating():
                    return session.one(_FIND, (link_id, _REVOKED)) is not None
        return self.is_revoked(link_id)

    def use_once(self, link_id: str, expires_at: datetime) -> bool:
        """``True`` for the first redemption of ``link_id`` only (the primary key decides)."""
        return self._mark(link_id, _USED, expires_at)

    def vouch(self, holder: str, signer: str, until: datetime) -> None:
        """A ``vouched`` mark ``<holder>.<signer>`` expiring at the later ``until``.

        In one transaction, under SQLite's write lock: the holder's other
        ``vouched`` marks are deleted, the mark is moved to ``until`` where it
        expires earlier, and inserted when it is not there.
        """
        check_hex(holder, 31, "holder")
        check_hex(signer, 32, "signer")
        mark = f"{holder}.{signer}"
        until_text, now = sqlite_utc_text(until), _now_text()
        session = self._session(True)
        try:
            with translating():
                # hex digits and "." are no LIKE wildcards
                session.execute(_DROP_OTHER_VOUCHES, (f"{holder}.%", mark)).close()
                session.execute(_EXTEND, (until_text, now, mark, until_text)).close()
                if session.one(_FIND, (mark, _VOUCHED)) is None:
                    session.execute(_INSERT, (mark, _VOUCHED, until_text, now)).close()
                session.commit()
        finally:
            session.close()

    def vouched_until(self, holder: str, signer: str) -> datetime | None:
        """The expiry of the ``vouched`` mark ``<holder>.<signer>``, or ``None``."""
        found = self._find(f"{holder}.{signer}", _VOUCHED)
        return None if found is None else utc_from_text(found)

    def prune(self, now: datetime) -> int:
        """Delete the marks of links that expired before ``now``; how many were deleted."""
        session = self._session(True)
        try:
            with translating():
                count = session.rowcount(_PRUNE, (sqlite_utc_text(now),))
                session.commit()
        finally:
            session.close()
        return count
