"""The protections every HTTP face of docbinder runs behind (``docbinder mcp`` over HTTP today).

- :class:`HttpLimits`: the ``http_*`` settings (connections, timeouts, sessions per
  principal, extra host names), with their defaults;
- :class:`HostGuard` and :class:`AllowedHosts`: ``Host`` and ``Origin`` checks
  against DNS rebinding for whatever address the face binds;
- :func:`serve` and :func:`server_config`: uvicorn with a connection limit and
  header and body read timeouts (:mod:`docbinder.integrations.httpguard.connections`,
  which needs ``uvicorn``, imported on first use).

A face builds its ASGI app, wraps it in :class:`HostGuard`, keeps its own
per-principal limits with :attr:`HttpLimits.sessions_per_principal`, and serves
it with :func:`serve`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from docbinder.integrations.httpguard.hosts import (
    AllowedHosts,
    HostGuard,
    is_loopback,
    normalize_host,
    split_host_port,
)
from docbinder.integrations.httpguard.limits import DESCRIPTOR_RESERVE, HttpLimits

if TYPE_CHECKING:
    import socket

    import uvicorn

__all__ = [
    "DESCRIPTOR_RESERVE",
    "AllowedHosts",
    "HostGuard",
    "HttpLimits",
    "is_loopback",
    "listen",
    "normalize_host",
    "serve",
    "serve_workers",
    "server_config",
    "split_host_port",
]


def server_config(
    app: Any, *, host: str, port: int, limits: HttpLimits, log_level: str = "warning"
) -> uvicorn.Config:
    """uvicorn's configuration for ``app`` under ``limits`` (see :mod:`.connections`)."""
    from docbinder.integrations.httpguard import connections

    return connections.server_config(app, host=host, port=port, limits=limits, log_level=log_level)


def listen(host: str, port: int, limits: HttpLimits) -> socket.socket:
    """The socket bound to ``host:port`` that :func:`serve` serves on (see :mod:`.connections`).

    Raises :class:`~docbinder.domain.errors.ConfigurationError` when the address is
    in use or not this machine's, or the process may not open the file
    descriptors ``limits`` need.
    """
    from docbinder.integrations.httpguard import connections

    return connections.listen(host, port, limits)


def serve_workers(
    make_app: Callable[[], Any],
    *,
    host: str,
    port: int,
    limits: HttpLimits,
    workers: int,
    sock: socket.socket | None = None,
) -> int:
    """Serve ``make_app()`` from ``workers`` forked processes on one socket (see :mod:`.connections`)."""
    from docbinder.integrations.httpguard import connections

    return connections.serve_workers(
        make_app, host=host, port=port, limits=limits, workers=workers, sock=sock
    )


def serve(
    app: Any, *, host: str, port: int, limits: HttpLimits, sock: socket.socket | None = None
) -> None:
    """Serve ``app`` on ``sock`` (default: :func:`listen`) under ``limits`` until interrupted (see :mod:`.connections`).

    Raises :class:`~docbinder.domain.errors.ConfigurationError` as :func:`listen`.
    """
    from docbinder.integrations.httpguard import connections

    connections.serve(app, host=host, port=port, limits=limits, sock=sock)
