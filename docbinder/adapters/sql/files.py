"""FileItems in table ``file_items``: the SQL :class:`~docbinder.ports.metadata.FileRepository`."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.errors import integrity_error, translating
from docbinder.adapters.sql.queries import IN_CHUNK, load, newest_first_page, rowcount, rows_by_id
from docbinder.adapters.sql.quotas import charge, held_quotas
from docbinder.adapters.sql.rows import to_row
from docbinder.adapters.sql.schema import file_items, gc_marks
from docbinder.adapters.sql.session import SqlSession
from docbinder.adapters.sql.statements import (
    DELETE_VERSION_OF,
    FIND_DUPLICATES,
    GET_FILE,
    LOCK_FILE,
    PREPARED_INSERT_FILE,
    SHARE_FILES,
)
from docbinder.domain.errors import Conflict, FileItemNotFound
from docbinder.domain.model import FileItem, Scope, duplicate_key


class SqlFileRepository:
    """FileItems in table ``file_items``; see the port for the contract.

    Works on the :class:`~docbinder.adapters.sql.session.SqlSession` of one
    unit of work. Writes that may be refused run in a savepoint, so they
    leave the unit usable (:meth:`SqlSession.begin_nested`).
    """

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def add(self, item: FileItem, *, deduplicate: bool = True) -> None:
        row = to_row(item)
        row["dedup_key"] = (
            duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
            if deduplicate
            else None
        )
        with translating():
            try:
                with self._session.begin_nested():
                    # The row first, then the quotas (ADR 0096): a `quota set` counting the
                    # scope waits for this insert, or this unit reads the quota it wrote.
                    PREPARED_INSERT_FILE.execute(self._session, row)
                    held = held_quotas(self._session, item.scope)
                    for quota in held:
                        quota.check_add(item.size)  # QuotaExceeded takes the insert back
                    if held:
                        charge(self._session, item.scope, item.size, 1)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_items) from err

    def get(self, file_id: str) -> FileItem | None:
        with translating():
            row = self._session.execute(GET_FILE, {"id": file_id}).first()
        return None if row is None else load(row, FileItem)

    def get_many(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        wanted = list(dict.fromkeys(file_ids))
        found: dict[str, FileItem] = {}
        for row in rows_by_id(self._session, file_items, wanted):
            item = load(row, FileItem)
            found[item.id] = item
        return {file_id: found[file_id] for file_id in wanted if file_id in found}

    def find_duplicates(
        self, sha256: str, file_name: str, created_by: str, scope: Scope
    ) -> list[FileItem]:
        params = {
            "key": duplicate_key(sha256, file_name, created_by, scope),
            "sha256": sha256,
            "file_name": file_name,
            "created_by": created_by,
            "mandate_id": scope.mandate_id,
            "feature_instance_id": scope.feature_instance_id,
        }
        stmt = FIND_DUPLICATES[scope.feature_instance_id is not None]
        with translating():
            rows = self._session.execute(stmt, params).all()
        return [load(row, FileItem) for row in rows]

    def update(self, item: FileItem, *, if_blob_key: str | None = None) -> None:
        with translating():
            before = self._session.execute(
                sa.select(file_items.c.size).where(file_items.c.id == item.id)
            ).first()
        growth = 0 if before is None else item.size - int(before[0])
        values = to_row(item)
        del values["id"]
        new_key = duplicate_key(item.sha256, item.file_name, item.created_by, item.scope)
        # Items stored without deduplication stay out of duplicate detection.
        values["dedup_key"] = sa.case((file_items.c.dedup_key.is_(None), sa.null()), else_=new_key)
        stmt = sa.update(file_items).where(file_items.c.id == item.id).values(values)
        if if_blob_key is not None:
            # Compare-and-set in the statement itself: the row lock the UPDATE
            # takes makes a second writer re-check the key after the first commits.
            stmt = stmt.where(file_items.c.blob_key == if_blob_key)
        with translating():
            try:
                with self._session.begin_nested():
                    result = self._session.execute(stmt)
                    changed = rowcount(result)
                    if changed and growth:
                        # As in add: the row first, then the quotas (ADR 0096).
                        held = held_quotas(self._session, item.scope)
                        for quota in held:
                            quota.check_add(
                                growth, 0, file_size=item.size
                            )  # QuotaExceeded: update undone
                        if held:
                            charge(self._session, item.scope, growth, 0)
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_items) from err
        if changed == 0:
            if if_blob_key is not None and self.get(item.id) is not None:
                raise Conflict(f"FileItem {item.id} no longer names blob {if_blob_key}")
            raise FileItemNotFound(f"no FileItem {item.id}")

    def delete(self, file_id: str, *, if_blob_key: str | None = None) -> bool:
        stmt = sa.delete(file_items).where(file_items.c.id == file_id)
        if if_blob_key is not None:
            stmt = stmt.where(file_items.c.blob_key == if_blob_key)
        fi = file_items.c
        with translating():
            before = self._session.execute(
                sa.select(fi.size, fi.mandate_id, fi.feature_instance_id).where(fi.id == file_id)
            ).first()
            result = self._session.execute(stmt)
            deleted = rowcount(result) > 0
            if deleted and before is not None:
                charge(self._session, Scope(before[1], before[2]), -int(before[0]), -1)
            if deleted:
                self._session.execute(sa.delete(gc_marks).where(gc_marks.c.file_id == file_id))
                self._session.execute(DELETE_VERSION_OF, {"id": file_id})
        return deleted

    def list(
        self, mandate_id: str, *, limit: int | None = None, after: FileItem | None = None
    ) -> list[FileItem]:
        rows = newest_first_page(self._session, file_items, mandate_id, limit, after)
        return [load(row, FileItem) for row in rows]

    def confirm(self, file_id: str, blob_key: str) -> FileItem | None:
        """Lock the row with a no-op ``UPDATE`` (compare-and-set on the blob key), then read it.

        The ``UPDATE`` takes the row's write lock until the transaction ends
        (PostgreSQL, InnoDB), so a delete or content update of the row waits
        for this unit. MariaDB
        counts matched rather than changed rows (SQLAlchemy sets
        ``CLIENT.FOUND_ROWS``), so the no-op still reports one row.
        """
        fi = file_items.c
        stmt = (
            sa.update(file_items)
            .where(fi.id == file_id, fi.blob_key == blob_key)
            .values(blob_key=fi.blob_key)
        )
        with translating():
            result = self._session.execute(stmt)
        if rowcount(result) == 0:
            return None
        item = self.get(file_id)
        return item if item is not None and item.blob_key == blob_key else None

    def lock(self, file_id: str) -> FileItem | None:
        """``SELECT ... FOR UPDATE`` of the row."""
        with translating():
            row = self._session.execute(LOCK_FILE, {"id": file_id}).first()
        return None if row is None else load(row, FileItem)

    def lock_shared(self, file_ids: Sequence[str]) -> dict[str, FileItem]:
        """``SELECT ... FOR SHARE`` / ``LOCK IN SHARE MODE``, :data:`IN_CHUNK` ids per query."""
        wanted = list(dict.fromkeys(file_ids))
        found: dict[str, FileItem] = {}
        for start in range(0, len(wanted), IN_CHUNK):
            with translating():
                rows = self._session.execute(
                    SHARE_FILES, {"ids": wanted[start : start + IN_CHUNK]}
                ).all()
            for row in rows:
                item = load(row, FileItem)
                found[item.id] = item
        return {file_id: found[file_id] for file_id in wanted if file_id in found}
