"""The docbinder MCP server on the official MCP Python SDK's low-level ``Server``.

Tools are the tool set's (:mod:`docbinder.toolset`): same names, descriptions
and JSON schemas as in every other integration, each with the optional
``workflow`` argument (:func:`~docbinder.toolset.handle_spec`) and the
``outputSchema`` of its structured result. Which workflow a call works in
(ADR 0054):

- a ``workflow`` argument (the id of the ``workflow:`` line of an earlier
  answer) names it, checked against the caller on every call; a handle of
  another principal or tenant gets the same tool error as an unknown id;
- otherwise the call's conversation decides: over stdio (and an in-process
  client) the process is one conversation, over the handshake-era HTTP
  protocol the ``Mcp-Session-Id`` the SDK assigned and checks is one; a
  conversation keeps its workflow, created by its first producing call (or
  the one given with ``workflow_id``), and a handle given in it joins that
  workflow for its later calls;
- a request of the sessionless protocol revision (2026-07-28: no session,
  the client may send any header) is no conversation: a producing call
  without handle starts a new workflow, a consuming one resolves no
  reference (``no_active_workflow``, with the line that says to pass the
  handle), so two such requests never share a workflow.

The file-level tools (``read_file``, ``get_file_info``,
``search_in_file_content``, ``list_files``) answer only for the files a
document of the call's workflow points at
(:attr:`~docbinder.toolset.FileScope.WORKFLOW`): over MCP every conversation
of a client acts as the same principal, and the workflow is what keeps them
apart (ADR 0054, addendum).

Runs are kept per principal (:data:`MAX_RUNS_PER_PRINCIPAL`, least recently
used dropped first; a dropped run is bound again from storage), so no
principal can evict another's. A tool call takes one worker-thread hop:
choosing its run (bound from storage on a miss), the call and the result in
its wire form, a plain mapping the SDK validates once against the protocol's
result shape (ADR 0061). Every result carries its workflow: a text
block ``workflow: <id>`` and ``structuredContent["workflow"]``; a producing
tool's result has one ``resource_link`` per stored file as well (ADR 0055).

Resources: ``docbinder://documents/<chatDocumentId>`` reads a document
(text for text formats, base64 blob otherwise, up to ``max_resource_bytes``)
in the document's own workflow for the caller, with a long private cache
lifetime (the bytes of a ChatDocument do not change); ``resources/list``
lists the documents of the conversation's workflow on the handshake-era
protocol and, on the sessionless one, where lists may not vary per
connection, those of the configured ``workflow_id`` only (ADR 0056).
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import threading
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
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from docbinder.application.binder import DocBinder
from docbinder.application.cancelling import run_sync_cancellable
from docbinder.application.steps.results import printable
from docbinder.domain.errors import (
    BlobMissing,
    ConfigurationError,
    DocbinderError,
    InvalidInput,
    StorageError,
    UnsafeOperation,
    WorkflowNotFound,
)
from docbinder.domain.mime import is_textual_mime
from docbinder.domain.model import Principal
from docbinder.integrations import httpguard
from docbinder.integrations.httpguard import HttpLimits
from docbinder.integrations.mcp.http_sessions import PrincipalSessions, client_gone
from docbinder.integrations.mcp.stdio import stdio_streams
from docbinder.integrations.mcp.tokens import PrincipalTokens
from docbinder.tools.datasources import DataSource
from docbinder.tools.images import ImageGenerator
from docbinder.toolset import (
    DEFAULT_MAX_IMAGE_BYTES,
    WORKFLOW_ARGUMENT,
    DocbinderToolset,
    FileScope,
    ToolOutcome,
    ToolSpec,
    handle_spec,
    public_message,
    workflow_documents,
)

log = logging.getLogger(__name__)

SERVER_NAME: Final = "docbinder"

URI_PREFIX: Final = "docbinder://documents/"
"""Prefix of every document resource URI; the ChatDocument id follows."""

URI_TEMPLATE: Final = URI_PREFIX + "{documentId}{?workflow}"
"""RFC 6570 template of the document resources: the ChatDocument id, then its workflow (ADR 0062)."""

CONNECTION_CLOSED: Final = "the caller is gone (its connection closed)"
"""The reason a tool call whose HTTP client disconnected is stopped with."""

DEFAULT_MAX_RESOURCE_BYTES: Final = 10 << 20
"""Largest document ``resources/read`` returns, in bytes (10 MiB)."""

MAX_RUNS_PER_PRINCIPAL: Final = 256
"""Runs kept per principal (one per workflow it works in); the least recently used goes first."""

MAX_CONVERSATIONS_PER_PRINCIPAL: Final = 1024
"""Conversations (handshake-era HTTP sessions) per principal whose workflow is remembered."""

DOCUMENT_CACHE_MS: Final = 24 * 60 * 60 * 1000
"""Cache lifetime of a document read (``ttlMs``, private scope): one day, in milliseconds."""

NO_WORKFLOW_HINT: Final = (
    "pass the `workflow` id you got from the call that produced the file (the `workflow:` "
    "line of its answer) as the `workflow` argument"
)
"""How a call without workflow gets one over MCP (the tool set's ``no_workflow_hint``)."""

LINK_AUDIENCE: Final[tuple[types.Role, ...]] = ("user", "assistant")
"""The ``audience`` annotation of every ``resource_link``: the file is for both."""

_PROCESS: Final = "process"
"""The conversation key of stdio and in-process clients: the process is the conversation."""

_MODERN: Final = frozenset(MODERN_PROTOCOL_VERSIONS)
_URI_RE: Final = re.compile(
    r"^docbinder://documents/([A-Za-z0-9._:-]{1,200})(?:\?workflow=([A-Za-z0-9._:-]{1,200}))?$"
)
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_OPEN_WORLD: Final = frozenset({"download_from_data_source", "generate_image"})
_HANDLE_RE: Final = re.compile(
    r"^\s*[`'\"]?(?:workflow\s*:\s*)?[`'\"]?(.*?)[`'\"]?\s*$", re.I | re.S
)

INSTRUCTIONS: Final = (
    "docbinder stores the files your tools produce and attaches them to a workflow. "
    "A producing tool (write_file, render_document, create_chart, ...) answers with a "
    "`docItem:<id>` reference per file and a `workflow: <id>` line: pass that workflow id as "
    "the `workflow` argument of every later docbinder call of the conversation, and copy the "
    "reference into the documentList of read_documents to read the file. read_file and "
    "get_file_info take that reference (or a docList:<label>, answering for each of its "
    "files) as well as a file id; they, search_in_file_content and list_files answer for the "
    "files of the workflow only. list_documents shows the workflow and its references."
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address, in any spelling.

    ``LOCALHOST``, ``localhost.``, ``127.0.0.2``, ``[::1]`` and ``0:0:0:0:0:0:0:1`` are
    (:func:`docbinder.integrations.httpguard.is_loopback`).
    """
    return httpguard.is_loopback(host)


def check_http_host(host: str, tokens: PrincipalTokens | None) -> None:
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


def _public(exc: DocbinderError) -> str:
    """``exc`` for a client, one line, without storage internals; the full error is logged."""
    if isinstance(exc, StorageError | UnsafeOperation | BlobMissing):
        log.warning("MCP request failed: %s", exc)
    else:
        log.info("MCP request failed: %s", exc)
    return _one_line(public_message(exc))


def _remember(kept: OrderedDict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Put ``key`` last in the LRU ``kept`` and drop the oldest entries beyond ``limit``."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > limit:
        kept.popitem(last=False)


def read_handle(value: object) -> str | None:
    """The workflow id of a ``workflow`` argument, or ``None`` when it is absent.

    Read tolerantly (ADR 0020): surrounding whitespace and quotes and a
    copied ``workflow:`` prefix are removed; ``null`` and empty text mean no
    handle. :class:`InvalidInput` for a value that is not text.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(
            "the `workflow` argument must be text: the id of the `workflow:` line of an earlier "
            f"answer, got {type(value).__name__}"
        )
    match = _HANDLE_RE.match(value)
    text = match[1].strip() if match else value.strip()
    return text or None


class _Kept:
    """What the server keeps for one principal, each part bounded and least recently used first.

    ``runs`` maps a workflow id (``None``: no workflow) to the tool set over
    the principal's run in it; ``conversations`` maps a conversation key to
    its workflow id.
    """

    __slots__ = ("conversations", "runs")

    def __init__(self) -> None:
        self.runs: OrderedDict[str | None, DocbinderToolset] = OrderedDict()
        self.conversations: OrderedDict[str, str] = OrderedDict()


class DocbinderMcpServer:
    """docbinder as an MCP server: the tool set's tools plus the workflow's documents as resources.

    ``binder`` is the configured :class:`DocBinder`; ``principal`` the identity
    of stdio requests and of HTTP requests when no bearer tokens are
    configured. ``workflow_id`` is the workflow of every conversation and of
    every request without handle (``WorkflowNotFound`` comes back as a tool
    error when the caller may not read it); without it each conversation gets
    a new workflow at its first producing call (see the module documentation).
    ``data_sources`` and ``image_generator`` enable the tools that need them;
    ``max_image_bytes`` caps images returned by ``read_documents``;
    ``max_resource_bytes`` caps ``resources/read``. ``max_runs_per_principal``
    and ``max_conversations_per_principal`` bound what is kept for each
    principal.
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
        max_runs_per_principal: int = MAX_RUNS_PER_PRINCIPAL,
        max_conversations_per_principal: int = MAX_CONVERSATIONS_PER_PRINCIPAL,
    ) -> None:
        if max_runs_per_principal < 1 or max_conversations_per_principal < 1:
            raise ConfigurationError("the per-principal limits of the MCP server must be 1 or more")
        self.binder = binder
        self.principal = principal
        self.workflow_id = workflow_id
        self.data_sources = dict(data_sources or {})
        self.image_generator = image_generator
        self.max_image_bytes = max_image_bytes
        self.max_resource_bytes = max_resource_bytes
        self.max_runs_per_principal = max_runs_per_principal
        self.max_conversations_per_principal = max_conversations_per_principal
        self.tokens: PrincipalTokens | None = None
        self._kept: dict[Principal, _Kept] = {}
        # Taken by worker threads and the event loop alike, each time for a few dict operations.
        self._lock = threading.Lock()
        self._creating = threading.Lock()
        # The tool list depends on the configuration only: take it from a run without workflow.
        self.specs: tuple[ToolSpec, ...] = self._toolset_for(binder.start_run(principal)).specs
        self._produces = {spec.name: spec.produces_files for spec in self.specs}
        self._tools = [_tool(spec) for spec in self.specs]
        self._input_schemas = {tool.name: tool.input_schema for tool in self._tools}
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            # The sessionless HTTP transport checks `Mcp-Param-*` headers against a tool's
            # input schema; without this lookup it runs the whole tools/list for every call.
            get_tool_input_schema=self._input_schemas.get,
        )
        # Registered as a plain request handler: it answers with the wire mapping itself.
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)

    # -- runs and conversations --------------------------------------------------------------
    def _toolset_for(self, run: Any) -> DocbinderToolset:
        return DocbinderToolset(
            run,
            data_sources=self.data_sources,
            image_generator=self.image_generator,
            max_image_bytes=self.max_image_bytes,
            no_workflow_hint=NO_WORKFLOW_HINT,
            file_scope=FileScope.WORKFLOW,
        )

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

    @staticmethod
    def conversation(ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The conversation of a request: ``"process"``, ``"session:<id>"`` or ``None``.

        A request without HTTP request object (stdio, an in-process client) is
        the process's conversation. An HTTP request of the handshake era with
        an ``Mcp-Session-Id`` is that session's (the SDK assigned the id at
        ``initialize`` and answers 404 to an id it did not assign or that
        another credential opened). A request of the sessionless revision has
        no conversation, whatever headers it sends.
        """
        if ctx.request is None:
            return _PROCESS
        if ctx.protocol_version in _MODERN:
            return None
        headers = getattr(ctx.request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        return f"session:{session}" if session else None

    def _state(self, principal: Principal) -> _Kept:
        with self._lock:
            kept = self._kept.get(principal)
            if kept is None:
                kept = self._kept[principal] = _Kept()
            return kept

    def toolset(self, principal: Principal, workflow_id: str | None) -> DocbinderToolset:
        """The tool set over ``principal``'s run in ``workflow_id`` (``None``: no workflow).

        Kept per principal; on a miss the run is bound (:meth:`DocBinder.start_run`,
        a read of storage, so call it from a worker thread): :class:`WorkflowNotFound`
        if the workflow is absent or the principal may not read it,
        :class:`StorageError`.
        """
        state = self._state(principal)
        with self._lock:
            found = state.runs.get(workflow_id)
            if found is not None:
                state.runs.move_to_end(workflow_id)
                return found
        return self._keep(state, self._toolset_for(self.binder.start_run(principal, workflow_id)))

    def _keep(self, state: _Kept, toolset: DocbinderToolset) -> DocbinderToolset:
        with self._lock:
            found = state.runs.get(toolset.workflow_id)
            if found is not None:
                state.runs.move_to_end(toolset.workflow_id)
                return found
            _remember(state.runs, toolset.workflow_id, toolset, self.max_runs_per_principal)
        return toolset

    def _new_workflow(self, principal: Principal) -> DocbinderToolset:
        run = self.binder.start_new_run(principal)
        log.info(
            "MCP call started workflow %s for user %s", run.context.workflow_id, principal.user_id
        )
        return self._keep(self._state(principal), self._toolset_for(run))

    def _conversation_workflow(self, principal: Principal, key: str | None) -> str | None:
        if key is None:
            return self.workflow_id
        state = self._state(principal)
        with self._lock:
            workflow_id = state.conversations.get(key)
            if workflow_id is not None:
                state.conversations.move_to_end(key)
                return workflow_id
        return self.workflow_id

    def _bind(self, principal: Principal, key: str, workflow_id: str) -> None:
        state = self._state(principal)
        with self._lock:
            if state.conversations.get(key) != workflow_id:
                log.info(
                    "MCP conversation of user %s works in workflow %s",
                    principal.user_id,
                    workflow_id,
                )
            _remember(state.conversations, key, workflow_id, self.max_conversations_per_principal)

    def call_toolset(
        self, principal: Principal, key: str | None, handle: str | None, producing: bool
    ) -> DocbinderToolset:
        """The tool set a call works with (ADR 0054); may read storage (a worker thread's work).

        ``key`` is the call's conversation (:meth:`conversation`), ``handle``
        its ``workflow`` argument, ``producing`` whether the tool stores files.
        A handle binds its workflow for ``principal`` and becomes the
        conversation's when the principal may add files to it (a workflow it
        may only read is used for this call only, so the conversation's later
        producing calls without handle still store); else the conversation's
        workflow or ``workflow_id``;
        else a producing call starts a workflow (the conversation's, when it
        has one) and any other call has none. Raises :class:`WorkflowNotFound`
        (an unknown handle, or one the principal may not read),
        :class:`AccessDenied` (no right to create a workflow),
        :class:`StorageError`.
        """
        if handle is not None:
            toolset = self.toolset(principal, handle)
            rebinds = key is not None and self._conversation_workflow(principal, key) != handle
            if rebinds and toolset.run.can_attach():
                assert key is not None
                self._bind(principal, key, handle)
            return toolset
        workflow_id = self._conversation_workflow(principal, key)
        if workflow_id is not None:
            return self.toolset(principal, workflow_id)
        if not producing:
            return self.toolset(principal, None)
        if key is None:
            return self._new_workflow(principal)
        with self._creating:  # one new workflow per conversation, also under concurrency
            workflow_id = self._conversation_workflow(principal, key)
            if workflow_id is not None:
                return self.toolset(principal, workflow_id)
            toolset = self._new_workflow(principal)
            assert toolset.workflow_id is not None
            self._bind(principal, key, toolset.workflow_id)
            return toolset

    # -- tools -------------------------------------------------------------------------------
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self._tools))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        principal = self._principal(ctx)
        request_id = getattr(ctx, "request_id", None)
        work = functools.partial(
            self.serve_call,
            principal,
            self.conversation(ctx),
            params.name,
            dict(params.arguments or {}),
            call_id=None if request_id is None else str(request_id),
        )
        # A request the client cancels (or whose connection closes) cancels this task: the
        # conversion in progress stops and the thread returns at once (ADR 0070). A legacy
        # session's request runs in the session's task, which a closed HTTP connection does
        # not cancel: the connection's disconnect event cancels it here.
        gone = client_gone(ctx.request)
        if gone is None:
            return await run_sync_cancellable(work)
        with anyio.CancelScope() as stopped:
            async with anyio.create_task_group() as group:

                async def stop_when_gone() -> None:
                    await gone.wait()
                    stopped.cancel()

                group.start_soon(stop_when_gone)
                try:
                    return await run_sync_cancellable(work, reason=CONNECTION_CLOSED)
                finally:
                    group.cancel_scope.cancel()
        log.info("tools/call %s stopped: %s", params.name, CONNECTION_CLOSED)
        raise MCPError(types.INTERNAL_ERROR, f"the call was stopped: {CONNECTION_CLOSED}")

    def serve_call(
        self,
        principal: Principal,
        key: str | None,
        name: str,
        arguments: dict[str, Any],
        *,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call``, in a worker thread: its run, the call and the result, all at once.

        ``key`` is the call's conversation (:meth:`conversation`); ``arguments``
        the model's, with the ``workflow`` handle among them (taken out here).
        ``call_id`` is the JSON-RPC id of the ``tools/call`` request: MCP's own
        id of the call, recorded as the tool call id in the provenance of the
        files it produces (B9; MCP gives no model name to a server).
        Returns the ``CallToolResult`` in its wire form (:func:`tool_result`);
        never raises for a docbinder error.
        """
        producing = self._produces.get(name, False)
        try:
            handle = read_handle(arguments.pop(WORKFLOW_ARGUMENT, None))
        except InvalidInput as exc:
            return error_result(_one_line(str(exc)), None)
        try:
            toolset = self.call_toolset(principal, key, handle, producing)
        except WorkflowNotFound as exc:
            if handle is None:  # the configured workflow
                return error_result(_public(exc), None)
            # The same words for an unknown id and another principal's (no existence oracle).
            log.info("MCP call of user %s: workflow handle %r refused", principal.user_id, handle)
            return error_result(unknown_handle(handle), None)
        except DocbinderError as exc:
            return error_result(_public(exc), None)
        outcome = _checked_call(toolset, name, arguments, producing, call_id)
        return tool_result(outcome)

    # -- resources ---------------------------------------------------------------------------
    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        principal = self._principal(ctx)
        if ctx.protocol_version in _MODERN:
            # Lists may not vary per connection on this revision: the configured workflow only.
            workflow_id = self.workflow_id
        else:
            workflow_id = self._conversation_workflow(principal, self.conversation(ctx))
        if workflow_id is None:
            return types.ListResourcesResult(resources=[], cache_scope="private")

        def listed() -> tuple[Any, ...]:
            return workflow_documents(self.toolset(principal, workflow_id).run)

        try:
            documents = await anyio.to_thread.run_sync(listed)
        except DocbinderError as exc:
            raise MCPError(types.INVALID_PARAMS, _public(exc)) from None
        resources = [
            types.Resource(
                uri=document_uri(d.document.id, workflow_id),
                name=d.file.file_name,
                title=d.file.file_name,
                description=f"{d.document.reference} (file id {d.file.id})",
                mime_type=d.file.mime_type,
                size=d.file.size,
            )
            for d in documents
        ]
        return types.ListResourcesResult(resources=resources, cache_scope="private")

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=URI_TEMPLATE,
                    name="workflow-document",
                    title="Document of a workflow",
                    description=(
                        "A document by its ChatDocument id (the <id> of docItem:<id>), read in "
                        "its own workflow; text formats as text, others as a blob, at most "
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
        document_id, workflow_id = match[1], match[2]
        principal = self._principal(ctx)
        if workflow_id is None:
            workflow_id = self._conversation_workflow(principal, self.conversation(ctx))
        if workflow_id is None:
            raise MCPError(types.INVALID_PARAMS, _not_found(uri))
        try:
            contents = await anyio.to_thread.run_sync(
                self._read_document, principal, workflow_id, document_id, uri
            )
        except WorkflowNotFound:
            raise MCPError(types.INVALID_PARAMS, _not_found(uri)) from None
        except DocbinderError as exc:
            raise MCPError(types.INVALID_PARAMS, f"resource {uri}: {_public(exc)}") from None
        return types.ReadResourceResult(
            contents=[contents], ttl_ms=DOCUMENT_CACHE_MS, cache_scope="private"
        )

    def _read_document(
        self, principal: Principal, workflow_id: str, document_id: str, uri: str
    ) -> types.TextResourceContents | types.BlobResourceContents:
        run = self.toolset(principal, workflow_id).run
        resolution = run.resolve([f"docItem:{document_id}"])
        if not resolution.documents:
            raise MCPError(types.INVALID_PARAMS, _not_found(uri))
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
        """Serve one MCP session over this process's stdin and stdout until the client leaves.

        The lines are read and written on the event loop without worker threads
        (:func:`~docbinder.integrations.mcp.stdio.stdio_streams`, ADR 0061).
        """
        async with stdio_streams() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    def http_app(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        tokens: PrincipalTokens | None = None,
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
        principals = tokens.principals if tokens is not None else (self.principal,)  # None: OIDC

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
        tokens: PrincipalTokens | None = None,
        limits: HttpLimits | None = None,
    ) -> None:
        """Serve :meth:`http_app` on ``host:port`` under ``limits`` until interrupted.

        Connections, header and body timeouts as
        :func:`docbinder.integrations.httpguard.serve` keeps them.
        """
        limits = limits or HttpLimits()
        app = self.http_app(host=host, port=port, tokens=tokens, limits=limits)
        httpguard.serve(app, host=host, port=port, limits=limits)


def document_uri(document_id: str, workflow_id: str | None) -> str:
    """The resource URI of ChatDocument ``document_id`` of workflow ``workflow_id`` (ADR 0062).

    ``docbinder://documents/<documentId>?workflow=<workflowId>`` (:data:`URI_TEMPLATE`):
    the URI names the workflow in which ``resources/read`` resolves the document, so
    it reads back in any conversation, server process or restart of the same
    principal, with the read checked then. Without a workflow the URI has no query
    and reads in the conversation's workflow.
    """
    if workflow_id is None:
        return URI_PREFIX + document_id
    return f"{URI_PREFIX}{document_id}?workflow={workflow_id}"


def unknown_handle(handle: str) -> str:
    """The tool error for a ``workflow`` handle the caller may not use, whatever the reason.

    The same text for an id that names no workflow and for one of another
    principal or tenant: the answer tells nothing about other workflows.
    """
    return (
        f"workflow {printable(handle[:120])} not found; pass the id of a `workflow:` line of "
        "this conversation, or leave `workflow` out to start a new workflow"
    )


def _checked_call(
    toolset: DocbinderToolset,
    name: str,
    arguments: Mapping[str, Any],
    producing: bool,
    call_id: str | None = None,
) -> ToolOutcome:
    """Run tool ``name`` (in a worker thread); a producing tool first checks it may attach.

    A workflow the caller may read but not add to (a handle of a workflow it
    was shown) refuses a producing call before anything is stored; the
    attach itself checks again, on the stored workflow, in its unit of work.
    """
    workflow_id = toolset.workflow_id
    if producing and workflow_id is not None:
        try:
            allowed = toolset.run.can_attach()
        except DocbinderError as exc:
            return ToolOutcome(_public(exc), is_error=True, workflow_id=workflow_id)
        if not allowed:
            return ToolOutcome(
                f"you may read workflow {workflow_id} but not add files to it; leave "
                "`workflow` out to store them in a new workflow",
                is_error=True,
                workflow_id=workflow_id,
            )
    return toolset.call(name, arguments, tool_call_id=call_id)


def _not_found(uri: str) -> str:
    """The one answer for a document the caller cannot read, whatever the reason."""
    return (
        f"resource {uri} not found: no document with this id that you may read; read it with "
        "read_documents and the `workflow` of the answer that named it"
    )


def _tool(spec: ToolSpec) -> types.Tool:
    """``spec`` as an MCP tool: the handle argument, only the required arguments required."""
    shown = handle_spec(spec)
    return types.Tool(
        name=shown.name,
        description=shown.description,
        input_schema=dict(shown.parameters),
        output_schema=dict(spec.output_schema) if spec.output_schema is not None else None,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=spec.name in _OPEN_WORLD,
        ),
    )


def workflow_line(workflow_id: str | None) -> str:
    """The text block that names a result's workflow: ``workflow: <id>`` (ADR 0054)."""
    if workflow_id is None:
        return "workflow: none (a producing call starts one and its answer names it here)"
    return f"workflow: {workflow_id}"


def tool_result(outcome: ToolOutcome) -> dict[str, Any]:
    """An MCP tool result from a tool-set outcome, in every shape clients read (ADR 0055).

    The ``CallToolResult`` in its wire form (camelCase keys, JSON values), built
    as a plain mapping: the SDK validates it once against the protocol
    revision's result shape before sending (ADR 0061).
    ``content``: the outcome's text, a ``workflow: <id>`` text block, each
    image as image content, and for every file a producing tool attached one
    ``resource_link`` (``docbinder://documents/<chatDocumentId>``, name,
    MIME type, size, ``audience`` user and assistant).
    ``structuredContent``: :attr:`ToolOutcome.structured` (the tool's
    ``outputSchema``; ``{"workflow", "error"}`` for an error, flagged
    ``isError``). ``_meta`` carries ``docbinder/fileIds`` and
    ``docbinder/documentIds`` for the host.
    """
    content: list[dict[str, Any]] = [
        {"type": "text", "text": outcome.text},
        {"type": "text", "text": workflow_line(outcome.workflow_id)},
    ]
    for part in outcome.images:
        assert part.data is not None
        content.append(
            {
                "type": "image",
                "data": base64.b64encode(part.data).decode("ascii"),
                "mimeType": part.mime_type,
            }
        )
    for produced in outcome.produced:
        if produced.document_id is None:
            continue
        item = produced.item
        content.append(
            {
                "type": "resource_link",
                "uri": document_uri(produced.document_id, outcome.workflow_id),
                "name": item.file_name,
                "title": item.file_name,
                "description": f"{produced.reference} (file id {item.id})",
                "mimeType": item.mime_type,
                "size": item.size,
                "annotations": {"audience": list(LINK_AUDIENCE)},
            }
        )
    structured = dict(outcome.structured or {"workflow": outcome.workflow_id})
    if outcome.is_error:
        structured.setdefault("error", outcome.text)
    return {
        # Required from revision 2026-07-28 on; earlier revisions' result shapes drop it.
        "resultType": "complete",
        "content": content,
        "structuredContent": structured,
        "isError": outcome.is_error,
        "_meta": {
            "docbinder/fileIds": list(outcome.file_ids),
            "docbinder/documentIds": list(outcome.document_ids),
        },
    }


def error_result(message: str, workflow_id: str | None) -> dict[str, Any]:
    """A tool error the server answers itself (a refused handle): one line, its workflow."""
    return tool_result(ToolOutcome(_one_line(message), is_error=True, workflow_id=workflow_id))


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("docbinder")
    except Exception:
        return "0"
