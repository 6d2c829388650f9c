"""pydantic-ai: ``MCPToolset`` over stdio in a real ``Agent`` run, driven by its ``FunctionModel``.

``FunctionModel`` answers each turn from the message history pydantic-ai built:
each tool result is a ``ToolReturnPart`` (its ``model_response_str()`` is the
text a model gets, its ``files`` the images it gets as images) or, for a tool
error, a ``RetryPromptPart``. Config: ``{"server": [...]}``.
"""

from __future__ import annotations

from typing import Any

import hostlib
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel


def views_of(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """One view per tool result in the history, in order."""
    views = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                images = [
                    hostlib.image(f.media_type, f.data)
                    for f in part.files
                    if isinstance(f, BinaryContent) and f.is_image
                ]
                views.append(
                    hostlib.view(
                        [part.model_response_str()], images, raw=hostlib.jsonable(part.content)
                    )
                )
            elif isinstance(part, RetryPromptPart) and part.tool_name:
                text = part.model_response()
                views.append(hostlib.view([text], raw=text))
    return views


def main() -> None:
    cfg = hostlib.config()
    final: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        views = views_of(messages)
        decided = hostlib.next_call(views)
        if decided is None:
            final["views"] = views
            return ModelResponse(parts=[TextPart(hostlib.FINAL_ANSWER)])
        tool, arguments = decided
        return ModelResponse(
            parts=[ToolCallPart(tool, arguments, tool_call_id=f"call-{len(views) + 1}")]
        )

    server = StdioTransport(command=cfg["server"][0], args=list(cfg["server"][1:]))
    # The server may take several seconds to start on a loaded machine: wait for it.
    toolset = MCPToolset(server, id="docbinder", init_timeout=120, read_timeout=120)
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    result = agent.run_sync("Write the notes and the dot, then read both.")
    hostlib.emit(
        "pydantic-ai",
        hostlib.versions("pydantic-ai-slim", "fastmcp-slim", "mcp"),
        final["views"],
        final_output=str(result.output),
    )


if __name__ == "__main__":
    main()
