"""Retention policies and legal holds: the SQL :class:`~docbinder.ports.metadata.RetentionRepository` (B5)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.queries import IN_CHUNK, load, rowcount
from docbinder.adapters.sql.schema import (
    audit_events,
    file_items,
    legal_holds,
    retention_policies,
)
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.audit import READ_ACTIONS
from docbinder.domain.errors import StorageError
from docbinder.domain.governance import HoldKind, LegalHold, RetentionBasis, RetentionPolicy
from docbinder.domain.model import FileItem, Scope

_P = retention_policies.c
_H = legal_holds.c
_A = audit_events.c
_F = file_items.c
READ_OK = "ok"
"""The outcome of a read that counts as one for retention: a read that did not happen (``read_content``
with ``blob_missing``, ``not_read``, ...) does not keep a file alive (ADR 0127)."""


def _policy(row: sa.Row[object]) -> RetentionPolicy:
    try:
        m = row._mapping
        return RetentionPolicy(
            Scope(m["mandate_id"], m["feature_instance_id"]),
            timedelta(seconds=int(m["max_age_seconds"])),
            m["basis"],
            set_at=m["set_at"],
        )
    except Exception as err:
        raise StorageError(f"a stored retention policy is invalid: {err}") from err


def _hold(row: sa.Row[object]) -> LegalHold:
    m = row._mapping
    return LegalHold(m["kind"], m["target_id"], m["mandate_id"], m["reason"], m["placed_at"])


class SqlRetentionRepository:
    """Tables ``retention_policies`` and ``legal_holds``; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def set_policy(self, policy: RetentionPolicy) -> None:
        key = {
            "mandate_id": policy.scope.mandate_id,
            "feature_key": policy.scope.feature_instance_id or "",
        }
        values = {
            "feature_instance_id": policy.scope.feature_instance_id,
            "max_age_seconds": int(policy.max_age.total_seconds()),
            "basis": policy.basis.value,
            "set_at": policy.set_at,
        }
        with translating():
            changed = rowcount(
                self._session.execute(
                    sa.update(retention_policies)
                    .where(_P.mandate_id == key["mandate_id"], _P.feature_key == key["feature_key"])
                    .values(values)
                )
            )
            if changed == 0:
                self._session.execute(sa.insert(retention_policies).values({**key, **values}))

    def policies(self, mandate_id: str) -> builtins.list[RetentionPolicy]:
        with translating():
            rows = self._session.execute(
                sa.select(retention_policies)
                .where(_P.mandate_id == mandate_id)
                .order_by(_P.feature_key)
            ).all()
        return [_policy(row) for row in rows]

    def remove_policy(self, scope: Scope) -> bool:
        with translating():
            result = self._session.execute(
                sa.delete(retention_policies).where(
                    _P.mandate_id == scope.mandate_id,
                    _P.feature_key == (scope.feature_instance_id or ""),
                )
            )
        return rowcount(result) > 0

    def place_hold(self, hold: LegalHold) -> None:
        with translating():
            self._session.execute(
                sa.delete(legal_holds).where(
                    _H.kind == hold.kind.value, _H.target_id == hold.target_id
                )
            )
            self._session.execute(
                sa.insert(legal_holds).values(
                    kind=hold.kind.value,
                    target_id=hold.target_id,
                    mandate_id=hold.mandate_id,
                    reason=hold.reason,
                    placed_at=hold.placed_at,
                )
            )

    def release_hold(self, kind: HoldKind, target_id: str, mandate_id: str) -> bool:
        with translating():
            result = self._session.execute(
                sa.delete(legal_holds).where(
                    _H.kind == kind.value, _H.target_id == target_id, _H.mandate_id == mandate_id
                )
            )
        return rowcount(result) > 0

    def holds(self, mandate_id: str) -> builtins.list[LegalHold]:
        with translating():
            rows = self._session.execute(
                sa.select(legal_holds)
                .where(_H.mandate_id == mandate_id)
                .order_by(_H.kind, _H.target_id)
            ).all()
        return [_hold(row) for row in rows]

    def held(self, file_ids: Sequence[str], workflow_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for kind, ids in ((HoldKind.FILE, list(file_ids)), (HoldKind.WORKFLOW, list(workflow_ids))):
            for start in range(0, len(ids), IN_CHUNK):
                with translating():
                    rows = self._session.execute(
                        sa.select(_H.target_id).where(
                            _H.kind == kind.value, _H.target_id.in_(ids[start : start + IN_CHUNK])
                        )
                    ).all()
                found.update(row[0] for row in rows)
        return found

    def last_reads(self, file_ids: Sequence[str]) -> dict[str, datetime]:
        ids = list(dict.fromkeys(file_ids))
        found: dict[str, datetime] = {}
        for start in range(0, len(ids), IN_CHUNK):
            with translating():
                rows = self._session.execute(
                    sa.select(_A.file_id, sa.func.max(_A.at))
                    .where(_A.file_id.in_(ids[start : start + IN_CHUNK]))
                    .where(_A.action.in_(READ_ACTIONS), _A.outcome == READ_OK)
                    .group_by(_A.file_id)
                ).all()
            found.update({row[0]: row[1] for row in rows})
        return found

    def policy_mandates(self) -> builtins.list[str]:
        with translating():
            rows = self._session.execute(
                sa.select(_P.mandate_id).distinct().order_by(_P.mandate_id)
            ).all()
        return [row[0] for row in rows]

    def expired_files(
        self,
        policy: RetentionPolicy,
        born_before: datetime,
        *,
        other_features: Sequence[str] = (),
    ) -> builtins.list[FileItem]:
        with translating():
            rows = self._session.execute(
                expired_statement(policy, born_before, other_features)
            ).all()
        return [load(row, FileItem) for row in rows]


def expired_statement(
    policy: RetentionPolicy, born_before: datetime, other_features: Sequence[str]
) -> sa.Select[Any]:
    """The query of :meth:`SqlRetentionRepository.expired_files`: a range of ``(mandate_id, created_at)`` (ADR 0097)."""
    scope = policy.scope
    stmt = sa.select(file_items).where(
        _F.mandate_id == scope.mandate_id, _F.created_at <= born_before
    )
    if scope.feature_instance_id is not None:
        stmt = stmt.where(_F.feature_instance_id == scope.feature_instance_id)
    elif other_features:
        others = list(dict.fromkeys(other_features))
        stmt = stmt.where(
            sa.or_(_F.feature_instance_id.is_(None), _F.feature_instance_id.not_in(others))
        )
    if policy.basis is RetentionBasis.LAST_READ:
        read_since = (
            sa.select(_A.seq)
            .where(
                _A.file_id == _F.id,
                _A.action.in_(READ_ACTIONS),
                _A.outcome == READ_OK,
                _A.at > born_before,
            )
            .exists()
        )
        stmt = stmt.where(~read_since)
    return stmt.order_by(_F.created_at, _F.id)
