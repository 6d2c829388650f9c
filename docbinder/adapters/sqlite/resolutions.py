"""The :class:`~docbinder.ports.resolutions.ResolutionLog` on ``sqlite3``: table ``resolution_log``.

The same rows as :class:`~docbinder.adapters.sql.links.SqlResolutionLog` (revision
0007) on the SQLite adapter's own connections (ADR 0040, ADR 0122). A record is the
inspector's diagnostic of one resolution, written on every read: it commits without
waiting for the disk (a :class:`~docbinder.adapters.sqlite.session.SqliteSession` with ``synced=False``),
so a power cut may lose the newest records, never a file, a row of one, or the
database's consistency; the next synced commit of any unit makes them durable.
"""

from __future__ import annotations

import json
from typing import Protocol

from docbinder.adapters.sql.links import DEFAULT_PER_WORKFLOW
from docbinder.adapters.sql.schema import sqlite_utc_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.resolutions import ResolutionRecord

_INSERT = "INSERT INTO resolution_log (workflow_id, recorded_at, record) VALUES (?, ?, ?)"
_CUTOFF = "SELECT id FROM resolution_log WHERE workflow_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?"
_TRIM = "DELETE FROM resolution_log WHERE workflow_id = ? AND id <= ?"
_RECENT = "SELECT record FROM resolution_log WHERE workflow_id = ? ORDER BY id DESC LIMIT ?"


class SessionFactory(Protocol):
    """:meth:`docbinder.adapters.sqlite.SqliteMetadata.session`'s signature."""

    def __call__(self, write: bool, *, synced: bool = True) -> SqliteSession: ...


class SqliteResolutionLog:
    """The last ``per_workflow`` resolutions of each workflow over ``sqlite3``. Thread-safe.

    ``session(write)`` gives a fresh :class:`SqliteSession`
    (:meth:`docbinder.adapters.sqlite.SqliteMetadata.session`). ``ValueError`` for
    ``per_workflow`` < 1; driver errors become :class:`~docbinder.domain.errors.StorageError`.
    """

    def __init__(self, session: SessionFactory, per_workflow: int = DEFAULT_PER_WORKFLOW) -> None:
        if per_workflow < 1:
            raise ValueError("per_workflow must be at least 1")
        self.per_workflow = per_workflow
        self._session = session

    def record(self, record: ResolutionRecord) -> None:
        """Insert ``record``, then delete its workflow's rows older than the newest ``per_workflow``."""
        text = json.dumps(record.to_json(), ensure_ascii=False)
        session = self._session(True, synced=False)
        try:
            with translating():
                session.execute(
                    _INSERT, (record.workflow_id, sqlite_utc_text(record.at), text)
                ).close()
                cutoff = session.one(_CUTOFF, (record.workflow_id, self.per_workflow))
                if cutoff is not None:
                    session.execute(_TRIM, (record.workflow_id, cutoff[0])).close()
                session.commit()
        finally:
            session.close()

    def recent(self, workflow_id: str, limit: int) -> list[ResolutionRecord]:
        """At most ``limit`` records of ``workflow_id``, newest first."""
        session = self._session(False)
        try:
            with translating():
                rows = session.all(_RECENT, (workflow_id, max(min(limit, self.per_workflow), 0)))
        finally:
            session.close()
        return [ResolutionRecord.from_json(json.loads(row[0])) for row in rows]
