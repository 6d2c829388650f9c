"""``docbinder serve``: files over HTTP, signed expiring links, a page to inspect a workflow.

:func:`build_app` is the ASGI app (Starlette) over a
:class:`~docbinder.application.DocBinder`; :class:`FixedIdentity`,
:class:`TokenIdentity` and :class:`OidcIdentity` say who a request acts as.
Needs the ``serve`` extra (Starlette, uvicorn, PyJWT, Jinja2, python-multipart,
and the MCP SDK for ``/mcp``): importing this package without it raises
:class:`~docbinder.domain.errors.MissingExtra`.
"""

from docbinder.domain.errors import MissingExtra

try:
    import jinja2  # noqa: F401
    import jwt  # noqa: F401
    import python_multipart  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise MissingExtra("docbinder serve", "serve", exc.name or "starlette") from exc

from docbinder.integrations.http.app import HttpApi, build_app, send_bytes
from docbinder.integrations.http.auth import (
    FixedIdentity,
    Identity,
    OidcIdentity,
    OidcTokens,
    TokenIdentity,
    check_bind,
)
from docbinder.integrations.http.errors import STATUS_FOR, status_of
from docbinder.integrations.http.openapi import openapi_document

__all__ = [
    "STATUS_FOR",
    "FixedIdentity",
    "HttpApi",
    "Identity",
    "OidcIdentity",
    "OidcTokens",
    "TokenIdentity",
    "build_app",
    "check_bind",
    "openapi_document",
    "send_bytes",
    "status_of",
]
