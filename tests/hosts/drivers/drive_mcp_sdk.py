"""The official MCP Python SDK's ``mcp.Client``: no agent framework, the application gets the result.

It runs on docbinder's own interpreter (``mcp`` is docbinder's dependency).
What "reaches the model" here is the ``CallToolResult`` itself: every block and
``structuredContent`` are the application's to pass on. The calls are the
scripted conversation's (``hostlib.next_call``). Config:

- ``{"server": [...]}``: stdio (``Client(StdioServerParameters(...))``, which
  negotiates the protocol era itself);
- ``{"url": "http://127.0.0.1:P/mcp", "mode": "auto" | "legacy"}``: streamable
  HTTP, sessionless by default (``Client(url)`` probes ``server/discover``) or
  with the initialize handshake and its session (``mode="legacy"``). Each raw
  result is also reported under ``wire`` (there is no stdio tap over HTTP).
"""

from __future__ import annotations

from typing import Any

import anyio
import hostlib
from mcp import Client, StdioServerParameters


def view_of(result: Any) -> dict[str, Any]:
    """The view of one ``CallToolResult``: text blocks as text, image blocks as images."""
    texts = [block.text for block in result.content if block.type == "text"]
    images = [
        hostlib.image(block.mime_type, block.data)
        for block in result.content
        if block.type == "image"
    ]
    return hostlib.view(texts, images, raw=hostlib.jsonable(result))


async def main() -> None:
    cfg = hostlib.config()
    if "url" in cfg:
        target: Any = cfg["url"]
        mode = cfg.get("mode", "auto")
    else:
        target = StdioServerParameters(command=cfg["server"][0], args=cfg["server"][1:])
        mode = "auto"
    views: list[dict[str, Any]] = []
    wire: list[Any] = []
    async with Client(target, mode=mode) as client:
        listed = await client.list_tools()
        tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        while (decided := hostlib.next_call(views)) is not None:
            tool, arguments = decided
            result = await client.call_tool(tool, arguments)
            views.append(view_of(result))
            wire.append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        protocol = client.protocol_version
    extra = {"wire": wire, "tools": tools} if "url" in cfg else {}
    hostlib.emit("mcp-sdk", hostlib.versions("mcp"), views, protocol=protocol, **extra)


if __name__ == "__main__":
    anyio.run(main)
