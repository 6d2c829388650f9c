"""Retention policies and legal holds on ``sqlite3``: the :class:`~docbinder.ports.metadata.RetentionRepository` (B5)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from docbinder.adapters.sql.schema import file_items, sqlite_utc_text
from docbinder.adapters.sqlite.files import load_file
from docbinder.adapters.sqlite.rows import placeholders, select_sql, utc_from_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.audit import READ_ACTIONS
from docbinder.domain.errors import StorageError
from docbinder.domain.governance import HoldKind, LegalHold, RetentionBasis, RetentionPolicy
from docbinder.domain.model import FileItem, Scope

IN_CHUNK = 500
_READS = ", ".join(f"'{action}'" for action in READ_ACTIONS)  # fixed names, no input
_NOT_READ_SINCE = (
    " AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.file_id = file_items.id"
    f" AND a.action IN ({_READS}) AND a.outcome = 'ok' AND a.at > ?)"
)


class SqliteRetentionRepository:
    """Tables ``retention_policies`` and ``legal_holds``; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def set_policy(self, policy: RetentionPolicy) -> None:
        scope = policy.scope
        with translating(), self._session.one_statement():
            self._session.rowcount(
                "INSERT INTO retention_policies (mandate_id, feature_key, feature_instance_id, "
                "max_age_seconds, basis, set_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT "
                "(mandate_id, feature_key) DO UPDATE SET max_age_seconds = "
                "excluded.max_age_seconds, basis = excluded.basis, set_at = excluded.set_at",
                (
                    scope.mandate_id,
                    scope.feature_instance_id or "",
                    scope.feature_instance_id,
                    int(policy.max_age.total_seconds()),
                    policy.basis.value,
                    sqlite_utc_text(policy.set_at),
                ),
            )

    def policies(self, mandate_id: str) -> builtins.list[RetentionPolicy]:
        with translating():
            rows = self._session.all(
                "SELECT mandate_id, feature_instance_id, max_age_seconds, basis, set_at FROM "
                "retention_policies WHERE mandate_id = ? ORDER BY feature_key",
                (mandate_id,),
            )
        try:
            return [
                RetentionPolicy(
                    Scope(m, f),
                    timedelta(seconds=int(age)),
                    basis,
                    set_at=None if set_at is None else utc_from_text(set_at),
                )
                for m, f, age, basis, set_at in rows
            ]
        except Exception as err:
            raise StorageError(f"a stored retention policy is invalid: {err}") from err

    def remove_policy(self, scope: Scope) -> bool:
        with translating():
            return (
                self._session.rowcount(
                    "DELETE FROM retention_policies WHERE mandate_id = ? AND feature_key = ?",
                    (scope.mandate_id, scope.feature_instance_id or ""),
                )
                > 0
            )

    def place_hold(self, hold: LegalHold) -> None:
        with translating(), self._session.one_statement():
            self._session.rowcount(
                "INSERT INTO legal_holds (kind, target_id, mandate_id, reason, placed_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, target_id) DO UPDATE SET "
                "mandate_id = excluded.mandate_id, reason = excluded.reason, "
                "placed_at = excluded.placed_at",
                (
                    hold.kind.value,
                    hold.target_id,
                    hold.mandate_id,
                    hold.reason,
                    sqlite_utc_text(hold.placed_at),
                ),
            )

    def release_hold(self, kind: HoldKind, target_id: str, mandate_id: str) -> bool:
        with translating():
            return (
                self._session.rowcount(
                    "DELETE FROM legal_holds WHERE kind = ? AND target_id = ? AND mandate_id = ?",
                    (kind.value, target_id, mandate_id),
                )
                > 0
            )

    def holds(self, mandate_id: str) -> builtins.list[LegalHold]:
        with translating():
            rows = self._session.all(
                "SELECT kind, target_id, mandate_id, reason, placed_at FROM legal_holds "
                "WHERE mandate_id = ? ORDER BY kind, target_id",
                (mandate_id,),
            )
        return [
            LegalHold(kind, target, mandate, reason, utc_from_text(placed))
            for kind, target, mandate, reason, placed in rows
        ]

    def held(self, file_ids: Sequence[str], workflow_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for kind, ids in ((HoldKind.FILE, list(file_ids)), (HoldKind.WORKFLOW, list(workflow_ids))):
            for start in range(0, len(ids), IN_CHUNK):
                chunk = ids[start : start + IN_CHUNK]
                with translating():
                    rows = self._session.all(
                        "SELECT target_id FROM legal_holds WHERE kind = ? AND target_id IN "
                        f"({placeholders(len(chunk))})",
                        (kind.value, *chunk),
                    )
                found.update(row[0] for row in rows)
        return found

    def last_reads(self, file_ids: Sequence[str]) -> dict[str, datetime]:
        ids = list(dict.fromkeys(file_ids))
        found: dict[str, datetime] = {}
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            params: tuple[Any, ...] = tuple(chunk)
            with translating():
                rows = self._session.all(
                    "SELECT file_id, MAX(at) FROM audit_events WHERE file_id IN "
                    f"({placeholders(len(chunk))}) AND action IN ({_READS}) "
                    "AND outcome = 'ok' GROUP BY file_id",
                    params,
                )
            try:
                found.update({row[0]: utc_from_text(row[1]) for row in rows})
            except ValueError as err:  # a changed row: verify names it; the read must not crash
                raise StorageError(
                    f"the time of an audit event is unreadable ({err}); "
                    "`docbinder audit verify` names the changed event"
                ) from err
        return found

    def policy_mandates(self) -> builtins.list[str]:
        with translating():
            rows = self._session.all(
                "SELECT DISTINCT mandate_id FROM retention_policies ORDER BY mandate_id"
            )
        return [row[0] for row in rows]

    def expired_files(
        self,
        policy: RetentionPolicy,
        born_before: datetime,
        *,
        other_features: Sequence[str] = (),
    ) -> builtins.list[FileItem]:
        sql, params = expired_query(policy, born_before, other_features)
        with translating():
            rows = self._session.all(sql, params)
        return [load_file(row) for row in rows]


def expired_query(
    policy: RetentionPolicy, born_before: datetime, other_features: Sequence[str]
) -> tuple[str, list[Any]]:
    """The SQL text and parameters of :meth:`SqliteRetentionRepository.expired_files` (ADR 0097)."""
    scope, cutoff = policy.scope, sqlite_utc_text(born_before)
    where = "WHERE mandate_id = ? AND created_at <= ?"
    params: list[Any] = [scope.mandate_id, cutoff]
    if scope.feature_instance_id is not None:
        where += " AND feature_instance_id = ?"
        params.append(scope.feature_instance_id)
    elif other_features:
        others = list(dict.fromkeys(other_features))
        where += (
            " AND (feature_instance_id IS NULL OR feature_instance_id NOT IN "
            f"({placeholders(len(others))}))"
        )
        params.extend(others)
    if policy.basis is RetentionBasis.LAST_READ:
        where += _NOT_READ_SINCE
        params.append(cutoff)
    return select_sql(file_items, where + " ORDER BY created_at, id"), params
