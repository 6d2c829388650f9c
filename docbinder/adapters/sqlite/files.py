"""FileItems in table ``file_items`` on ``sqlite3``: the :class:`~docbinder.ports.metadata.FileRepository`."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from docbinder.adapters.sql.errors import integrity_error
from docbinder.adapters.sql.rows import to_row
from docbinder.adapters.sql.schema import file_items, sqlite_utc_text
from docbinder.adapters.sqlite.quotas import charge, held_quotas
from docbinder.adapters.sqlite.rows import RowCodec, columns, loader, placeholders, select_sql
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.errors import Conflict, FileItemNotFound, InvalidInput
from docbinder.domain.model import FileItem, Scope, duplicate_key

IN_CHUNK = 500
"""Ids per ``IN (...)`` list; longer lists are split (SQLite limits bound parameters)."""

FILES = RowCodec(file_items, FileItem)
load_file = loader(FILES, FileItem)

_GET = select_sql(file_items, "WHERE id = ?")
_FIND_DUPLICATES = select_sql(
    file_items,
    "WHERE dedup_key = ? AND sha256 = ? AND file_name = ? AND created_by = ? AND mandate_id = ?",
)
_UPDATED = [name for name in columns(file_items) if name not in ("id", "dedup_key")]
_UPDATED_AT = [columns(file_items).index(name) for name in _UPDATED]
_UPDATE = (
    f"UPDATE file_items SET {', '.join(f'{name} = ?' for name in _UPDATED)}, "
    "dedup_key = CASE WHEN dedup_key IS NULL THEN NULL ELSE ? END WHERE id = ?"
)
_DELETE = "DELETE FROM file_items WHERE id = ?"
_SIZE = "SELECT size FROM file_items WHERE id = ?"
_SIZE_SCOPE = "SELECT size, mandate_id, feature_instance_id FROM file_items WHERE id = ?"
_CONFIRM = "UPDATE file_items SET blob_key = blob_key WHERE id = ? AND blob_key = ?"


def check_limit(limit: int | None) -> None:
    """:class:`InvalidInput` for a negative ``limit``."""
    if limit is not None and limit < 0:
        raise InvalidInput("limit must be a non-negative integer or None")


def newest_first_sql(table_select: str, after: bool, limit: int | None) -> str:
    """One mandate's rows by (``created_at``, id) descending, behind an ``after`` row, at most ``limit``.

    Parameters: the mandate id, then (with ``after``) its ``created_at``
    twice and its id. Walks the ``(mandate_id, created_at)`` index as a
    range, so a later page costs what the first one does; SQLite compares
    the text of ids by code point, as Python does.
    """
    where = "WHERE mandate_id = ?"
    if after:
        where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
    sql = f"{table_select} {where} ORDER BY created_at DESC, id DESC"
    return sql if limit is None else f"{sql} LIMIT {int(limit)}"


def rows_by_id(session: SqliteSession, select: str, ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of ``select`` (a ``SELECT ... FROM t``) whose ``id`` is in ``ids``, :data:`IN_CHUNK` per query."""
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(ids), IN_CHUNK):
        chunk = ids[start : start + IN_CHUNK]
        with translating():
            rows.extend(session.all(f"{select} WHERE id IN ({placeholders(len(chunk))})", chunk))
    return rows


