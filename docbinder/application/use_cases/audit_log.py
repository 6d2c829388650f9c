"""Reading, exporting, verifying and pruning the audit log (feature row B11): :class:`AuditLog`."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from datetime import datetime, timedelta

import attrs

from docbinder.application.steps.auditing import AuditTrail
from docbinder.domain.audit import HEADLESS, AuditAction, AuditEvent, ChainBreak, verify_chain
from docbinder.domain.errors import ConfigurationError, StorageError
from docbinder.domain.model import Principal
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock

PAGE = 1000
"""Events read per query while walking the whole log."""


@attrs.frozen
class Verification:
    """What :meth:`AuditLog.verify` found: events checked, the first break (``None``: intact), the head."""

    checked: int
    broken: ChainBreak | None
    head: tuple[int, str] | None
    anchor: tuple[int, str] | None

    @property
    def ok(self) -> bool:
        """Whether the chain is intact."""
        return self.broken is None


class AuditLog:
    """The operator's side of the audit log: list, export, verify, prune.

    An operator's API (as ``gc``): it takes no principal. ``retention`` is the
    log's own retention (``audit_retention``; ``None``: kept for ever), which
    :meth:`prune` applies. ``trail`` is the binder's
    :class:`~docbinder.application.steps.auditing.AuditTrail`: its collected
    read events are flushed before the log is read.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        read_uow_factory: UnitOfWorkFactory,
        trail: AuditTrail,
        clock: Clock,
        retention: timedelta | None = None,
    ) -> None:
        self._uow = uow_factory
        self._read_uow = read_uow_factory
        self._trail = trail
        self._clock = clock
        self.retention = retention

    def flush(self) -> None:
        """Append the read and resolve events the binder still holds (never raises)."""
        self._trail.flush()

    @property
    def enabled(self) -> bool:
        """Whether this binder records events (the ``audit`` setting)."""
        return self._trail.enabled

    def list(
        self,
        *,
        file_id: str | None = None,
        user: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> builtins.list[AuditEvent]:
        """Stored events matching every filter given, oldest first (by ``seq``), at most ``limit``."""
        self._trail.flush()
        with self._read_uow() as uow:
            return uow.audit.events(file_id=file_id, principal=user, since=since, limit=limit)

    def iter_all(self) -> Iterator[AuditEvent]:
        """Every stored event by ``seq``, read :data:`PAGE` at a time."""
        self._trail.flush()
        after = 0
        while True:
            with self._read_uow() as uow:
                page = uow.audit.events(after_seq=after, limit=PAGE)
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].seq

    def export_lines(self) -> Iterator[str]:
        """The whole log as JSON Lines (one :meth:`AuditEvent.wire` object per line, no newline)."""
        for event in self.iter_all():
            yield json.dumps(event.wire(), ensure_ascii=False, sort_keys=True)

    def verify(self) -> Verification:
        """Walk the chain and name its first changed, inserted or removed event (``ChainBreak``)."""
        self._trail.flush()
        with self._read_uow() as uow:
            head, anchor = uow.audit.head(), uow.audit.anchor()
        checked, broken = verify_chain(self.iter_all(), anchor=anchor, head=head, require_head=True)
        return Verification(checked, broken, head, anchor)

    def head(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the newest event: the value to export and keep elsewhere (docs/security.md).

        ``None`` for a log that never held an event. :class:`StorageError` when
        the store holds events but no head (its ``audit_head`` row was removed,
        ADR 0141): there is no head to export then, and the log is not empty.
        """
        self._trail.flush()
        with self._read_uow() as uow:
            head = uow.audit.head()
            if head is None:
                anchor = uow.audit.anchor()
                if uow.audit.events(after_seq=anchor[0] if anchor else 0, limit=1):
                    raise StorageError(HEADLESS)
        return head

    def prune(self, *, now: datetime | None = None) -> int:
        """Remove the events older than the ``audit_retention`` setting; return how many.

        Raises :class:`ConfigurationError` when no retention is set (nothing
        is removed then: an absent setting is no reason to delete).
        """
        if self.retention is None:
            raise ConfigurationError(
                "audit_retention is not set: the audit log is kept for ever; set it "
                "(for example DOCBINDER_AUDIT_RETENTION=365d) to prune"
            )
        cutoff = (now or self._clock.now()) - self.retention
        with self._uow() as uow:
            removed = uow.audit.prune(cutoff)
            uow.commit()
        return removed

    def content_read(
        self, principal: Principal, file_ids: builtins.list[str], workflow_id: str | None
    ) -> None:
        """Record ``read_content`` events for files a tool read outside ``get_content`` (batched)."""
        trail = self._trail
        if trail.enabled and file_ids:
            trail.note(
                *(
                    trail.event(
                        AuditAction.READ_CONTENT, principal, file_id=f, workflow_id=workflow_id
                    )
                    for f in file_ids
                )
            )
