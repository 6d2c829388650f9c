"""Provider clients by provider and account, and the deletion of provider copies (B22).

:class:`ProviderRegistry` holds the :class:`~docbinder.ports.providers.ProviderFiles`
the host registered (``binder.providers.register(...)``). :class:`ProviderCopyCleaner`
deletes the copies a deleted FileItem leaves at providers: the deleting unit
marks them ``deleting`` (:meth:`ProviderCopyCleaner.mark`), and after its
commit each is deleted at its provider and its row removed
(:meth:`ProviderCopyCleaner.delete_marked`). A copy whose provider is not
registered or whose delete fails keeps its row, and ``gc`` tries again
(:meth:`ProviderCopyCleaner.retry`): a provider copy is never forgotten while
the provider may still hold it (ADR 0107). A copy marked while its upload had
no answer yet has no file id: the provider's files named with its upload
token are listed and deleted, and the row stays until the provider lists
none of them for :attr:`ProviderCopyCleaner.settle` after the upload's claim
(absence is not trusted while the upload may still be in flight, ADR 0125).
A ``ready`` copy's files named with its token besides the recorded one (a lost
upload the provider listed late) go with it (ADR 0131); one listing per
provider and account serves all the copies of a pass (ADR 0132).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta

import attrs

from docbinder.domain.errors import ConfigurationError, InvalidInput, ProviderError
from docbinder.domain.model import FileItem, is_valid_id
from docbinder.domain.providers import CopyState, Provider, ProviderCopy, UploadedCopy
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.providers import ProviderFiles
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)


class ProviderRegistry:
    """The provider clients of one binder, by ``(provider, account)``; thread-safe."""

    def __init__(self) -> None:
        self._clients: dict[tuple[Provider, str], ProviderFiles] = {}
        self._lock = threading.Lock()

    def register(self, files: ProviderFiles) -> None:
        """Use ``files`` for its ``(provider, account)``, replacing an earlier one.

        Raises :class:`InvalidInput` when its account is no id.
        """
        provider = Provider(files.provider)
        if not is_valid_id(files.account):
            raise InvalidInput("a provider account must be an id (1 to 128 printable characters)")
        with self._lock:
            self._clients[(provider, files.account)] = files

    def find(self, provider: Provider | str, account: str) -> ProviderFiles | None:
        """The client registered for ``provider`` and ``account``, or ``None``."""
        with self._lock:
            return self._clients.get((Provider(provider), account))

    def get(self, provider: Provider | str, account: str) -> ProviderFiles:
        """The client registered for ``provider`` and ``account``.

        Raises :class:`ConfigurationError` naming ``binder.providers.register``
        when there is none.
        """
        found = self.find(provider, account)
        if found is None:
            raise ConfigurationError(
                f"no {Provider(provider).value} client is registered for account {account!r}; "
                "register one with binder.providers.register(...)"
            )
        return found

    def registered(self) -> list[tuple[Provider, str]]:
        """Every registered ``(provider, account)``, sorted."""
        with self._lock:
            return sorted(self._clients, key=lambda k: (k[0].value, k[1]))


_Account = tuple[Provider, str]
_Listing = Mapping[str, list[UploadedCopy]]


def find_tokens(client: ProviderFiles, tokens: Collection[str]) -> dict[str, list[UploadedCopy]]:
    """The files of ``client``'s account named with each of ``tokens`` (every token a key).

    A client with ``find_many`` (the shipped adapters) lists the account
    once for all of them; another client's ``find`` is called once per token
    (ADR 0132). Raises :class:`ProviderError` when a listing fails: a
    listing that could not be read is never taken for an empty one.
    """
    wanted = sorted(set(tokens))
    if not wanted:
        return {}
    many = getattr(client, "find_many", None)
    if many is None:
        return {token: client.find(token) for token in wanted}
    found = many(wanted)
    return {token: list(found.get(token, [])) for token in wanted}


@attrs.frozen
class CleanupReport:
    """What one pass of deleting provider copies did: counts of copies."""

    deleted: int = 0
    already_gone: int = 0
    kept: int = 0
    """Copies still recorded: their provider is not registered, or its delete failed."""


class ProviderCopyCleaner:
    """Deletes provider copies after their FileItem was deleted, and retries what failed."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        registry: ProviderRegistry,
        clock: Clock,
        ids: IdFactory,
        *,
        settle: timedelta = timedelta(seconds=600),
    ) -> None:
        self._uow = uow_factory
        self._registry = registry
        self._clock = clock
        self._ids = ids
        self.settle = settle
        """How long after an unanswered upload's last renewal an empty listing is believed (``stale_after``)."""

    def mark(self, uow: UnitOfWork, item: FileItem) -> list[ProviderCopy]:
        """In the deleting unit ``uow``: mark every copy of ``item``'s content in its tenant ``deleting``.

        Returns the marked copies (pass them to :meth:`delete_marked` after the commit).
        A copy being uploaded is marked too: its uploader's compare-and-set then
        fails and it deletes what it uploaded. Such a mark keeps the upload's
        token and the time of its claim's last renewal (what :attr:`settle`
        counts from; ADR 0130).
        """
        marked: list[ProviderCopy] = []
        for copy in uow.provider_copies.of_content(item.scope, item.sha256):
            if copy.state is CopyState.DELETING:
                marked.append(copy)
                continue
            unanswered = copy.state in (CopyState.UPLOADING, CopyState.LOST)
            again = attrs.evolve(
                copy,
                state=CopyState.DELETING,
                claim=self._ids.new_id(),
                claimed_at=copy.claimed_at if unanswered else self._clock.now(),
            )
            if uow.provider_copies.replace(copy.claim, again):
                marked.append(again)
        return marked

    def delete_marked(self, copies: Sequence[ProviderCopy]) -> CleanupReport:
        """Delete each marked copy at its provider, then its row; failures keep the row (logged).

        The files named with the copies' upload tokens are listed once per
        provider and account for all of them (:func:`find_tokens`, ADR 0132),
        not once per copy.
        """
        listings = self._listings(copies)
        deleted = gone = kept = 0
        for copy in copies:
            outcome = self._delete(copy, listings)
            if outcome is None:
                kept += 1
            elif outcome:
                deleted += 1
            else:
                gone += 1
        return CleanupReport(deleted, gone, kept)

    def delete_one(self, copy: ProviderCopy) -> bool | None:
        """Delete one ``deleting`` copy: ``True`` deleted, ``False`` already gone, ``None`` kept for later."""
        return self._delete(copy, self._listings([copy]))

    def _listings(self, copies: Sequence[ProviderCopy]) -> dict[_Account, _Listing | None]:
        """For each registered provider and account among ``copies``: its files by upload token.

        One listing per account for all the tokens of ``copies`` there;
        ``None`` for an account whose listing failed (logged).
        """
        wanted: dict[_Account, set[str]] = {}
        for copy in copies:
            if copy.upload_token is not None:
                where = (copy.key.provider, copy.key.account)
                wanted.setdefault(where, set()).add(copy.upload_token)
        listings: dict[_Account, _Listing | None] = {}
        for (provider, account), tokens in wanted.items():
            client = self._registry.find(provider, account)
            if client is None:
                continue
            try:
                listings[(provider, account)] = find_tokens(client, tokens)
            except ProviderError as err:
                log.warning(
                    "could not list %s files of account %s: %s", provider.value, account, err
                )
                listings[(provider, account)] = None
        return listings

    def _delete(
        self, copy: ProviderCopy, listings: Mapping[_Account, _Listing | None]
    ) -> bool | None:
        """Delete ``copy``'s file and every file named with its token, then its row (ADR 0107, 0131).

        The files named with the row's upload token are provably this row's
        (the token is one only this row was given): besides the recorded
        ``file_id`` they are uploads whose answer was lost and that the
        provider listed only later. ``True`` if something was deleted;
        ``False`` if nothing was there (for a row without file id: the
        provider lists none and the upload's claim is older than
        :attr:`settle`); ``None`` (the row stays for ``gc``) if no client is
        registered, a delete or the listing failed, or the listing is empty
        while an unanswered upload may still be in flight.
        """
        client = self._registry.find(copy.key.provider, copy.key.account)
        if client is None:
            log.warning(
                "provider copy %s at %s (account %s) kept: no client registered for it",
                copy.file_id,
                copy.key.provider.value,
                copy.key.account,
            )
            return None
        existed = False
        if copy.file_id is not None:
            try:
                existed = client.delete(copy.file_id)
            except ProviderError as err:
                log.warning("provider copy %s kept: the delete failed: %s", copy.file_id, err)
                return None
        if copy.upload_token is not None:
            listing = listings.get((copy.key.provider, copy.key.account))
            if listing is None:
                log.warning("provider copy of upload %s kept: no listing", copy.upload_token)
                return None
            others = [f for f in listing.get(copy.upload_token, []) if f.file_id != copy.file_id]
            try:
                deleted = [client.delete(f.file_id) for f in others]
            except ProviderError as err:
                log.warning("provider copy of upload %s kept: %s", copy.upload_token, err)
                return None
            if others:
                log.info(
                    "deleted %d more %s file(s) of upload %s",
                    len(others),
                    copy.key.provider.value,
                    copy.upload_token,
                )
                existed = existed or any(deleted)
            elif copy.file_id is None and self._clock.now() - copy.claimed_at < self.settle:
                log.info("unanswered upload %s kept: it may still be in flight", copy.upload_token)
                return None
        with self._uow() as uow:
            uow.provider_copies.remove(copy.key, copy.claim)
            uow.commit()
        return existed

    def retry(self, limit: int = 1000) -> CleanupReport:
        """Try again to delete up to ``limit`` copies still marked ``deleting`` (what ``gc`` runs)."""
        with self._uow() as uow:
            copies = uow.provider_copies.deleting(limit)
        return self.delete_marked(copies)
