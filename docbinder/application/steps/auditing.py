"""Writing the audit log (feature row B11, ADR 0092): :class:`AuditTrail`.

Writes are recorded in the transaction of the write itself
(:meth:`AuditTrail.record` with the writer's unit of work), so an event
exists exactly when its write committed. Refusals (quota, access) are
recorded in a unit of their own after the refused write rolled back
(:meth:`AuditTrail.refused`). Reads and resolutions are many and cheap:
they are collected in memory and appended in batches (:meth:`AuditTrail.note`),
one transaction per :attr:`AuditTrail.read_batch` events, at the latest when
the binder closes (:meth:`AuditTrail.flush`). A process that dies loses the
read events not yet flushed, never a write's; so a batch may commit without
waiting for the disk (``batch_uow_factory``), and a power cut may lose it as
well, never the chain's consistency (ADR 0127).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from docbinder.domain.audit import AuditAction, AuditEvent
from docbinder.domain.model import Principal
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

DEFAULT_READ_BATCH = 64
"""Read events collected before they are appended in one transaction."""


class AuditTrail:
    """Where the use cases send their audit events; does nothing unless ``enabled``.

    ``uow_factory`` makes the writing units the refusals use; ``batch_uow_factory``
    those the batches of read and resolve events use (default ``uow_factory``): a
    unit whose commit need not wait for the disk, such as
    :meth:`~docbinder.adapters.sqlite.SqliteMetadata.unsynced_unit_of_work`.
    ``clock`` and ``ids`` stamp each event. Thread-safe.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory | None,
        clock: Clock | None,
        ids: IdFactory | None,
        *,
        enabled: bool = False,
        read_batch: int = DEFAULT_READ_BATCH,
        batch_uow_factory: UnitOfWorkFactory | None = None,
    ) -> None:
        self.enabled = bool(enabled) and uow_factory is not None
        self.read_batch = max(1, read_batch)
        self._uow = uow_factory
        self._batch_uow = batch_uow_factory or uow_factory
        self._clock = clock
        self._ids = ids
        self._pending: list[AuditEvent] = []
        self._lock = threading.Lock()
        if self.enabled:
            # A process that ends without closing its binder still appends what it holds.
            atexit.register(_flush_at_exit, weakref.ref(self))

    def event(
        self,
        action: AuditAction,
        principal: Principal | str | None,
        *,
        outcome: str = "ok",
        file_id: str | None = None,
        document_id: str | None = None,
        workflow_id: str | None = None,
        mandate_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """A new event stamped now, by ``principal`` (a user id, or a principal whose mandate is used unless ``mandate_id`` is given)."""
        assert self._clock is not None and self._ids is not None
        if isinstance(principal, Principal):
            user: str | None = principal.user_id
            if mandate_id is None:
                mandate_id = principal.mandate_id
        else:
            user = principal
        return AuditEvent(
            id=self._ids.new_id(),
            at=self._clock.now(),
            action=action,
            outcome=outcome,
            principal=user,
            mandate_id=mandate_id,
            file_id=file_id,
            document_id=document_id,
            workflow_id=workflow_id,
            detail={} if detail is None else detail,  # the event copies it
        )

    def record(self, uow: UnitOfWork, *events: AuditEvent) -> None:
        """Append ``events`` in ``uow``, the transaction of the write they record (raises as the unit does)."""
        if self.enabled and events:
            uow.audit.append(events)

    def refused(self, event: AuditEvent) -> None:
        """Append ``event`` now in a unit of its own (a refusal: the refused write rolled back); never raises."""
        if not self.enabled:
            return
        self._append(self._uow, [event], "refusal")

    def note(self, *events: AuditEvent, at_once: bool = False) -> None:
        """Collect read or resolve events; a full batch is appended at once.

        ``at_once``: append them now, with every event collected before them
        (a read that moves its file's expiry, ``last_read`` retention: another
        process's ``gc`` must see it, ADR 0142). Never raises.
        """
        if not self.enabled or not events:
            return
        with self._lock:
            self._pending.extend(events)
            if len(self._pending) < self.read_batch and not at_once:
                return
            batch, self._pending = self._pending, []
        self._append(self._batch_uow, batch, "read")

    def flush(self) -> None:
        """Append every collected event now (one transaction); never raises."""
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self._append(self._batch_uow, batch, "read")

    def close(self) -> None:
        """:meth:`flush` (the binder closes its trail before its stores)."""
        self.flush()

    def _append(self, units: UnitOfWorkFactory | None, events: list[AuditEvent], what: str) -> None:
        assert units is not None
        try:
            with units() as uow:
                uow.audit.append(events)
                uow.commit()
        except Exception as exc:  # an audit fault never fails the read or the refusal
            log.warning("audit: %d %s event(s) not recorded: %s", len(events), what, exc)


def _flush_at_exit(trail: weakref.ref[AuditTrail]) -> None:
    alive = trail()
    if alive is not None:
        alive.flush()


DISABLED = AuditTrail(None, None, None)
"""The trail of a binder without an audit log: every method does nothing."""
