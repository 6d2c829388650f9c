"""Hand a FileItem to a model provider's Files API once: :class:`ProvideFile` (feature row B22)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import BinaryIO, Literal, cast

import attrs

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.blob_file import BlobFile
from docbinder.application.steps.expiry import ExpiryGate
from docbinder.application.steps.provider_copies import ProviderCopyCleaner, ProviderRegistry
from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import (
    FileItemNotFound,
    ProviderError,
    ProviderUploadForbidden,
    StorageError,
)
from docbinder.domain.model import FileItem, Principal, Scope
from docbinder.domain.providers import (
    CopyState,
    Provider,
    ProviderCopy,
    ProviderCopyKey,
    ProviderFileRef,
    UploadedCopy,
    marked_name,
)
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWork, UnitOfWorkFactory
from docbinder.ports.providers import ProviderFiles
from docbinder.ports.system import Clock, IdFactory

log = logging.getLogger(__name__)

DENY_SETTING = "provider_uploads_denied"
"""The setting that lists the tenants whose files never go to a provider."""


def _tenant_names(scope: Scope) -> tuple[str, ...]:
    """How :data:`DENY_SETTING` may name ``scope``: its mandate, and ``mandate/feature-instance``."""
    return (
        (scope.mandate_id,) if scope.feature_instance_id is None else (scope.mandate_id, str(scope))
    )


@attrs.frozen
class ProviderTimings:
    """How the bridge waits: all in seconds.

    ``wait``: longest a caller waits for another caller's upload of the same
    key; ``renew_every``: the uploader renews its claim's lease this often
    while its upload runs (ADR 0130); ``lease``: a claim this caller has
    seen unrenewed for this long is taken to be dead and taken over, after
    a listing of the provider's files that found no copy for its token;
    ``stale_after``: a claim older than this by the clocks is taken over the
    same way (rows of uploaders that do not renew); ``margin``: a copy that
    expires within this is uploaded again rather than handed out; ``poll``:
    pause between looks at the row; ``look_after``: a waiting caller that has
    seen a claim unrenewed for this long, or whose last renewal is this old
    by the clocks, looks for its upload at the provider (a listing), so an
    upload whose uploader died after the provider stored it is adopted then
    (ADR 0126); ``look_every``: pause between two such listings of one
    caller. ``renew_every`` must be positive and shorter than ``lease``
    (:class:`ValueError` otherwise).
    """

    wait: float = 120.0
    stale_after: float = 600.0
    margin: float = 300.0
    poll: float = 0.05
    look_after: float = 10.0
    look_every: float = 5.0
    lease: float = 30.0
    renew_every: float = 5.0

    def __attrs_post_init__(self) -> None:
        if not 0 < self.renew_every < self.lease:
            raise ValueError(
                f"renew_every ({self.renew_every:g} s) must be positive and shorter than "
                f"lease ({self.lease:g} s)"
            )


def _refused(err: ProviderError) -> bool:
    """Whether ``err`` is the provider's refusal of the request, so it stored nothing.

    A 4xx answer other than 408 (timeout) and 409 (conflict) refuses the
    request; everything else (no answer, a cut connection, a timeout, a 5xx)
    leaves open whether the provider stored the file (RFC 9110 section 15.5).
    """
    return err.status is not None and 400 <= err.status < 500 and err.status not in (408, 409)


def _longest_lived(found: list[UploadedCopy]) -> UploadedCopy:
    """Of several copies of one upload token, the one the provider keeps longest (no expiry first)."""
    return max(
        found,
        key=lambda c: (c.expires_at is None, c.expires_at or datetime.min.replace(tzinfo=UTC)),
    )


@attrs.define
class _Looks:
    """What one waiting caller saw of the claim it waits on (monotonic seconds).

    ``next_at``: when it may next list the provider's files; ``seen``: the
    claim token and renewal time it last saw, ``seen_since`` since when it
    has seen them unchanged. Silence is measured on this caller's own
    monotonic clock, so clocks that differ between hosts do not make a live
    claim look dead (ADR 0130).
    """

    next_at: float = 0.0
    seen: tuple[str, datetime] | None = None
    seen_since: float = 0.0

    def silence(self, there: ProviderCopy) -> float:
        """Seconds this caller has seen ``there``'s claim without a renewal (0 on a change)."""
        now = time.monotonic()
        current = (there.claim, there.claimed_at)
        if current != self.seen:
            self.seen = current
            self.seen_since = now
        return now - self.seen_since


