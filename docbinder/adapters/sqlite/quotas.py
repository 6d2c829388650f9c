"""Quotas in table ``quotas`` on ``sqlite3``: the :class:`~docbinder.ports.metadata.QuotaRepository` (B12).

A writing SQLite unit holds the database's write lock from its first write
(``BEGIN IMMEDIATE``), so reading a quota and charging it cannot interleave
with another writer: no row lock is needed (ADR 0090).
"""

from __future__ import annotations

import builtins
from typing import Any

from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.errors import StorageError
from docbinder.domain.governance import Quota
from docbinder.domain.model import Scope

_COLUMNS = (
    "mandate_id",
    "feature_instance_id",
    "max_bytes",
    "max_files",
    "max_file_size",
    "used_bytes",
    "used_files",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM quotas"
_HELD = f"{_SELECT} WHERE mandate_id = ? AND feature_key IN ('', ?)"
_CHARGE = (
    "UPDATE quotas SET used_bytes = used_bytes + ?, used_files = used_files + ? "
    "WHERE mandate_id = ? AND feature_key IN ('', ?)"
)


def feature_key(scope: Scope) -> str:
    """The ``feature_key`` column of ``scope``'s quota: its feature instance id, ``''`` for a mandate."""
    return scope.feature_instance_id or ""


def _quota(row: tuple[Any, ...]) -> Quota:
    mandate, feature, max_bytes, max_files, max_file_size, used_bytes, used_files = row
    try:
        return Quota(
            Scope(mandate, feature),
            max_bytes=max_bytes,
            max_files=max_files,
            max_file_size=max_file_size,
            used_bytes=used_bytes,
            used_files=used_files,
        )
    except Exception as err:  # a corrupt row
        raise StorageError(f"a stored quota row is invalid: {err}") from err


def held_quotas(session: SqliteSession, scope: Scope) -> list[Quota]:
    """The quotas a file of ``scope`` counts against (the unit's write lock holds them)."""
    with translating():
        rows = session.all(_HELD, (scope.mandate_id, feature_key(scope)))
    return [_quota(row) for row in rows]


def charge(session: SqliteSession, scope: Scope, size: int, files: int) -> None:
    """Add ``size`` bytes and ``files`` FileItems (negative: remove) to the usage of ``scope``'s quotas."""
    with translating():
        session.rowcount(_CHARGE, (size, files, scope.mandate_id, feature_key(scope)))


class SqliteQuotaRepository:
    """Quotas in table ``quotas``; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def usage(self, scope: Scope) -> tuple[int, int]:
        sql = "SELECT COALESCE(SUM(size), 0), COUNT(*) FROM file_items WHERE mandate_id = ?"
        params: tuple[Any, ...] = (scope.mandate_id,)
        if scope.feature_instance_id is not None:
            sql += " AND feature_instance_id = ?"
            params += (scope.feature_instance_id,)
        with translating():
            row = self._session.one(sql, params)
        assert row is not None
        return int(row[0]), int(row[1])

    def set_quota(self, quota: Quota) -> Quota:
        scope = quota.scope
        used_bytes, used_files = self.usage(scope)
        with translating(), self._session.one_statement():
            self._session.rowcount(
                "INSERT INTO quotas (mandate_id, feature_key, feature_instance_id, max_bytes, "
                "max_files, max_file_size, used_bytes, used_files) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (mandate_id, feature_key) DO UPDATE SET max_bytes = excluded.max_bytes, "
                "max_files = excluded.max_files, max_file_size = excluded.max_file_size, "
                "used_bytes = excluded.used_bytes, used_files = excluded.used_files",
                (
                    scope.mandate_id,
                    feature_key(scope),
                    scope.feature_instance_id,
                    quota.max_bytes,
                    quota.max_files,
                    quota.max_file_size,
                    used_bytes,
                    used_files,
                ),
            )
        stored = self.get_quota(scope)
        assert stored is not None
        return stored

    def get_quota(self, scope: Scope) -> Quota | None:
        with translating():
            row = self._session.one(
                f"{_SELECT} WHERE mandate_id = ? AND feature_key = ?",
                (scope.mandate_id, feature_key(scope)),
            )
        return None if row is None else _quota(row)

    def list_quotas(self, mandate_id: str) -> builtins.list[Quota]:
        with translating():
            rows = self._session.all(
                f"{_SELECT} WHERE mandate_id = ? ORDER BY feature_key", (mandate_id,)
            )
        return [_quota(row) for row in rows]

    def remove_quota(self, scope: Scope) -> bool:
        with translating():
            return (
                self._session.rowcount(
                    "DELETE FROM quotas WHERE mandate_id = ? AND feature_key = ?",
                    (scope.mandate_id, feature_key(scope)),
                )
                > 0
            )
