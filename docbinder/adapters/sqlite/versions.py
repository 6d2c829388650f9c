"""File versions in table ``file_versions`` on ``sqlite3``: the :class:`~docbinder.ports.metadata.VersionRepository`."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from docbinder.adapters.sql.errors import integrity_error
from docbinder.adapters.sql.schema import file_versions
from docbinder.adapters.sqlite.rows import columns, placeholders, select_sql
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.domain.errors import StorageError
from docbinder.domain.model import FileVersion, Scope, VersionSeries

_COLUMNS = columns(file_versions)
_INSERT = (
    f"INSERT INTO file_versions ({', '.join(_COLUMNS)}) VALUES ({placeholders(len(_COLUMNS))})"
)
_LATEST = select_sql(file_versions, "WHERE series_key = ? ORDER BY version DESC LIMIT 1")
_GET = select_sql(file_versions, "WHERE series_key = ? AND version = ?")
_LIST = select_sql(file_versions, "WHERE series_key = ? ORDER BY version")
_OF = select_sql(file_versions, "WHERE file_id = ?")
_NAMES = "SELECT DISTINCT series_name FROM file_versions WHERE space_key = ?"


def _values(version: FileVersion) -> tuple[Any, ...]:
    series = version.series
    row = {
        "file_id": version.file_id,
        "mandate_id": series.scope.mandate_id,
        "feature_instance_id": series.scope.feature_instance_id,
        "namespace": series.namespace,
        "series_name": series.name,
        "series_key": series.key,
        "space_key": series.space_key,
        "version": version.version,
        "user_metadata": json.dumps(version.user_metadata, ensure_ascii=True),
        "host_data": json.dumps(version.host_data, ensure_ascii=True),
    }
    return tuple(row[name] for name in _COLUMNS)


def _load(row: tuple[Any, ...] | None) -> FileVersion | None:
    if row is None:
        return None
    try:
        stored = dict(zip(_COLUMNS, row, strict=True))
        series = VersionSeries(
            Scope(stored["mandate_id"], stored["feature_instance_id"]),
            stored["series_name"],
            stored["namespace"],
        )
        return FileVersion(
            file_id=stored["file_id"],
            series=series,
            version=stored["version"],
            user_metadata=json.loads(stored["user_metadata"]),
            host_data=json.loads(stored["host_data"]),
        )
    except Exception as err:  # a corrupt row
        raise StorageError(f"a stored FileVersion row is invalid: {err}") from err


class SqliteVersionRepository:
    """Version records in table ``file_versions``; see the port for the contract.

    The unique ``(series_key, version)`` index makes numbering race-free
    (:class:`~docbinder.domain.errors.VersionTaken`); the primary key on
    ``file_id`` keeps a FileItem one version at most.
    """

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def add_version(self, version: FileVersion) -> None:
        with translating():
            try:
                with self._session.one_statement():
                    self._session.rowcount(_INSERT, _values(version))
            except sqlite3.IntegrityError as err:
                raise integrity_error(err, file_versions) from err

    def latest_version(self, series_key: str) -> FileVersion | None:
        with translating():
            return _load(self._session.one(_LATEST, (series_key,)))

    def get_version(self, series_key: str, version: int) -> FileVersion | None:
        with translating():
            return _load(self._session.one(_GET, (series_key, version)))

    def list_versions(self, series_key: str) -> list[FileVersion]:
        with translating():
            rows = self._session.all(_LIST, (series_key,))
        return [v for v in map(_load, rows) if v is not None]

    def version_of(self, file_id: str) -> FileVersion | None:
        with translating():
            return _load(self._session.one(_OF, (file_id,)))

    def series_names(self, space_key: str) -> list[str]:
        with translating():
            rows = self._session.all(_NAMES, (space_key,))
        return sorted(row[0] for row in rows)
