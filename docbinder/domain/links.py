"""Signed, expiring links to one version of one FileItem (feature row B4).

A link is a token ``<payload>.<signature>``: ``payload`` is the URL-safe base64
(RFC 4648 section 5, no padding) of a compact JSON object, ``signature`` the
URL-safe base64 of HMAC-SHA256 (RFC 2104) over the payload text under the key the
payload names (``kid``), so keys rotate: a new key signs, the old ones still verify
until they are removed. The payload binds everything a redemption checks:

======  ==========================================================
field   meaning
======  ==========================================================
``v``   format version (1)
``kid`` key id
``id``  link id (random; what revocation and one-time use record)
``m``   mandate (tenant) of the file
``fi``  feature instance of the file, or ``null``
``f``   FileItem id
``h``   SHA-256 of the content the link was minted for (the version)
``u``   user id of the signer; ``r`` the signer's roles; ``sfi`` the
        signer's feature instance
``aud`` audience the link is for, or ``null`` (anyone holding it)
``exp`` expiry, whole seconds since the Unix epoch (UTC)
``once`` whether the link can be redeemed once only
======  ==========================================================

Nothing in here reads a clock, a file or the environment: the caller passes
``now`` and the keys.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hmac
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

from docbinder.domain.errors import ConfigurationError, InvalidInput
from docbinder.domain.model import Principal

FORMAT_VERSION: Final = 1
MIN_KEY_BYTES: Final = 32
"""Shortest HMAC key accepted (bytes): RFC 2104 section 3 asks for at least the hash length."""
MAX_TOKEN_CHARS: Final = 4096
"""Longest token read; anything longer is refused as tampered without decoding."""
MAX_EXPIRY_SECONDS: Final = 7 * 24 * 3600
"""Longest lifetime of a link by default (seconds): a week."""

_KEY_ID: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_DURATION: Final = re.compile(r"^\s*(\d{1,9})\s*([smhd]?)\s*$")
_UNITS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class LinkRefusal(enum.StrEnum):
    """Why a link is not redeemed; the value is what the refusal says (stable words)."""

    TAMPERED = "tampered"
    """The token is malformed or its signature does not match."""
    UNKNOWN_KEY = "unknown_key"
    """The key that signed it is no longer configured (rotated out)."""
    EXPIRED = "expired"
    REVOKED = "revoked"
    USED = "used"
    """A one-time link that was redeemed already."""
    DELETED = "deleted"
    """The file is gone (or was never readable by the signer: the same answer)."""
    CHANGED = "changed"
    """The file's content was replaced since the link was minted; mint a new one."""
    SIGNER_CANNOT_READ = "signer_cannot_read"
    """The signer may no longer read the file."""
    WRONG_AUDIENCE = "wrong_audience"
    FILE_EXPIRED = "file_expired"
    """The file passed its retention period (B5): its content is no longer served."""


REFUSAL_TEXT: Final = {
    LinkRefusal.TAMPERED: "the link is malformed or its signature does not match",
    LinkRefusal.UNKNOWN_KEY: "the key that signed the link is no longer configured",
    LinkRefusal.EXPIRED: "the link has expired; mint a new one from the docItem reference",
    LinkRefusal.REVOKED: "the link was revoked",
    LinkRefusal.USED: "the link could be used once and was used already",
    LinkRefusal.DELETED: "the file of the link no longer exists",
    LinkRefusal.CHANGED: "the file was changed since the link was minted; mint a new one",
    LinkRefusal.SIGNER_CANNOT_READ: "whoever minted the link may no longer read the file",
    LinkRefusal.WRONG_AUDIENCE: "the link is for another audience",
    LinkRefusal.FILE_EXPIRED: "the file passed its retention period and is no longer served",
}
"""One sentence per refusal, for the person holding the link."""


class LinkRefused(InvalidInput):
    """A link that is not redeemed; :attr:`reason` says why (a :class:`LinkRefusal`)."""

    def __init__(self, reason: LinkRefusal, claims: LinkClaims | None = None) -> None:
        super().__init__(f"link refused ({reason.value}): {REFUSAL_TEXT[reason]}")
        self.reason = reason
        self.claims = claims


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")
_JSON = json.JSONDecoder()


