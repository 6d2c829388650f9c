"""Quotas per mandate and feature instance (feature row B12): :class:`ManageQuotas`."""

from __future__ import annotations

import builtins
import logging

from docbinder.domain.governance import Quota, scope_label
from docbinder.domain.model import Scope
from docbinder.ports.metadata import UnitOfWorkFactory

log = logging.getLogger(__name__)


class ManageQuotas:
    """Set, show and remove the quotas of a mandate or one of its feature instances.

    An operator's API (as ``gc``): it takes no principal, so a host offers it
    only to its administrators. Limits are in bytes (``max_bytes``,
    ``max_file_size``) and FileItems (``max_files``); ``None`` is no limit.
    The usage is counted when the quota is set and kept by every later write
    in that write's own transaction (ADR 0090). A store or content change that
    would pass a limit raises :class:`~docbinder.domain.errors.QuotaExceeded`
    and keeps nothing.
    """

    def __init__(self, uow_factory: UnitOfWorkFactory, read_uow_factory: UnitOfWorkFactory) -> None:
        self._uow = uow_factory
        self._read_uow = read_uow_factory

    def set(
        self,
        scope: Scope,
        *,
        max_bytes: int | None = None,
        max_files: int | None = None,
        max_file_size: int | None = None,
    ) -> Quota:
        """Set the limits of ``scope`` (replacing its earlier ones); return the quota with its usage.

        Raises :class:`~docbinder.domain.errors.InvalidInput` for a limit
        that is not a whole number from 0 to 2**62, :class:`StorageError`.
        Files already stored count at once; a scope already over the new
        limit keeps its files and refuses new ones.
        """
        quota = Quota(scope, max_bytes=max_bytes, max_files=max_files, max_file_size=max_file_size)
        with self._uow() as uow:
            stored = uow.quotas.set_quota(quota)
            uow.commit()
        log.info(
            "quota set for %s: max_bytes=%s max_files=%s max_file_size=%s",
            scope_label(scope),
            max_bytes,
            max_files,
            max_file_size,
        )
        return stored

    def get(self, scope: Scope) -> Quota | None:
        """The quota of exactly ``scope`` with its usage, or ``None`` when it has none."""
        with self._read_uow() as uow:
            return uow.quotas.get_quota(scope)

    def show(self, scope: Scope) -> Quota:
        """The quota of ``scope``, or (none set) one without limits and the usage counted now."""
        with self._read_uow() as uow:
            quota = uow.quotas.get_quota(scope)
            if quota is not None:
                return quota
            used_bytes, used_files = uow.quotas.usage(scope)
        return Quota(scope, used_bytes=used_bytes, used_files=used_files)

    def list(self, mandate_id: str) -> builtins.list[Quota]:
        """Every quota of ``mandate_id``: the mandate's own first, then by feature instance id."""
        with self._read_uow() as uow:
            return uow.quotas.list_quotas(mandate_id)

    def remove(self, scope: Scope) -> bool:
        """Drop the quota of exactly ``scope``; ``True`` if there was one."""
        with self._uow() as uow:
            removed = uow.quotas.remove_quota(scope)
            uow.commit()
        return removed
