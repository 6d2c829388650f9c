"""Quotas in table ``quotas``: the SQL :class:`~docbinder.ports.metadata.QuotaRepository` (B12, ADR 0090).

:func:`held_quotas` and :func:`charge` are what the SQL FileRepository calls
inside the transaction of every add, content update and delete.
"""

from __future__ import annotations

import builtins
from typing import Any

import sqlalchemy as sa

from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.queries import rowcount
from docbinder.adapters.sql.schema import file_items, quotas
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.errors import StorageError
from docbinder.domain.governance import Quota
from docbinder.domain.model import Scope

_Q = quotas.c


def feature_key(scope: Scope) -> str:
    """The ``feature_key`` column of ``scope``'s quota: its feature instance id, ``''`` for a mandate."""
    return scope.feature_instance_id or ""


def _quota(row: Any) -> Quota:
    try:
        return Quota(
            Scope(row.mandate_id, row.feature_instance_id),
            max_bytes=row.max_bytes,
            max_files=row.max_files,
            max_file_size=row.max_file_size,
            used_bytes=int(row.used_bytes),
            used_files=int(row.used_files),
        )
    except Exception as err:  # a corrupt row
        raise StorageError(f"a stored quota row is invalid: {err}") from err


_HELD = (
    sa.select(quotas)
    .where(_Q.mandate_id == sa.bindparam("mandate_id"))
    .where(_Q.feature_key.in_([sa.literal(""), sa.bindparam("feature_key")]))
    .with_for_update()
)
_CHARGE = (
    sa.update(quotas)
    .where(_Q.mandate_id == sa.bindparam("m"))
    .where(_Q.feature_key.in_([sa.literal(""), sa.bindparam("f")]))
    .values(
        used_bytes=_Q.used_bytes + sa.bindparam("size", type_=sa.BigInteger()),
        used_files=_Q.used_files + sa.bindparam("files", type_=sa.BigInteger()),
    )
)


def held_quotas(session: SqlSession, scope: Scope) -> list[Quota]:
    """The quotas a file of ``scope`` counts against, locked until the unit ends (``FOR UPDATE``)."""
    with translating():
        rows = session.execute(
            _HELD, {"mandate_id": scope.mandate_id, "feature_key": feature_key(scope)}
        ).all()
    return [_quota(row) for row in rows]


def charge(session: SqlSession, scope: Scope, size: int, files: int) -> None:
    """Add ``size`` bytes and ``files`` FileItems (negative: remove) to the usage of ``scope``'s quotas."""
    with translating():
        session.execute(
            _CHARGE, {"m": scope.mandate_id, "f": feature_key(scope), "size": size, "files": files}
        )


def scope_usage(session: SqlSession, scope: Scope) -> tuple[int, int]:
    """``(bytes, files)`` of the FileItems of ``scope`` (a mandate scope: every one of the mandate)."""
    fi = file_items.c
    stmt = sa.select(sa.func.coalesce(sa.func.sum(fi.size), 0), sa.func.count()).where(
        fi.mandate_id == scope.mandate_id
    )
    if scope.feature_instance_id is not None:
        stmt = stmt.where(fi.feature_instance_id == scope.feature_instance_id)
    with translating():
        row = session.execute(stmt).one()
    return int(row[0]), int(row[1])


class SqlQuotaRepository:
    """Quotas in table ``quotas``; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def usage(self, scope: Scope) -> tuple[int, int]:
        return scope_usage(self._session, scope)

    def set_quota(self, quota: Quota) -> Quota:
        scope = quota.scope
        key = {"mandate_id": scope.mandate_id, "feature_key": feature_key(scope)}
        with translating():
            # Hold the row (or its gap) first, so writers of the scope wait for this count.
            self._session.execute(
                sa.select(_Q.mandate_id)
                .where(_Q.mandate_id == key["mandate_id"], _Q.feature_key == key["feature_key"])
                .with_for_update()
            ).all()
        used_bytes, used_files = self.usage(scope)
        values = {
            "feature_instance_id": scope.feature_instance_id,
            "max_bytes": quota.max_bytes,
            "max_files": quota.max_files,
            "max_file_size": quota.max_file_size,
            "used_bytes": used_bytes,
            "used_files": used_files,
        }
        with translating():
            changed = rowcount(
                self._session.execute(
                    sa.update(quotas)
                    .where(_Q.mandate_id == key["mandate_id"], _Q.feature_key == key["feature_key"])
                    .values(values)
                )
            )
            if changed == 0:
                self._session.execute(sa.insert(quotas).values({**key, **values}))
        stored = self.get_quota(scope)
        assert stored is not None
        return stored

    def get_quota(self, scope: Scope) -> Quota | None:
        with translating():
            row = self._session.execute(
                sa.select(quotas).where(
                    _Q.mandate_id == scope.mandate_id, _Q.feature_key == feature_key(scope)
                )
            ).first()
        return None if row is None else _quota(row)

    def list_quotas(self, mandate_id: str) -> builtins.list[Quota]:
        with translating():
            rows = self._session.execute(sa.select(quotas).where(_Q.mandate_id == mandate_id)).all()
        found = [_quota(row) for row in rows]
        return sorted(found, key=lambda q: q.scope.feature_instance_id or "")

    def remove_quota(self, scope: Scope) -> bool:
        with translating():
            result = self._session.execute(
                sa.delete(quotas).where(
                    _Q.mandate_id == scope.mandate_id, _Q.feature_key == feature_key(scope)
                )
            )
        return rowcount(result) > 0
