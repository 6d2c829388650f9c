"""The MCP server's HTTP face under uvicorn on a free port, for the attack tests.

:class:`LiveServer` serves :meth:`DocbinderMcpServer.http_app` with the same
uvicorn configuration ``run_http`` uses (:func:`docbinder.integrations.httpguard.server_config`),
in a thread of the test process; the limits come in scaled down through
:class:`HttpLimits` so that an attack takes seconds.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from docbinder.integrations.httpguard import HttpLimits, server_config
from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer

LEGACY_VERSION = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


class LiveServer:
    """``server``'s HTTP app bound to ``host`` on a free port, served from a thread."""

    def __init__(
        self,
        server: DocbinderMcpServer,
        *,
        host: str = "127.0.0.1",
        connect: str | None = None,
        tokens: BearerTokens | None = None,
        limits: HttpLimits | None = None,
    ) -> None:
        self.limits = limits or HttpLimits()
        self.connect = connect or host
        self.port = free_port(self.connect)
        self.url = f"http://{url_host(self.connect)}:{self.port}/mcp"
        app = server.http_app(host=host, port=self.port, tokens=tokens, limits=self.limits)
        self.config = server_config(app, host=host, port=self.port, limits=self.limits)
        self.uvicorn = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.uvicorn.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=30)

    def socket(self) -> socket.socket:
        """A raw TCP connection to the server."""
        return socket.create_connection((self.connect, self.port), timeout=10)


@contextmanager
def live(server: DocbinderMcpServer, **options: Any) -> Iterator[LiveServer]:
    running = LiveServer(server, **options)
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def mcp_client(
    url: str, token: str | None = None, mode: str = "legacy"
) -> AsyncIterator[Client]:
    """The SDK's own ``Client`` over streamable HTTP, with a bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def closed_by_server(sock: socket.socket, wait: float) -> bytes | None:
    """What the server sent before closing ``sock`` within ``wait`` seconds; ``None`` if still open."""
    sock.settimeout(wait)
    received = b""
    deadline = time.monotonic() + wait
    try:
        while True:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = sock.recv(4096)
            if not chunk:
                return received
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return received
