"""Whether a FileItem's retention period is over, read in a unit of work (feature row B5)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from docbinder.application.steps.auditing import AuditTrail
from docbinder.domain.audit import AuditAction
from docbinder.domain.governance import (
    HoldKind,
    LegalHold,
    RetentionBasis,
    RetentionPolicy,
    policy_for,
)
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory


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
    policy = policy_for(item.scope, uow.retention.policies(item.scope.mandate_id))
    if policy is None:
        return False
    reads = uow.retention.last_reads([item.id]) if policy.basis is RetentionBasis.LAST_READ else {}
    if policy.expires_at(item.created_at, reads.get(item.id)) > moment:
        return False
    return not holds or hold_on(uow, item) is None


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


def note_bytes_read(
    trail: AuditTrail, units: UnitOfWorkFactory | None, principal: Principal, item: FileItem
) -> None:
    """A ``read_bytes`` event for ``item``: batched, or at once when a read moves its expiry.

    ``units`` makes the reading unit that asks for the mandate's policies (one
    query, only with the log on); without it the event is batched.
    """
    if not trail.enabled:
        return
    at_once = False
    if units is not None:
        with units() as uow:
            at_once = read_moves_expiry(uow.retention.policies(item.scope.mandate_id), [item])
    trail.note(trail.event(AuditAction.READ_BYTES, principal, file_id=item.id), at_once=at_once)
