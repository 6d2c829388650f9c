"""LangChain: the MCP adapters' tools in a ``create_agent`` loop, driven by langchain-core's fake chat model.

The model is langchain-core's ``GenericFakeChatModel`` (its messages come from
an iterator); the subclass only accepts ``bind_tools`` and keeps the messages
each turn received, so the iterator can answer from the ``ToolMessage``s: their
``content`` is what a chat model gets, their ``artifact`` stays with the host.
Config: ``{"server": [...], "client": "default" | "session"}``:

- ``default``: ``MultiServerMCPClient(...).get_tools()``, the adapters' documented
  default, which starts a new server process for every tool call;
- ``session``: ``client.session(name)`` + ``load_mcp_tools(session)``, one
  process for the whole run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import hostlib
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that takes tools and keeps every turn's input messages."""

    turns: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.turns.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def views_of(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """One view per ``ToolMessage``, in order."""
    views = []
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        blocks = message.content if isinstance(message.content, list) else [message.content]
        texts, images = [], []
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") in {"image", "image_url"}:
                data = str(block.get("base64") or block.get("data") or block.get("url") or "")
                images.append(hostlib.image(str(block.get("mime_type", "")), data))
        views.append(
            hostlib.view(
                texts,
                images,
                raw=hostlib.jsonable(message.content),
                aside=hostlib.jsonable(message.artifact),
            )
        )
    return views


async def main() -> None:
    cfg = hostlib.config()
    final: dict[str, Any] = {}
    model: ScriptedChatModel

    def script() -> Iterator[AIMessage]:
        while True:
            views = views_of(model.turns[-1])
            decided = hostlib.next_call(views)
            if decided is None:
                final["views"] = views
                yield AIMessage(content=hostlib.FINAL_ANSWER)
                return
            tool, arguments = decided
            call = {"name": tool, "args": arguments, "id": f"call-{len(views) + 1}"}
            yield AIMessage(content="", tool_calls=[call])

    model = ScriptedChatModel(messages=script())
    connection: Any = {
        "command": cfg["server"][0],
        "args": cfg["server"][1:],
        "transport": "stdio",
    }
    client = MultiServerMCPClient({"docbinder": connection})
    prompt = {"messages": [("user", "Write the notes and the dot, then read both.")]}
    if cfg.get("client", "default") == "default":
        agent = create_agent(model, await client.get_tools())
        result = await agent.ainvoke(prompt)
    else:
        async with client.session("docbinder") as session:
            agent = create_agent(model, await load_mcp_tools(session))
            result = await agent.ainvoke(prompt)
    hostlib.emit(
        "langchain",
        hostlib.versions("langchain-mcp-adapters", "langchain-core", "langchain", "mcp"),
        final["views"],
        final_output=str(result["messages"][-1].content),
    )


if __name__ == "__main__":
    asyncio.run(main())
