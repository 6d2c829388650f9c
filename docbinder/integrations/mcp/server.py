"""The docbinder MCP server on the official MCP Python SDK's low-level ``Server``.

Tools are the tool set's (:mod:`docbinder.toolset`): same names, descriptions
and JSON schemas as in every other integration. Each MCP session gets its own
:class:`~docbinder.toolset.DocbinderToolset` over its own run: over stdio the
process serves one session; over streamable HTTP the session is the
``Mcp-Session-Id`` the SDK assigns at ``initialize`` (the SDK refuses a later
request without it; a request the SDK lets through without a session shares
one run per principal). Each run joins
``workflow_id`` when given, else creates a new workflow on the session's first
call. Tools that take a document reference (``read_documents``; ``read_file`` and
``get_file_info`` besides a file id) resolve it in the session's workflow for the
session's principal, through the run like every other entry point.

Resources: each document of the session's workflow is
``docbinder://documents/<chatDocumentId>`` (name, MIME type, size), listed by
``resources/list`` and readable by ``resources/read`` (text for text formats,
base64 blob otherwise) up to ``max_resource_bytes``; the template
``docbinder://documents/{documentId}`` reads any document of the workflow by id.
"""

from __future__ import annotations

import base64
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from docbinder.application.binder import DocBinder
from docbinder.domain.errors import ConfigurationError, DocbinderError
from docbinder.domain.mime import is_textual_mime
from docbinder.domain.model import Principal
from docbinder.integrations import httpguard
from docbinder.integrations.httpguard import HttpLimits
from docbinder.integrations.mcp.http_sessions import PrincipalSessions
from docbinder.integrations.mcp.tokens import BearerTokens
from docbinder.tools.datasources import DataSource
from docbinder.tools.images import ImageGenerator
from docbinder.toolset import (
    DEFAULT_MAX_IMAGE_BYTES,
    DocbinderToolset,
    ToolOutcome,
    workflow_documents,
)

log = logging.getLogger(__name__)

SERVER_NAME: Final = "docbinder"

URI_PREFIX: Final = "docbinder://documents/"
"""Prefix of every document resource URI; the ChatDocument id follows."""

URI_TEMPLATE: Final = URI_PREFIX + "{documentId}"
"""RFC 6570 template of the document resources."""

DEFAULT_MAX_RESOURCE_BYTES: Final = 10 << 20
"""Largest document ``resources/read`` returns, in bytes (10 MiB)."""

MAX_SESSIONS: Final = 1024
"""Most session runs kept; the least recently used is dropped beyond it (its workflow stays)."""

_URI_RE: Final = re.compile(r"^docbinder://documents/([A-Za-z0-9._:-]{1,200})$")
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_OPEN_WORLD: Final = frozenset({"download_from_data_source", "generate_image"})