def _unb64(text: str) -> bytes:
    """The bytes of unpadded base64url ``text`` (RFC 4648 §5); :class:`ValueError` for anything else.

    Only ``A-Z a-z 0-9 - _`` are accepted: ``+``, ``/`` and ``=`` are refused here,
    every other character by ``binascii``'s strict mode after ``-_`` became
    ``+/`` (a redemption decodes two of these).
    """
    if not text or not text.isascii() or "+" in text or "/" in text or "=" in text:
        raise ValueError("not base64url")
    padded = (text + "=" * (-len(text) % 4)).encode("ascii").translate(_FROM_URLSAFE)
    return binascii.a2b_base64(padded, strict_mode=True)


@attrs.frozen
class LinkKeys:
    """The HMAC keys links are signed and verified with: key id -> secret bytes.

    ``current`` is the key id new links are signed with; every key verifies. Key
    ids are 1 to 64 of ``A-Z a-z 0-9 . _ -``; secrets at least
    :data:`MIN_KEY_BYTES` bytes. :class:`ConfigurationError` (naming the settings
    ``link_keys`` / ``link_keys_file``) otherwise.
    """

    keys: Mapping[str, bytes]
    current: str
    _macs: dict[str, Any] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.keys:
            raise ConfigurationError("link_keys: no key given")
        for kid, secret in self.keys.items():
            if not _KEY_ID.match(kid):
                raise ConfigurationError(
                    f"link_keys: key id {kid!r} must be 1 to 64 of A-Z a-z 0-9 . _ -"
                )
            if len(secret) < MIN_KEY_BYTES:
                raise ConfigurationError(
                    f"link_keys: key {kid!r} has {len(secret)} bytes, at least "
                    f"{MIN_KEY_BYTES} are needed (e.g. `openssl rand -base64 32`)"
                )
        if self.current not in self.keys:
            raise ConfigurationError(f"link_keys: the signing key {self.current!r} is not listed")
        for kid, secret in self.keys.items():
            # Keyed once: each MAC copies the state after the key (RFC 2104's inner and outer pads).
            self._macs[kid] = hmac.new(secret, digestmod="sha256")

    @classmethod
    def parse(cls, text: str) -> LinkKeys:
        """Keys from ``"kid:base64secret[,kid:base64secret...]"``; the first one signs.

        The secret is standard or URL-safe base64 (RFC 4648) of at least
        :data:`MIN_KEY_BYTES` bytes. Lines and commas both separate entries; ``#``
        starts a comment line (the form of a keys file).
        """
        entries = [
            e.strip()
            for line in text.splitlines()
            if not line.strip().startswith("#")
            for e in line.split(",")
            if e.strip()
        ]
        keys: dict[str, bytes] = {}
        for entry in entries:
            kid, sep, secret = entry.partition(":")
            kid, secret = kid.strip(), secret.strip()
            if not sep or not kid or not secret:
                raise ConfigurationError(
                    "link_keys: each entry must look like KEY_ID:BASE64_SECRET"
                )
            try:
                raw = base64.b64decode(
                    secret.replace("-", "+").replace("_", "/") + "=" * (-len(secret) % 4),
                    validate=True,
                )
            except (binascii.Error, ValueError):
                raise ConfigurationError(
                    f"link_keys: the secret of key {kid!r} is not base64"
                ) from None
            if kid in keys:
                raise ConfigurationError(f"link_keys: key id {kid!r} is listed twice")
            keys[kid] = raw
        if not keys:
            raise ConfigurationError("link_keys: no key given")
        return cls(keys, next(iter(keys)))

    def mac(self, kid: str, payload: str) -> bytes:
        """HMAC-SHA256 (RFC 2104) of ``payload`` under key ``kid`` (:class:`KeyError` for an unknown id)."""
        keyed = self._macs[kid].copy()
        keyed.update(payload.encode("ascii"))
        digest: bytes = keyed.digest()
        return digest


