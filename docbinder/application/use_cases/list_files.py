"""The FileItems a principal may read: :class:`ListFiles`."""

from __future__ import annotations

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.paging import visible_newest_first
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.metadata import UnitOfWorkFactory


class ListFiles:
    """FileItems of the principal's mandate it may read, newest first."""

    def __init__(self, uow_factory: UnitOfWorkFactory, access: AccessPolicy) -> None:
        self._uow = uow_factory
        self._access = access

    def __call__(self, principal: Principal, *, limit: int | None = None) -> list[FileItem]:
        """At most ``limit`` FileItems (``None``: all).

        Raises :class:`InvalidInput` for a negative ``limit``.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(f"limit must be a non-negative whole number, got {limit!r}")

        def fetch(size: int, after: FileItem | None) -> list[FileItem]:
            with self._uow() as uow:
                return uow.files.list(principal.mandate_id, limit=size, after=after)

        return visible_newest_first(
            fetch, lambda item: self._access.can_read_file(principal, item), limit
        )
