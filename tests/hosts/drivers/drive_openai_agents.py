"""OpenAI Agents SDK: ``MCPServerStdio`` in the SDK's own ``Runner``, driven by its ``ScriptedModel``.

``agents.testing.ScriptedModel`` is the SDK's deterministic model; each step
answers from the recorded call, whose ``input`` holds every
``function_call_output`` item the SDK built from the MCP results: the exact
items a real model would get. Config: ``{"server": [...], "structured": bool}``
(``use_structured_content``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import hostlib
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call


def views_of(call: ModelCall) -> list[dict[str, Any]]:
    """One view per ``function_call_output`` item the model received, in order."""
    views = []
    for item in call.input if isinstance(call.input, list) else []:
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            continue
        output = item.get("output")
        parts = output if isinstance(output, list) else [output]
        texts, images = [], []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in {"input_text", "text"}:
                texts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in {"input_image", "image"}:
                images.append(hostlib.image("", str(part.get("image_url", ""))))
        views.append(hostlib.view(texts, images, raw=hostlib.jsonable(output)))
    return views


async def main() -> None:
    cfg = hostlib.config()
    final: dict[str, Any] = {}

    def respond(call: ModelCall) -> Any:
        views = views_of(call)
        decided = hostlib.next_call(views)
        if decided is None:
            final["views"] = views
            return [assistant_message(hostlib.FINAL_ANSWER)]
        tool, arguments = decided
        return [function_call(tool, arguments, call_id=f"call-{len(views) + 1}")]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(4)])
    async with MCPServerStdio(
        name="docbinder",
        params={"command": cfg["server"][0], "args": cfg["server"][1:]},
        client_session_timeout_seconds=120,
        use_structured_content=bool(cfg.get("structured")),
    ) as server:
        agent = Agent(
            name="analyst", instructions="Use the tools.", mcp_servers=[server], model=model
        )
        result = await Runner.run(
            agent,
            "Write the notes and the dot, then read both.",
            run_config=RunConfig(tracing_disabled=True),
        )
    model.assert_complete()
    hostlib.emit(
        "openai-agents",
        hostlib.versions("openai-agents", "mcp"),
        final["views"],
        final_output=str(result.final_output),
    )


if __name__ == "__main__":
    asyncio.run(main())
