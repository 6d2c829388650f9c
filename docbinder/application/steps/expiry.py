"""Whether a FileItem's retention period is over, read in a unit of work (feature row B5)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from docbinder.application.steps.auditing import AuditTrail
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import FileExpired
from docbinder.domain.governance import (
    HoldKind,
    LegalHold,
    RetentionBasis,
    RetentionPolicy,
    policy_for,
)
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock


def now(clock: Clock | None) -> datetime:
    """``clock.now()``, or the system's UTC time without a clock."""
    return clock.now() if clock is not None else datetime.now(UTC)


def due_for_expiry(
    uow: UnitOfWork, item: FileItem, moment: datetime, *, holds: bool = True
) -> bool:
    """Whether ``item`` expired by ``moment`` and no legal hold names it or a workflow showing it.

    Read in ``uow``: the policy of the file's scope (its feature instance's,
    else its mandate's), its last read for a ``last_read`` policy, the holds
    of its mandate. What ``gc`` asks of a row it has locked before removing it
    (with ``moment`` = now minus the grace period), and what a store asks of a
    duplicate candidate before reusing it (with ``moment`` = now): a file that
    is about to be removed is not handed out again (ADR 0142). ``holds=False``
    leaves the holds out: a file past its period that only a hold keeps goes as
    soon as the hold is lifted, so it is not handed out again either.
    """
    return expired_at(uow, item, moment, holds=holds) is not None


def expired_at(
    uow: UnitOfWork,
    item: FileItem,
    moment: datetime,
    *,
    holds: bool = True,
    policies: Sequence[RetentionPolicy] | None = None,
) -> datetime | None:
    """When ``item``'s retention period ended, if it ended by ``moment`` and (with ``holds``) no hold keeps it; else ``None``.

    As :func:`due_for_expiry`; ``policies`` are its mandate's when the caller
    has read them already.
    """
    if policies is None:
        policies = uow.retention.policies(item.scope.mandate_id)
    policy = policy_for(item.scope, policies)
    if policy is None:
        return None
    reads = uow.retention.last_reads([item.id]) if policy.basis is RetentionBasis.LAST_READ else {}
    ended = policy.expires_at(item.created_at, reads.get(item.id))
    if ended > moment:
        return None
    if holds and hold_on(uow, item) is not None:
        return None
    return ended


def refuse_expired(item: FileItem, ended: datetime | None) -> None:
    """Raise :class:`FileExpired` when ``ended`` (from :func:`expired_at`) is a time: its content is not served."""
    if ended is not None:
        raise FileExpired(
            f"file {item.id} ('{item.file_name}') passed its retention period: it expired on "
            f"{ended.isoformat(timespec='seconds')} and is no longer served (a legal hold "
            "keeps a file: docbinder retention hold)",
            expired_at=ended,
        )


def hold_on(uow: UnitOfWork, item: FileItem) -> LegalHold | None:
    """The legal hold that keeps ``item``, read in ``uow``: one on the file, or on a workflow showing it; ``None`` if none.

    Holds of the file's own mandate (a hold names a target of its mandate, ADR 0142).
    """
    holds = uow.retention.holds(item.scope.mandate_id)
    for hold in holds:
        if hold.kind is HoldKind.FILE and hold.target_id == item.id:
            return hold
    for hold in holds:
        if hold.kind is HoldKind.WORKFLOW and uow.workflows.documents_by_files(
            hold.target_id, [item.id]
        ):
            return hold
    return None


def read_moves_expiry(policies: Sequence[RetentionPolicy], items: Sequence[FileItem]) -> bool:
    """Whether a ``last_read`` policy among ``policies`` covers one of ``items``: a read of it moves its expiry.

    Such a read is appended to the audit log at once instead of in a batch
    (:meth:`~docbinder.application.steps.auditing.AuditTrail.note`): another
    process's resolver and ``gc`` read the last read from the log (ADR 0142).
    """
    if not any(p.basis is RetentionBasis.LAST_READ for p in policies):
        return False
    for item in items:
        policy = policy_for(item.scope, policies)
        if policy is not None and policy.basis is RetentionBasis.LAST_READ:
            return True
    return False


def admit_read(units: UnitOfWorkFactory | None, item: FileItem, moment: datetime) -> bool:
    """Refuse the read of an expired ``item``; else whether its read moves its expiry.

    One reading unit from ``units`` reads the mandate's policies (and, only
    when one covers the file, its last read and holds): :class:`FileExpired`
    when its period ended by ``moment`` and no hold keeps it, as the resolver
    answers ``expired`` (B5, ADR 0142). Returns :func:`read_moves_expiry` of
    it, for :func:`note_bytes_read`. Without ``units`` nothing is checked.
    """
    if units is None:
        return False
    with units() as uow:
        policies = uow.retention.policies(item.scope.mandate_id)
        if not policies:
            return False
        refuse_expired(item, expired_at(uow, item, moment, policies=policies))
    return read_moves_expiry(policies, [item])


def note_bytes_read(trail: AuditTrail, principal: Principal, item: FileItem, at_once: bool) -> None:
    """A ``read_bytes`` event for ``item`` (log on only): batched, or ``at_once`` when the read moves its expiry (:func:`admit_read`)."""
    if trail.enabled:
        trail.note(trail.event(AuditAction.READ_BYTES, principal, file_id=item.id), at_once=at_once)


class ExpiryGate:
    """Which FileItems are past their retention period and unheld: their content is not served (B5).

    What a reader asks before it hands out content it found by file id, as
    the resolver answers ``expired``: the byte reads (:func:`admit_read`),
    the tools' ``read_file`` and search, a signed link's mint, a provider
    upload. ``units`` makes reading units; ``clock`` says now.
    """

    def __init__(self, units: UnitOfWorkFactory, clock: Clock) -> None:
        self._units = units
        self._clock = clock

    def expired_among(self, items: Sequence[FileItem]) -> dict[str, datetime]:
        """The files of ``items`` past their period that no hold keeps, by id: when each expired.

        One reading unit, the policies of each mandate once; a file's last
        read and holds only when its policy says it may have expired.
        """
        found: dict[str, datetime] = {}
        if not items:
            return found
        moment = self._clock.now()
        with self._units() as uow:
            for mandate in sorted({i.scope.mandate_id for i in items}):
                policies = uow.retention.policies(mandate)
                if not policies:
                    continue
                for item in items:
                    if item.scope.mandate_id == mandate:
                        ended = expired_at(uow, item, moment, policies=policies)
                        if ended is not None:
                            found[item.id] = ended
        return found

    def refuse(self, item: FileItem) -> None:
        """Raise :class:`FileExpired` when ``item`` is past its period and not held."""
        refuse_expired(item, self.expired_among([item]).get(item.id))
