"""The MCP streamable-HTTP endpoint with legacy sessions counted per principal.

The MCP SDK's ``StreamableHTTPSessionManager`` keeps the sessions of the legacy
protocol (``initialize`` answered with an ``Mcp-Session-Id``) in one table with one
limit, ``max_sessions`` (10,000 by default): one principal opening sessions fills it,
and every other principal's ``initialize`` is answered ``503``. :class:`PrincipalSessions`
gives each principal its own manager, built and run through the SDK's public API,
with ``max_sessions`` set to :attr:`HttpLimits.sessions_per_principal`: at its limit a
principal's next ``initialize`` is answered ``503`` by the SDK while the sessions of
every other principal, and their room, stay as they are. Requests of the sessionless
protocol revision go through the same manager, which keeps nothing for them.

A session id belongs to the manager of the principal that opened it: presented
with another principal's token it is answered ``404 Session not found`` (the SDK
checks the credential inside one manager as well).

When the issuer lists nobody (OIDC), a principal's manager starts with its first
request and is retired once it has had no request in flight for
``session_idle_timeout`` seconds: by then the SDK has ended each of its sessions for
the same idleness, so nothing open is lost. Retiring happens when another principal's
manager starts, so a process holds the managers of recently active principals, at
most ``most_principals``; beyond that a new principal is answered ``503``.

A request of a legacy session is handled by the session's own task, not by the
HTTP request that carried it, so the SDK goes on with a ``tools/call`` whose client
closed the connection. :func:`client_gone` therefore marks each request's ASGI scope
with an event that is set when the ASGI server reports ``http.disconnect`` (the SDK's
event stream listens for it while the call runs); the tool handler watches it
(ADR 0070). With no event store configured, an answer whose connection closed can
never be delivered, so stopping the work loses nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final

import anyio
import anyio.abc
from mcp.server import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from docbinder.domain.model import Principal
from docbinder.integrations.httpguard import HttpLimits

log = logging.getLogger(__name__)

_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("ascii")
_UNKNOWN = b"unknown principal\n"
_FULL = b"too many principals have MCP sessions in this process; try again later\n"

CLIENT_GONE: Final = "docbinder.client_gone"
"""ASGI scope key of the :class:`anyio.Event` set when the request's client disconnects."""

MOST_PRINCIPALS = 10_000
"""Most principals with a session manager in one process when the issuer lists nobody (OIDC)."""


