"""Google ADK: ``McpToolset`` over stdio in ADK's own ``Runner``, driven by a scripted ``BaseLlm``.

ADK's own tests drive agents with a ``BaseLlm`` subclass whose
``generate_content_async`` yields prepared responses; this one decides each
response from the ``LlmRequest`` it gets, whose ``function_response`` parts are
exactly what ADK sends the model: the response dict is given to the model as
JSON, images only where a part carries ``inline_data``. Config: ``{"server": [...]}``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import hostlib
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.genai import types
from mcp import StdioServerParameters
from pydantic import Field


def views_of(request: LlmRequest) -> list[dict[str, Any]]:
    """One view per function response in the request, in order."""
    views = []
    for content in request.contents:
        for part in content.parts or []:
            response = part.function_response
            if response is None:
                continue
            images = [
                hostlib.image(p.inline_data.mime_type or "", p.inline_data.data or b"")
                for p in getattr(response, "parts", None) or []
                if p.inline_data is not None
                and (p.inline_data.mime_type or "").startswith("image/")
            ]
            payload = hostlib.jsonable(response.response)
            views.append(hostlib.view([json.dumps(payload)], images, raw=payload))
    return views


class ScriptedLlm(BaseLlm):
    """Answers each request with the scripted conversation's next step."""

    final: dict[str, Any] = Field(default_factory=dict)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        views = views_of(llm_request)
        decided = hostlib.next_call(views)
        if decided is None:
            self.final["views"] = views
            part = types.Part(text=hostlib.FINAL_ANSWER)
        else:
            tool, arguments = decided
            part = types.Part.from_function_call(name=tool, args=arguments)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def main() -> None:
    cfg = hostlib.config()
    toolset = McpToolset(
        connection_params=StdioConnectionParams(
            server_params=StdioServerParameters(command=cfg["server"][0], args=cfg["server"][1:]),
            timeout=120,
        )
    )
    model = ScriptedLlm(model="scripted")
    agent = LlmAgent(name="analyst", model=model, instruction="Use the tools.", tools=[toolset])
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="hosts", user_id="alice")
    runner = Runner(app_name="hosts", agent=agent, session_service=sessions)
    message = types.Content(
        role="user", parts=[types.Part(text="Write the notes and the dot, then read both.")]
    )
    answer = ""
    try:
        async for event in runner.run_async(
            user_id="alice", session_id=session.id, new_message=message
        ):
            if event.is_final_response() and event.content and event.content.parts:
                answer = event.content.parts[0].text or ""
    finally:
        await toolset.close()
    hostlib.emit(
        "adk",
        hostlib.versions("google-adk", "google-genai", "mcp"),
        model.final["views"],
        final_output=answer,
    )


if __name__ == "__main__":
    asyncio.run(main())
