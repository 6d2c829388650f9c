"""A scripted ADK model for tests: a real ``BaseLlm`` subclass that replays canned responses.

ADK's own tests drive agents the same way (a model whose
``generate_content_async`` yields prepared ``LlmResponse`` objects), so the
Runner, the agent, the tool calls and the artifact service are all ADK's
machinery; only the model's choices are fixed and nothing leaves the machine.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field


def call(name: str, **args: Any) -> LlmResponse:
    """A model turn that calls tool ``name`` with ``args``."""
    return LlmResponse(
        content=types.Content(
            role="model", parts=[types.Part.from_function_call(name=name, args=args)]
        )
    )


def say(text: str) -> LlmResponse:
    """A model turn that answers ``text`` (ends the invocation)."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ScriptedModel(BaseLlm):
    """Replays ``script`` one response per model call; records every request it got."""

    script: list[LlmResponse]
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        if not self.script:
            raise AssertionError("the agent asked the model more often than scripted")
        yield self.script.pop(0)


def function_responses(model: ScriptedModel) -> list[dict[str, Any]]:
    """Every function response the model was shown, in order (the tools' return values)."""
    seen: list[dict[str, Any]] = []
    last = model.requests[-1] if model.requests else None
    for content in last.contents if last is not None else []:
        for part in content.parts or []:
            if part.function_response is not None and part.function_response.response:
                seen.append(dict(part.function_response.response))
    return seen
