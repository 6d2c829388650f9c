"""File versions in table ``file_versions``: the SQL :class:`~docbinder.ports.metadata.VersionRepository`."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from docbinder.adapters.sql.errors import integrity_error, translating
from docbinder.adapters.sql.schema import file_versions
from docbinder.adapters.sql.session import SqlSession
from docbinder.adapters.sql.statements import (
    GET_VERSION,
    INSERT_VERSION,
    LATEST_VERSION,
    LIST_VERSIONS,
    SERIES_NAMES,
    VERSION_OF,
)
from docbinder.domain.errors import StorageError
from docbinder.domain.model import FileVersion, Scope, VersionSeries


def _version_row(version: FileVersion) -> dict[str, Any]:
    series = version.series
    return {
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


def _load_version(row: sa.Row[Any] | None) -> FileVersion | None:
    if row is None:
        return None
    try:
        series = VersionSeries(
            Scope(row.mandate_id, row.feature_instance_id), row.series_name, row.namespace
        )
        return FileVersion(
            file_id=row.file_id,
            series=series,
            version=row.version,
            user_metadata=json.loads(row.user_metadata),
            host_data=json.loads(row.host_data),
        )
    except Exception as err:  # a corrupt row
        raise StorageError(f"a stored FileVersion row is invalid: {err}") from err


class SqlVersionRepository:
    """Version records in table ``file_versions``; see the port for the contract.

    The unique ``(series_key, version)`` index makes numbering race-free
    (:class:`~docbinder.domain.errors.VersionTaken`); the primary key on
    ``file_id`` keeps a FileItem one version at most.
    """

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def add_version(self, version: FileVersion) -> None:
        with translating():
            try:
                with self._session.begin_nested():
                    self._session.execute(INSERT_VERSION, _version_row(version))
            except sa_exc.IntegrityError as err:
                raise integrity_error(err, file_versions) from err

    def latest_version(self, series_key: str) -> FileVersion | None:
        with translating():
            row = self._session.execute(LATEST_VERSION, {"key": series_key}).first()
        return _load_version(row)

    def get_version(self, series_key: str, version: int) -> FileVersion | None:
        with translating():
            row = self._session.execute(
                GET_VERSION, {"key": series_key, "version": version}
            ).first()
        return _load_version(row)

    def list_versions(self, series_key: str) -> list[FileVersion]:
        with translating():
            rows = self._session.execute(LIST_VERSIONS, {"key": series_key}).all()
        return [v for v in map(_load_version, rows) if v is not None]

    def version_of(self, file_id: str) -> FileVersion | None:
        with translating():
            row = self._session.execute(VERSION_OF, {"id": file_id}).first()
        return _load_version(row)

    def series_names(self, space_key: str) -> list[str]:
        with translating():
            rows = self._session.execute(SERIES_NAMES, {"space": space_key}).all()
        return sorted(row[0] for row in rows)
