"""The inspector page: ``/ui/workflows/{id}``, rendered on the server with Jinja2, no script.

It shows a workflow's messages in order (label, role, status, round/task/action),
each document with its ``docItem:`` reference, name, type, size, a preview (an
image, the first lines of a text, the first rows of a table, a PDF's page count)
and a download link, and the workflow's recent resolutions: what the model sent,
what resolved, and each miss with its reason.

Signing in (:mod:`docbinder.integrations.http.sessions`): ``POST /v1/ui/signin``
(with the API's credentials; on loopback without them) answers a one-time URL
``/ui/signin/<code>`` valid for five minutes; opening it sets the HttpOnly cookie
and redirects to the page. Pages and their downloads then act as the signed-in
principal through the same use cases as the API.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import quote

import jinja2
import markupsafe
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from docbinder.domain.errors import ConfigurationError, InvalidInput, WorkflowNotFound
from docbinder.domain.model import ChatDocument, Principal
from docbinder.integrations.http import sessions
from docbinder.integrations.http.threads import blocking

if TYPE_CHECKING:
    from docbinder.application import DocBinder
    from docbinder.integrations.http.auth import Identity


SIGN_IN_FIRST = (
    "sign in first: open a one-time sign-in link; `POST /v1/ui/signin` with your credentials "
    "answers one, and `docbinder serve --signin WORKFLOW_ID` prints one at start"
)
"""What a browser without a session reads on the inspector's pages."""


class InspectorApi(Protocol):
    """What the inspector pages use of the HTTP API (:class:`~docbinder.integrations.http.app.HttpApi`)."""

    binder: DocBinder
    identity: Identity

    async def principal(self, request: Request) -> Principal:
        """The request's principal; raises when it has no usable credential."""

    def base_url(self, request: Request) -> str:
        """Where this service is reached (scheme and host, no trailing slash)."""

    async def json_body(self, request: Request) -> Any:
        """The request's JSON body; :class:`InvalidInput` when it is not JSON."""

    async def send_file(self, request: Request, principal: Principal, file_id: str) -> Response:
        """The file's bytes as the download route sends them."""


PREVIEW_BYTES: Final = 8192
"""Bytes read of a text or table for its preview."""
PREVIEW_LINES: Final = 8
PREVIEW_ROWS: Final = 6
INDEX_LIMIT: Final = 50
"""Workflows the index page lists (newest first)."""
PDF_PREVIEW_MAX_BYTES: Final = 32 << 20
"""Largest PDF whose pages are counted for the preview (bytes)."""

_TEXT_TYPES: Final = {"application/json", "text/markdown", "application/x-ndjson"}
_TABLE_TYPES: Final = {"text/csv", "text/tab-separated-values"}

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)

NO_KEYS: Final = (
    "the inspector's sign-in is signed with the link keys: set link_keys or link_keys_file "
    "(DOCBINDER_LINK_KEYS / DOCBINDER_LINK_KEYS_FILE)"
)
PAGE_HEADERS: Final = {
    "content-security-policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
}


