"""The limits every HTTP face of docbinder keeps: connections, timeouts, sessions, host names."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import attrs

from docbinder.domain.errors import ConfigurationError

if TYPE_CHECKING:
    from docbinder.config import Settings

DESCRIPTOR_RESERVE: Final = 64
"""File descriptors kept free beside the connections (database, blobs, logs, event loop)."""

MAX_BACKLOG: Final = 128
"""Largest listen backlog: also the most connections asyncio accepts in one go."""

_COUNTS: Final = frozenset({"max_connections", "sessions_per_principal"})
_SECONDS: Final = frozenset(
    {"header_timeout", "read_timeout", "keep_alive_timeout", "session_idle_timeout"}
)


def _tuple(hosts: Iterable[str]) -> tuple[str, ...]:
    return tuple(hosts)


@attrs.frozen
class HttpLimits:
    """What one HTTP face of docbinder allows; each field is the setting ``http_<field>``.

    - ``max_connections``: open client connections at once (512). At the limit a new
      connection closes the oldest one that is waiting for a request head (idle
      keep-alive or half sent), else it is answered ``503`` and closed.
    - ``header_timeout``: seconds a connection has to send a whole request head, from
      the moment the server waits for it (connection opened, previous response sent):
      10. Half-sent heads are answered ``408`` and closed.
    - ``read_timeout``: seconds of silence the server waits inside a request body
      before it answers ``408`` and closes (30).
    - ``keep_alive_timeout``: seconds an idle connection stays open between requests
      without a byte (5, uvicorn's ``timeout_keep_alive``).
    - ``sessions_per_principal``: legacy (``Mcp-Session-Id``) MCP sessions one
      principal may hold open (100); its next ``initialize`` is answered ``503``
      while no other principal is affected.
    - ``session_idle_timeout``: seconds without a request after which a session ends
      (1800, the MCP SDK's default).
    - ``allowed_hosts``: names the ``Host`` and ``Origin`` headers may give besides
      the bound address (for a reverse proxy or a wildcard bind), on any port.

    Counts and seconds must be positive (:class:`ConfigurationError` naming the
    setting otherwise).
    """

    max_connections: int = 512
    header_timeout: float = 10.0
    read_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    sessions_per_principal: int = 100
    session_idle_timeout: float = 1800.0
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=_tuple)

    def __attrs_post_init__(self) -> None:
        for name in _COUNTS | _SECONDS:
            value = getattr(self, name)
            kind = int if name in _COUNTS else int | float
            if (
                isinstance(value, bool)
                or not isinstance(value, kind)
                or not (math.isfinite(value) and value > 0)
            ):
                unit = "whole number" if name in _COUNTS else "number of seconds"
                raise ConfigurationError(f"http_{name} must be a positive {unit}, got {value!r}")
        if not all(isinstance(host, str) for host in self.allowed_hosts):
            raise ConfigurationError("http_allowed_hosts must be host names")

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpLimits:
        """The limits the ``http_*`` settings of ``settings`` give."""
        return cls(
            max_connections=settings.http_max_connections,
            header_timeout=settings.http_header_timeout,
            read_timeout=settings.http_read_timeout,
            keep_alive_timeout=settings.http_keep_alive_timeout,
            sessions_per_principal=settings.http_sessions_per_principal,
            session_idle_timeout=settings.http_session_idle_timeout,
            allowed_hosts=settings.http_allowed_hosts,
        )

    @property
    def backlog(self) -> int:
        """The listen backlog: ``max_connections``, at most :data:`MAX_BACKLOG`."""
        return min(self.max_connections, MAX_BACKLOG)

    @property
    def descriptors_needed(self) -> int:
        """File descriptors the process needs at most.

        The open connections, plus two backlogs of connections accepted but not yet
        closed (asyncio accepts up to ``backlog`` connections per readiness of the
        listening socket before any of them reaches the connection limit), plus
        :data:`DESCRIPTOR_RESERVE`.
        """
        return self.max_connections + 2 * self.backlog + DESCRIPTOR_RESERVE
