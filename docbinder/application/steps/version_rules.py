"""What the use cases of file versions share (feature row B1, ADR 0013).

A file name in a scope (and a namespace inside it, see
:class:`~docbinder.domain.model.VersionSeries`) can have several versions, each
its own FileItem. The use cases are
:class:`~docbinder.application.use_cases.save_file_version.SaveFileVersion`,
:class:`~docbinder.application.use_cases.get_latest_file_version.GetLatestFileVersion`,
:class:`~docbinder.application.use_cases.get_file_version.GetFileVersion`,
:class:`~docbinder.application.use_cases.list_file_versions.ListFileVersions`,
:class:`~docbinder.application.use_cases.list_latest_file_versions.ListLatestFileVersions`,
:class:`~docbinder.application.use_cases.open_file_version.OpenFileVersion` and
:class:`~docbinder.application.use_cases.delete_file_versions.DeleteFileVersions`; this
module holds the rule the reads share: versions the principal may not read
count as absent. A series lives in the principal's scope
(``VersionSeries(principal.scope, name, namespace)``); the result of a save and
of every read is :class:`~docbinder.application.use_cases.save_file_version.StoredVersion`.
"""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.use_cases.save_file_version import StoredVersion
from docbinder.domain.model import FileVersion, Principal
from docbinder.ports.metadata import UnitOfWork


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
