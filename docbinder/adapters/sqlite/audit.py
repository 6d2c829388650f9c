"""The audit log in table ``audit_events`` on ``sqlite3``: the :class:`~docbinder.ports.metadata.AuditRepository` (B11).

Shares the row shape and the ``docbinder_meta`` marks of the SQL adapter
(:mod:`docbinder.adapters.sql.audit`). A writing SQLite unit holds the
database's write lock, so appends are serialized without a row lock.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from docbinder.adapters.sql.audit_rows import (
    ANCHOR,
    HEAD,
    detail_text,
    load_event,
    parse_mark,
    unreadable,
)
from docbinder.adapters.sql.schema import audit_events, sqlite_utc_text
from docbinder.adapters.sqlite.rows import RowCodec, columns, select_sql
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.audit import GENESIS_HASH, HEADLESS, AuditEvent
from docbinder.domain.errors import StorageError

_CODEC = RowCodec(audit_events, AuditEvent)
_SELECT = select_sql(audit_events)
_COLUMNS = columns(audit_events)


def _row(event: AuditEvent) -> tuple[Any, ...]:
    """The parameters of ``_CODEC.insert_sql`` for a chained event: ``event_row`` in column order.

    Built directly (the audit log's read batches append many): the same values
    as ``_CODEC.values(event_row(event))``, which a test checks.
    """
    at = event.at
    if at.tzinfo is UTC:  # the ISO text the hash was made of, cut to SQLite's
        iso = event.at_text()
        at_text = (
            f"{iso[:10]} {iso[11:26]}" if at.microsecond else f"{iso[:10]} {iso[11:19]}.000000"
        )
    else:
        at_text = sqlite_utc_text(at) or ""
    return (
        event.seq,
        event.id,
        at_text,
        event.action._value_,
        event.outcome,
        event.principal,
        event.mandate_id,
        event.file_id,
        event.document_id,
        event.workflow_id,
        detail_text(event.detail),
        event.prev_hash,
        event.hash,
    )


def _load(row: Sequence[Any]) -> AuditEvent:
    """The event of a row in ``_COLUMNS`` order; a value the codec cannot convert is an unreadable row."""
    try:
        mapping = _CODEC.mapping(row)
    except Exception as err:
        raise unreadable(row[0], err) from err
    return load_event(mapping)


class SqliteAuditRepository:
    """The audit log; see the port for the contract.

    The head is read once per transaction and kept here: the writing unit
    holds the database's write lock, so no other writer moves it meanwhile.
    Appended events are chained at once and written, with the head row, in
    one batch just before the unit commits (:meth:`before_commit`), however
    many appends the transaction made (a produced file makes two: ``store``
    and ``attach``); a read of the log in the same unit writes them first.
    """

    def __init__(self, session: SqliteSession) -> None:
        self._session = session
        self._head: tuple[int, str] | None = None  # the transaction's head, once read
        self._rows: list[tuple[Any, ...]] = []  # chained events not yet written

    def _mark(self, name: str) -> tuple[int, str] | None:
        with translating():
            row = self._session.one("SELECT value FROM docbinder_meta WHERE name = ?", (name,))
        return parse_mark(None if row is None else row[0])

    def _set_mark(self, name: str, mark: tuple[int, str]) -> None:
        with translating(), self._session.one_statement():
            self._session.rowcount(
                "INSERT INTO docbinder_meta (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (name, f"{mark[0]}:{mark[1]}"),
            )

    def append(self, events: Sequence[AuditEvent]) -> builtins.list[AuditEvent]:
        if not events:
            return []
        head = self._head
        if head is None:
            head = self._mark(HEAD)
            if head is None:
                anchor = self._mark(ANCHOR)
                self._refuse_headless(anchor)
                head = anchor or (0, GENESIS_HASH)
        seq, prev = head
        stored: list[AuditEvent] = []
        for event in events:
            seq += 1
            chained = event.chained(seq, prev)
            stored.append(chained)
            prev = chained.hash
        self._rows.extend(map(_row, stored))
        self._head = (seq, prev)
        return stored

    def _refuse_headless(self, anchor: tuple[int, str] | None) -> None:
        """Raise :class:`StorageError` if events are stored beyond ``anchor`` while the head is missing.

        The head is written with the first event and moved with every append;
        a log with events and no head had its head removed (ADR 0141).
        Chaining from the genesis again would fork the chain.
        """
        with translating():
            row = self._session.one(
                "SELECT seq FROM audit_events WHERE seq > ? LIMIT 1", ((anchor or (0, ""))[0],)
            )
        if row is not None:
            raise StorageError(HEADLESS)

    def _write(self) -> None:
        """Insert the chained events not yet written and move the head row past them."""
        if not self._rows:
            return
        rows, self._rows = self._rows, []
        assert self._head is not None
        session, first = self._session, rows[0][0]

        def undo() -> None:
            session.rowcount("DELETE FROM audit_events WHERE seq >= ?", (first,))

        with translating(), session.undoable(undo):
            session.executemany(_CODEC.insert_sql, rows)
            self._set_mark(HEAD, self._head)

    def before_commit(self) -> None:
        """Write what the transaction appended (the unit calls it just before ``COMMIT``)."""
        self._write()
        self.forget()

    def forget(self) -> None:
        """Drop the kept head and unwritten events (the transaction ended: another writer may append next)."""
        self._head, self._rows = None, []

    def events(
        self,
        *,
        file_id: str | None = None,
        principal: str | None = None,
        since: datetime | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> builtins.list[AuditEvent]:
        self._write()
        where = ["seq > ?"]
        params: list[Any] = [after_seq]
        if file_id is not None:
            where.append("file_id = ?")
            params.append(file_id)
        if principal is not None:
            where.append("principal = ?")
            params.append(principal)
        if since is not None:
            where.append("at >= ?")
            params.append(sqlite_utc_text(since))
        sql = f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with translating():
            rows = self._session.all(sql, params)
        return [_load(row) for row in rows]

    def head(self) -> tuple[int, str] | None:
        self._write()
        return self._mark(HEAD)

    def anchor(self) -> tuple[int, str] | None:
        self._write()
        return self._mark(ANCHOR)

    def prune(self, before: datetime) -> int:
        self._write()
        with translating():
            row = self._session.one(
                "SELECT MAX(seq) FROM audit_events WHERE at < ?", (sqlite_utc_text(before),)
            )
        if row is None or row[0] is None:
            return 0
        cut = int(row[0])
        with translating():
            last = self._session.one("SELECT hash FROM audit_events WHERE seq = ?", (cut,))
            assert last is not None
            removed = self._session.rowcount("DELETE FROM audit_events WHERE seq <= ?", (cut,))
        self._set_mark(ANCHOR, (cut, last[0]))
        return removed
