"""Redeem a signed link without credentials: :class:`RedeemLink` (feature row B4)."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from docbinder.application.steps.access import AccessPolicy
from docbinder.application.steps.closing import UnitOfWorkGate
from docbinder.application.steps.expiry import expired_at
from docbinder.application.steps.link_events import LinkEvents
from docbinder.application.use_cases.mint_link import NO_KEY_MESSAGE
from docbinder.application.use_cases.open_file_item import Span, open_span
from docbinder.domain.errors import ConfigurationError
from docbinder.domain.links import LinkClaims, LinkKeys, LinkRefusal, LinkRefused, verify_link
from docbinder.domain.mime import served_content_type
from docbinder.domain.model import FileItem, Principal
from docbinder.ports.blobs import BlobReader, BlobStore, InliningBlobStore, PresigningBlobStore
from docbinder.ports.links import LinkLedger, UnitLinkLedger
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.ports.system import Clock


@attrs.frozen
class RedeemedLink:
    """A link that passed every check: its claims, the FileItem as it is now, and its bytes.

    With a ``disposition`` asked for, either ``presigned_url`` (a blob store that
    presigns: a URL the client fetches the bytes from) or ``reader`` (the bytes;
    close it) is set; without, neither.
    """

    claims: LinkClaims
    file: FileItem
    presigned_url: str | None = None
    reader: BlobReader | None = None


class RedeemLink:
    """Check a link token and give the file it names (no credentials needed).

    Checks, in order, each refusal a :class:`LinkRefused` with its reason: the
    signature and key (``tampered``, ``unknown_key``), the expiry (``expired``),
    the audience (``wrong_audience``), revocation (``revoked``), that the file
    still exists in the link's scope (``deleted``), that the signer may still read
    it (``signer_cannot_read``), that its content is the version linked
    (``changed``), and last, for a one-time link, that it was not used
    (``used``; the redemption is recorded atomically, so only one of two
    concurrent redemptions passes). Every outcome is recorded
    (:meth:`~docbinder.application.steps.link_events.LinkEvents.record`).
    """

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        access: AccessPolicy,
        blobs: BlobStore,
        ledger: LinkLedger,
        clock: Clock,
        keys: LinkKeys | None,
        gate: UnitOfWorkGate | None = None,
        events: LinkEvents | None = None,
    ) -> None:
        self._gate = gate
        self._events = events if events is not None else LinkEvents()
        self._uow = uow_factory
        self._access = access
        self._blobs = blobs
        # Decided once: an isinstance check against a runtime protocol walks its members.
        self._presigner = blobs if isinstance(blobs, PresigningBlobStore) else None
        self._inliner = blobs if isinstance(blobs, InliningBlobStore) else None
        self._ledger = self.ledger = ledger
        self._in_unit = ledger if isinstance(ledger, UnitLinkLedger) else None
        self._clock = clock
        self.keys = keys

    def __call__(
        self,
        token: str,
        *,
        audience: str | None = None,
        disposition: Callable[[FileItem], str] | None = None,
        chunk_size: int = 1 << 20,
        signer_known: Callable[[Principal], bool | None] | None = None,
        span: Span | None = None,
        spend: bool | Callable[[FileItem], bool] = True,
    ) -> RedeemedLink:
        """The link's file if ``token`` passes every check; :class:`LinkRefused` otherwise.

        ``audience`` is the audience the redeemer states; a link minted for an
        audience needs the same one. With ``disposition`` (the file ->
        a ``Content-Disposition`` value) the answer also delivers the bytes: a
        presigned URL of the blob store valid until the link expires, carrying
        that disposition, or else an open reader of ``chunk_size`` chunks
        (:class:`BlobMissing` when the blob is gone). ``signer_known`` is the
        redeemer's word on whether the signer still exists (a token file that no
        longer lists them answers ``False``: refused ``signer_cannot_read``;
        ``None``: cannot tell). ``span`` (the file -> ``(offset, length)`` or
        ``None``) names the bytes the reader gives, read with a ranged read
        (:class:`~docbinder.application.use_cases.open_file_item.OpenFileItem`).
        ``spend=False`` checks a one-time link without using it up (an HTTP ``HEAD``,
        which link previewers and mail scanners send before a person opens it); a
        callable decides from the FileItem once it is read (an HTTP answer that sends
        no bytes, ``304`` or ``416``, leaves the link unused:
        :func:`docbinder.integrations.http.content.sends_bytes`).
        :class:`ConfigurationError` when no key is
        configured; :class:`BinderClosed` after the binder's ``close()``.
        """
        if self._gate is not None:
            self._gate.require_open()
        if self.keys is None:
            raise ConfigurationError(NO_KEY_MESSAGE)
        claims: LinkClaims | None = None
        try:
            claims = verify_link(token, self.keys, now=self._clock.now())
            item = self._check(claims, audience, signer_known, spend)
        except LinkRefused as refused:
            seen = refused.claims or claims
            self._events.record(
                "redeem",
                refused.reason.value,
                link_id=seen.link_id if seen else None,
                file_id=seen.file_id if seen else None,
                user_id=seen.signer.user_id if seen else None,
                mandate_id=seen.mandate_id if seen else None,
                audience=seen.audience if seen else None,
            )
            raise
        self._events.record(
            "redeem",
            "ok",
            link_id=claims.link_id,
            file_id=item.id,
            user_id=claims.signer.user_id,
            mandate_id=claims.mandate_id,
            audience=claims.audience,
        )
        if disposition is None:
            return RedeemedLink(claims, item)
        presigned = self._presigned_url(claims, item, disposition)
        if presigned is not None:
            return RedeemedLink(claims, item, presigned_url=presigned)
        return RedeemedLink(claims, item, reader=open_span(self._blobs, item, span, chunk_size))

    def _check(
        self,
        claims: LinkClaims,
        audience: str | None,
        signer_known: Callable[[Principal], bool | None] | None,
        spend: bool | Callable[[FileItem], bool] = True,
    ) -> FileItem:
        if claims.audience is not None and audience != claims.audience:
            raise LinkRefused(LinkRefusal.WRONG_AUDIENCE, claims)
        in_unit = self._in_unit
        if in_unit is None and self._ledger.is_revoked(claims.link_id):
            raise LinkRefused(LinkRefusal.REVOKED, claims)
        with self._uow() as uow:
            # A ledger in the metadata database answers in the same transaction (ADR 0128).
            if in_unit is not None and in_unit.is_revoked_within(uow, claims.link_id):
                raise LinkRefused(LinkRefusal.REVOKED, claims)
            item = uow.files.get(claims.file_id)
            ended = None if item is None else expired_at(uow, item, self._clock.now())
        if (
            item is None
            or item.scope.mandate_id != claims.mandate_id
            or item.scope.feature_instance_id != claims.feature_instance_id
        ):
            raise LinkRefused(LinkRefusal.DELETED, claims)
        if not self._access.can_read_file(claims.signer, item) or (
            signer_known is not None and signer_known(claims.signer) is False
        ):
            raise LinkRefused(LinkRefusal.SIGNER_CANNOT_READ, claims)
        if item.sha256 != claims.sha256:
            raise LinkRefused(LinkRefusal.CHANGED, claims)
        if ended is not None:  # as the resolver and reads by id answer (B5)
            raise LinkRefused(LinkRefusal.FILE_EXPIRED, claims)
        if not claims.once or not (spend(item) if callable(spend) else spend):
            return item
        if not self._ledger.use_once(claims.link_id, claims.expires_at):
            raise LinkRefused(LinkRefusal.USED, claims)
        return item

    def _presigned_url(
        self, claims: LinkClaims, item: FileItem, disposition: Callable[[FileItem], str]
    ) -> str | None:
        """A presigned URL of the blob store for ``item`` (``None``: the store has none).

        Valid until the link expires (at least 1 second, at most 7 days).
        """
        presigner = self._presigner
        if presigner is None:
            return None
        if self._inliner is not None and self._inliner.is_inline(item.blob_key):
            return None  # kept in the metadata database: streamed (ADR 0110)
        remaining = int((claims.expires_at - self._clock.now()).total_seconds())
        return presigner.presigned_get(
            item.blob_key,
            expires_in=min(max(remaining, 1), 604800),
            file_name=item.file_name,
            mime_type=served_content_type(item.mime_type),
            disposition=disposition(item),  # asked for only when the store presigns
        )


class RevokeLink:
    """Revoke a link: its signer (or an admin of its mandate) stops it before it expires."""

    def __init__(
        self,
        ledger: LinkLedger,
        clock: Clock,
        keys: LinkKeys | None,
        access: AccessPolicy,
        gate: UnitOfWorkGate | None = None,
        events: LinkEvents | None = None,
    ) -> None:
        self._gate = gate
        self._events = events if events is not None else LinkEvents()
        self._ledger = ledger
        self._clock = clock
        self._access = access
        self.keys = keys

    def __call__(self, principal: Principal, token: str) -> LinkClaims:
        """Revoke the link ``token``; return its claims.

        ``principal`` must be the link's signer or hold the ``admin`` role in the
        link's mandate (else :class:`LinkRefused` ``tampered``: the same answer as
        a token that is no link, no oracle). An expired link needs no revocation
        and is refused ``expired``.
        """
        if self._gate is not None:
            self._gate.require_open()
        if self.keys is None:
            raise ConfigurationError(NO_KEY_MESSAGE)
        claims = verify_link(token, self.keys, now=self._clock.now())
        signer = claims.signer
        own = (signer.user_id, signer.mandate_id) == (principal.user_id, principal.mandate_id)
        admin = principal.mandate_id == claims.mandate_id and "admin" in principal.roles
        if not (own or admin):
            self._events.record(
                "revoke",
                "access_denied",
                link_id=claims.link_id,
                file_id=claims.file_id,
                user_id=principal.user_id,
                mandate_id=principal.mandate_id,
            )
            raise LinkRefused(LinkRefusal.TAMPERED)
        self._ledger.revoke(claims.link_id, claims.expires_at)
        self._events.record(
            "revoke",
            "ok",
            link_id=claims.link_id,
            file_id=claims.file_id,
            user_id=principal.user_id,
            mandate_id=principal.mandate_id,
        )
        return claims
