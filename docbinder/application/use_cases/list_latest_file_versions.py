"""The latest version of every file name in a namespace (feature row B1): :class:`ListLatestFileVersions`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.version_rules import readable_version
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.model import Principal, VersionSeries
from docbinder.ports.metadata import UnitOfWorkFactory


class ListLatestFileVersions:
    """The latest readable version of each name in (principal's scope, namespace).

    What a host lists as "the names saved here" (``binder.versions.names``,
    ADK's ``list_artifact_keys``).
    """

    def __init__(self, read_uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = read_uow_factory
        self._access = access

    def __call__(self, principal: Principal, namespace: str = "") -> list[StoredVersion]:
        """The latest readable version of every name in (principal's scope, ``namespace``).

        Sorted by name (code point order); names without a readable version
        are left out. One index lookup per name. Raises :class:`InvalidInput`
        for a malformed namespace.
        """
        space = VersionSeries(principal.scope, "probe", namespace).space_key
        found: list[StoredVersion] = []
        with self._read() as uow:
            for name in uow.versions.series_names(space):
                key = VersionSeries(principal.scope, name, namespace).key
                stored = readable_version(
                    uow, self._access, principal, uow.versions.latest_version(key)
                )
                if stored is not None:
                    found.append(stored)
        return found
