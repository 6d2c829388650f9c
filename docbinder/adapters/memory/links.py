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
        self._vouched: dict[str, dict[str, datetime]] = {}
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

    def vouch(self, holder: str, signer: str, until: datetime) -> None:
        """Keep the later ``until`` for ``signer``; forget the holder's other signers."""
        with self._lock:
            signers = self._vouched.setdefault(holder, {})
            kept = signers.get(signer)
            signers.clear()
            signers[signer] = until if kept is None or until > kept else kept

    def vouched_until(self, holder: str, signer: str) -> datetime | None:
        """The ``until`` last vouched for ``signer`` of ``holder``."""
        with self._lock:
            return self._vouched.get(holder, {}).get(signer)

    def prune(self, now: datetime) -> int:
        """Drop marks of links that expired before ``now``, and vouchers that ran out."""
        with self._lock:
            dropped = 0
            for holder, signers in list(self._vouched.items()):
                for signer in [k for k, until in signers.items() if until < now]:
                    del signers[signer]
                    dropped += 1
                if not signers:
                    del self._vouched[holder]
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
