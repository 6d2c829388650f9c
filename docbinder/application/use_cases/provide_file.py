"""Hand a FileItem to a model provider's Files API once: :class:`ProvideFile` (feature row B22)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import timedelta

import attrs

from docbinder.application.steps.auditing import DISABLED, AuditTrail
from docbinder.application.steps.provider_copies import ProviderCopyCleaner, ProviderRegistry
from docbinder.application.use_cases.get_file import GetFile
from docbinder.domain.audit import AuditAction
from docbinder.domain.errors import ProviderError, ProviderUploadForbidden
from docbinder.domain.model import FileItem, Principal, Scope
from docbinder.domain.providers import (
    CopyState,
    Provider,
    ProviderCopy,
    ProviderCopyKey,
    ProviderFileRef,
)
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
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
    key; ``stale_after``: a claim older than this is taken over (its uploader
    is taken to have died); ``margin``: a copy that expires within this is
    uploaded again rather than handed out; ``poll``: pause between looks.
    """

    wait: float = 120.0
    stale_after: float = 600.0
    margin: float = 300.0
    poll: float = 0.05


class ProvideFile:
    """Upload a FileItem to a provider at most once per content, provider, account and tenant.

    The key is :class:`~docbinder.domain.providers.ProviderCopyKey`: the
    FileItem's SHA-256, the provider, the account and the FileItem's tenant
    (mandate and feature instance). A recorded copy is reused while the
    provider keeps it; one that expired, or that the provider no longer has
    (404 on ``retrieve`` with ``verify``), is uploaded again transparently.
    Concurrent callers for one key upload once: the first inserts the key's
    row (the upload's claim), the others wait for it (ADR 0105).
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
    ) -> None:
        self._audit = audit
        self._uow = uow_factory
        self._blobs = blobs
        self._get = get_file
        self._registry = registry
        self._cleaner = cleaner
        self._clock = clock
        self._ids = ids
        self._denied = frozenset(denied)
        self._t = timings
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
        registered), :class:`~docbinder.domain.errors.ProviderError` (the
        provider failed, or another caller's upload took longer than the wait).
        """
        item = self._get(principal, file_id)
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
        deadline = time.monotonic() + self._t.wait
        while True:
            ref = self._attempt(principal, client, item, key, verify)
            if ref is not None:
                return ref
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"waited {self._t.wait:g} s for another upload of file {item.id} to "
                    f"{key.provider.value}; try again",
                    provider=key.provider.value,
                )
            self._sleep(self._t.poll)

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
    ) -> ProviderFileRef | None:
        """One look at the key's row: a reference, or ``None`` to look again after a pause."""
        now = self._clock.now()
        mine = ProviderCopy(key, CopyState.UPLOADING, self._ids.new_id(), now, size=item.size)
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
            self._cleaner.delete_one(there)
            self._check_deleted(there)
            return None
        if there.state is CopyState.READY:
            assert there.file_id is not None
            if there.usable_at(now, timedelta(seconds=self._t.margin)) and (
                not verify or client.exists(there.file_id)
            ):
                return _ref(there, item, uploaded=False)
            log.info("provider copy %s expired or gone: uploading again", there.file_id)
            return self._take_over(principal, client, item, there, mine)
        if (now - there.claimed_at).total_seconds() > self._t.stale_after:
            log.warning("taking over a stale upload claim of %s", key.provider.value)
            return self._take_over(principal, client, item, there, mine)
        return None

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
        """Upload as the holder of ``mine``'s claim; ``None`` if the claim was lost meanwhile."""
        try:
            with self._blobs.open(item.blob_key) as reader:
                data = b"".join(reader)
            uploaded = client.upload(data, item.file_name, item.mime_type)
        except BaseException:
            with self._uow() as uow:
                uow.provider_copies.remove(mine.key, mine.claim)
                uow.commit()
            raise
        ready = attrs.evolve(
            mine,
            state=CopyState.READY,
            file_id=uploaded.file_id,
            uri=uploaded.uri,
            uploaded_at=self._clock.now(),
            expires_at=uploaded.expires_at,
            size=len(data),
        )
        with self._uow() as uow:
            kept = uow.provider_copies.replace(mine.claim, ready)
            if kept and self._audit.enabled:
                self._audit.record(
                    uow,
                    self._audit.event(
                        AuditAction.PROVIDER_UPLOAD,
                        principal,
                        file_id=item.id,
                        detail={
                            "provider": mine.key.provider.value,
                            "account": mine.key.account,
                            "providerFileId": uploaded.file_id,
                            "size": len(data),
                        },
                    ),
                )
            uow.commit()
        if not kept:
            # a delete marked the row, or a caller took the claim over: ours is an orphan
            log.info("upload %s lost its claim; deleting it at the provider", uploaded.file_id)
            try:
                client.delete(uploaded.file_id)
            except ProviderError as err:
                log.warning("could not delete orphan upload %s: %s", uploaded.file_id, err)
            return None
        return _ref(ready, item, uploaded=True)


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