class PrincipalSessions:
    """ASGI app of the MCP endpoint: one SDK session manager per principal.

    ``server`` is the SDK's low-level server; ``principals`` every principal a
    request can act as (the token file's, or the one identity without tokens), or
    ``None`` when the issuer lists nobody (OIDC): then each principal's manager starts
    with its first request, up to ``most_principals`` of them;
    ``principal_of`` maps a request's ASGI scope to its principal (``None``: answered
    ``401``, which authentication in front of this app never lets happen).
    ``limits`` gives the sessions per principal and their idle timeout. Host and
    Origin are checked in front of this app (:class:`~docbinder.integrations.httpguard.HostGuard`),
    so the SDK's own DNS-rebinding check is off here.

    :meth:`run` must be entered (the ASGI app's lifespan) before requests come.
    """

    def __init__(
        self,
        server: Server[Any],
        principals: Iterable[Principal] | None,
        principal_of: Callable[[Any], Principal | None],
        limits: HttpLimits,
        *,
        most_principals: int = MOST_PRINCIPALS,
    ) -> None:
        self.limits = limits
        self._server = server
        self._principal_of = principal_of
        self._listed = principals is not None
        self._most = most_principals
        self._managers = {principal: self._manager() for principal in principals or ()}
        self._busy: dict[Principal, int] = {}
        self._last_used: dict[Principal, float] = {}
        self._stops: dict[Principal, anyio.Event] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._stopping: anyio.Event | None = None
        self._starting: anyio.Lock | None = None

    def _manager(self) -> StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(
            app=self._server,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_sessions=self.limits.sessions_per_principal,
            session_idle_timeout=self.limits.session_idle_timeout,
        )

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run every principal's session manager until the context ends (then all sessions end).

        With ``principals`` ``None`` (an issuer that lists nobody, OIDC) a principal's
        manager starts with its first request, inside this context.
        """
        stopping = self._stopping = anyio.Event()
        self._starting = anyio.Lock()
        async with AsyncExitStack() as stack:
            for manager in self._managers.values():
                await stack.enter_async_context(manager.run())
            async with anyio.create_task_group() as group:
                self._group = group
                try:
                    yield
                finally:
                    stopping.set()
                    for stop in self._stops.values():
                        stop.set()
                    self._group = None

    def _retire_idle(self) -> None:
        """Stop the managers of unlisted principals idle for ``session_idle_timeout`` seconds.

        Idle: no request in flight since then (a session's open event stream is a
        request in flight). Runs without yielding to the event loop, so no request
        can take a manager this retires.
        """
        if self._listed:
            return
        since = time.monotonic() - self.limits.session_idle_timeout
        for principal in [
            p for p, used in self._last_used.items() if used < since and not self._busy.get(p)
        ]:
            del self._managers[principal], self._last_used[principal]
            self._busy.pop(principal, None)
            self._stops.pop(principal).set()

    async def _manager_of(self, principal: Principal) -> StreamableHTTPSessionManager | None:
        """The running manager of ``principal``; started now for an unlisted one (``None``:
        not allowed, or ``most_principals`` are running)."""
        manager = self._managers.get(principal)
        if manager is not None or self._listed:
            return manager
        if self._starting is None:
            return None
        async with self._starting:
            manager = self._managers.get(principal)
            if manager is not None:
                return manager
            self._retire_idle()
            if self._group is None or len(self._managers) >= self._most:
                log.warning(
                    "refused an MCP request of user %s of mandate %s: %d principals have "
                    "sessions in this process",
                    principal.user_id,
                    principal.mandate_id,
                    len(self._managers),
                )
                return None
            manager = self._manager()
            stop = anyio.Event()
            await self._group.start(self._hold, manager, stop)
            self._managers[principal] = manager
            self._stops[principal] = stop
            self._last_used[principal] = time.monotonic()
            return manager

    async def _hold(
        self,
        manager: StreamableHTTPSessionManager,
        stop: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with manager.run():
            task_status.started()
            await stop.wait()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        principal = self._principal_of(scope)
        manager = None if principal is None else await self._manager_of(principal)
        if manager is None:
            full = principal is not None and not self._listed
            await send(
                {
                    "type": "http.response.start",
                    "status": 503 if full else 401,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")]
                    + ([(b"retry-after", b"60")] if full else []),
                }
            )
            await send({"type": "http.response.body", "body": _FULL if full else _UNKNOWN})
            return
        assert principal is not None
        # counted before the first await: a manager with a request in flight is not retired
        self._busy[principal] = self._busy.get(principal, 0) + 1
        try:
            await self._handle(principal, manager, scope, receive, send)
        finally:
            self._busy[principal] -= 1
            if principal in self._last_used:
                self._last_used[principal] = time.monotonic()

    async def _handle(
        self,
        principal: Principal,
        manager: StreamableHTTPSessionManager,
        scope: Any,
        receive: Any,
        send: Any,
    ) -> None:
        receive = _watching_disconnect(scope, receive)
        if any(key == _SESSION_HEADER for key, _ in scope.get("headers", ())):
            await manager.handle_request(scope, receive, send)
            return

        async def watched(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 503:
                log.warning(
                    "refused a new MCP session of user %s of mandate %s: it holds "
                    "http_sessions_per_principal=%d open sessions; they end on DELETE or "
                    "after http_session_idle_timeout=%g s",
                    principal.user_id,
                    principal.mandate_id,
                    self.limits.sessions_per_principal,
                    self.limits.session_idle_timeout,
                )
            await send(message)

        await manager.handle_request(scope, receive, watched)


def _watching_disconnect(scope: Any, receive: Any) -> Any:
    """``receive`` that sets the event at ``scope[CLIENT_GONE]`` when it passes ``http.disconnect``."""
    gone = anyio.Event()
    scope[CLIENT_GONE] = gone

    async def watched() -> Any:
        message = await receive()
        if message.get("type") == "http.disconnect":
            gone.set()
        return message

    return watched


def client_gone(request: Any) -> anyio.Event | None:
    """The event set when the HTTP client of ``request`` (a Starlette request) disconnects.

    ``None`` for a request that did not come through :class:`PrincipalSessions`
    (stdio, an in-process client).
    """
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    gone = scope.get(CLIENT_GONE)
    return gone if isinstance(gone, anyio.Event) else None
