"""FileItems' copies at model providers on ``sqlite3``: the :class:`~docbinder.ports.metadata.ProviderCopyRepository` (B22).

A writing SQLite unit holds the database's write lock from its first write,
so the insert that claims a key cannot interleave with another writer's.
"""

from __future__ import annotations

import builtins
import sqlite3
from datetime import datetime
from typing import Any

from docbinder.adapters.sql.provider_rows import copy_from_row, copy_row, key_columns
from docbinder.adapters.sql.schema import provider_copies, sqlite_utc_text
from docbinder.adapters.sqlite.rows import columns, placeholders, utc_from_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.model import Scope
from docbinder.domain.providers import CopyState, ProviderCopy, ProviderCopyKey

_COLUMNS = columns(provider_copies)
_TIMES = ("claimed_at", "uploaded_at", "expires_at")
_KEY = " AND ".join(
    f"{name} = ?" for name in ("sha256", "provider", "account", "mandate_id", "feature_key")
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM provider_copies"
_INSERT = (
    f"INSERT INTO provider_copies ({', '.join(_COLUMNS)}) VALUES ({placeholders(len(_COLUMNS))})"
)


def _values(copy: ProviderCopy) -> dict[str, Any]:
    row = copy_row(copy)
    for name in _TIMES:
        row[name] = sqlite_utc_text(row[name])
    return row


def _load(row: tuple[Any, ...]) -> ProviderCopy:
    m = dict(zip(_COLUMNS, row, strict=True))
    for name in _TIMES:
        if m[name] is not None:
            m[name] = utc_from_text(m[name])
    return copy_from_row(m)


def _key(key: ProviderCopyKey) -> tuple[str, ...]:
    return tuple(key_columns(key).values())


class SqliteProviderCopyRepository:
    """Table ``provider_copies``; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def claim(self, copy: ProviderCopy) -> ProviderCopy | None:
        row = _values(copy)
        with translating():
            try:
                with self._session.one_statement():
                    self._session.rowcount(_INSERT, tuple(row[name] for name in _COLUMNS))
            except sqlite3.IntegrityError:
                pass
            else:
                return None
        there = self.get(copy.key)
        if there is None:  # the write lock is held: cannot happen unless the row is corrupt
            raise RuntimeError("a refused provider copy insert found no row")
        return there

    def get(self, key: ProviderCopyKey) -> ProviderCopy | None:
        with translating():
            row = self._session.one(f"{_SELECT} WHERE {_KEY}", _key(key))
        return None if row is None else _load(row)

    def replace(self, expected_claim: str, copy: ProviderCopy) -> bool:
        row = _values(copy)
        keys = key_columns(copy.key)
        names = [name for name in _COLUMNS if name not in keys]
        with translating(), self._session.one_statement():
            return (
                self._session.rowcount(
                    f"UPDATE provider_copies SET {', '.join(f'{n} = ?' for n in names)} "
                    f"WHERE {_KEY} AND claim = ?",
                    (*(row[n] for n in names), *_key(copy.key), expected_claim),
                )
                > 0
            )

    def remove(self, key: ProviderCopyKey, expected_claim: str) -> bool:
        with translating(), self._session.one_statement():
            return (
                self._session.rowcount(
                    f"DELETE FROM provider_copies WHERE {_KEY} AND claim = ?",
                    (*_key(key), expected_claim),
                )
                > 0
            )

    def renew(self, key: ProviderCopyKey, expected_claim: str, at: datetime) -> bool:
        with translating(), self._session.one_statement():
            return (
                self._session.rowcount(
                    f"UPDATE provider_copies SET claimed_at = ? WHERE {_KEY} AND claim = ? "
                    "AND state = ?",
                    (sqlite_utc_text(at), *_key(key), expected_claim, CopyState.UPLOADING.value),
                )
                > 0
            )

    def of_content(self, scope: Scope, sha256: str) -> builtins.list[ProviderCopy]:
        with translating():
            rows = self._session.all(
                f"{_SELECT} WHERE sha256 = ? AND mandate_id = ? AND feature_key = ? "
                "ORDER BY provider, account",
                (sha256, scope.mandate_id, scope.feature_instance_id or ""),
            )
        return [_load(row) for row in rows]

    def deleting(self, limit: int) -> builtins.list[ProviderCopy]:
        with translating():
            rows = self._session.all(
                f"{_SELECT} WHERE state = ? ORDER BY claimed_at LIMIT ?",
                (CopyState.DELETING.value, limit),
            )
        return [_load(row) for row in rows]
