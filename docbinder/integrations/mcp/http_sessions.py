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
                    self._group = None

    async def _manager_of(self, principal: Principal) -> StreamableHTTPSessionManager | None:
        """The running manager of ``principal``; started now for an unlisted one (``None``:
        not allowed, or :data:`MOST_PRINCIPALS` are running)."""
        manager = self._managers.get(principal)
        if manager is not None or self._listed:
            return manager
        if self._starting is None:
            return None
        async with self._starting:
            manager = self._managers.get(principal)
            if manager is not None:
                return manager
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
            await self._group.start(self._hold, manager)
            self._managers[principal] = manager
            return manager

    async def _hold(
        self,
        manager: StreamableHTTPSessionManager,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        stopping = self._stopping
        assert stopping is not None
        async with manager.run():
            task_status.started()
            await stopping.wait()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        principal = self._principal_of(scope)
        manager = None if principal is None else await self._manager_of(principal)
        if manager is None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": _UNKNOWN})
            return
        assert principal is not None
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
