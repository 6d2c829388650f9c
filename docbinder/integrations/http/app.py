"""The ASGI app of ``docbinder serve``: the HTTP API, signed links, the inspector, ``/mcp``.

:func:`build_app` makes one Starlette app over a :class:`~docbinder.application.DocBinder`.
Every route reaches the files through the binder's use cases with the request's
principal (:mod:`docbinder.integrations.http.auth`), so every access check is the
library's own; another tenant's id answers exactly like an unknown id, because
the use cases answer both with the same error (:mod:`.errors`). The app keeps no
state of its own between requests: any number of processes over one database and
one blob store serve the same files.

In front of everything: :class:`~docbinder.integrations.httpguard.HostGuard`
(``Host``/``Origin`` against DNS rebinding) and ``X-Content-Type-Options: nosniff``
on every answer; served by :func:`docbinder.integrations.httpguard.serve`
(connection limit, header and body timeouts).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from docbinder.application import DocBinder
from docbinder.application.use_cases.mint_link import LINK_PATH
from docbinder.domain.errors import AccessDenied, DocbinderError, InvalidInput, SizeLimitExceeded
from docbinder.domain.model import Principal
from docbinder.integrations.http import content
from docbinder.integrations.http.auth import Identity, check_bind
from docbinder.integrations.http.errors import error_body, error_response
from docbinder.integrations.http.openapi import openapi_document
from docbinder.integrations.http.threads import blocking
from docbinder.integrations.http.uploads import BodyChunks, MultipartFile
from docbinder.integrations.http.wire import file_json, resolution_json, workflow_json
from docbinder.integrations.httpguard import AllowedHosts, HostGuard, HttpLimits

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_JSON_BYTES = 1 << 20
"""Largest JSON request body (bytes)."""
IGNORED_UPLOAD_TYPES = frozenset(
    {"", "application/octet-stream", "application/x-www-form-urlencoded"}
)
"""Request content types that say nothing about an uploaded file (curl's default among them)."""


class NoSniff:
    """ASGI middleware: ``X-Content-Type-Options: nosniff`` on every HTTP answer."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k != b"x-content-type-options"
                ]
                headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)


def unauthorized() -> JSONResponse:
    """``401`` with ``WWW-Authenticate: Bearer`` (RFC 6750)."""
    return JSONResponse(
        error_body("unauthorized", "send Authorization: Bearer <token>"),
        status_code=401,
        headers={"www-authenticate": 'Bearer realm="docbinder"'},
    )


class NeedsCredentials(Exception):
    """Raised by :meth:`HttpApi.principal` when a request has no usable credential."""


class HttpApi:
    """The routes of the HTTP API over ``binder``, with requests' principals from ``identity``.

    ``public_url`` (the ``public_url`` setting) is the base of minted links; without
    it the base is the request's own scheme and ``Host``.
    """

    def __init__(
        self, binder: DocBinder, identity: Identity, *, public_url: str | None = None
    ) -> None:
        self.binder = binder
        self.identity = identity
        self.public_url = public_url.rstrip("/") if public_url else None

    # -- helpers -------------------------------------------------------------------------------
    async def principal(self, request: Request) -> Principal:
        """The request's principal; :class:`NeedsCredentials` without a valid credential."""
        principal = await self.identity.principal(request.headers.get("authorization"))
        if principal is None:
            raise NeedsCredentials
        return principal

    def base_url(self, request: Request) -> str:
        """Where this service is reached: ``public_url``, else the request's scheme and host."""
        if self.public_url:
            return self.public_url
        return f"{request.url.scheme}://{request.headers.get('host', 'localhost')}"

    @staticmethod
    async def json_body(request: Request) -> Any:
        """The request's JSON body (at most :data:`MAX_JSON_BYTES`); :class:`InvalidInput` otherwise."""
        data = b""
        async for chunk in request.stream():
            data += chunk
            if len(data) > MAX_JSON_BYTES:
                raise InvalidInput(f"the JSON body is larger than {MAX_JSON_BYTES} bytes")
        if not data.strip():
            return {}
        import json

        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("the body is not JSON") from None

    # -- workflows -----------------------------------------------------------------------------
    async def create_workflow(self, request: Request) -> Response:
        """``POST /v1/workflows`` -> ``201 {"id"}``."""
        principal = await self.principal(request)
        workflow = await blocking(self.binder.create_workflow, principal)
        return JSONResponse({"id": workflow.id}, status_code=201)

    async def get_workflow(self, request: Request) -> Response:
        """``GET /v1/workflows/{id}``: messages with labels and counters, documents with refs."""
        principal = await self.principal(request)
        workflow_id = request.path_params["workflow_id"]

        def read() -> dict[str, Any]:
            workflow = self.binder.get_workflow(principal, workflow_id)
            return workflow_json(workflow, self.binder.list_messages(principal, workflow_id))

        return JSONResponse(await blocking(read))

    async def upload(self, request: Request) -> Response:
        """``POST /v1/workflows/{id}/files?name=N[&label=L]``: a raw or multipart body, streamed."""
        principal = await self.principal(request)
        workflow_id = request.path_params["workflow_id"]
        name = request.query_params.get("name")
        label = request.query_params.get("label")
        limit = self.binder.max_file_size
        declared_length = request.headers.get("content-length", "")
        ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if (
            limit is not None
            and ctype != "multipart/form-data"
            and declared_length.isdigit()
            and int(declared_length) > limit
        ):
            raise SizeLimitExceeded(limit, name)
        run = await blocking(self.binder.start_run, principal, workflow_id)
        if not await blocking(run.can_attach):
            raise AccessDenied(f"user {principal.user_id} may not add files to this workflow")
        body: Any
        declared: str | None
        if ctype == "multipart/form-data":
            body = MultipartFile(request)
            filename = await body.start()
            name = name or filename
            declared = None
        else:
            body = BodyChunks(request)
            declared = None if ctype in IGNORED_UPLOAD_TYPES else ctype
        if not name:
            raise InvalidInput("give the file's name: ?name=<file name> (or a multipart filename)")
        file_name = name
        result = await blocking(
            lambda: run.produce_file(
                file_name,
                body,
                verb="Uploaded",
                label=label or f"upload:{file_name}",
                mime_type=declared,
            )
        )
        item = result.item
        return JSONResponse(
            {
                "documentRef": result.reference,
                "documentId": result.document_id,
                "fileId": item.id,
                "fileName": item.file_name,
                "mimeType": item.mime_type,
                "size": item.size,
                "sha256": item.sha256,
                "duplicate": result.duplicate,
                "label": result.label,
            },
            status_code=201,
        )

    async def resolve(self, request: Request) -> Response:
        """``POST /v1/workflows/{id}/resolve {"documentList"}`` (``?content=true`` adds the parts)."""
        principal = await self.principal(request)
        workflow_id = request.path_params["workflow_id"]
        body = await self.json_body(request)
        document_list = body.get("documentList") if isinstance(body, dict) else body
        with_content = request.query_params.get("content", "").lower() in {"1", "true", "yes"}

        def answer() -> dict[str, Any]:
            run = self.binder.start_run(principal, workflow_id)
            if not with_content:
                return resolution_json(run.resolve(document_list))
            from docbinder.serialization import to_wire

            result = run.get_content(document_list)
            data = resolution_json(result.resolution)
            data["content"] = [to_wire(d) for d in result.documents]
            data["unresolved"] = [to_wire(u) for u in result.unresolved]
            return data

        return JSONResponse(await blocking(answer))

    # -- files ---------------------------------------------------------------------------------
    async def file_metadata(self, request: Request) -> Response:
        """``GET /v1/files/{id}``."""
        principal = await self.principal(request)
        item = await blocking(self.binder.get_file, principal, request.path_params["file_id"])
        return JSONResponse(file_json(item))

    async def file_content(self, request: Request) -> Response:
        """``GET /v1/files/{id}/content``: Range, ETag/If-None-Match, a safe disposition."""
        principal = await self.principal(request)
        return await self.send_file(request, principal, request.path_params["file_id"])

    async def send_file(self, request: Request, principal: Principal, file_id: str) -> Response:
        """The bytes of ``file_id`` as ``principal`` reads them, with the headers of :mod:`.content`."""
        span = request_span(request)
        item, reader = await blocking(
            lambda: self.binder.open_file_item(principal, file_id, span=span)
        )
        download = request.query_params.get("download", "").lower() in {"1", "true", "yes"}
        return send_bytes(request, item, reader, download=download, span=span(item))

    async def mint_link(self, request: Request) -> Response:
        """``POST /v1/files/{id}/links {"expiresIn", "audience"?, "once"?}`` -> ``{"url", "expiresAt"}``."""
        principal = await self.principal(request)
        body = await self.json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput('the body must be a JSON object like {"expiresIn": "10m"}')
        file_id = request.path_params["file_id"]
        base = self.base_url(request)

        def mint() -> Any:
            run = self.binder.start_run(principal)
            return run.link_for(
                file_id,
                expires_in=body.get("expiresIn", 600),
                audience=body.get("audience"),
                once=body.get("once", False),
                base_url=base,
            )

        link = await blocking(mint)
        return JSONResponse(
            {
                "url": link.url,
                "expiresAt": link.expires_at.isoformat(),
                "linkId": link.link_id,
                "once": link.once,
                "audience": link.audience,
            },
            status_code=201,
        )

    async def revoke_link(self, request: Request) -> Response:
        """``POST /v1/links/revoke {"url"}`` (or ``{"token"}``): the signer stops a link."""
        principal = await self.principal(request)
        body = await self.json_body(request)
        token = ""
        if isinstance(body, dict):
            token = str(body.get("token") or str(body.get("url") or "").rpartition(LINK_PATH)[2])
        claims = await blocking(self.binder.revoke_link, principal, token.split("?", 1)[0])
        return JSONResponse({"linkId": claims.link_id, "revoked": True})

    async def redeem_link(self, request: Request) -> Response:
        """``GET /v1/links/{token}``: no credentials; the bytes, or a redirect to a presigned GET."""
        token = request.path_params["token"]
        audience = request.query_params.get("audience")
        download = request.query_params.get("download", "").lower() in {"1", "true", "yes"}

        def disposition(item: Any) -> str:
            active = content.is_active(item.mime_type)
            return content.content_disposition(item.file_name, attachment=download or active)

        span = request_span(request)
        redeemed = await blocking(
            lambda: self.binder.redeem_link(
                token,
                audience=audience,
                disposition=disposition,
                signer_known=self.identity.known,
                span=span,
                # HEAD (a previewer's), 304 and 416 send no bytes: a one-time link stays unused
                spend=content.sends_bytes(
                    request.headers.get("range"),
                    request.headers.get("if-none-match"),
                    head=request.method == "HEAD",
                ),
            )
        )
        if redeemed.presigned_url is not None:
            return RedirectResponse(
                redeemed.presigned_url, status_code=307, headers={"cache-control": "no-store"}
            )
        return send_bytes(
            request, redeemed.file, redeemed.reader, download=download, span=span(redeemed.file)
        )

    async def health(self, request: Request) -> Response:
        """``GET /v1/health``: ``{"status": "ok"}`` (no credentials, no storage access)."""
        return JSONResponse({"status": "ok"})

    async def openapi(self, request: Request) -> Response:
        """``GET /openapi.json``: the OpenAPI 3.1 description of the API."""
        return JSONResponse(openapi_document())


def request_span(request: Request) -> Callable[[Any], tuple[int, int] | None]:
    """The bytes of a FileItem the answer to ``request`` sends (:func:`.content.byte_span`)."""
    return content.byte_span(
        request.headers.get("range"),
        request.headers.get("if-none-match"),
        head=request.method == "HEAD",
    )


def send_bytes(
    request: Request,
    item: Any,
    reader: Any,
    *,
    download: bool,
    span: tuple[int, int] | None = None,
) -> Response:
    """The answer for ``item``'s bytes in ``reader``: ``200``, ``206``, ``304`` or ``416``.

    ``span`` is what ``reader`` holds: ``(offset, length)`` of a ranged read
    (:func:`request_span`), ``None`` for every byte.
    """
    start = 0 if span is None else span[0]
    headers = content.file_headers(item, download=download)
    if content.none_match(request.headers.get("if-none-match"), item):
        reader.close()
        keep = ("etag", "cache-control", "content-security-policy", "x-content-type-options")
        return Response(status_code=304, headers={k: headers[k] for k in keep})
    wanted = content.parse_ranges(request.headers.get("range"), item.size)
    if isinstance(wanted, list) and len(wanted) > 1:
        return _byteranges(item, reader, wanted, headers, start)
    if wanted is False:
        reader.close()
        return Response(
            status_code=416,
            headers={"content-range": f"bytes */{item.size}", "accept-ranges": "bytes"},
        )
    if isinstance(wanted, list):
        ((first, last),) = wanted
        headers["content-range"] = f"bytes {first}-{last}/{item.size}"
        headers["content-length"] = str(last - first + 1)
        return StreamingResponse(
            content.stream_range(reader, first, last, start), status_code=206, headers=headers
        )
    headers["content-length"] = str(item.size)
    if request.method == "HEAD":
        reader.close()
        return Response(status_code=200, headers=headers)
    return StreamingResponse(content.stream_range(reader), status_code=200, headers=headers)


def _byteranges(
    item: Any, reader: Any, ranges: list[tuple[int, int]], headers: dict[str, str], start: int
) -> Response:
    """``206 multipart/byteranges`` of several ranges (RFC 9110 section 14.6)."""
    import secrets

    boundary = secrets.token_hex(16)
    heads = [
        (
            f"{'' if n == 0 else chr(13) + chr(10)}--{boundary}\r\ncontent-type: {item.mime_type}\r\n"
            f"content-range: bytes {first}-{last}/{item.size}\r\n\r\n"
        ).encode("latin-1")
        for n, (first, last) in enumerate(ranges)
    ]
    tail = f"\r\n--{boundary}--\r\n".encode("ascii")
    length = sum(len(h) for h in heads) + len(tail) + sum(b - a + 1 for a, b in ranges)
    headers = {
        **headers,
        "content-type": f"multipart/byteranges; boundary={boundary}",
        "content-length": str(length),
    }
    return StreamingResponse(
        content.stream_parts(reader, ranges, heads, tail, start), status_code=206, headers=headers
    )


def build_app(
    binder: DocBinder,
    identity: Identity,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    limits: HttpLimits | None = None,
    public_url: str | None = None,
    mcp_app: Any = None,
    ui: bool = True,
) -> Starlette:
    """The app of ``docbinder serve`` bound to ``host:port``.

    ``identity`` decides each request's principal; a non-loopback ``host`` needs
    one that requires credentials (else :class:`ConfigurationError`).
    ``mcp_app`` (the MCP server's streamable-HTTP app, whose endpoint is
    ``/mcp``) is mounted beside the API and its lifespan run with the app's.
    ``ui`` adds the inspector pages (``/ui/...``).
    """
    check_bind(host, identity)
    use_ledger = getattr(identity, "use_ledger", None)
    if use_ledger is not None:  # OIDC: vouch for each sign-in, for links' redemption
        use_ledger(binder.redeem_link.ledger)
    limits = limits or HttpLimits()
    allowed = AllowedHosts.for_bind(host, port, limits.allowed_hosts)
    api = HttpApi(binder, identity, public_url=public_url)
    routes: list[BaseRoute] = [
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/v1/health", api.health, methods=["GET"]),
        Route("/v1/workflows", api.create_workflow, methods=["POST"]),
        Route("/v1/workflows/{workflow_id}", api.get_workflow, methods=["GET"]),
        Route("/v1/workflows/{workflow_id}/files", api.upload, methods=["POST"]),
        Route("/v1/workflows/{workflow_id}/resolve", api.resolve, methods=["POST"]),
        Route("/v1/files/{file_id}", api.file_metadata, methods=["GET"]),
        Route("/v1/files/{file_id}/content", api.file_content, methods=["GET", "HEAD"]),
        Route("/v1/files/{file_id}/links", api.mint_link, methods=["POST"]),
        Route("/v1/links/revoke", api.revoke_link, methods=["POST"]),
        Route("/v1/links/{token}", api.redeem_link, methods=["GET"]),
    ]
    if ui:
        from docbinder.integrations.http.ui import Inspector

        routes += Inspector(api).routes()
    if mcp_app is not None:
        routes.append(Mount("/", app=mcp_app))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if mcp_app is None:
            yield
            return
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    async def docbinder_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DocbinderError)
        return error_response(exc)

    async def needs_credentials(request: Request, exc: Exception) -> Response:
        return unauthorized()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "error")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

    return Starlette(
        routes=routes,
        middleware=[Middleware(HostGuard, allowed=allowed), Middleware(NoSniff)],
        exception_handlers={
            DocbinderError: docbinder_error,
            NeedsCredentials: needs_credentials,
            HTTPException: http_error,
        },
        lifespan=lifespan,
    )
