"""Host and Origin checks against DNS rebinding, for whatever address an HTTP face binds.

A page of ``evil.example`` whose name the attacker re-points at 127.0.0.1 makes the
browser send ``Host: evil.example:<port>`` (and ``Origin: http://evil.example:<port>``)
to a server on loopback. Only a *name* can be re-pointed, never an address literal, so
a request is let through when both headers name this server (RFC 9110 section 7.2
for ``Host``, RFC 6454 for ``Origin``; the MCP transport specification asks servers
to check ``Origin``):

- bound to a loopback address or ``localhost``: ``localhost`` or any loopback address;
- bound to a wildcard address (``0.0.0.0``, ``::``): ``localhost`` or any address;
- bound to another address or a name: that address or name;
- always: the names of :attr:`HttpLimits.allowed_hosts`, on any port.

Names compare case-insensitively without a trailing dot, addresses by value
(``[0:0:0:0:0:0:0:1]`` is ``[::1]``); the port must be the bound one (no port means
80 for ``Host`` and ``http``, 443 for ``https`` origins). ``Origin`` may be absent
(clients that are not browsers); ``Origin: null`` is refused.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import Any, Final

import attrs

from docbinder.domain.errors import ConfigurationError

log = logging.getLogger(__name__)

_NAME: Final = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(host: str) -> Address | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def normalize_host(host: str) -> str | None:
    """``host`` in one spelling: an address as :mod:`ipaddress` prints it, a name lowercased.

    Brackets around an IPv6 address and one trailing dot of a name are dropped
    (``"[0:0:0:0:0:0:0:1]"`` -> ``"::1"``, ``"LOCALHOST."`` -> ``"localhost"``);
    ``None`` for anything that is neither an address nor a DNS name, and for names
    that only look like addresses (``127.000.0.1``, ``2130706433``).
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        address = _address(text[1:-1])
        return str(address) if isinstance(address, ipaddress.IPv6Address) else None
    address = _address(text)
    if address is not None:
        return str(address)
    name = text.lower().removesuffix(".")
    if not _NAME.match(name) or name.rpartition(".")[2].isdigit():
        return None  # a numeric last label makes an address for browsers (WHATWG URL), no name
    return name


def is_loopback(host: str) -> bool:
    """Whether ``host`` (any spelling :func:`normalize_host` reads) is ``localhost`` or a loopback address."""
    normal = normalize_host(host)
    if normal is None:
        return False
    if normal == "localhost":
        return True
    address = _address(normal)
    return address is not None and address.is_loopback


def split_host_port(value: str) -> tuple[str, int | None] | None:
    """``(normalised host, port or None)`` of a ``Host`` header value, ``None`` when malformed.

    IPv6 addresses must be bracketed (RFC 3986 section 3.2.2); a port is 1 to 65535.
    """
    text = value.strip()
    port_text: str | None = None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host, rest = text[: end + 1], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return None
            port_text = rest[1:]
    else:
        host, sep, port_text_or_empty = text.partition(":")
        if ":" in port_text_or_empty:
            return None  # an unbracketed IPv6 address
        port_text = port_text_or_empty if sep else None
    port: int | None = None
    if port_text is not None:
        if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
            return None
        port = int(port_text)
        if not 0 < port < 65536:
            return None
    normal = normalize_host(host)
    return None if normal is None else (normal, port)


@attrs.frozen
class AllowedHosts:
    """The ``Host`` and ``Origin`` values an HTTP face bound to one address accepts (see the module).

    Build it with :meth:`for_bind`.
    """

    port: int
    names: frozenset[str]
    """Normalised hosts accepted on :attr:`port`."""
    loopback: bool
    """Also ``localhost`` and every loopback address on :attr:`port`."""
    any_address: bool
    """Also ``localhost`` and every address literal on :attr:`port` (a wildcard bind)."""
    anywhere: frozenset[str]
    """Normalised hosts accepted on any port (``allowed_hosts``)."""

    @classmethod
    def for_bind(cls, host: str, port: int, extra: Iterable[str] = ()) -> AllowedHosts:
        """What a server bound to ``host:port`` accepts, plus the names in ``extra``.

        Raises :class:`ConfigurationError` naming ``http_allowed_hosts`` for an
        entry that is no host, and naming the host for an unusable bind address.
        """
        anywhere: set[str] = set()
        for entry in extra:
            parsed = split_host_port(entry)
            if parsed is None or parsed[1] is not None:
                raise ConfigurationError(
                    f"http_allowed_hosts: {entry!r} is no host name or address (give names "
                    "without scheme or port)"
                )
            anywhere.add(parsed[0])
        bound = host.strip()
        normal = "" if bound == "" else normalize_host(bound)
        if normal is None:
            raise ConfigurationError(f"cannot serve HTTP on host {host!r}: no address or name")
        address = _address(normal)
        if normal == "" or (address is not None and address.is_unspecified):
            return cls(port, frozenset(), False, True, frozenset(anywhere))
        return cls(port, frozenset({normal}), is_loopback(normal), False, frozenset(anywhere))

    def _accepts(self, host: str, port: int) -> bool:
        if host in self.anywhere:
            return True
        if port != self.port:
            return False
        if host in self.names:
            return True
        if self.loopback or self.any_address:
            if host == "localhost":
                return True
            address = _address(host)
            if address is not None and (self.any_address or address.is_loopback):
                return True
        return False

    def allows_host(self, value: str | None) -> bool:
        """Whether a ``Host`` header value names this server (``None``: the header is missing)."""
        parsed = None if value is None else split_host_port(value)
        return parsed is not None and self._accepts(parsed[0], parsed[1] or 80)

    def allows_origin(self, value: str | None) -> bool:
        """Whether an ``Origin`` header value is absent or an origin of this server."""
        if value is None:
            return True
        scheme, sep, rest = value.strip().partition("://")
        scheme = scheme.lower()
        if not sep or scheme not in _DEFAULT_PORTS or not rest or any(c in rest for c in "/@?#"):
            return False
        parsed = split_host_port(rest)
        return parsed is not None and self._accepts(parsed[0], parsed[1] or _DEFAULT_PORTS[scheme])


_MISDIRECTED: Final = b"misdirected request: the Host header names no address of this server\n"
_FORBIDDEN: Final = b"forbidden: the Origin header names no origin of this server\n"


class HostGuard:
    """ASGI middleware: ``421`` unless ``Host`` names this server, ``403`` unless ``Origin`` does.

    ``allowed`` says what is accepted (:class:`AllowedHosts`). HTTP and WebSocket
    requests are checked before anything else runs (authentication included);
    lifespan events pass. A refusal is logged as a warning naming
    ``http_allowed_hosts``; the answer itself is one fixed line.
    """

    def __init__(self, app: Any, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        hosts = 0
        for key, value in scope.get("headers", ()):
            if key == b"host":
                host, hosts = value.decode("latin-1"), hosts + 1
            elif key == b"origin":
                origin = value.decode("latin-1")
        if hosts != 1 or not self.allowed.allows_host(host):
            log.warning(
                "refused a request for Host %.100r (add the name to http_allowed_hosts if it "
                "names this server)",
                host,
            )
            await _refuse(scope, send, 421, _MISDIRECTED)
            return
        if not self.allowed.allows_origin(origin):
            log.warning(
                "refused a request from Origin %.100r (add its host to http_allowed_hosts if "
                "it is this server)",
                origin,
            )
            await _refuse(scope, send, 403, _FORBIDDEN)
            return
        await self.app(scope, receive, send)


async def _refuse(scope: Any, send: Any, status: int, body: bytes) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