class _Renewal:
    """Renews one upload's claim every ``every`` seconds in a thread, until the block ends (ADR 0130).

    Each renewal is one short unit of work
    (:meth:`~docbinder.ports.metadata.ProviderCopyRepository.renew`) setting
    the row's ``claimed_at`` to the clock's time. A renewal that finds the
    claim gone (taken over, the FileItem deleted) stops the renewals; one
    that fails (:class:`~docbinder.domain.errors.StorageError`) is logged and
    tried again at the next tick.
    """

    def __init__(
        self, uow_factory: UnitOfWorkFactory, clock: Clock, copy: ProviderCopy, every: float
    ) -> None:
        self._uow = uow_factory
        self._clock = clock
        self._copy = copy
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="docbinder-provider-lease", daemon=True
        )
        self.renewals = 0
        """Renewals that took effect."""

    def __enter__(self) -> _Renewal:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        key, claim = self._copy.key, self._copy.claim
        while not self._stop.wait(self._every):
            try:
                with self._uow() as uow:
                    renewed = uow.provider_copies.renew(key, claim, self._clock.now())
                    uow.commit()
            except StorageError as err:  # the database may answer again at the next tick
                log.warning("could not renew the upload claim at %s: %s", key.provider.value, err)
                continue
            if not renewed:
                log.info(
                    "the upload claim at %s is no longer ours: renewals stop", key.provider.value
                )
                return
            self.renewals += 1