class SqliteFileRepository:
    """FileItems in table ``file_items``; see the port for the contract.

    Works on the :class:`~docbinder.adapters.sqlite.session.SqliteSession` of
    one unit of work. A refused write leaves the unit usable (SQLite undoes
    a refused statement by itself).
    """

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def add(self, item: FileItem, *, deduplicate: bool = True) -> None:
        row = to_row(item)
        row["dedup_key"] = (
            duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
            if deduplicate
            else None
        )
        held = held_quotas(self._session, item.scope)
        for quota in held:
            quota.check_add(item.size)
        with translating():
            try:
                with self._session.one_statement():
                    self._session.execute(FILES.insert_sql, FILES.values(row))
            except sqlite3.IntegrityError as err:
                raise integrity_error(err, file_items) from err
            if held:
                session = self._session

                def undo() -> None:
                    session.rowcount(_DELETE, (item.id,))

                with session.undoable(undo):
                    charge(self._session, item.scope, item.size, 1)

    def get(self, file_id: str) -> FileItem | None:
        with translating():
            row = self._session.one(_GET, (file_id,))
        return None if row is None else load_file(row)

    def get_many(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        wanted = list(dict.fromkeys(file_ids))
        found: dict[str, FileItem] = {}
        for row in rows_by_id(self._session, select_sql(file_items), wanted):
            item = load_file(row)
            found[item.id] = item
        return {file_id: found[file_id] for file_id in wanted if file_id in found}

    def find_duplicates(
        self, sha256: str, file_name: str, created_by: str, scope: Scope
    ) -> list[FileItem]:
        # The unique index on dedup_key finds the row; the other comparisons
        # make the match exact by definition rather than by hash.
        key = duplicate_key(sha256, file_name, created_by, scope)
        params: tuple[Any, ...] = (key, sha256, file_name, created_by, scope.mandate_id)
        if scope.feature_instance_id is None:
            sql = f"{_FIND_DUPLICATES} AND feature_instance_id IS NULL"
        else:
            sql = f"{_FIND_DUPLICATES} AND feature_instance_id = ?"
            params += (scope.feature_instance_id,)
        with translating():
            rows = self._session.all(sql, params)
        return [load_file(row) for row in rows]

    def update(self, item: FileItem, *, if_blob_key: str | None = None) -> None:
        with translating():
            before = self._session.one(_SIZE, (item.id,))
        growth = 0 if before is None else item.size - int(before[0])
        if growth:
            held = held_quotas(self._session, item.scope)
            for quota in held:
                quota.check_add(growth, 0, file_size=item.size)
        values = FILES.values({**to_row(item), "dedup_key": None})
        new_key = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
        # Items stored without deduplication stay out of duplicate detection.
        params: tuple[Any, ...] = (*(values[index] for index in _UPDATED_AT), new_key, item.id)
        sql = _UPDATE
        if if_blob_key is not None:
            # Compare-and-set in the statement itself.
            sql += " AND blob_key = ?"
            params += (if_blob_key,)
        with translating():
            try:
                with self._session.one_statement():
                    changed = self._session.rowcount(sql, params)
            except sqlite3.IntegrityError as err:
                raise integrity_error(err, file_items) from err
        if changed == 0:
            if if_blob_key is not None and self.get(item.id) is not None:
                raise Conflict(f"FileItem {item.id} no longer names blob {if_blob_key}")
            raise FileItemNotFound(f"no FileItem {item.id}")
        if growth:
            charge(self._session, item.scope, growth, 0)

    def delete(self, file_id: str, *, if_blob_key: str | None = None) -> bool:
        sql: str = _DELETE
        params: tuple[str, ...] = (file_id,)
        if if_blob_key is not None:
            sql = f"{_DELETE} AND blob_key = ?"
            params = (file_id, if_blob_key)
        with translating():
            before = self._session.one(_SIZE_SCOPE, (file_id,))
            deleted = self._session.rowcount(sql, params) > 0
            if deleted and before is not None:
                charge(self._session, Scope(before[1], before[2]), -int(before[0]), -1)
            if deleted:
                self._session.rowcount("DELETE FROM gc_marks WHERE file_id = ?", (file_id,))
                self._session.rowcount("DELETE FROM file_versions WHERE file_id = ?", (file_id,))
        return deleted

    def list(
        self, mandate_id: str, *, limit: int | None = None, after: FileItem | None = None
    ) -> list[FileItem]:
        check_limit(limit)
        sql = newest_first_sql(select_sql(file_items), after is not None, limit)
        params: tuple[Any, ...] = (mandate_id,)
        if after is not None:
            created = sqlite_utc_text(after.created_at)
            params += (created, created, after.id)
        with translating():
            rows = self._session.all(sql, params)
        return [load_file(row) for row in rows]

    def confirm(self, file_id: str, blob_key: str) -> FileItem | None:
        """Take the write lock with a no-op ``UPDATE`` (compare-and-set on the blob key), then read the row.

        A writing unit holds SQLite's write lock from its first write, so a
        delete or content update of the row waits for this unit.
        """
        with translating():
            changed = self._session.rowcount(_CONFIRM, (file_id, blob_key))
        if changed == 0:
            return None
        item = self.get(file_id)
        return item if item is not None and item.blob_key == blob_key else None

    def lock(self, file_id: str) -> FileItem | None:
        """The row: SQLite's writing units hold the database's one write lock already."""
        return self.get(file_id)

    def lock_shared(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        """As :meth:`get_many`: SQLite's writing units are serialized by its write lock."""
        return self.get_many(file_ids)
