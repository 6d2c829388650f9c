"""Quotas in table ``quotas``: the SQL :class:`~docbinder.ports.metadata.QuotaRepository` (B12, ADR 0090).

:func:`held_quotas` and :func:`charge` are what the SQL FileRepository calls
inside the transaction of every add, content update and delete.
"""

from __future__ import annotations

import builtins
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.errors import is_transient, storage_error, translating
from docbinder.adapters.sql.queries import rowcount
from docbinder.adapters.sql.schema import file_items, quotas
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.errors import StorageError
from docbinder.domain.governance import Quota
from docbinder.domain.model import Scope

_Q = quotas.c
_BARRIER_ATTEMPTS = 3
"""Tries at the barrier of a new quota when the database picks it as a deadlock victim."""


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
        """Set ``quota``'s limits and count its scope's files, exactly, while writers go on (ADR 0096).

        Writers charge a quota only when they find its row, and they look for
        it after their own insert, update or delete of the FileItem row
        (:class:`~docbinder.adapters.sql.files.SqlFileRepository`). A new
        quota is therefore made in three steps: (1) its row is created, without
        limits, in a transaction of its own, so every writer that looks from
        then on finds, locks and charges it; (2) a barrier waits for every
        unit still writing FileItems of the scope, the ones that looked before
        the row existed (PostgreSQL: ``LOCK TABLE file_items IN SHARE MODE``,
        which waits for every unit that wrote ``file_items`` and is released at
        once; MariaDB/InnoDB: a locking read of the scope's rows, which waits
        for each uncommitted insert, update or delete among them); (3) in this
        unit, the row is locked (writers holding it finish first), the
        committed files are counted and limits and usage are written. A writer
        whose insert is not yet committed at (3) waits for this unit's row lock
        and charges the new usage after it: no file is missed or counted
        twice. An existing quota needs only (3). Steps (1) and (2) run before
        the unit's first statement: call this first in the unit.
        """
        scope = quota.scope
        key = {"mandate_id": scope.mandate_id, "feature_key": feature_key(scope)}
        where = (_Q.mandate_id == key["mandate_id"], _Q.feature_key == key["feature_key"])
        with translating():
            exists = self._session.execute(sa.select(_Q.mandate_id).where(*where)).first()
        if exists is None:
            self._create_row(scope, key)
            self._wait_for_writers(scope)
        with translating():
            self._session.execute(sa.select(_Q.mandate_id).where(*where).with_for_update()).all()
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
                self._session.execute(sa.update(quotas).where(*where).values(values))
            )
            if changed == 0:  # removed again meanwhile
                self._session.execute(sa.insert(quotas).values({**key, **values}))
        stored = self.get_quota(scope)
        assert stored is not None
        return stored

    def _create_row(self, scope: Scope, key: dict[str, str]) -> None:
        """Step (1): the quota row without limits, committed at once; a concurrent creator winning is fine."""
        row = {
            **key,
            "feature_instance_id": scope.feature_instance_id,
            "used_bytes": 0,
            "used_files": 0,
        }
        try:
            with self._session.engine.begin() as conn:
                conn.execute(sa.insert(quotas).values(row))
        except sa_exc.IntegrityError:
            pass  # another `quota set` made it
        except sa_exc.SQLAlchemyError as err:
            raise storage_error(err) from err

    def _wait_for_writers(self, scope: Scope) -> None:
        """Step (2): return once every unit that was writing FileItems of ``scope`` has ended."""
        fi = file_items.c
        for attempt in range(_BARRIER_ATTEMPTS):
            try:
                with self._session.engine.begin() as conn:
                    if conn.dialect.name == "postgresql":
                        conn.execute(sa.text("LOCK TABLE file_items IN SHARE MODE"))
                    else:
                        stmt = sa.select(fi.id).where(fi.mandate_id == scope.mandate_id)
                        if scope.feature_instance_id is not None:
                            stmt = stmt.where(fi.feature_instance_id == scope.feature_instance_id)
                        conn.execute(stmt.with_for_update(read=True)).all()
                return
            except sa_exc.SQLAlchemyError as err:
                if not is_transient(err) or attempt == _BARRIER_ATTEMPTS - 1:
                    raise storage_error(err) from err

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
