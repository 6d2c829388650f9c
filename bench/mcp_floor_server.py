"""The floor of a Python MCP server on the official SDK: the reference's two tools, nothing else.

``python bench/mcp_floor_server.py ROOT`` serves, over stdio with the SDK's own
``stdio_server()`` and low-level ``Server``, ``write_file {path, content}`` and
``read_text_file {path}`` on plain files under ``ROOT`` (no sync, no database,
one short text block per answer), as ``@modelcontextprotocol/server-filesystem``
does. ``bench/bench_mcp.py --floor`` runs it as a third side: what any Python
server on this SDK pays per call before doing its own work, so docbinder's
distance from the reference splits into the SDK's share and docbinder's own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

_PATH = {"type": "string", "description": "Path of the file under the served folder."}
TOOLS = [
    types.Tool(
        name="write_file",
        description="Write text to a file, replacing it.",
        input_schema={
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    types.Tool(
        name="read_text_file",
        description="Read a text file.",
        input_schema={"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    ),
]


def serve(root: Path) -> Server[Any]:
    """The low-level SDK server over the files under ``root``."""

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if root not in target.parents:
            raise ValueError(f"{path} is outside the served folder")
        return target

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        target = inside(str(arguments["path"]))
        if params.name == "write_file":
            content = str(arguments["content"])
            target.write_text(content, encoding="utf-8")
            text = f"Successfully wrote to {arguments['path']}"
        else:
            text = target.read_text(encoding="utf-8")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("mcp-floor", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(root: Path) -> None:
    server = serve(root.resolve())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