INSTRUCTIONS: Final = (
    "docbinder stores the files your tools produce and attaches them to the active workflow. "
    "A producing tool (write_file, render_document, create_chart, ...) answers with a "
    "`docItem:<id>` reference: copy it into the documentList of read_documents to read the "
    "file later. read_file and get_file_info take that reference (or a docList:<label>, "
    "answering for each of its files) as well as a file id. list_documents shows the active "
    "workflow and its references."
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address, in any spelling.

    ``LOCALHOST``, ``localhost.``, ``127.0.0.2``, ``[::1]`` and ``0:0:0:0:0:0:0:1`` are
    (:func:`docbinder.integrations.httpguard.is_loopback`).
    """
    return httpguard.is_loopback(host)


def check_http_host(host: str, tokens: BearerTokens | None) -> None:
    """:class:`ConfigurationError` unless ``host`` is loopback or bearer tokens are configured.

    Either way the served app checks ``Host`` and ``Origin`` for ``host``
    (:class:`~docbinder.integrations.httpguard.HostGuard`).
    """
    if tokens is None and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve MCP on non-loopback host {host!r} without bearer tokens; "
            "pass --tokens FILE (token hashes mapped to principals) or bind to 127.0.0.1"
        )


def _one_line(message: str) -> str:
    return " ".join(message.split()) or "error"


class DocbinderMcpServer:
    """docbinder as an MCP server: the tool set's tools plus the workflow's documents as resources.

    ``binder`` is the configured :class:`DocBinder`; ``principal`` the identity
    of stdio sessions and of HTTP sessions when no bearer tokens are
    configured. ``workflow_id`` makes every session join that workflow
    (``WorkflowNotFound`` comes back as a tool error when the caller may not
    read it). ``data_sources`` and ``image_generator`` enable the tools that
    need them; ``max_image_bytes`` caps images returned by ``read_documents``;
    ``max_resource_bytes`` caps ``resources/read``.
    """

    def __init__(
        self,
        binder: DocBinder,
        principal: Principal,
        *,
        workflow_id: str | None = None,
        data_sources: Mapping[str, DataSource] | None = None,
        image_generator: ImageGenerator | None = None,
        max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
        max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
    ) -> None:
        self.binder = binder
        self.principal = principal
        self.workflow_id = workflow_id
        self.data_sources = dict(data_sources or {})
        self.image_generator = image_generator
        self.max_image_bytes = max_image_bytes
        self.max_resource_bytes = max_resource_bytes
        self.tokens: BearerTokens | None = None
        self._sessions: OrderedDict[tuple[Principal, str], DocbinderToolset] = OrderedDict()
        self._lock = anyio.Lock()
        # The tool list depends on the configuration only: take it from a run without workflow.
        self.specs = self._toolset_for(binder.start_run(principal)).specs
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )

    # -- sessions ----------------------------------------------------------------------------
    def _toolset_for(self, run: Any) -> DocbinderToolset:
        return DocbinderToolset(
            run,
            data_sources=self.data_sources,
            image_generator=self.image_generator,
            max_image_bytes=self.max_image_bytes,
        )

    def _new_toolset(self, principal: Principal) -> DocbinderToolset:
        if self.workflow_id is not None:
            run = self.binder.start_run(principal, self.workflow_id)
        else:
            run = self.binder.start_new_run(principal)
        log.info(
            "MCP session bound to workflow %s for user %s",
            run.context.workflow_id,
            principal.user_id,
        )
        return self._toolset_for(run)

    def _principal(self, ctx: ServerRequestContext[Any, Any]) -> Principal:
        if self.tokens is None:
            return self.principal
        scope = getattr(ctx.request, "scope", None) or {}
        user = scope.get("user")
        principal = (
            self.tokens.principal_for(user.access_token)
            if isinstance(user, AuthenticatedUser)
            else None
        )
        if principal is None:  # the bearer middleware lets no such request through
            raise MCPError(types.INVALID_REQUEST, "no valid bearer token")
        return principal

    async def session_toolset(self, ctx: ServerRequestContext[Any, Any]) -> DocbinderToolset:
        """The tool set of the request's session, created (with its workflow) on first use.

        Raises docbinder's errors from starting the run (``WorkflowNotFound``,
        ``AccessDenied``, ``StorageError``).
        """
        principal = self._principal(ctx)
        headers = getattr(ctx.request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        key = (principal, session or ("stdio" if ctx.request is None else "stateless"))
        async with self._lock:
            toolset = self._sessions.get(key)
            if toolset is None:
                toolset = await anyio.to_thread.run_sync(self._new_toolset, principal)
                self._sessions[key] = toolset
                while len(self._sessions) > MAX_SESSIONS:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return toolset

    async def _resource_toolset(self, ctx: ServerRequestContext[Any, Any]) -> DocbinderToolset:
        try:
            return await self.session_toolset(ctx)
        except DocbinderError as exc:
            raise MCPError(types.INVALID_PARAMS, _one_line(str(exc))) from None

    # -- tools -------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=spec.name,
                description=spec.description,
                input_schema=dict(spec.parameters),
                annotations=types.ToolAnnotations(
                    read_only_hint=spec.read_only,
                    destructive_hint=False,
                    idempotent_hint=spec.read_only,
                    open_world_hint=spec.name in _OPEN_WORLD,
                ),
            )
            for spec in self.specs
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            toolset = await self.session_toolset(ctx)
        except DocbinderError as exc:
            return _error_result(_one_line(str(exc)))
        outcome = await toolset.acall(params.name, params.arguments or {})
        return tool_result(outcome)

    # -- resources ---------------------------------------------------------------------------
    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        toolset = await self._resource_toolset(ctx)
        documents = await anyio.to_thread.run_sync(workflow_documents, toolset.run)
        resources = [
            types.Resource(
                uri=URI_PREFIX + d.document.id,
                name=d.file.file_name,
                title=d.file.file_name,
                description=f"{d.document.reference} (file id {d.file.id})",
                mime_type=d.file.mime_type,
                size=d.file.size,
            )
            for d in documents
        ]
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=URI_TEMPLATE,
                    name="workflow-document",
                    title="Document of the active workflow",
                    description=(
                        "A document of the active workflow by its ChatDocument id (the <id> of "
                        f"docItem:<id>); text formats as text, others as a blob, at most "
                        f"{self.max_resource_bytes} bytes."
                    ),
                )
            ]
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        match = _URI_RE.match(uri)
        if match is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource URI {uri[:200]!r}; document resources look like {URI_TEMPLATE}",
            )
        toolset = await self._resource_toolset(ctx)
        try:
            contents = await anyio.to_thread.run_sync(self._read_document, toolset, match[1], uri)
        except DocbinderError as exc:
            raise MCPError(types.INVALID_PARAMS, _one_line(str(exc))) from None
        return types.ReadResourceResult(contents=[contents])

    def _read_document(
        self, toolset: DocbinderToolset, document_id: str, uri: str
    ) -> types.TextResourceContents | types.BlobResourceContents:
        run = toolset.run
        resolution = run.resolve([f"docItem:{document_id}"])
        if not resolution.documents:
            reason = resolution.unresolved[0].message if resolution.unresolved else "not found"
            raise MCPError(types.INVALID_PARAMS, f"resource {uri} not found: {reason}")
        item = resolution.documents[0].file
        if item.size > self.max_resource_bytes:
            raise MCPError(
                types.INVALID_PARAMS,
                f"resource {uri} has {item.size} bytes, more than the {self.max_resource_bytes}-byte "
                "limit for resources; use the read_documents or read_file tool",
            )
        data = bytearray()
        with run.open_file(item.id) as chunks:
            for chunk in chunks:
                data += chunk
                if len(data) > self.max_resource_bytes:
                    raise MCPError(types.INVALID_PARAMS, f"resource {uri} grew past the size limit")
        mime = item.mime_type.lower()
        if is_textual_mime(mime) or mime in _HTML_TYPES:
            return types.TextResourceContents(
                uri=uri, mime_type=item.mime_type, text=bytes(data).decode("utf-8", "replace")
            )
        return types.BlobResourceContents(
            uri=uri, mime_type=item.mime_type, blob=base64.b64encode(bytes(data)).decode("ascii")
        )

    # -- transports --------------------------------------------------------------------------
    async def run_stdio(self) -> None:
        """Serve one MCP session over this process's stdin and stdout until the client leaves."""
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    def http_app(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        tokens: BearerTokens | None = None,
        limits: HttpLimits | None = None,
    ) -> Starlette:
        """The streamable-HTTP ASGI app (endpoint ``/mcp``) for a server bound to ``host:port``.

        Without ``tokens`` only a loopback ``host`` is allowed (else
        :class:`ConfigurationError`) and every request acts as
        :attr:`principal`; with ``tokens`` every request needs
        ``Authorization: Bearer <token>`` (else HTTP 401) and acts as the
        token's principal. Before anything else, ``Host`` and ``Origin`` must name
        ``host:port`` (else 421 / 403, :class:`~docbinder.integrations.httpguard.HostGuard`);
        each principal holds at most ``limits.sessions_per_principal`` legacy sessions
        (:class:`~docbinder.integrations.mcp.http_sessions.PrincipalSessions`).
        ``limits`` defaults to ``HttpLimits()``; an ``allowed_hosts`` entry that is no
        host name raises :class:`ConfigurationError` naming ``http_allowed_hosts``.
        """
        check_http_host(host, tokens)
        limits = limits or HttpLimits()
        allowed = httpguard.AllowedHosts.for_bind(host, port, limits.allowed_hosts)
        self.tokens = tokens
        principals = tokens.principals if tokens is not None else (self.principal,)

        def principal_of(scope: Any) -> Principal | None:
            if tokens is None:
                return self.principal
            user = scope.get("user")
            if not isinstance(user, AuthenticatedUser):
                return None
            return tokens.principal_for(user.access_token)

        sessions = PrincipalSessions(self.server, principals, principal_of, limits)
        middleware = [Middleware(httpguard.HostGuard, allowed=allowed)]
        endpoint: Any = sessions
        if tokens is not None:
            middleware += [
                Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(tokens)),
                Middleware(AuthContextMiddleware),
            ]
            endpoint = RequireAuthMiddleware(sessions, required_scopes=[])
        return Starlette(
            routes=[Route("/mcp", endpoint=endpoint)],
            middleware=middleware,
            lifespan=lambda _app: sessions.run(),
        )

    def run_http(
        self,
        *,
        host: str,
        port: int,
        tokens: BearerTokens | None = None,
        limits: HttpLimits | None = None,
    ) -> None:
        """Serve :meth:`http_app` on ``host:port`` under ``limits`` until interrupted.

        Connections, header and body timeouts as
        :func:`docbinder.integrations.httpguard.serve` keeps them.
        """
        limits = limits or HttpLimits()
        app = self.http_app(host=host, port=port, tokens=tokens, limits=limits)
        httpguard.serve(app, host=host, port=port, limits=limits)


def tool_result(outcome: ToolOutcome) -> types.CallToolResult:
    """An MCP tool result: the outcome's text, then each image as image content.

    ``_meta`` carries ``docbinder/fileIds`` and ``docbinder/documentIds`` for
    the host; an error is ``isError`` with the one-line message.
    """
    if outcome.is_error:
        return _error_result(outcome.text)
    content: list[Any] = [types.TextContent(type="text", text=outcome.text)]
    for part in outcome.images:
        assert part.data is not None
        content.append(
            types.ImageContent(
                type="image",
                data=base64.b64encode(part.data).decode("ascii"),
                mime_type=part.mime_type,
            )
        )
    meta = {
        "docbinder/fileIds": list(outcome.file_ids),
        "docbinder/documentIds": list(outcome.document_ids),
    }
    return types.CallToolResult(content=content, is_error=False, _meta=meta)


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("docbinder")
    except Exception:
        return "0"