@attrs.frozen
class LinkClaims:
    """What a link binds (see the module for the wire names).

    ``expires_at`` is UTC, whole seconds. ``signer`` is the principal that minted
    the link; redemption re-checks that this principal may still read the file.
    """

    link_id: str
    key_id: str
    mandate_id: str
    feature_instance_id: str | None
    file_id: str
    sha256: str
    signer: Principal
    audience: str | None
    expires_at: datetime
    once: bool = False

    def payload(self) -> dict[str, Any]:
        """The JSON object signed (compact keys)."""
        return {
            "v": FORMAT_VERSION,
            "kid": self.key_id,
            "id": self.link_id,
            "m": self.mandate_id,
            "fi": self.feature_instance_id,
            "f": self.file_id,
            "h": self.sha256,
            "u": self.signer.user_id,
            "sm": self.signer.mandate_id,
            "sfi": self.signer.feature_instance_id,
            "r": list(self.signer.roles),
            "aud": self.audience,
            "exp": int(self.expires_at.timestamp()),
            "once": self.once,
        }

    @classmethod
    def from_payload(cls, data: Any) -> LinkClaims:
        """The claims of a decoded payload; :class:`ValueError` if any field is off."""
        if not isinstance(data, dict) or data.get("v") != FORMAT_VERSION:
            raise ValueError("unknown link format")
        exp = data["exp"]
        if not isinstance(exp, int) or isinstance(exp, bool):
            raise ValueError("bad expiry")
        roles = data["r"]
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise ValueError("bad roles")
        for name in ("kid", "id", "m", "f", "h", "u", "sm"):
            if not isinstance(data[name], str):
                raise ValueError(f"bad {name}")
        for name in ("fi", "sfi", "aud"):
            if data[name] is not None and not isinstance(data[name], str):
                raise ValueError(f"bad {name}")
        if not isinstance(data["once"], bool):
            raise ValueError("bad once")
        return cls(
            link_id=data["id"],
            key_id=data["kid"],
            mandate_id=data["m"],
            feature_instance_id=data["fi"],
            file_id=data["f"],
            sha256=data["h"],
            signer=Principal(data["u"], data["sm"], data["sfi"], roles=tuple(roles)),
            audience=data["aud"],
            expires_at=datetime.fromtimestamp(exp, UTC),
            once=data["once"],
        )


def sign_link(claims: LinkClaims, keys: LinkKeys) -> str:
    """The token of ``claims`` signed with ``claims.key_id`` of ``keys``."""
    payload = _b64(
        json.dumps(claims.payload(), separators=(",", ":"), sort_keys=True).encode("utf-8")
    )
    return f"{payload}.{_b64(keys.mac(claims.key_id, payload))}"


def verify_link(token: str, keys: LinkKeys, *, now: datetime) -> LinkClaims:
    """The claims of a genuine, unexpired ``token``.

    Checks, in order: the shape (at most :data:`MAX_TOKEN_CHARS`), the key id, the
    HMAC (constant-time comparison), then the expiry against ``now``. Raises
    :class:`LinkRefused` with ``TAMPERED``, ``UNKNOWN_KEY`` or ``EXPIRED`` (the
    claims are attached for an expired link, for the log).
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        raise LinkRefused(LinkRefusal.TAMPERED)
    payload, signature = token.split(".")
    try:
        text = _unb64(payload).decode("utf-8")
        data, end = _JSON.raw_decode(text)  # the payload is one JSON value, nothing around it
        if end != len(text):
            raise ValueError("trailing data")
        mac = _unb64(signature)
        kid = data["kid"] if isinstance(data, dict) else None
    except (ValueError, KeyError, UnicodeDecodeError):
        raise LinkRefused(LinkRefusal.TAMPERED) from None
    if not isinstance(kid, str):
        raise LinkRefused(LinkRefusal.TAMPERED)
    if kid not in keys.keys:
        raise LinkRefused(LinkRefusal.UNKNOWN_KEY)
    if not hmac.compare_digest(mac, keys.mac(kid, payload)):
        raise LinkRefused(LinkRefusal.TAMPERED)
    try:
        claims = LinkClaims.from_payload(data)
    except (ValueError, KeyError, TypeError, InvalidInput):
        raise LinkRefused(LinkRefusal.TAMPERED) from None
    if claims.expires_at <= now:
        raise LinkRefused(LinkRefusal.EXPIRED, claims)
    return claims


def parse_duration(value: object, *, maximum: int = MAX_EXPIRY_SECONDS) -> timedelta:
    """A lifetime from seconds (a number) or text like ``"90"``, ``"90s"``, ``"10m"``, ``"2h"``, ``"1d"``.

    Must be from 1 second to ``maximum`` seconds; :class:`InvalidInput` otherwise.
    """
    if isinstance(value, bool):
        raise InvalidInput("a link's lifetime must be a number of seconds or text like 10m")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(int(match.group(1)) * _UNITS[match.group(2)])
    else:
        raise InvalidInput(
            f"a link's lifetime must be seconds or text like 90s, 10m, 2h, 1d, got {value!r}"
        )
    if not 1 <= seconds <= maximum:
        raise InvalidInput(
            f"a link's lifetime must be from 1 second to {maximum} seconds, got {value!r}"
        )
    return timedelta(seconds=int(seconds))
