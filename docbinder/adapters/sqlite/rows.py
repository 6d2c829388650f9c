"""Rows of the shared schema as ``sqlite3`` gives and takes them, and the SQL text built from it.

Column lists come from the tables of :mod:`docbinder.adapters.sql.schema`
(the schema the Alembic migrations create), so the statements here name
exactly the columns those tables have. Entities go through the same cattrs
converter as the SQLAlchemy adapter (:mod:`docbinder.adapters.sql.rows`);
datetimes are stored as SQLAlchemy's SQLite ``DATETIME`` text in UTC
(``YYYY-MM-DD HH:MM:SS.ffffff``, :func:`~docbinder.adapters.sql.schema.sqlite_utc_text`),
so the SQLAlchemy engine of the same database (migrations, the extraction
cache, ``doctor``) reads them as it always did.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from docbinder.adapters.sql.rows import from_row
from docbinder.adapters.sql.schema import UtcDateTime, sqlite_utc_text
from docbinder.domain.errors import StorageError

T = TypeVar("T")


def utc_from_text(value: Any) -> datetime:
    """A stored ``DATETIME`` text (naive UTC, as SQLAlchemy writes it) as an aware UTC datetime.

    Raises ``ValueError`` for text that is not an ISO 8601 date and time.
    """
    if not isinstance(value, str):
        raise ValueError(f"expected datetime text from the database, got {type(value).__name__}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def columns(table: sa.Table) -> tuple[str, ...]:
    """The column names of ``table``, in table order."""
    return tuple(column.name for column in table.columns)


def select_sql(table: sa.Table, where: str = "") -> str:
    """``SELECT <every column> FROM <table>`` followed by ``where`` (SQL text, may be empty)."""
    text = f"SELECT {', '.join(columns(table))} FROM {table.name}"
    return f"{text} {where}" if where else text


def placeholders(count: int) -> str:
    """``?, ?, ...`` for ``count`` parameters (``count`` >= 1)."""
    return ", ".join("?" * count)


class RowCodec:
    """How one table's rows become parameters and entities.

    :meth:`values` gives the ``sqlite3`` parameters of a row mapping (column
    name -> value, as :func:`~docbinder.adapters.sql.rows.to_row` makes it)
    in table order, datetimes as UTC text; :attr:`insert_sql` inserts them;
    :meth:`load` makes an entity of ``cls`` from a row read with
    :func:`select_sql` (:class:`StorageError` for a row that is not valid).
    """

    __slots__ = ("_cls", "_datetimes", "_names", "_pick", "insert_sql")

    def __init__(self, table: sa.Table, cls: type[Any]) -> None:
        self._cls = cls
        self._names = columns(table)
        self._datetimes = tuple(
            index
            for index, column in enumerate(table.columns)
            if isinstance(column.type, UtcDateTime)
        )
        self._pick = operator.itemgetter(*self._names)
        self.insert_sql = (
            f"INSERT INTO {table.name} ({', '.join(self._names)}) "
            f"VALUES ({placeholders(len(self._names))})"
        )

    def values(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """The parameters of :attr:`insert_sql` for ``row``; ``KeyError`` for a missing column."""
        picked: tuple[Any, ...] = self._pick(row)
        if not self._datetimes:
            return picked
        values = list(picked)
        for index in self._datetimes:
            values[index] = sqlite_utc_text(values[index])
        return tuple(values)

    def mapping(self, row: Sequence[Any]) -> dict[str, Any]:
        """A stored row as column name -> value, datetimes as aware UTC datetimes."""
        values = list(row)
        for index in self._datetimes:
            values[index] = utc_from_text(values[index])
        return dict(zip(self._names, values, strict=True))

    def load(self, row: Sequence[Any]) -> Any:
        """The entity of a stored row."""
        try:
            return from_row(self.mapping(row), self._cls)
        except Exception as err:  # any validation or structuring failure means a corrupt row
            raise StorageError(f"a stored {self._cls.__name__} row is invalid: {err}") from err


def loader(codec: RowCodec, cls: type[T]) -> Callable[[Sequence[Any]], T]:
    """``codec.load`` typed as giving ``cls``."""
    load: Callable[[Sequence[Any]], T] = codec.load
    return load
