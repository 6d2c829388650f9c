"""Reading, exporting, verifying and pruning the audit log (feature row B11): :class:`AuditLog`."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from datetime import datetime, timedelta

import attrs

from docbinder.application.steps.auditing import AuditTrail
from docbinder.domain.audit import HEADLESS, AuditAction, AuditEvent, ChainBreak, verify_chain
from docbinder.domain.errors import (
    AuditEventUnreadable,
    ConfigurationError,
    InvalidInput,
    StorageError,
)
from docbinder.domain.governance import RetentionBasis
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
        """Stored events matching every filter given, oldest first (by ``seq``), at most ``limit``.

        Raises :class:`InvalidInput` for a ``limit`` below 0 or above 10**9.
        """
        if limit is not None and not 0 <= limit <= 10**9:
            raise InvalidInput(f"limit must be from 0 to 10**9, got {limit}")
        self._trail.flush()
        with self._read_uow() as uow:
            return uow.audit.events(file_id=file_id, principal=user, since=since, limit=limit)

    def iter_all(self) -> Iterator[AuditEvent]:
        """Every stored event by ``seq``, read :data:`PAGE` at a time.

        A page holding a row that is no event is read again one event at a
        time: the events before that row are yielded, then
        :class:`AuditEventUnreadable` is raised.
        """
        self._trail.flush()
        after = 0
        while True:
            with self._read_uow() as uow:
                try:
                    page = uow.audit.events(after_seq=after, limit=PAGE)
                except AuditEventUnreadable:
                    page = None
            if page is None:
                yield from self._one_by_one(after)  # raises at the row that is no event
                return
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].seq

    def _one_by_one(self, after: int) -> Iterator[AuditEvent]:
        """The events after ``after`` one read each, up to the row that raises :class:`AuditEventUnreadable`."""
        while True:
            with self._read_uow() as uow:
                one = uow.audit.events(after_seq=after, limit=1)
            if not one:
                return
            yield one[0]
            after = one[0].seq

    def export_lines(self) -> Iterator[str]:
        """The whole log as JSON Lines (one :meth:`AuditEvent.wire` object per line, no newline)."""
        for event in self.iter_all():
            yield json.dumps(event.wire(), ensure_ascii=False, sort_keys=True)

    def verify(self) -> Verification:
        """Walk the chain and name its first changed, inserted or removed event (``ChainBreak``).

        A stored row that is no event (:class:`AuditEventUnreadable`: a time,
        action or detail that does not parse) is a changed event: the walk
        ends there, and the break is that row unless one came before it.
        """
        self._trail.flush()
        with self._read_uow() as uow:
            head, anchor = uow.audit.head(), uow.audit.anchor()
        unreadable: list[AuditEventUnreadable] = []

        def readable() -> Iterator[AuditEvent]:
            try:
                yield from self.iter_all()
            except AuditEventUnreadable as err:
                unreadable.append(err)

        checked, broken = verify_chain(readable(), anchor=anchor, head=head, require_head=True)
        if unreadable:
            bad = unreadable[0]
            seq = bad.seq if bad.seq is not None else (anchor[0] if anchor else 0) + checked + 1
            if broken is None or broken.seq >= seq:
                broken = ChainBreak(seq, "changed", f"event {seq} was changed: {bad}")
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
        is removed then: an absent setting is no reason to delete). Events a
        retention policy from the last read still needs are kept: nothing
        newer than its ``max_age`` goes, read or not, since a read removed
        would let its file expire early (ADR 0142).
        """
        if self.retention is None:
            raise ConfigurationError(
                "audit_retention is not set: the audit log is kept for ever; set it "
                "(for example DOCBINDER_AUDIT_RETENTION=365d) to prune"
            )
        moment = now or self._clock.now()
        cutoff = moment - self.retention
        with self._uow() as uow:
            # the reads a policy from the last read counts from stay (ADR 0142)
            for mandate in uow.retention.policy_mandates():
                for policy in uow.retention.policies(mandate):
                    if policy.basis is RetentionBasis.LAST_READ:
                        cutoff = min(cutoff, moment - policy.max_age)
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
