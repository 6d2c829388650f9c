"""Who an HTTP request acts as: a fixed identity on loopback, bearer tokens, or OIDC JWTs.

- :class:`FixedIdentity`: every request is the one principal of the command
  (``--user``/``--mandate``...), as for ``docbinder mcp`` on loopback; refused on
  any other address (:func:`check_bind`).
- :class:`TokenIdentity`: ``Authorization: Bearer <token>`` looked up in the token
  file of ``docbinder mcp --tokens`` (hashes only, owner-only file).
- :class:`OidcIdentity`: ``Authorization: Bearer <JWT>`` verified with PyJWT
  against the issuer's keys (a JWKS file, or a JWKS URL fetched and cached by
  ``jwt.PyJWKClient``): signature, ``iss``, ``exp`` (and ``nbf``, ``iat``), ``aud``
  when ``oidc_audience`` is set, algorithms from ``oidc_algorithms`` only. The
  claims named by ``oidc_user_claim``, ``oidc_mandate_claim``,
  ``oidc_feature_instance_claim`` and ``oidc_roles_claim`` make the principal.
  Each principal signed in is vouched for in the link ledger until its token's
  ``exp``, so a link it signed is re-checked at redemption against its latest
  sign-in (:meth:`OidcIdentity.known`).

Nothing a request sends besides its credential can name a principal.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError, InvalidInput
from docbinder.domain.model import Principal
from docbinder.integrations.httpguard import is_loopback
from docbinder.ports.links import LinkLedger

log = logging.getLogger(__name__)

VOUCH_AGAIN_AFTER = 30.0
"""Seconds a process lets pass before it writes the same sign-in's voucher again."""


class Identity(Protocol):
    """Maps a request's ``Authorization`` header to its principal (``None``: answer 401)."""

    requires_credentials: bool
    description: str

    async def principal(self, authorization: str | None) -> Principal | None:
        """The principal of the header value, or ``None``."""

    def known(self, principal: Principal) -> bool | None:
        """Whether ``principal`` can still sign in (``None``: this identity cannot tell)."""


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value (RFC 6750), else ``None``."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 16384:
        return None
    return token


class FixedIdentity:
    """Every request acts as ``principal`` (loopback only)."""

    requires_credentials = False

    def __init__(self, principal: Principal) -> None:
        self.fixed = principal
        self.description = f"user {principal.user_id} of mandate {principal.mandate_id}"

    async def principal(self, authorization: str | None) -> Principal | None:
        """Always the fixed principal."""
        return self.fixed

    def known(self, principal: Principal) -> bool | None:
        """Cannot tell: any identity of the command line may have minted a link."""
        return None


class TokenIdentity:
    """Bearer tokens of a token file (:class:`docbinder.integrations.mcp.BearerTokens`)."""

    requires_credentials = True
    description = "bearer-token principals"

    def __init__(self, tokens: Any) -> None:
        self.tokens = tokens

    async def principal(self, authorization: str | None) -> Principal | None:
        """The token's principal, or ``None`` for a missing or unknown token."""
        token = bearer(authorization)
        if token is None:
            return None
        access = await self.tokens.verify_token(token)
        if access is None:
            return None
        principal: Principal | None = self.tokens.principal_for(access)
        return principal

    def known(self, principal: Principal) -> bool | None:
        """Whether the token file still lists ``principal``."""
        return principal in self.tokens.principals