class Inspector:
    """The ``/ui`` routes over the HTTP API (:class:`InspectorApi`)."""

    def __init__(self, api: InspectorApi) -> None:
        self.api = api
        self.binder = api.binder

    def routes(self) -> list[BaseRoute]:
        """The inspector's routes."""
        return [
            Route("/v1/ui/signin", self.signin_link, methods=["POST"]),
            Route("/ui/signin/{code}", self.signin, methods=["GET"]),
            Route("/ui", self.to_index, methods=["GET"]),
            Route("/ui/", self.index, methods=["GET"]),
            Route("/ui/workflows/{workflow_id}", self.page, methods=["GET"]),
            Route("/ui/files/{file_id}/content", self.download, methods=["GET"]),
        ]

    def _keys(self) -> Any:
        keys = self.binder.mint_link.keys
        if keys is None:
            raise ConfigurationError(NO_KEYS)
        return keys

    def signin_url(self, base: str, principal: Principal, next_path: str = "") -> str:
        """A one-time sign-in URL for ``principal`` (valid :data:`sessions.SIGNIN_SECONDS`)."""
        code, _, _ = sessions.issue(
            self._keys(),
            "signin",
            principal,
            self.binder.clock.now(),
            sessions.SIGNIN_SECONDS,
        )
        url = f"{base.rstrip('/')}/ui/signin/{code}"
        if next_path.startswith("/ui/"):
            url += f"?next={quote(next_path, safe='/')}"
        return url

    async def signin_link(self, request: Request) -> Response:
        """``POST /v1/ui/signin {"workflowId"?}`` -> ``{"url"}``: a one-time sign-in URL."""
        principal = await self.api.principal(request)
        body = await self.api.json_body(request)
        workflow = body.get("workflowId") if isinstance(body, dict) else None
        next_path = f"/ui/workflows/{quote(workflow, safe='')}" if isinstance(workflow, str) else ""
        url = self.signin_url(self.api.base_url(request), principal, next_path)
        return JSONResponse({"url": url, "expiresIn": sessions.SIGNIN_SECONDS}, status_code=201)

    async def signin(self, request: Request) -> Response:
        """``GET /ui/signin/{code}``: spend the code, set the cookie, go to the page."""
        keys = self._keys()
        now = self.binder.clock.now()
        try:
            principal, code_id, expires = sessions.read(
                keys, "signin", request.path_params["code"], now
            )
        except InvalidInput as exc:
            return HTMLResponse(_message(str(exc)), status_code=403, headers=PAGE_HEADERS)
        first = await blocking(self.binder.redeem_link.ledger.use_once, f"ui:{code_id}", expires)
        if not first:
            return HTMLResponse(
                _message("this sign-in link was used already; ask for a new one"),
                status_code=403,
                headers=PAGE_HEADERS,
            )
        cookie, _, _ = sessions.issue(keys, "session", principal, now, sessions.SESSION_SECONDS)
        target = request.query_params.get("next", "")
        if not target.startswith("/ui/") or "//" in target or "\\" in target:
            target = "/ui/"
        response = RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)
        response.set_cookie(
            sessions.COOKIE,
            cookie,
            max_age=sessions.SESSION_SECONDS,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    def _session(self, request: Request) -> Principal | None:
        token = request.cookies.get(sessions.COOKIE)
        if not token:
            return None
        try:
            principal, _, _ = sessions.read(self._keys(), "session", token, self.binder.clock.now())
        except InvalidInput:
            return None
        if self.api.identity.known(principal) is False:
            return None
        return principal

    async def to_index(self, request: Request) -> Response:
        """``GET /ui``: to ``/ui/`` (the app mounts the MCP server at ``/``, which would answer 404)."""
        return RedirectResponse("/ui/", status_code=307, headers={"cache-control": "no-store"})

    async def index(self, request: Request) -> Response:
        """``GET /ui/``: the signed-in principal's newest workflows, each linked to its page."""
        principal = self._session(request)
        if principal is None:
            return HTMLResponse(_message(SIGN_IN_FIRST), status_code=401, headers=PAGE_HEADERS)
        workflows = await blocking(lambda: self.binder.list_workflows(principal, limit=INDEX_LIMIT))
        html = _ENV.get_template("index.html").render(principal=principal, workflows=workflows)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    async def page(self, request: Request) -> Response:
        """``GET /ui/workflows/{id}``: the inspector page (``401`` page without a session)."""
        principal = self._session(request)
        if principal is None:
            return HTMLResponse(_message(SIGN_IN_FIRST), status_code=401, headers=PAGE_HEADERS)
        workflow_id = request.path_params["workflow_id"]
        try:
            html = await blocking(self._render, principal, workflow_id)
        except WorkflowNotFound:
            return HTMLResponse(
                _message(f"workflow {workflow_id} not found"), status_code=404, headers=PAGE_HEADERS
            )
        return HTMLResponse(html, headers=PAGE_HEADERS)

    async def download(self, request: Request) -> Response:
        """``GET /ui/files/{id}/content``: a file's bytes for the signed-in principal."""
        principal = self._session(request)
        if principal is None:
            return HTMLResponse(_message("sign in first"), status_code=401, headers=PAGE_HEADERS)
        return await self.api.send_file(request, principal, request.path_params["file_id"])

    def _render(self, principal: Principal, workflow_id: str) -> str:
        workflow = self.binder.get_workflow(principal, workflow_id)
        messages = self.binder.list_messages(principal, workflow_id)
        resolutions = self.binder.list_resolutions(principal, workflow_id)
        previews = {d.id: self._preview(principal, d) for m in messages for d in m.documents}
        return _ENV.get_template("workflow.html").render(
            workflow=workflow,
            messages=messages,
            previews={k: v for k, v in previews.items() if v is not None},
            resolutions=resolutions,
            principal=principal,
        )

    def _preview(self, principal: Principal, doc: ChatDocument) -> dict[str, Any] | None:
        """What the page shows of a document: ``kind`` and its data (``None``: not readable)."""
        src = f"/ui/files/{quote(doc.file_id, safe='')}/content"
        base: dict[str, Any] = {"download": f"{src}?download=1", "src": src}
        mime = doc.mime_type.split(";", 1)[0].lower()
        try:
            if mime.startswith("image/") and mime != "image/svg+xml":
                return {**base, "kind": "image"}
            if mime == "application/pdf":
                return {**base, **self._pdf(principal, doc)}
            if mime in _TABLE_TYPES:
                head = self._head(principal, doc.file_id)
                delimiter = "\t" if mime == "text/tab-separated-values" else ","
                rows = list(csv.reader(io.StringIO(head), delimiter=delimiter))[:PREVIEW_ROWS]
                return {**base, "kind": "table", "rows": [r[:8] for r in rows]}
            if mime.startswith("text/") or mime in _TEXT_TYPES:
                head = self._head(principal, doc.file_id)
                lines = head.splitlines()[:PREVIEW_LINES]
                return {**base, "kind": "text", "text": "\n".join(line[:200] for line in lines)}
        except Exception as exc:  # a preview never breaks the page
            return {**base, "kind": "none", "note": f"no preview ({type(exc).__name__})"}
        return {**base, "kind": "none", "note": "no preview for this type"}

    def _head(self, principal: Principal, file_id: str) -> str:
        with self.binder.open_file(principal, file_id, PREVIEW_BYTES) as chunks:
            data = next(chunks, b"")
        return data[:PREVIEW_BYTES].decode("utf-8", "replace")

    def _pdf(self, principal: Principal, doc: ChatDocument) -> dict[str, Any]:
        if doc.file_size > PDF_PREVIEW_MAX_BYTES:
            return {"kind": "none", "note": "PDF (too large to count its pages here)"}
        try:
            import pypdf
        except ImportError:
            return {"kind": "none", "note": "PDF"}
        with self.binder.open_file(principal, doc.file_id) as chunks:
            data = b"".join(chunks)
        return {"kind": "pdf", "pages": len(pypdf.PdfReader(io.BytesIO(data)).pages)}


def _message(text: str) -> str:
    """A minimal HTML page with one escaped sentence."""
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>docbinder</title>"
        f"<p>{markupsafe.escape(text)}</p></html>"
    )
