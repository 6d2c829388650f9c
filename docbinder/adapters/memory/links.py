"""In-memory :class:`~docbinder.ports.links.LinkLedger` and :class:`~docbinder.ports.resolutions.ResolutionLog`.

For one process (tests, the ``memory://`` metadata store): several processes
share the SQL adapters instead (:mod:`docbinder.adapters.sql.links`).
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime

from docbinder.domain.resolutions import ResolutionRecord

DEFAULT_PER_WORKFLOW = 20
"""Resolutions kept per workflow by default."""


class MemoryLinkLedger:
    """Link marks in two dicts (link id -> expiry). Thread-safe."""

    def __init__(self) -> None:
        self._revoked: dict[str, datetime] = {}
        self._used: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def revoke(self, link_id: str, expires_at: datetime) -> bool:
        """Mark ``link_id`` revoked; ``False`` if it was already."""
        with self._lock:
            if link_id in self._revoked:
                return False
            self._revoked[link_id] = expires_at
            return True

    def is_revoked(self, link_id: str) -> bool:
        """Whether ``link_id`` is revoked."""
        with self._lock:
            return link_id in self._revoked

    def use_once(self, link_id: str, expires_at: datetime) -> bool:
        """``True`` for the first redemption of ``link_id`` only."""
        with self._lock:
            if link_id in self._used:
                return False
            self._used[link_id] = expires_at
            return True

    def prune(self, now: datetime) -> int:
        """Drop marks of links that expired before ``now``."""
        with self._lock:
            dropped = 0
            for marks in (self._revoked, self._used):
                for link_id in [k for k, exp in marks.items() if exp < now]:
                    del marks[link_id]
                    dropped += 1
            return dropped


class MemoryResolutionLog:
    """The last ``per_workflow`` resolutions of each workflow, in deques. Thread-safe."""

    def __init__(self, per_workflow: int = DEFAULT_PER_WORKFLOW) -> None:
        if per_workflow < 1:
            raise ValueError("per_workflow must be at least 1")
        self.per_workflow = per_workflow
        self._records: dict[str, deque[ResolutionRecord]] = {}
        self._lock = threading.Lock()

    def record(self, record: ResolutionRecord) -> None:
        """Keep ``record``, dropping its workflow's oldest beyond ``per_workflow``."""
        with self._lock:
            kept = self._records.setdefault(record.workflow_id, deque(maxlen=self.per_workflow))
            kept.append(record)

    def recent(self, workflow_id: str, limit: int) -> list[ResolutionRecord]:
        """At most ``limit`` records of ``workflow_id``, newest first."""
        with self._lock:
            kept = list(self._records.get(workflow_id, ()))
        return kept[::-1][: max(limit, 0)]
