"""Whether a FileItem's retention period is over, read in a unit of work (feature row B5)."""

from __future__ import annotations

from datetime import datetime

from docbinder.domain.governance import HoldKind, RetentionBasis, policy_for
from docbinder.domain.model import FileItem
from docbinder.ports.metadata import UnitOfWork


def due_for_expiry(uow: UnitOfWork, item: FileItem, moment: datetime) -> bool:
    """Whether ``item`` expired by ``moment`` and no legal hold names it or a workflow showing it.

    Read in ``uow``: the policy of the file's scope (its feature instance's,
    else its mandate's), its last read for a ``last_read`` policy, the holds
    of its mandate. What ``gc`` asks of a row it has locked before removing it
    (with ``moment`` = now minus the grace period), and what a store asks of a
    duplicate candidate before reusing it (with ``moment`` = now): a file that
    is about to be removed is not handed out again (ADR 0142).
    """
    policy = policy_for(item.scope, uow.retention.policies(item.scope.mandate_id))
    if policy is None:
        return False
    reads = uow.retention.last_reads([item.id]) if policy.basis is RetentionBasis.LAST_READ else {}
    if policy.expires_at(item.created_at, reads.get(item.id)) > moment:
        return False
    if uow.retention.held([item.id], []):
        return False
    for hold in uow.retention.holds(item.scope.mandate_id):
        if hold.kind is HoldKind.WORKFLOW and uow.workflows.documents_by_files(
            hold.target_id, [item.id]
        ):
            return False
    return True
