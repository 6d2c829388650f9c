"""The latest version of a file name (feature row B1): :class:`GetLatestFileVersion`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.version_rules import readable_version
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.model import Principal, VersionSeries
from docbinder.ports.metadata import UnitOfWorkFactory


class GetLatestFileVersion:
    """The highest-numbered version of a name that the principal may read.

    One index lookup whatever the number of versions (ADR 0013).
    """

    def __init__(self, read_uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = read_uow_factory
        self._access = access

    def __call__(
        self, principal: Principal, name: str, namespace: str = ""
    ) -> StoredVersion | None:
        """The latest readable version of ``name`` in (principal's scope, ``namespace``), or ``None``.

        Raises :class:`InvalidInput` for a malformed name or namespace.
        """
        series = VersionSeries(principal.scope, name, namespace)
        with self._read() as uow:
            version = uow.versions.latest_version(series.key)
            return readable_version(uow, self._access, principal, version)
