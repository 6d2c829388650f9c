"""One numbered version of a file name (feature row B1): :class:`GetFileVersion`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.version_rules import readable_version
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import Principal, VersionSeries
from docbinder.ports.metadata import UnitOfWorkFactory


class GetFileVersion:
    """Version ``number`` of a name, if it exists and the principal may read it."""

    def __init__(self, read_uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._read = read_uow_factory
        self._access = access

    def __call__(
        self, principal: Principal, name: str, number: int, namespace: str = ""
    ) -> StoredVersion | None:
        """Version ``number`` of ``name`` in (principal's scope, ``namespace``), else ``None``.

        A negative ``number`` gives ``None``. Raises :class:`InvalidInput` when
        ``number`` is not a whole number (``True`` included) or the name or
        namespace is malformed.
        """
        series = VersionSeries(principal.scope, name, namespace)
        if isinstance(number, bool) or not isinstance(number, int):
            raise InvalidInput(f"a version number must be a whole number, got {number!r}")
        if number < 0:
            return None
        with self._read() as uow:
            return readable_version(
                uow, self._access, principal, uow.versions.get_version(series.key, number)
            )
