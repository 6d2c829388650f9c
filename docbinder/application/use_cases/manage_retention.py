"""Retention per mandate and feature instance, and legal holds (feature row B5): :class:`ManageRetention`."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from docbinder.application.steps.auditing import AuditTrail
from docbinder.application.steps.expiry import ExpiryGate, due_for_expiry
from docbinder.domain.errors import ConfigurationError, FileItemNotFound, WorkflowNotFound
from docbinder.domain.governance import (
    HoldKind,
    LegalHold,
    RetentionBasis,
    RetentionPolicy,
)
from docbinder.domain.model import FileItem, Scope, is_valid_id, shown_id
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.system import Clock


@attrs.frozen
class ExpiredFile:
    """A FileItem past its retention period and not held: what ``gc`` removes after its grace period."""

    item: FileItem
    expired_at: datetime


class ManageRetention:
    """Set retention policies and legal holds; list the files they let expire.

    An operator's API (as ``gc``): it takes no principal. A file that expired
    resolves as ``expired`` at once (:class:`ResolveDocumentList`); its bytes
    and row go only through ``gc`` (dry run first, after its grace period),
    which removes them as ``files rm`` does.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        read_uow_factory: UnitOfWorkFactory,
        clock: Clock,
        trail: AuditTrail,
    ) -> None:
        self._uow = uow_factory
        self._read_uow = read_uow_factory
        self._clock = clock
        self._trail = trail
        self._expiry = ExpiryGate(read_uow_factory, clock)

    def set(
        self, scope: Scope, max_age: timedelta, basis: RetentionBasis | str = RetentionBasis.CREATED
    ) -> RetentionPolicy:
        """Keep files of ``scope`` for ``max_age`` from their creation or last read; replaces an earlier policy.

        ``last_read`` needs the audit log (the ``audit`` setting): the reads it
        records are the last reads; :class:`ConfigurationError` without it.
        The policy is stamped with the time it was set (``set_at``): one
        counting from the last read lets no file expire sooner than ``max_age``
        after that (:class:`~docbinder.domain.governance.RetentionPolicy`).
        Replacing a policy that already counted from the last read keeps its
        ``set_at``: the reads since then are in the log.
        """
        policy = RetentionPolicy(scope, max_age, basis, set_at=self._clock.now())
        if policy.basis is RetentionBasis.LAST_READ and not self._trail.enabled:
            raise ConfigurationError(
                "retention from the last read needs the audit log, which records the reads: "
                "set audit = true (DOCBINDER_AUDIT=true)"
            )
        with self._uow() as uow:
            if policy.basis is RetentionBasis.LAST_READ:
                for earlier in uow.retention.policies(scope.mandate_id):
                    if (
                        earlier.scope == scope
                        and earlier.basis is RetentionBasis.LAST_READ
                        and earlier.set_at is not None
                    ):
                        policy = attrs.evolve(policy, set_at=earlier.set_at)
            uow.retention.set_policy(policy)
            uow.commit()
        return policy

    def policies(self, mandate_id: str) -> builtins.list[RetentionPolicy]:
        """The policies of a mandate: its own first, then by feature instance."""
        with self._read_uow() as uow:
            return uow.retention.policies(mandate_id)

    def from_last_read(self) -> builtins.list[RetentionPolicy]:
        """Every policy counting from the last read, of every mandate (mandate by mandate).

        Each needs every reading process to record its reads (the ``audit``
        setting): ``doctor`` warns a process that does not.
        """
        with self._read_uow() as uow:
            return [
                policy
                for mandate in uow.retention.policy_mandates()
                for policy in uow.retention.policies(mandate)
                if policy.basis is RetentionBasis.LAST_READ
            ]

    def remove(self, scope: Scope) -> bool:
        """Drop the policy of exactly ``scope`` (its files no longer expire); ``True`` if there was one."""
        with self._uow() as uow:
            removed = uow.retention.remove_policy(scope)
            uow.commit()
        return removed

    def hold(
        self, kind: HoldKind | str, target_id: str, mandate_id: str, reason: str = ""
    ) -> LegalHold:
        """Place a legal hold on a file or a workflow of ``mandate_id``: while it stands, nothing it names expires.

        The target is read in the writing unit: :class:`FileItemNotFound` or
        :class:`WorkflowNotFound` when it does not exist or belongs to another
        mandate (the same answer, ADR 0142), so a hold can never be placed
        where ``gc``, which reads the holds of a file's own mandate, would not
        see it. Holding a target again replaces its reason and time.
        """
        hold = LegalHold(kind, target_id, mandate_id, reason, self._clock.now())
        with self._uow() as uow:
            if hold.kind is HoldKind.FILE:
                # locked: a delete that locked the row first ends before this reads it
                item = uow.files.lock(target_id) if is_valid_id(target_id) else None
                if item is None or item.scope.mandate_id != mandate_id:
                    raise FileItemNotFound(
                        f"file {shown_id(target_id)} not found in mandate {mandate_id}"
                    )
            else:
                workflow = uow.workflows.get_workflow(target_id) if is_valid_id(target_id) else None
                if workflow is None or workflow.scope.mandate_id != mandate_id:
                    raise WorkflowNotFound(
                        f"workflow {shown_id(target_id)} not found in mandate {mandate_id}"
                    )
            uow.retention.place_hold(hold)
            uow.commit()
        return hold

    def release(self, kind: HoldKind | str, target_id: str, mandate_id: str) -> bool:
        """Lift the hold ``mandate_id`` placed; ``True`` if there was one. Files it held expire as their policy says.

        Another mandate's hold on the same id is left alone (``False``).
        """
        with self._uow() as uow:
            released = uow.retention.release_hold(HoldKind(kind), target_id, mandate_id)
            uow.commit()
        return released

    def holds(self, mandate_id: str) -> builtins.list[LegalHold]:
        """The holds of a mandate."""
        with self._read_uow() as uow:
            return uow.retention.holds(mandate_id)

    def has_expired(self, item: FileItem) -> bool:
        """Whether ``item``'s retention period is over, held or not (read now, in a reading unit).

        What a caller asks before handing an existing FileItem out again (a
        harvest that finds the same bytes already in the workflow): an
        expired file resolves as ``expired`` and goes with the next ``gc``.
        """
        with self._read_uow() as uow:
            return due_for_expiry(uow, item, self._clock.now(), holds=False)

    def expired_among(self, items: Sequence[FileItem]) -> dict[str, datetime]:
        """The files of ``items`` past their retention period that no hold keeps, by id: when each expired.

        What a reader asks before serving content it found by file id, as the
        resolver answers ``expired`` (B5); see :class:`~docbinder.application.steps.expiry.ExpiryGate`.
        """
        return self._expiry.expired_among(items)

    def refuse_expired(self, item: FileItem) -> None:
        """Raise :class:`~docbinder.domain.errors.FileExpired` when ``item`` is past its period and not held."""
        self._expiry.refuse(item)

    def still_due(self, uow: UnitOfWork, item: FileItem, grace: timedelta) -> bool:
        """Whether ``item`` is, read in ``uow`` now, still expired by ``grace`` and under no hold.

        What a deleting unit asks after locking the row: a hold, a removed or
        longer policy, or a read (``--from last-read``) that came after
        :meth:`expired` listed the file keeps it.
        """
        return due_for_expiry(uow, item, self._clock.now() - grace)

    def expired(
        self, *, now: datetime | None = None, grace: timedelta = timedelta(0)
    ) -> builtins.list[ExpiredFile]:
        """Every FileItem that expired at least ``grace`` before ``now`` and that no hold names.

        A file held through a workflow is one any held workflow's document
        points at. Reads, per policy, only the files it lets expire (one
        indexed query each, :meth:`~docbinder.ports.metadata.RetentionRepository.expired_files`;
        ADR 0097), never a mandate's other files.
        """
        moment = (now or self._clock.now()) - grace
        found: list[ExpiredFile] = []
        with self._read_uow() as uow:
            due: list[ExpiredFile] = []
            for mandate in uow.retention.policy_mandates():
                policies = uow.retention.policies(mandate)
                own = [p.scope.feature_instance_id for p in policies]
                features = [f for f in own if f is not None]
                for policy in policies:
                    if policy.expires_nothing_by(moment):
                        continue
                    others = features if policy.scope.feature_instance_id is None else []
                    items = uow.retention.expired_files(
                        policy, moment - policy.max_age, other_features=others
                    )
                    reads = (
                        uow.retention.last_reads([i.id for i in items])
                        if items and policy.basis is RetentionBasis.LAST_READ
                        else {}
                    )
                    due.extend(
                        ExpiredFile(i, policy.expires_at(i.created_at, reads.get(i.id)))
                        for i in items
                    )
            if not due:
                return []
            held = uow.retention.held([e.item.id for e in due], [])
            held_workflows = {
                h.target_id
                for mandate in {e.item.scope.mandate_id for e in due}
                for h in uow.retention.holds(mandate)
                if h.kind is HoldKind.WORKFLOW
            }
            due_ids = [e.item.id for e in due]
            held_by_workflow = {
                file_id
                for workflow_id in sorted(held_workflows)
                for file_id, documents in uow.workflows.documents_by_files(
                    workflow_id, due_ids
                ).items()
                if documents
            }
            found = [e for e in due if e.item.id not in held and e.item.id not in held_by_workflow]
        return found
