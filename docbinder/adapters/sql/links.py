"""SQL :class:`~docbinder.ports.links.LinkLedger` and :class:`~docbinder.ports.resolutions.ResolutionLog`.

Both live in the metadata database (tables ``link_marks`` and ``resolution_log``,
revision 0007), so every process of a deployment sees the same marks and records.
Each call is its own short transaction on the metadata store's engine (SQLite,
PostgreSQL, MariaDB alike); SQLAlchemy errors become
:class:`~docbinder.domain.errors.StorageError`. A second insert of the same mark is
the database's unique-key refusal, which makes one-time redemption race-free.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from docbinder.adapters.sql.engine import SQLITE_BEGIN_OPTION, install_sqlite_hooks
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sql.schema import link_marks, resolution_log
from docbinder.domain.resolutions import ResolutionRecord

DEFAULT_PER_WORKFLOW = 20
"""Resolutions kept per workflow by default."""

_REVOKED = "revoked"
_USED = "used"
_VOUCHED = "vouched"


def check_hex(value: str, most: int, name: str) -> None:
    """:class:`ValueError` naming ``name`` unless ``value`` is 1 to ``most`` lowercase hex digits."""
    if not (0 < len(value) <= most) or value.strip("0123456789abcdef"):
        raise ValueError(f"{name} must be 1 to {most} lowercase hex digits")


class SqlLinkLedger:
    """Link marks in ``link_marks`` (primary key ``(link_id, kind)``). Thread-safe."""

    def __init__(self, engine: Engine) -> None:
        install_sqlite_hooks(engine)
        self._engine = engine
        self._reader = engine.execution_options(**{SQLITE_BEGIN_OPTION: "DEFERRED"})
        # Built once: every redemption asks, and building a statement costs more than running it.
        self._revoked = sa.select(link_marks.c.link_id).where(
            link_marks.c.link_id == sa.bindparam("link_id"), link_marks.c.kind == _REVOKED
        )
        self._vouched = sa.select(link_marks.c.expires_at).where(
            link_marks.c.link_id == sa.bindparam("link_id"), link_marks.c.kind == _VOUCHED
        )

    def _mark(self, link_id: str, kind: str, expires_at: datetime) -> bool:
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    sa.insert(link_marks).values(
                        link_id=link_id,
                        kind=kind,
                        expires_at=expires_at,
                        marked_at=datetime.now(UTC),
                    )
                )
        except sa_exc.IntegrityError:
            return False
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        return True

    def revoke(self, link_id: str, expires_at: datetime) -> bool:
        """Mark ``link_id`` revoked; ``False`` if it was already."""
        return self._mark(link_id, _REVOKED, expires_at)

    def is_revoked(self, link_id: str) -> bool:
        """Whether ``link_id`` is revoked."""
        try:
            with self._reader.connect() as conn:
                return conn.execute(self._revoked, {"link_id": link_id}).first() is not None
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc

    def use_once(self, link_id: str, expires_at: datetime) -> bool:
        """``True`` for the first redemption of ``link_id`` only (the unique key decides)."""
        return self._mark(link_id, _USED, expires_at)

    def vouch(self, holder: str, signer: str, until: datetime) -> None:
        """A ``vouched`` mark ``<holder>.<signer>`` expiring at the later ``until``.

        In one transaction: the holder's other ``vouched`` marks are deleted, the mark is
        moved to ``until`` where it expires earlier, and inserted when it is not there (a
        second process inserting it at the same moment makes this one try once more).
        """
        check_hex(holder, 31, "holder")
        check_hex(signer, 32, "signer")
        mark = f"{holder}.{signer}"
        table = link_marks
        this = (table.c.link_id == mark) & (table.c.kind == _VOUCHED)
        for attempt in range(2):
            try:
                with self._engine.begin() as conn:
                    conn.execute(
                        sa.delete(table).where(
                            table.c.kind == _VOUCHED,
                            table.c.link_id.like(f"{holder}.%"),
                            table.c.link_id != mark,
                        )
                    )
                    conn.execute(
                        sa.update(table)
                        .where(this, table.c.expires_at < until)
                        .values(expires_at=until, marked_at=datetime.now(UTC))
                    )
                    if conn.execute(sa.select(table.c.link_id).where(this)).first() is None:
                        conn.execute(
                            sa.insert(table).values(
                                link_id=mark,
                                kind=_VOUCHED,
                                expires_at=until,
                                marked_at=datetime.now(UTC),
                            )
                        )
                return
            except sa_exc.IntegrityError as exc:
                if attempt:
                    raise storage_error(exc) from exc
            except sa_exc.SQLAlchemyError as exc:
                raise storage_error(exc) from exc

    def vouched_until(self, holder: str, signer: str) -> datetime | None:
        """The expiry of the ``vouched`` mark ``<holder>.<signer>``, or ``None``."""
        try:
            with self._reader.connect() as conn:
                found = conn.execute(self._vouched, {"link_id": f"{holder}.{signer}"}).scalar()
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        return found

    def prune(self, now: datetime) -> int:
        """Delete the marks of links that expired before ``now``."""
        try:
            with self._engine.begin() as conn:
                result = conn.execute(sa.delete(link_marks).where(link_marks.c.expires_at < now))
                return int(result.rowcount or 0)
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc


class SqlResolutionLog:
    """The last ``per_workflow`` resolutions of each workflow in ``resolution_log``. Thread-safe."""

    def __init__(self, engine: Engine, per_workflow: int = DEFAULT_PER_WORKFLOW) -> None:
        if per_workflow < 1:
            raise ValueError("per_workflow must be at least 1")
        install_sqlite_hooks(engine)
        self.per_workflow = per_workflow
        self._engine = engine
        self._reader = engine.execution_options(**{SQLITE_BEGIN_OPTION: "DEFERRED"})

    def record(self, record: ResolutionRecord) -> None:
        """Insert ``record``, then delete its workflow's rows older than the newest ``per_workflow``."""
        table = resolution_log
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    sa.insert(table).values(
                        workflow_id=record.workflow_id,
                        recorded_at=record.at,
                        record=json.dumps(record.to_json(), ensure_ascii=False),
                    )
                )
                cutoff = conn.execute(
                    sa.select(table.c.id)
                    .where(table.c.workflow_id == record.workflow_id)
                    .order_by(table.c.id.desc())
                    .offset(self.per_workflow)
                    .limit(1)
                ).scalar()
                if cutoff is not None:
                    conn.execute(
                        sa.delete(table).where(
                            table.c.workflow_id == record.workflow_id, table.c.id <= cutoff
                        )
                    )
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc

    def recent(self, workflow_id: str, limit: int) -> list[ResolutionRecord]:
        """At most ``limit`` records of ``workflow_id``, newest first."""
        table = resolution_log
        query = (
            sa.select(table.c.record)
            .where(table.c.workflow_id == workflow_id)
            .order_by(table.c.id.desc())
            .limit(max(min(limit, self.per_workflow), 0))
        )
        try:
            with self._reader.begin() as conn:
                rows = conn.execute(query).scalars().all()
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        return [ResolutionRecord.from_json(json.loads(text)) for text in rows]
