"""The audit log in table ``audit_events``: the SQL :class:`~docbinder.ports.metadata.AuditRepository` (B11).

The chain's head and the pruning anchor are the ``docbinder_meta`` rows
``audit_head`` and ``audit_anchor`` (``<seq>:<hash>``). An append locks the
head row (``SELECT ... FOR UPDATE``; inserted on the first append), so
appends from any number of processes queue on it (ADR 0092).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.audit_rows import ANCHOR, HEAD, event_row, load_event, parse_mark
from docbinder.adapters.sql.errors import storage_error, translating
from docbinder.adapters.sql.queries import rowcount
from docbinder.adapters.sql.schema import audit_events, docbinder_meta
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.audit import GENESIS_HASH, HEADLESS, AuditEvent
from docbinder.domain.errors import StorageError

_A = audit_events.c
_M = docbinder_meta.c


class SqlAuditRepository:
    """The audit log; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def _mark(self, name: str, *, lock: bool = False) -> tuple[int, str] | None:
        stmt = sa.select(_M.value).where(_M.name == name)
        if lock:
            stmt = stmt.with_for_update()
        with translating():
            row = self._session.execute(stmt).first()
        return parse_mark(None if row is None else row[0])

    def _set_mark(self, name: str, mark: tuple[int, str]) -> None:
        value = f"{mark[0]}:{mark[1]}"
        with translating():
            changed = rowcount(
                self._session.execute(
                    sa.update(docbinder_meta).where(_M.name == name).values(value=value)
                )
            )
            if changed == 0:
                self._session.execute(sa.insert(docbinder_meta).values(name=name, value=value))

    def _refuse_headless(self) -> None:
        """Raise :class:`StorageError` if events are stored beyond the anchor while the head is missing.

        The head is created with the first event and moved with every append;
        a log with events and no head had its head removed (ADR 0141). Chaining
        from the genesis again would fork the chain (or collide on ``seq``).
        """
        floor = (self.anchor() or (0, ""))[0]
        with translating():
            stored = self._session.execute(sa.select(_A.seq).where(_A.seq > floor).limit(1)).first()
        if stored is not None:
            raise StorageError(HEADLESS)

    def _create_head(self) -> None:
        """Insert the head row ``0:<genesis>`` in a transaction of its own; another creator winning is fine.

        Made outside the unit, before the unit locks the row: on InnoDB two units
        that each locked the missing row's gap and then inserted it would deadlock.
        """
        try:
            with self._session.engine.begin() as conn:
                conn.execute(sa.insert(docbinder_meta).values(name=HEAD, value=f"0:{GENESIS_HASH}"))
        except sa_exc.IntegrityError:
            pass  # a concurrent first append made it
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err

    def append(self, events: Sequence[AuditEvent]) -> builtins.list[AuditEvent]:
        if not events:
            return []
        if self._mark(HEAD) is None:
            self._refuse_headless()
            self._create_head()
        head = self._mark(HEAD, lock=True) or (0, GENESIS_HASH)
        if head == (0, GENESIS_HASH):
            head = self.anchor() or head
        seq, prev = head
        stored: list[AuditEvent] = []
        for event in events:
            seq += 1
            chained = event.chained(seq, prev)
            stored.append(chained)
            prev = chained.hash
        with translating():
            self._session.execute(sa.insert(audit_events), [event_row(e) for e in stored])
        self._set_mark(HEAD, (seq, prev))
        return stored

    def events(
        self,
        *,
        file_id: str | None = None,
        principal: str | None = None,
        since: datetime | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> builtins.list[AuditEvent]:
        stmt = sa.select(audit_events).where(_A.seq > after_seq).order_by(_A.seq)
        if file_id is not None:
            stmt = stmt.where(_A.file_id == file_id)
        if principal is not None:
            stmt = stmt.where(_A.principal == principal)
        if since is not None:
            stmt = stmt.where(_A.at >= since)
        if limit is not None:
            stmt = stmt.limit(limit)
        with translating():
            rows = self._session.execute(stmt).all()
        return [load_event(row._mapping) for row in rows]

    def head(self) -> tuple[int, str] | None:
        mark = self._mark(HEAD)
        return None if mark is None or mark[0] == 0 else mark

    def anchor(self) -> tuple[int, str] | None:
        return self._mark(ANCHOR)

    def prune(self, before: datetime) -> int:
        with translating():
            cut = self._session.execute(
                sa.select(sa.func.max(_A.seq)).where(_A.at < before)
            ).scalar()
        if cut is None:
            return 0
        with translating():
            last = self._session.execute(sa.select(_A.hash).where(_A.seq == cut)).scalar_one()
            removed = rowcount(self._session.execute(sa.delete(audit_events).where(_A.seq <= cut)))
        self._set_mark(ANCHOR, (int(cut), last))
        return removed
