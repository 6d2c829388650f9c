"""docbinder as a Model Context Protocol server (``docbinder mcp``; extra ``[mcp]``).

:class:`DocbinderMcpServer` serves the tool set's tools, each with the
optional ``workflow`` handle and an ``outputSchema``, and the workflows'
documents as resources, over stdio or streamable HTTP (both protocol eras),
on the official MCP Python SDK (ADR 0054-0056). :class:`BearerTokens` maps
token hashes to principals for HTTP. Importing this package without the
``mcp`` package raises :class:`~docbinder.domain.errors.MissingExtra`.
"""

from docbinder.domain.errors import MissingExtra

try:
    import mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise MissingExtra("the MCP server", "mcp", "mcp") from exc

from docbinder.integrations.mcp.server import (
    DEFAULT_MAX_RESOURCE_BYTES,
    DOCUMENT_CACHE_MS,
    MAX_CONVERSATIONS_PER_PRINCIPAL,
    MAX_RUNS_PER_PRINCIPAL,
    NO_WORKFLOW_HINT,
    URI_PREFIX,
    URI_TEMPLATE,
    DocbinderMcpServer,
    check_http_host,
    document_uri,
    error_result,
    is_loopback,
    read_handle,
    tool_result,
    unknown_handle,
    workflow_line,
)
from docbinder.integrations.mcp.tokens import BearerTokens, PrincipalTokens, token_hash

__all__ = [
    "DEFAULT_MAX_RESOURCE_BYTES",
    "DOCUMENT_CACHE_MS",
    "MAX_CONVERSATIONS_PER_PRINCIPAL",
    "MAX_RUNS_PER_PRINCIPAL",
    "NO_WORKFLOW_HINT",
    "URI_PREFIX",
    "URI_TEMPLATE",
    "BearerTokens",
    "DocbinderMcpServer",
    "PrincipalTokens",
    "check_http_host",
    "document_uri",
    "error_result",
    "is_loopback",
    "read_handle",
    "token_hash",
    "tool_result",
    "unknown_handle",
    "workflow_line",
]