class OidcIdentity:
    """JWT bearer tokens of one OIDC issuer, mapped to principals by the ``oidc_*`` settings."""

    requires_credentials = True

    def __init__(self, settings: Settings) -> None:
        import jwt

        if not settings.oidc_issuer:
            raise ConfigurationError("oidc_issuer is not set")
        if not settings.oidc_jwks:
            raise ConfigurationError(
                "oidc_issuer is set but oidc_jwks is not: give the issuer's JWKS file or URL"
            )
        self.settings = settings
        self.description = f"OIDC tokens of {settings.oidc_issuer}"
        self.ledger: LinkLedger | None = None
        self._vouched: dict[str, tuple[str, datetime, float]] = {}
        source = settings.oidc_jwks
        self._client: Any = None
        self._keys: Any = None
        if source.startswith(("https://", "http://")):
            self._client = jwt.PyJWKClient(source, cache_keys=True, lifespan=300, timeout=10)
        else:
            path = Path(source).expanduser()
            try:
                data = json.loads(path.read_text("utf-8"))
                self._keys = jwt.PyJWKSet.from_dict(data)
            except (OSError, ValueError, jwt.PyJWTError) as exc:
                raise ConfigurationError(f"oidc_jwks: cannot read the JWKS {path}: {exc}") from None

    def _key(self, token: str) -> Any:
        import jwt

        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token).key
        kid = jwt.get_unverified_header(token).get("kid")
        for key in self._keys.keys:
            if kid is None or key.key_id == kid:
                return key.key
        raise jwt.InvalidKeyError("no key of the JWKS has this token's kid")

    def use_ledger(self, ledger: LinkLedger) -> None:
        """Vouch for each signed-in principal in ``ledger`` (shared by every process), so that
        :meth:`known` can answer at a link's redemption."""
        self.ledger = ledger

    def _decode(self, token: str) -> Principal | None:
        found = self.verify(token)
        return None if found is None else found[0]

    def verify(self, token: str) -> tuple[Principal, dict[str, Any]] | None:
        """``(principal, claims)`` of a valid JWT (the principal vouched for), else ``None``.

        Blocking: fetching a JWKS URL may wait for the issuer.
        """
        claims = self._claims(token)
        if claims is None:
            return None
        principal = self.principal_of(claims)
        if principal is None:
            return None
        self._vouch(principal, claims)
        return principal, claims

    def _vouch(self, principal: Principal, claims: dict[str, Any]) -> None:
        """Record in the ledger that ``principal`` holds a token valid until its ``exp``.

        A token is presented many times: the same voucher is written again by this
        process only after :data:`VOUCH_AGAIN_AFTER` seconds (another process may have
        recorded other roles of the user meanwhile; then the latest sign-in wins again).
        """
        if self.ledger is None:
            return
        until = datetime.fromtimestamp(int(claims["exp"]), UTC) + timedelta(
            seconds=self.settings.oidc_signer_grace
        )
        holder, signer = self.signer_keys(principal)
        now = time.monotonic()
        last = self._vouched.get(holder)
        if last is not None and last[:2] == (signer, until) and now - last[2] < VOUCH_AGAIN_AFTER:
            return
        self.ledger.vouch(holder, signer, until)
        if len(self._vouched) >= 4096:
            self._vouched.clear()
        self._vouched[holder] = (signer, until, now)

    def signer_keys(self, principal: Principal) -> tuple[str, str]:
        """``(holder, signer)`` of ``principal`` in the ledger: SHA-256 hex digests (31, 32 digits).

        ``holder`` names the user of this issuer in one mandate and feature instance,
        ``signer`` that user's set of roles.
        """
        who = "\n".join(
            (
                str(self.settings.oidc_issuer),
                principal.user_id,
                principal.mandate_id,
                principal.feature_instance_id or "",
            )
        )
        roles = "\n".join(sorted(set(principal.roles)))
        return (
            hashlib.sha256(who.encode()).hexdigest()[:31],
            hashlib.sha256(roles.encode()).hexdigest()[:32],
        )

    def _claims(self, token: str) -> dict[str, Any] | None:
        import jwt

        s = self.settings
        try:
            claims = jwt.decode(
                token,
                self._key(token),
                algorithms=list(s.oidc_algorithms),
                issuer=s.oidc_issuer,
                audience=s.oidc_audience,
                options={
                    "require": ["exp", "iss"],
                    "verify_aud": s.oidc_audience is not None,
                },
                leeway=30,
            )
        except (jwt.PyJWTError, ValueError, KeyError) as exc:
            log.info("refused a JWT: %s", exc)
            return None
        if not isinstance(claims.get("exp"), int | float):
            return None
        found: dict[str, Any] = claims
        return found

    def principal_of(self, claims: dict[str, Any]) -> Principal | None:
        """The principal the settings map ``claims`` to; ``None`` without user or mandate."""
        s = self.settings
        user = claims.get(s.oidc_user_claim)
        mandate = claims.get(s.oidc_mandate_claim)
        feature = claims.get(s.oidc_feature_instance_claim)
        # No roles claim grants nothing: a mistyped claim name or a user without groups
        # must not become a member who may write.
        roles: Any = claims.get(s.oidc_roles_claim, [])
        if isinstance(roles, str):
            roles = roles.split()
        if not isinstance(user, str) or not isinstance(mandate, str):
            log.info("refused a JWT without the user or mandate claim")
            return None
        if feature is not None and not isinstance(feature, str):
            return None
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            return None
        try:
            return Principal(user, mandate, feature, roles=tuple(roles))
        except (InvalidInput, TypeError, ValueError):
            return None

    async def principal(self, authorization: str | None) -> Principal | None:
        """The principal of a valid JWT, else ``None`` (the key fetch runs in a thread)."""
        token = bearer(authorization)
        if token is None:
            return None
        return await anyio.to_thread.run_sync(self._decode, token)

    def known(self, principal: Principal) -> bool | None:
        """Whether ``principal`` (a link's signer) still holds a token of the issuer.

        The issuer lists nobody, so the answer is what the service saw: ``True`` while
        the latest token it verified for this user carried exactly these roles and has
        not expired (plus ``oidc_signer_grace`` seconds); ``False`` once the user signed
        in with other roles, or the token ran out without a new one (a user the issuer
        removed gets none). ``None`` (cannot tell) without a ledger.
        """
        if self.ledger is None:
            return None
        until = self.ledger.vouched_until(*self.signer_keys(principal))
        return until is not None and until >= datetime.now(UTC)