class ProvideFile:
    """Upload a FileItem to a provider at most once per content, provider, account and tenant.

    The key is :class:`~docbinder.domain.providers.ProviderCopyKey`: the
    FileItem's SHA-256, the provider, the account and the FileItem's tenant
    (mandate and feature instance). A recorded copy is reused while the
    provider keeps it; one that expired, or that the provider no longer has
    (404 on ``retrieve`` with ``verify``), is uploaded again transparently.
    Concurrent callers for one key upload once: the first inserts the key's
    row (the upload's claim) and renews it while it uploads, the others wait
    for it; a claim a waiter sees unrenewed for ``timings.lease`` is taken
    over after a listing found no copy of it (ADR 0105, 0130).

    Uploads stream from the blob store (:class:`~docbinder.application.steps.blob_file.BlobFile`)
    under a name carrying the row's upload token
    (:func:`~docbinder.domain.providers.marked_name`). An upload without an
    answer (cut connection, timeout, 5xx) is looked for in the provider's
    files and adopted when found; when not found the row is left ``lost``
    and the next caller looks again before it uploads, under the same token
    (ADR 0125). ``timings`` may be replaced on a built binder.
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        blobs: BlobStore,
        get_file: GetFile,
        registry: ProviderRegistry,
        cleaner: ProviderCopyCleaner,
        clock: Clock,
        ids: IdFactory,
        *,
        denied: Iterable[str] = (),
        timings: ProviderTimings = ProviderTimings(),
        sleep: Callable[[float], None] = time.sleep,
        audit: AuditTrail = DISABLED,
        expiry: ExpiryGate | None = None,
    ) -> None:
        self._audit = audit
        self._expiry = expiry
        self._uow = uow_factory
        self._blobs = blobs
        self._get = get_file
        self._registry = registry
        self._cleaner = cleaner
        self._clock = clock
        self._ids = ids
        self._denied = frozenset(denied)
        self.timings = timings
        self._sleep = sleep

    def __call__(
        self,
        principal: Principal,
        file_id: str,
        provider: Provider | str,
        account: str = "default",
        *,
        verify: bool = True,
    ) -> ProviderFileRef:
        """The provider's reference to the FileItem ``file_id``, uploading it if needed.

        ``provider`` is ``openai``, ``anthropic`` or ``gemini``; ``account`` the
        name the client was registered under. With ``verify`` a recorded copy
        is checked at the provider first (one ``retrieve`` call).
        Raises :class:`~docbinder.domain.errors.FileItemNotFound` (absent or not
        readable), :class:`~docbinder.domain.errors.ProviderUploadForbidden`
        (the tenant is listed in ``provider_uploads_denied``),
        :class:`~docbinder.domain.errors.ConfigurationError` (no client
        registered), :class:`~docbinder.domain.errors.FileExpired` (past its
        retention period, B5), :class:`~docbinder.domain.errors.ProviderError` (the
        provider failed, an upload's answer was lost and its copy is not
        listed yet, or another caller's upload took longer than the wait).
        """
        item = self._get(principal, file_id)
        if self._expiry is not None:
            self._expiry.refuse(item)  # its content is no longer served (B5)
        try:
            self._check_allowed(item.scope, principal.scope)
        except ProviderUploadForbidden:
            if self._audit.enabled:
                self._audit.refused(
                    self._audit.event(
                        AuditAction.ACCESS_REFUSED,
                        principal,
                        outcome="provider_uploads_denied",
                        file_id=item.id,
                        detail={"operation": "provide_file", "provider": str(provider)},
                    )
                )
            raise
        client = self._registry.get(provider, account)
        key = ProviderCopyKey(item.sha256, client.provider, account, item.scope)
        deadline = time.monotonic() + self.timings.wait
        looks = _Looks()
        while True:
            ref = self._attempt(principal, client, item, key, verify, looks)
            if ref is not None:
                return ref
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"waited {self.timings.wait:g} s for another upload of file {item.id} to "
                    f"{key.provider.value}; try again",
                    provider=key.provider.value,
                )
            self._sleep(self.timings.poll)

    def _check_allowed(self, *scopes: Scope) -> None:
        for scope in scopes:
            for name in _tenant_names(scope):
                if name in self._denied:
                    raise ProviderUploadForbidden(
                        f"files of {name} may not be uploaded to model providers: "
                        f"setting {DENY_SETTING} lists {name!r}",
                        setting=DENY_SETTING,
                        scope=name,
                    )

    def _attempt(
        self,
        principal: Principal,
        client: ProviderFiles,
        item: FileItem,
        key: ProviderCopyKey,
        verify: bool,
        looks: _Looks,
    ) -> ProviderFileRef | None:
        """One look at the key's row: a reference, or ``None`` to look again after a pause."""
        now = self._clock.now()
        mine = ProviderCopy(
            key,
            CopyState.UPLOADING,
            self._ids.new_id(),
            now,
            size=item.size,
            upload_token=self._ids.new_id(),
        )
        with self._uow() as uow:  # the usual case, a recorded copy: one read, no write lock
            there = uow.provider_copies.get(key)
        if there is None:
            with self._uow() as uow:
                there = uow.provider_copies.claim(mine)
                uow.commit()
        if there is None:
            return self._upload(principal, client, item, mine)
        if there.state is CopyState.DELETING:
            # a deleted FileItem's copy of this content: finish its delete first
            outcome = self._cleaner.delete_one(there)
            if outcome is None and there.file_id is None and there.upload_token is not None:
                # its upload never answered and absence is not trusted yet: upload under its
                # token, so a copy of it that still shows up is one of this row's copies
                return self._take_over(principal, client, item, there, _same_token(mine, there))
            self._check_deleted(there)
            return None
        if there.state is CopyState.READY:
            assert there.file_id is not None
            if there.usable_at(now, timedelta(seconds=self.timings.margin)) and (
                not verify or client.exists(there.file_id)
            ):
                return _ref(there, item, uploaded=False)
            log.info("provider copy %s expired or gone: uploading again", there.file_id)
            # under the row's token: every copy the row ever had stays findable (ADR 0131)
            return self._take_over(principal, client, item, there, _same_token(mine, there))
        if there.state is CopyState.LOST:
            # no one uploads: look for the lost upload, else upload under its token
            return self._reconcile(principal, client, item, there, mine, upload=True)
        # uploading: its uploader renews the claim while it is alive (ADR 0130)
        silent = looks.silence(there)
        age = (now - there.claimed_at).total_seconds()
        if silent > self.timings.lease or age > self.timings.stale_after:
            log.warning(
                "taking over an upload claim of %s not renewed for %.0f s",
                key.provider.value,
                max(silent, age),
            )
            return self._reconcile(principal, client, item, there, mine, upload=True)
        if max(silent, age) > self.timings.look_after and time.monotonic() >= looks.next_at:
            looks.next_at = time.monotonic() + self.timings.look_every
            try:
                return self._reconcile(principal, client, item, there, mine, upload=False)
            except ProviderError as err:  # the listing failed: the claim's holder may still answer
                log.info(
                    "could not list %s files for a waiting upload: %s", key.provider.value, err
                )
        return None

    def _reconcile(
        self,
        principal: Principal,
        client: ProviderFiles,
        item: FileItem,
        there: ProviderCopy,
        mine: ProviderCopy,
        *,
        upload: bool,
    ) -> ProviderFileRef | None:
        """Adopt the copies ``there``'s upload left at the provider; else upload (``upload``) under its token.

        Raises :class:`ProviderError` when the listing fails: a listing that
        could not be read proves nothing, and the row is left as it is.
        """
        found = [] if there.upload_token is None else self._fresh(client.find(there.upload_token))
        if found:
            return self._adopt(principal, client, item, there, found, uploaded=False)
        if not upload:
            return None
        return self._take_over(principal, client, item, there, _same_token(mine, there))

    def _fresh(self, found: list[UploadedCopy]) -> list[UploadedCopy]:
        """The copies of ``found`` the provider keeps past the margin: the ones worth adopting.

        A row's earlier copy under the same token that expires within the
        margin is left to expire: it may still be named by a model call.
        """
        now = self._clock.now()
        margin = timedelta(seconds=self.timings.margin)
        return [c for c in found if c.expires_at is None or c.expires_at - margin > now]

    def _adopt(
        self,
        principal: Principal,
        client: ProviderFiles,
        item: FileItem,
        there: ProviderCopy,
        found: list[UploadedCopy],
        *,
        uploaded: bool,
    ) -> ProviderFileRef | None:
        """Record the longest-lived of ``found`` as the key's copy and delete the others.

        Every one of ``found`` carries ``there``'s upload token, a token only
        this row ever had: they are this content's uploads for this tenant, so
        the ones not kept are duplicates (the SDK's retries, a second upload
        after a lost answer) and deleted. ``None`` when the row changed meanwhile.
        """
        keep = _longest_lived(found)
        now = self._clock.now()
        ready = ProviderCopy(
            there.key,
            CopyState.READY,
            self._ids.new_id(),
            now,
            file_id=keep.file_id,
            uri=keep.uri,
            uploaded_at=now,
            expires_at=keep.expires_at,
            size=item.size,
            upload_token=there.upload_token,
        )
        try:
            kept = self._commit_ready(principal, item, there, ready, reconciled=True)
        except FileItemNotFound:
            self._drop_if_unowned(client, there, found)
            raise
        if not kept:
            self._drop_if_unowned(client, there, found)
            return None
        log.info(
            "adopted %s copy %s of an upload whose answer was lost",
            there.key.provider.value,
            keep.file_id,
        )
        for other in found:
            if other.file_id != keep.file_id:
                try:
                    client.delete(other.file_id)
                except ProviderError as err:
                    log.warning("could not delete duplicate upload %s: %s", other.file_id, err)
        return _ref(ready, item, uploaded=uploaded)

    def _commit_ready(
        self,
        principal: Principal,
        item: FileItem,
        claimed: ProviderCopy,
        ready: ProviderCopy,
        *,
        reconciled: bool,
    ) -> bool:
        """Replace the row ``claimed`` holds by ``ready`` and record the upload, in one unit.

        ``False`` when the row no longer carries ``claimed``'s claim (nothing written).
        The unit first holds the FileItem (:meth:`~docbinder.ports.metadata.FileRepository.lock_shared`):
        if it was deleted, or its content replaced, since this call read it, a
        delete that committed before the row was claimed could not mark the
        row, and a ``ready`` row would keep a copy no delete ever comes for.
        The row is then marked ``deleting`` instead (its copy deleted at once,
        or by ``gc``) and :class:`FileItemNotFound` raised.
        """
        with self._uow() as uow:
            if not self._still_there(uow, item):
                doomed = attrs.evolve(ready, state=CopyState.DELETING, claim=self._ids.new_id())
                marked = uow.provider_copies.replace(claimed.claim, doomed)
                uow.commit()
                if marked:
                    self._cleaner.delete_marked([doomed])
                raise FileItemNotFound(f"file {item.id} not found")
            kept = uow.provider_copies.replace(claimed.claim, ready)
            if kept:
                self._record_upload(uow, principal, item, ready, reconciled=reconciled)
            uow.commit()
        return kept

    @staticmethod
    def _still_there(uow: UnitOfWork, item: FileItem) -> bool:
        """Whether ``item`` still exists with the content this call read, held until ``uow`` ends."""
        live = uow.files.lock_shared([item.id]).get(item.id)
        return live is not None and live.sha256 == item.sha256 and live.scope == item.scope

    def _drop_if_unowned(
        self, client: ProviderFiles, there: ProviderCopy, found: list[UploadedCopy]
    ) -> None:
        """Delete ``found`` (files named with ``there``'s token) once no row of the key holds that token.

        The token was given to that one row only, and a row's token passes
        only to the callers that take the row over: once the key has no row,
        or a row of another token, nothing will ever adopt or delete them (a
        ``gc`` that removed the row listed before the provider showed them).
        While a row still holds the token they are left to it (``deleting``:
        its cleaner lists them; taken over: its uploader adopts them).
        """
        with self._uow() as uow:
            now_there = uow.provider_copies.get(there.key)
        if now_there is not None and now_there.upload_token == there.upload_token:
            return
        for orphan in found:
            log.info(
                "deleting %s upload %s: no row holds its token",
                there.key.provider.value,
                orphan.file_id,
            )
            try:
                client.delete(orphan.file_id)
            except ProviderError as err:
                log.warning("could not delete orphan upload %s: %s", orphan.file_id, err)

    def _check_deleted(self, there: ProviderCopy) -> None:
        """Raise :class:`ProviderError` if the copy waiting for its delete is still there unchanged."""
        with self._uow() as uow:
            still = uow.provider_copies.get(there.key)
        if still is not None and still.claim == there.claim:
            raise ProviderError(
                f"a deleted copy of this content at {there.key.provider.value} could not be "
                "deleted yet; gc retries it",
                provider=there.key.provider.value,
            )

    def _take_over(
        self,
        principal: Principal,
        client: ProviderFiles,
        item: FileItem,
        there: ProviderCopy,
        mine: ProviderCopy,
    ) -> ProviderFileRef | None:
        with self._uow() as uow:
            taken = uow.provider_copies.replace(there.claim, mine)
            uow.commit()
        return self._upload(principal, client, item, mine) if taken else None

    def _upload(
        self, principal: Principal, client: ProviderFiles, item: FileItem, mine: ProviderCopy
    ) -> ProviderFileRef | None:
        """Upload as the holder of ``mine``'s claim; ``None`` if the claim was lost meanwhile.

        A refusal (4xx) removes the claim; any other failure looks for the
        upload at the provider (:meth:`_after_lost_answer`).
        """
        assert mine.upload_token is not None
        name = marked_name(item.file_name, mine.upload_token)
        try:
            with (
                self._renewing(mine),
                BlobFile(self._blobs, item.blob_key, item.size) as source,
            ):
                uploaded = client.upload(cast(BinaryIO, source), item.size, name, item.mime_type)
        except ProviderError as err:
            if _refused(err):
                self._release(mine)
                raise
            found = self._after_lost_answer(principal, client, item, mine, err)
            if found is False:
                raise
            return found  # adopted, or None: the row changed meanwhile, look again
        except BaseException:
            # interrupted or the blob could not be read: whether bytes reached the provider is open
            self._mark_lost(item, mine)
            raise
        ready = attrs.evolve(
            mine,
            state=CopyState.READY,
            file_id=uploaded.file_id,
            uri=uploaded.uri,
            uploaded_at=self._clock.now(),
            expires_at=uploaded.expires_at,
            size=item.size,
        )
        try:
            kept = self._commit_ready(principal, item, mine, ready, reconciled=False)
        except FileItemNotFound:
            self._drop_if_unowned(client, mine, [uploaded])
            raise
        if kept:
            return _ref(ready, item, uploaded=True)
        with self._uow() as uow:
            now_there = uow.provider_copies.get(mine.key)
        if (
            now_there is not None
            and now_there.state is CopyState.READY
            and now_there.file_id == uploaded.file_id
        ):
            # a waiting caller found this upload at the provider and adopted it
            return _ref(now_there, item, uploaded=True)
        # a delete marked the row, or a caller took the claim over: ours is an orphan
        log.info("upload %s lost its claim; deleting it at the provider", uploaded.file_id)
        try:
            client.delete(uploaded.file_id)
        except ProviderError as err:
            log.warning("could not delete orphan upload %s: %s", uploaded.file_id, err)
        return None

    def _after_lost_answer(
        self,
        principal: Principal,
        client: ProviderFiles,
        item: FileItem,
        mine: ProviderCopy,
        err: ProviderError,
    ) -> ProviderFileRef | Literal[False] | None:
        """After an upload without an answer: adopt its copy if the provider lists one.

        The adopted reference; ``None`` if one was listed but the row changed
        meanwhile (the caller looks at the row again); ``False`` if none was
        listed or the listing failed: the row is then marked ``lost``.
        """
        assert mine.upload_token is not None
        log.warning(
            "upload to %s ended without an answer (%s); looking for it",
            mine.key.provider.value,
            err,
        )
        try:
            with self._renewing(mine):  # a listing of many pages takes a while
                found = client.find(mine.upload_token)
        except ProviderError as listing:
            log.warning("could not list %s files: %s", mine.key.provider.value, listing)
            found = []
        found = self._fresh(found)
        if found:
            return self._adopt(principal, client, item, mine, found, uploaded=True)
        self._mark_lost(item, mine)
        return False

    def _renewing(self, mine: ProviderCopy) -> _Renewal:
        """The renewal of ``mine``'s lease while a block runs (ADR 0130)."""
        return _Renewal(self._uow, self._clock, mine, self.timings.renew_every)

    def _mark_lost(self, item: FileItem, mine: ProviderCopy) -> None:
        """Leave the row ``lost``, token kept: no one uploads, the next caller looks before uploading.

        If the FileItem was deleted (or its content replaced) since this call
        read it, no caller will come for that row: it is marked ``deleting``
        instead, so ``gc`` lists for its token (ADR 0125) and the row goes
        only after a listing found nothing past the settle time.
        """
        lost = attrs.evolve(
            mine, state=CopyState.LOST, claim=self._ids.new_id(), claimed_at=self._clock.now()
        )
        with self._uow() as uow:
            if not self._still_there(uow, item):
                lost = attrs.evolve(lost, state=CopyState.DELETING)
            uow.provider_copies.replace(mine.claim, lost)
            uow.commit()

    def _release(self, mine: ProviderCopy) -> None:
        """Remove the claim of an upload the provider refused (it stored nothing)."""
        with self._uow() as uow:
            uow.provider_copies.remove(mine.key, mine.claim)
            uow.commit()

    def _record_upload(
        self,
        uow: UnitOfWork,
        principal: Principal,
        item: FileItem,
        ready: ProviderCopy,
        *,
        reconciled: bool,
    ) -> None:
        if not self._audit.enabled:
            return
        detail: dict[str, object] = {
            "provider": ready.key.provider.value,
            "account": ready.key.account,
            "providerFileId": ready.file_id,
            "size": item.size,
        }
        if reconciled:
            detail["reconciled"] = True
        self._audit.record(
            uow,
            self._audit.event(
                AuditAction.PROVIDER_UPLOAD, principal, file_id=item.id, detail=detail
            ),
        )


def _same_token(mine: ProviderCopy, there: ProviderCopy) -> ProviderCopy:
    """``mine`` carrying ``there``'s upload token (a fresh one if ``there`` has none)."""
    if there.upload_token is None:
        return mine
    return attrs.evolve(mine, upload_token=there.upload_token)


def _ref(copy: ProviderCopy, item: FileItem, *, uploaded: bool) -> ProviderFileRef:
    assert copy.file_id is not None
    return ProviderFileRef(
        provider=copy.key.provider,
        account=copy.key.account,
        file_id=copy.file_id,
        file_name=item.file_name,
        mime_type=item.mime_type,
        size=item.size,
        uri=copy.uri,
        expires_at=copy.expires_at,
        uploaded=uploaded,
    )
