"""Bearer tokens for the MCP server over HTTP: a TOML file mapping token hashes to principals.

The file holds no token, only the SHA-256 of each (lowercase hex of the UTF-8
bytes, as ``printf %s "$TOKEN" | sha256sum`` prints it)::

    [[tokens]]
    sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    user = "alice"
    mandate = "acme"
    feature_instance = "support"   # optional
    roles = ["member"]             # optional, default ["member"]

A request's principal is the one its token maps to; nothing in the request
can name another. Whoever can write the file can make a token of their own act as
any principal, so the file is refused unless only its owner can write it and that
owner is the user running docbinder or root (the rule of OpenSSH's ``StrictModes``
for ``authorized_keys``): no group or other write bit, checked on the opened file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Protocol

from mcp.server.auth.provider import AccessToken

from docbinder.domain.errors import ConfigurationError, InvalidInput
from docbinder.domain.model import Principal

_HEX64: Final = re.compile(r"^[0-9a-f]{64}$")
_KEYS: Final = frozenset({"sha256", "user", "mandate", "feature_instance", "roles", "name"})


class PrincipalTokens(Protocol):
    """What the MCP endpoint needs of its credentials: the SDK's ``TokenVerifier`` plus principals.

    :class:`BearerTokens` (a token file) and
    :class:`docbinder.integrations.http.OidcTokens` (JWTs of an OIDC issuer) are both.
    """

    @property
    def principals(self) -> tuple[Principal, ...] | None:
        """Every principal a token can map to, or ``None`` when nobody is listed (OIDC)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's access token for a valid bearer token, else ``None``."""

    def principal_for(self, access_token: AccessToken) -> Principal | None:
        """The principal of an access token :meth:`verify_token` gave, else ``None``."""


def token_hash(token: str) -> str:
    """The SHA-256 of ``token`` (UTF-8) as 64 lowercase hex digits."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class BearerTokens:
    """The token verifier of the HTTP transport (the MCP SDK's ``TokenVerifier`` protocol).

    ``principals`` maps token hashes (see :func:`token_hash`) to principals.
    :meth:`verify_token` answers an :class:`AccessToken` whose ``subject`` is the
    token's hash, or ``None`` for an unknown token (the SDK then answers 401).
    """

    def __init__(self, principals: Mapping[str, Principal]) -> None:
        if not principals:
            raise ConfigurationError("the bearer token file lists no token")
        self._principals = dict(principals)

    @property
    def principals(self) -> tuple[Principal, ...]:
        """Every principal a token of this file acts as, each once, in file order."""
        return tuple(dict.fromkeys(self._principals.values()))

    @classmethod
    def load(cls, path: Path) -> BearerTokens:
        """Read a token file (see the module); :class:`ConfigurationError` names what is wrong.

        A file that its group or others may write, or that belongs to neither the
        current user nor root, is refused with one line naming the file and the fix;
        so is a file in a directory others may write without the sticky bit (they
        could replace the file), as OpenSSH's ``StrictModes`` refuses it.
        """
        try:
            with path.open("rb") as handle:
                _check_owner_only(path, os.fstat(handle.fileno()))
                _check_directory(path)
                text = handle.read().decode("utf-8")
            data = tomllib.loads(text)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the bearer token file {path}: {exc.strerror}"
            ) from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"the bearer token file {path} is not valid TOML: {exc}"
            ) from exc
        entries = data.get("tokens")
        if not isinstance(entries, list) or not entries:
            raise ConfigurationError(f"the bearer token file {path} has no [[tokens]] entries")
        principals: dict[str, Principal] = {}
        for number, entry in enumerate(entries, start=1):
            digest, principal = _entry(entry, f"{path}: token {number}")
            if digest in principals:
                raise ConfigurationError(f"{path}: token {number} repeats a token hash")
            principals[digest] = principal
        return cls(principals)

    def principal_for(self, access_token: AccessToken) -> Principal | None:
        """The principal of a token this verifier accepted, else ``None``."""
        subject = access_token.subject or ""
        return self._principals.get(subject)

    async def verify_token(self, token: str) -> AccessToken | None:
        """An :class:`AccessToken` for a known token, ``None`` otherwise."""
        digest = token_hash(token)
        for known, principal in self._principals.items():
            if hmac.compare_digest(known, digest):
                return AccessToken(
                    token="",
                    client_id=f"{principal.mandate_id}/{principal.user_id}",
                    scopes=[],
                    subject=known,
                )
        return None


def _check_owner_only(path: Path, info: os.stat_result) -> None:
    """:class:`ConfigurationError` unless only the owner (the current user or root) may write."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - Windows: no POSIX owner and mode to check
        return
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "anyone" if mode & stat.S_IWOTH else "its group"
        raise ConfigurationError(
            f"refusing the bearer token file {path}: {who} may write it (mode {mode:04o}); "
            f"run chmod 600 {path}"
        )
    user = getuid()
    if info.st_uid not in (user, 0):
        raise ConfigurationError(
            f"refusing the bearer token file {path}: it belongs to uid {info.st_uid}, not to "
            f"the user running docbinder (uid {user}); run chown {user} {path} && chmod 600 {path}"
        )


def _check_directory(path: Path) -> None:
    """:class:`ConfigurationError` if others may replace the file: its directory is writable
    by group or others and has no sticky bit (``/tmp`` has one: others cannot rename it)."""
    if getattr(os, "getuid", None) is None:  # pragma: no cover - Windows
        return
    directory = path.resolve().parent
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        who = "anyone" if mode & stat.S_IWOTH else "its group"
        raise ConfigurationError(
            f"refusing the bearer token file {path}: {who} may replace it, its directory "
            f"{directory} is writable (mode {mode:04o}) without the sticky bit; keep the file "
            f"in a directory only you may write (chmod go-w {directory})"
        )


def _entry(entry: Any, where: str) -> tuple[str, Principal]:
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where} must be a table")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigurationError(f"{where} has unknown keys: {', '.join(unknown)}")
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not _HEX64.match(digest.strip().lower()):
        raise ConfigurationError(f"{where}: sha256 must be 64 hex digits (the token's SHA-256)")
    roles = entry.get("roles", ["member"])
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise ConfigurationError(f"{where}: roles must be a list of strings")
    user, mandate = entry.get("user"), entry.get("mandate")
    if not isinstance(user, str) or not isinstance(mandate, str):
        raise ConfigurationError(f"{where}: user and mandate are required strings")
    try:
        principal = Principal(
            user,
            mandate,
            entry.get("feature_instance"),
            roles=tuple(roles),
        )
    except (InvalidInput, TypeError, ValueError) as exc:
        raise ConfigurationError(f"{where}: user and mandate must be valid ids ({exc})") from exc
    return digest.strip().lower(), principal