class OidcTokens:
    """The MCP SDK's ``TokenVerifier`` over an :class:`OidcIdentity`: ``/mcp`` signs in as the API does.

    :meth:`verify_token` checks a JWT exactly as the HTTP API does (and vouches for the
    principal in the link ledger); the SDK's ``AccessToken`` carries the mapped
    principal in ``subject`` (JSON ``[user, mandate, feature instance, roles]``) and the
    token's ``exp`` in ``expires_at``, so the SDK's bearer middleware refuses it once
    expired. No principal is listed (:attr:`principals` is ``None``): the MCP endpoint
    starts a principal's session manager with its first request.
    """

    principals: tuple[Principal, ...] | None = None

    def __init__(self, identity: OidcIdentity) -> None:
        self.identity = identity

    async def verify_token(self, token: str) -> Any:
        """An ``AccessToken`` for a valid JWT of the issuer, else ``None``."""
        from mcp.server.auth.provider import AccessToken

        if not token or len(token) > 16384:
            return None
        found = await anyio.to_thread.run_sync(self.identity.verify, token)
        if found is None:
            return None
        principal, claims = found
        return AccessToken(
            token="",
            client_id=f"{principal.mandate_id}/{principal.user_id}",
            scopes=[],
            expires_at=int(claims["exp"]),
            subject=json.dumps(
                [
                    principal.user_id,
                    principal.mandate_id,
                    principal.feature_instance_id,
                    list(principal.roles),
                ]
            ),
        )

    def principal_for(self, access_token: Any) -> Principal | None:
        """The principal :meth:`verify_token` put in ``access_token``, else ``None``."""
        try:
            user, mandate, feature, roles = json.loads(access_token.subject or "")
            return Principal(user, mandate, feature, roles=tuple(roles))
        except (ValueError, TypeError, InvalidInput):
            return None


def check_bind(host: str, identity: Identity) -> None:
    """:class:`ConfigurationError` unless ``host`` is loopback or requests need credentials."""
    if not identity.requires_credentials and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve HTTP on non-loopback host {host!r} without authentication; "
            "pass --tokens FILE or set oidc_issuer and oidc_jwks, or bind to 127.0.0.1"
        )
