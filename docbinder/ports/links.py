"""The record of revoked and used links: the :class:`LinkLedger` port (feature row B4).

A signed link (:mod:`docbinder.domain.links`) carries everything needed to check
it except two facts that change after it was minted: that it was revoked, and that
a one-time link was redeemed. The ledger keeps those, shared by every process that
serves links (a SQL table on the metadata database), so a link revoked on one
machine is refused on every other one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from docbinder.ports.metadata import UnitOfWork


class LinkLedger(Protocol):
    """Marks on link ids: ``revoked`` and ``used``, each kept until the link's expiry.

    ``link_id`` is at most 64 characters. Each mark carries the link's
    ``expires_at`` (UTC): after it the link is refused as expired anyway, so
    :meth:`prune` may drop the mark. Errors: :class:`~docbinder.domain.errors.StorageError`.
    """

    def revoke(self, link_id: str, expires_at: datetime) -> bool:
        """Record that ``link_id`` is revoked; ``False`` if it was already."""
        ...

    def is_revoked(self, link_id: str) -> bool:
        """Whether ``link_id`` was revoked."""
        ...

    def use_once(self, link_id: str, expires_at: datetime) -> bool:
        """Record the one redemption of a one-time link, atomically.

        ``True`` for the first call with ``link_id`` (from any process), ``False``
        for every later one: two redemptions at once never both get ``True``.
        """
        ...

    def vouch(self, holder: str, signer: str, until: datetime) -> None:
        """Record that ``signer`` of ``holder`` signed in with a credential valid until ``until``.

        For an issuer of sign-ins that lists nobody (OIDC): ``holder`` (at most 31
        characters of ``[0-9a-f]``) names one user of one issuer, mandate and feature
        instance, ``signer`` (at most 32 of the same) one set of roles of that user. The
        record of the same ``signer`` keeps the later ``until``; the holder's other
        signers are forgotten (their roles changed: the latest sign-in wins). Kept until
        ``until``, so :meth:`prune` drops it then.
        """
        ...

    def vouched_until(self, holder: str, signer: str) -> datetime | None:
        """Until when :meth:`vouch` last vouched for ``signer`` of ``holder`` (``None``: never,
        or forgotten since)."""
        ...

    def prune(self, now: datetime) -> int:
        """Drop the marks of links that expired before ``now``; return how many went."""
        ...


@runtime_checkable
class UnitLinkLedger(Protocol):
    """A ledger kept in the metadata database that can answer inside a unit of work's transaction.

    A redemption reads the FileItem in a unit anyway; asking the revocation there
    too saves the ledger a connection and a transaction of its own (ADR 0128).
    """

    def is_revoked_within(self, uow: UnitOfWork, link_id: str) -> bool:
        """Whether ``link_id`` is revoked, read in ``uow``'s transaction when ``uow`` is on
        this ledger's database, else as :meth:`LinkLedger.is_revoked` does.
        :class:`~docbinder.domain.errors.StorageError` on a storage fault."""
        ...
