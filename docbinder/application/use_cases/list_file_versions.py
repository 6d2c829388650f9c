"""Every version of a file name (feature row B1): :class:`ListFileVersions`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.model import Principal, VersionSeries
from docbinder.ports.metadata import UnitOfWorkFactory


class ListFileVersions:
    """The versions of a name that the principal may read, lowest number first."""

    def __init__(self, read_uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = read_uow_factory
        self._access = access

    def __call__(self, principal: Principal, name: str, namespace: str = "") -> list[StoredVersion]:
        """Every readable version of ``name`` in (principal's scope, ``namespace``).

        Versions the principal may not read are left out. Raises
        :class:`InvalidInput` for a malformed name or namespace.
        """
        series = VersionSeries(principal.scope, name, namespace)
        with self._read() as uow:
            versions = uow.versions.list_versions(series.key)
            items = uow.files.get_many([v.file_id for v in versions])
        return [
            StoredVersion(items[v.file_id], v)
            for v in versions
            if v.file_id in items and self._access.can_read_file(principal, items[v.file_id])
        ]
