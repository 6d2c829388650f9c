"""docbinder as a Model Context Protocol server (``docbinder mcp``; extra ``[mcp]``).

:class:`DocbinderMcpServer` serves the tool set's tools and the active
workflow's documents as resources over stdio or streamable HTTP, on the
official MCP Python SDK. :class:`BearerTokens` maps token hashes to
principals for HTTP. Importing this package without the ``mcp`` package
raises :class:`~docbinder.domain.errors.MissingExtra`.
"""

from docbinder.domain.errors import MissingExtra

try:
    import mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise MissingExtra("the MCP server", "mcp", "mcp") from exc

from docbinder.integrations.mcp.server import (
    DEFAULT_MAX_RESOURCE_BYTES,
    URI_PREFIX,
    URI_TEMPLATE,
    DocbinderMcpServer,
    check_http_host,
    is_loopback,
    tool_result,
)
from docbinder.integrations.mcp.tokens import BearerTokens, token_hash

__all__ = [
    "DEFAULT_MAX_RESOURCE_BYTES",
    "URI_PREFIX",
    "URI_TEMPLATE",
    "BearerTokens",
    "DocbinderMcpServer",
    "check_http_host",
    "is_loopback",
    "token_hash",
    "tool_result",
]
