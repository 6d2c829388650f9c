"""FileItems' copies at model providers: the SQL :class:`~docbinder.ports.metadata.ProviderCopyRepository` (B22)."""

from __future__ import annotations

import builtins
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.provider_rows import copy_from_row, copy_row, key_columns
from docbinder.adapters.sql.queries import rowcount
from docbinder.adapters.sql.schema import provider_copies
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Scope
from docbinder.domain.providers import CopyState, ProviderCopy, ProviderCopyKey

_C = provider_copies.c


def _where_key(key: ProviderCopyKey) -> list[sa.ColumnElement[bool]]:
    return [getattr(_C, name) == value for name, value in key_columns(key).items()]


class SqlProviderCopyRepository:
    """Table ``provider_copies``; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def claim(self, copy: ProviderCopy) -> ProviderCopy | None:
        with translating():
            try:
                with self._session.begin_nested():
                    self._session.execute(sa.insert(provider_copies).values(copy_row(copy)))
            except sa_exc.IntegrityError:
                pass
            else:
                return None
        there = self.get(copy.key)
        if there is None:  # removed between the refused insert and the read
            raise StorageError("the provider copy row changed meanwhile; try again")
        return there

    def get(self, key: ProviderCopyKey) -> ProviderCopy | None:
        with translating():
            row = self._session.execute(sa.select(provider_copies).where(*_where_key(key))).first()
        return None if row is None else copy_from_row(row._mapping)

    def replace(self, expected_claim: str, copy: ProviderCopy) -> bool:
        values = copy_row(copy)
        for name in key_columns(copy.key):
            values.pop(name)
        with translating():
            result = self._session.execute(
                sa.update(provider_copies)
                .where(*_where_key(copy.key), _C.claim == expected_claim)
                .values(values)
            )
        return rowcount(result) > 0

    def remove(self, key: ProviderCopyKey, expected_claim: str) -> bool:
        with translating():
            result = self._session.execute(
                sa.delete(provider_copies).where(*_where_key(key), _C.claim == expected_claim)
            )
        return rowcount(result) > 0

    def renew(self, key: ProviderCopyKey, expected_claim: str, at: datetime) -> bool:
        with translating():
            result = self._session.execute(
                sa.update(provider_copies)
                .where(
                    *_where_key(key),
                    _C.claim == expected_claim,
                    _C.state == CopyState.UPLOADING.value,
                )
                .values(claimed_at=at)
            )
        return rowcount(result) > 0

    def of_content(self, scope: Scope, sha256: str) -> builtins.list[ProviderCopy]:
        with translating():
            rows = self._session.execute(
                sa.select(provider_copies)
                .where(
                    _C.sha256 == sha256,
                    _C.mandate_id == scope.mandate_id,
                    _C.feature_key == (scope.feature_instance_id or ""),
                )
                .order_by(_C.provider, _C.account)
            ).all()
        return [copy_from_row(row._mapping) for row in rows]

    def deleting(self, limit: int) -> builtins.list[ProviderCopy]:
        with translating():
            rows = self._session.execute(
                sa.select(provider_copies)
                .where(_C.state == CopyState.DELETING.value)
                .order_by(_C.claimed_at)
                .limit(limit)
            ).all()
        return [copy_from_row(row._mapping) for row in rows]
