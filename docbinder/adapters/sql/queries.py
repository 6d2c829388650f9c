"""Reading helpers the SQL repositories share: loading rows, id batches, pages and scans."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa

from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.rows import from_row
from docbinder.adapters.sql.session import SqlSession
from docbinder.domain.errors import InvalidInput, StorageError
from docbinder.domain.model import ChatWorkflow, FileItem

T = TypeVar("T")

IN_CHUNK = 500
"""Ids per ``IN (...)`` list; longer lists are split (SQLite limits bound parameters)."""

SCAN_BATCH = 1000
"""Rows per keyset-paginated batch of the maintenance scans."""


def load(row: sa.Row[Any], cls: type[T]) -> T:
    """The entity ``cls`` of a result row; :class:`StorageError` for a row that is not valid."""
    return load_mapping(row._mapping, cls)


def load_mapping(row: Mapping[Any, Any], cls: type[T]) -> T:
    """As :func:`load`, from a mapping of column names to values."""
    try:
        return from_row(row, cls)
    except Exception as err:  # any validation or structuring failure means a corrupt row
        raise StorageError(f"a stored {cls.__name__} row is invalid: {err}") from err


def rowcount(result: sa.Result[Any]) -> int:
    """The number of rows a write matched (``-1`` when the driver does not say)."""
    count = getattr(result, "rowcount", -1)
    return int(count)


def check_limit(limit: int | None) -> None:
    """:class:`InvalidInput` for a negative ``limit``."""
    if limit is not None and limit < 0:
        raise InvalidInput("limit must be a non-negative integer or None")


def rows_by_id(session: SqlSession, table: sa.Table, ids: Sequence[str]) -> Iterator[sa.Row[Any]]:
    """The rows of ``table`` whose primary key ``id`` is in ``ids``, :data:`IN_CHUNK` ids per query."""
    for start in range(0, len(ids), IN_CHUNK):
        stmt = sa.select(table).where(table.c.id.in_(ids[start : start + IN_CHUNK]))
        with translating():
            rows = session.execute(stmt).all()
        yield from rows


def comparable_id(session: SqlSession, table: sa.Table) -> sa.ColumnElement[Any]:
    """``table.c.id`` compared by code point, as Python compares strings.

    PostgreSQL would otherwise use the database's linguistic collation;
    SQLite and MariaDB (``utf8mb4_bin``) compare binary UTF-8, which is code
    point order.
    """
    ident: sa.ColumnElement[Any] = table.c.id
    if session.dialect.name == "postgresql":
        ident = ident.collate("C")
    return ident


def newest_first_page(
    session: SqlSession,
    table: sa.Table,
    mandate_id: str,
    limit: int | None,
    after: FileItem | ChatWorkflow | None,
) -> list[sa.Row[Any]]:
    """Rows of one mandate by (``created_at``, id) descending, behind ``after``, at most ``limit``.

    Uses the ``(mandate_id, created_at)`` index as a range: a later page costs
    what the first one does.
    """
    check_limit(limit)
    ident = comparable_id(session, table)
    stmt = sa.select(table).where(table.c.mandate_id == mandate_id)
    if after is not None:
        stmt = stmt.where(
            sa.or_(
                table.c.created_at < after.created_at,
                sa.and_(table.c.created_at == after.created_at, ident < after.id),
            )
        )
    stmt = stmt.order_by(table.c.created_at.desc(), ident.desc()).limit(limit)
    with translating():
        return list(session.execute(stmt).all())


def scan(session: SqlSession, table: sa.Table) -> Iterator[sa.Row[Any]]:
    """Every row of ``table`` in id order, :data:`SCAN_BATCH` rows per keyset-paginated query.

    No server-side cursor stays open between batches, so other statements
    of the unit may run while the caller iterates.
    """
    last: str | None = None
    while True:
        stmt = sa.select(table).order_by(table.c.id).limit(SCAN_BATCH)
        if last is not None:
            stmt = stmt.where(table.c.id > last)
        with translating():
            rows = session.execute(stmt).all()
        yield from rows
        if len(rows) < SCAN_BATCH:
            return
        last = rows[-1]._mapping["id"]
