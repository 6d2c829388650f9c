"""What the use cases of file versions share (feature row B1, ADR 0013).

A file name in a scope (and a namespace inside it, see
:class:`~docbinder.domain.model.VersionSeries`) can have several versions, each
its own FileItem. The use cases are
:class:`~docbinder.application.save_file_version.SaveFileVersion`,
:class:`~docbinder.application.get_latest_file_version.GetLatestFileVersion`,
:class:`~docbinder.application.get_file_version.GetFileVersion`,
:class:`~docbinder.application.list_file_versions.ListFileVersions`,
:class:`~docbinder.application.list_latest_file_versions.ListLatestFileVersions`,
:class:`~docbinder.application.open_file_version.OpenFileVersion` and
:class:`~docbinder.application.delete_file_versions.DeleteFileVersions`; this
module holds their result type and the rules they share: where a series lives,
and that versions the principal may not read count as absent.
"""

from __future__ import annotations

import attrs

from docbinder.application.access import AccessPolicy
from docbinder.domain.model import FileItem, FileVersion, Principal, VersionSeries
from docbinder.ports.metadata import UnitOfWork


@attrs.frozen
class StoredVersion:
    """A version and its FileItem (creation time, MIME type, size, blob)."""

    item: FileItem
    version: FileVersion

    @property
    def number(self) -> int:
        """The version number (0 for the first save)."""
        return self.version.version


def series_for(principal: Principal, name: str, namespace: str = "") -> VersionSeries:
    """The series of ``name`` in the principal's scope; :class:`InvalidInput` if malformed.

    ``namespace`` (``""`` by default) picks a sub-space of the scope.
    """
    return VersionSeries(principal.scope, name, namespace)


def readable_version(
    uow: UnitOfWork, access: AccessPolicy, principal: Principal, version: FileVersion | None
) -> StoredVersion | None:
    """``version`` with its FileItem, or ``None`` if absent or not readable by ``principal``.

    Readable as :meth:`AccessPolicy.can_read_file` decides; the FileItem is
    read in ``uow``.
    """
    if version is None:
        return None
    item = uow.files.get(version.file_id)
    if item is None or not access.can_read_file(principal, item):
        return None
    return StoredVersion(item, version)
