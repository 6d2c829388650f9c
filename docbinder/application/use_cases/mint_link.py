"""Mint a signed, expiring link to a file: :class:`MintLink` (feature row B4)."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from docbinder.application.context import RunContext
from docbinder.application.steps.closing import UnitOfWorkGate
from docbinder.application.steps.expiry import ExpiryGate
from docbinder.application.steps.link_events import LinkEvents
from docbinder.application.use_cases.get_file import GetFile
from docbinder.application.use_cases.resolve_document_list import ResolveDocumentList
from docbinder.domain.errors import (
    ConfigurationError,
    FileItemNotFound,
    InvalidInput,
)
from docbinder.domain.links import (
    MAX_EXPIRY_SECONDS,
    LinkClaims,
    LinkKeys,
    parse_duration,
    sign_link,
)
from docbinder.domain.model import FileItem
from docbinder.ports.system import Clock, IdFactory

LINK_PATH = "/v1/links/"
"""Where a link is redeemed, below the service's base URL: ``<base>/v1/links/<token>``."""

NO_KEY_MESSAGE = (
    "signed links need a key: set link_keys (KEY_ID:BASE64_SECRET, e.g. from "
    "`openssl rand -base64 32`) or link_keys_file (DOCBINDER_LINK_KEYS / "
    "DOCBINDER_LINK_KEYS_FILE); docbinder never makes one up"
)
NO_BASE_URL_MESSAGE = (
    "a link's URL needs the service's address: set public_url (DOCBINDER_PUBLIC_URL, "
    "e.g. http://127.0.0.1:8080) to where `docbinder serve` is reached"
)
MAX_AUDIENCE_CHARS = 200
TOOL_LINK_SECONDS = 3600
"""Lifetime of the link on a tool result's ``download:`` line (seconds)."""


@attrs.frozen
class MintedLink:
    """A minted link: the ``url`` to hand out, its ``token``, expiry (UTC) and the file."""

    url: str
    token: str
    expires_at: datetime
    link_id: str
    file: FileItem
    audience: str | None = None
    once: bool = False


class MintLink:
    """Sign a link to one version of a file the run's principal may read.

    ``keys`` are the HMAC keys (``None``: links are refused with a
    :class:`ConfigurationError` naming the settings); ``base_url`` the public
    address of ``docbinder serve`` (``public_url``), used when the caller gives none.
    """

    def __init__(
        self,
        get_file: GetFile,
        resolve: ResolveDocumentList,
        clock: Clock,
        ids: IdFactory,
        keys: LinkKeys | None,
        base_url: str | None = None,
        max_expiry: int = MAX_EXPIRY_SECONDS,
        gate: UnitOfWorkGate | None = None,
        events: LinkEvents | None = None,
        expiry: ExpiryGate | None = None,
    ) -> None:
        self._gate = gate
        self._events = events if events is not None else LinkEvents()
        self._expiry = expiry
        self._get_file = get_file
        self._resolve = resolve
        self._clock = clock
        self._ids = ids
        self.keys = keys
        self.base_url = base_url
        self.max_expiry = max_expiry

    def __call__(
        self,
        ctx: RunContext,
        reference_or_file_id: str,
        *,
        expires_in: object,
        audience: str | None = None,
        once: bool = False,
        base_url: str | None = None,
    ) -> MintedLink:
        """A link to the file ``reference_or_file_id`` names, valid for ``expires_in``.

        ``reference_or_file_id`` is a FileItem id or a reference the run's
        workflow resolves to exactly one document (``docItem:<id>``, a
        ``file:<id>``, a ``docList:<label>`` of one document). ``expires_in`` is
        seconds or text like ``10m`` (:func:`~docbinder.domain.links.parse_duration`,
        at most ``max_expiry`` seconds). Raises :class:`ConfigurationError` (no
        key, no base URL), :class:`InvalidInput` (bad lifetime, audience, or a
        reference naming several documents), :class:`FileItemNotFound` (absent or
        not readable: the same answer).
        """
        if self._gate is not None:
            self._gate.require_open()
        if self.keys is None:
            raise ConfigurationError(NO_KEY_MESSAGE)
        base = (base_url or self.base_url or "").rstrip("/")
        if not base:
            raise ConfigurationError(NO_BASE_URL_MESSAGE)
        lifetime: timedelta = parse_duration(expires_in, maximum=self.max_expiry)
        if audience is not None and (
            not isinstance(audience, str)
            or not audience.strip()
            or len(audience) > MAX_AUDIENCE_CHARS
            or not audience.isprintable()
        ):
            raise InvalidInput(f"audience must be 1 to {MAX_AUDIENCE_CHARS} printable characters")
        if not isinstance(once, bool):
            raise InvalidInput("once must be true or false")
        principal = ctx.principal
        try:
            item = self._file(ctx, reference_or_file_id)
            if self._expiry is not None:
                self._expiry.refuse(item)  # no link to content that is no longer served (B5)
        except FileItemNotFound:
            self._events.record(
                "mint",
                "not_found",
                link_id=None,
                file_id=str(reference_or_file_id)[:200],
                user_id=principal.user_id,
                mandate_id=principal.mandate_id,
            )
            raise
        now = self._clock.now().replace(microsecond=0)
        claims = LinkClaims(
            link_id=self._ids.new_id(),
            key_id=self.keys.current,
            mandate_id=item.scope.mandate_id,
            feature_instance_id=item.scope.feature_instance_id,
            file_id=item.id,
            sha256=item.sha256,
            signer=principal,
            audience=audience,
            expires_at=now + lifetime,
            once=once,
        )
        token = sign_link(claims, self.keys)
        self._events.record(
            "mint",
            "ok",
            link_id=claims.link_id,
            file_id=item.id,
            user_id=principal.user_id,
            mandate_id=principal.mandate_id,
            audience=audience,
        )
        return MintedLink(
            url=f"{base}{LINK_PATH}{token}",
            token=token,
            expires_at=claims.expires_at,
            link_id=claims.link_id,
            file=item,
            audience=audience,
            once=once,
        )

    def _file(self, ctx: RunContext, reference: str) -> FileItem:
        """The readable FileItem a file id or a workflow reference names."""
        if not isinstance(reference, str) or not reference.strip():
            raise InvalidInput("give a file id or a docItem: reference")
        text = reference.strip()
        if ":" not in text:
            try:
                return self._get_file(ctx.principal, text)
            except (FileItemNotFound, InvalidInput):
                if ctx.bound_workflow is None:
                    raise FileItemNotFound(f"file {text} not found") from None
        if ctx.bound_workflow is None:
            raise FileItemNotFound(f"{text} names no file (no workflow is bound to resolve it in)")
        resolution = self._resolve(ctx, text)
        files = {d.file.id: d.file for d in resolution.documents}
        if not files:
            raise FileItemNotFound(f"{text} names no file in the workflow")
        if len(files) > 1:
            raise InvalidInput(f"{text} names {len(files)} files; link one docItem: at a time")
        return next(iter(files.values()))
