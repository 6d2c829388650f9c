"""Signing in to the inspector pages: a one-time sign-in link exchanged for an HttpOnly cookie.

As in Jupyter: the server (or an authenticated API call) hands out a URL
``/ui/signin/<code>``; opening it once sets the cookie ``docbinder_ui`` and
redirects to a URL without the code, so no long-lived credential stays in a
browser history or a proxy's log. Both the code and the cookie are HMAC-signed
with the link keys (``link_keys`` / ``link_keys_file``), so every process of a
deployment accepts what another one issued; a code is used once (the link
ledger records it). The cookie is ``HttpOnly``, ``SameSite=Strict``, ``Path=/ui``,
``Secure`` behind ``https``, and expires after :data:`SESSION_SECONDS`.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from datetime import datetime, timedelta
from typing import Any, Final

from docbinder.domain.errors import InvalidInput
from docbinder.domain.links import LinkKeys
from docbinder.domain.model import Principal

COOKIE: Final = "docbinder_ui"
SIGNIN_SECONDS: Final = 300
"""How long a sign-in link may wait to be opened."""
SESSION_SECONDS: Final = 8 * 3600
"""How long a browser stays signed in."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue(
    keys: LinkKeys, kind: str, principal: Principal, now: datetime, seconds: int
) -> tuple[str, str, datetime]:
    """A signed ``(token, id, expiry)`` of ``kind`` (``signin`` or ``session``) for ``principal``."""
    expires = now + timedelta(seconds=seconds)
    token_id = secrets.token_hex(16)
    body = {
        "k": kind,
        "id": token_id,
        "kid": keys.current,
        "u": principal.user_id,
        "m": principal.mandate_id,
        "fi": principal.feature_instance_id,
        "r": list(principal.roles),
        "exp": int(expires.timestamp()),
    }
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    return f"{payload}.{_b64(keys.mac(keys.current, 'ui:' + payload))}", token_id, expires


def read(keys: LinkKeys, kind: str, token: str, now: datetime) -> tuple[Principal, str, datetime]:
    """``(principal, id, expiry)`` of a genuine, unexpired token of ``kind``; :class:`InvalidInput` otherwise."""
    try:
        payload, signature = token.split(".")
        body: Any = json.loads(_unb64(payload))
        kid = body["kid"]
        good = kid in keys.keys and hmac.compare_digest(
            _unb64(signature), keys.mac(kid, "ui:" + payload)
        )
        if not good or body["k"] != kind:
            raise ValueError("bad signature")
        expires = datetime.fromtimestamp(int(body["exp"]), now.tzinfo)
        if expires <= now:
            raise ValueError("expired")
        principal = Principal(body["u"], body["m"], body["fi"], roles=tuple(body["r"]))
    except (ValueError, KeyError, TypeError, InvalidInput):
        raise InvalidInput("this sign-in is not valid (expired, used or altered)") from None
    return principal, str(body["id"]), expires
