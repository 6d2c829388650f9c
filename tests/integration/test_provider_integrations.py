"""Provider copies handed over natively by the integrations (B22), in each host's own machinery.

pydantic-ai: an ``Agent`` over its real ``AnthropicModel``, ``OpenAIResponsesModel`` and
``GoogleModel``, whose SDK clients point at the local provider server; the prompt carries
:func:`~docbinder.integrations.pydantic_ai.uploaded_file`, and the server sees the provider's
native block naming the copy. OpenAI Agents: a function tool returns
:func:`~docbinder.integrations.openai_agents.file_tool_output` in the SDK's ``Runner`` with its
``ScriptedModel``; the next model call receives ``input_file`` / ``input_image`` with the id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("anthropic")
pytest.importorskip("openai")
pytest.importorskip("google.genai")

import anthropic
import openai
from google import genai

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from agents import Agent as AgentsAgent
from agents import RunConfig, Runner, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic_ai import Agent
from pydantic_ai.messages import UploadedFile
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import Principal
from docbinder.domain.providers import ProviderFileRef
from docbinder.integrations.openai_agents import file_tool_output
from docbinder.integrations.pydantic_ai import uploaded_file
from docbinder.testing.provider_server import ProviderServer
from tests.integration.test_provider_blocks import PNG
from tests.integration.test_provider_files import PDF, clients
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme")


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture
def binder(server: ProviderServer) -> DocBinder:
    binder = wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())
    for files in clients(server).values():
        binder.providers.register(files)
    return binder


def provided(binder: DocBinder, provider: str, name: str = "report.pdf") -> ProviderFileRef:
    data, mime = (PNG, "image/png") if name.endswith(".png") else (PDF, "application/pdf")
    item = binder.store_file(ALICE, name, data, mime_type=mime).item
    return binder.start_new_run(ALICE).provide_file(item.id, provider, "main")


def pydantic_ai_model(provider: str, server: ProviderServer) -> Any:
    if provider == "anthropic":
        client = anthropic.AsyncAnthropic(api_key="t", base_url=server.url, max_retries=0)
        return AnthropicModel("claude-test", provider=AnthropicProvider(anthropic_client=client))
    if provider == "openai":
        oclient = openai.AsyncOpenAI(api_key="t", base_url=server.openai_base_url, max_retries=0)
        return OpenAIResponsesModel("gpt-test", provider=OpenAIProvider(openai_client=oclient))
    gclient = genai.Client(api_key="t", http_options={"base_url": server.url})
    return GoogleModel("gemini-test", provider=GoogleProvider(client=gclient))


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_pydantic_ai_sends_the_uploaded_file_as_the_providers_block(
    binder: DocBinder, server: ProviderServer, provider: str
) -> None:
    ref = provided(binder, provider)
    part = uploaded_file(ref)
    assert isinstance(part, UploadedFile) and part.media_type == "application/pdf"
    agent = Agent(pydantic_ai_model(provider, server))
    result = agent.run_sync(["What does the report say?", part])
    assert result.output == "read"
    assert server.rejected == []
    (block,) = [b for p, b in server.accepted if p == provider]
    if provider == "anthropic":
        assert block["type"] == "document"
        assert block["source"] == {"type": "file", "file_id": ref.file_id}
    elif provider == "openai":
        assert (block["type"], block["file_id"]) == ("input_file", ref.file_id)
    else:
        file_data = block.get("fileData") or block["file_data"]
        assert ref.uri in file_data.values()
    assert len(server.uploads_of(provider)) == 1  # the bytes went up once, with provide_file


def test_openai_agents_tool_output_names_the_openai_copy(
    binder: DocBinder, server: ProviderServer
) -> None:
    pdf = provided(binder, "openai")
    png = provided(binder, "openai", "chart.png")

    @function_tool
    def fetch_report() -> Any:
        """Hand the model the quarterly report and its chart."""
        return [file_tool_output(pdf), file_tool_output(png)]

    seen: dict[str, Any] = {}

    def finish(call: ModelCall) -> Any:
        (output,) = [
            item["output"]
            for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        seen["output"] = output
        return [assistant_message("Read it.")]

    model = ScriptedModel(
        [[function_call("fetch_report", {}, call_id="c1")], ModelStep.respond(finish)]
    )
    agent = AgentsAgent(name="analyst", tools=[fetch_report], model=model)
    result = anyio.run(
        lambda: Runner.run(agent, "Read the report", run_config=RunConfig(tracing_disabled=True))
    )
    assert result.final_output == "Read it."
    parts = seen["output"]
    assert [(p["type"], p.get("file_id")) for p in parts] == [
        ("input_file", pdf.file_id),
        ("input_image", png.file_id),
    ]
    with pytest.raises(InvalidInput, match="OpenAI file ids only"):
        file_tool_output(provided(binder, "anthropic"))
