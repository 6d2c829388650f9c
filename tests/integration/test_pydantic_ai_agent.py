"""docbinder's pydantic-ai toolset in a real ``Agent`` run, driven by pydantic-ai's FunctionModel.

``pydantic_ai.models.function.FunctionModel`` answers each turn from the
message history it receives (no network): it copies the reference out of the
first tool result. SQLite + local disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from jsonschema import Draft202012Validator
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

from docbinder.domain.model import arguments_sha256
from docbinder.integrations.pydantic_ai import docbinder_toolset
from docbinder.toolset import DocbinderToolset
from tests.integration.frameworks import (
    ALICE,
    NOTES,
    PNG,
    assert_stored_and_attached,
    attach_png,
    ids_in,
    sloppy,
    sqlite_binder,
)
from tests.integration.shapes import CALLS, check_stored


def returned(messages: list[ModelMessage], call_id: str) -> ToolReturnPart:
    found = [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id == call_id
    ]
    assert len(found) == 1, messages
    return found[0]


def test_agent_writes_then_reads_back_through_a_sloppy_reference(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    turns: list[list[ModelMessage]] = []
    offered: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns.append(list(messages))
        offered[:] = info.function_tools
        if len(turns) == 1:
            args = {"name": "notes.md", "content": NOTES}
            return ModelResponse(parts=[ToolCallPart("write_file", args, tool_call_id="call-1")])
        if len(turns) == 2:
            document_id, _ = ids_in(returned(messages, "call-1").model_response_str())
            args = {"documentList": sloppy(document_id)}
            return ModelResponse(
                parts=[ToolCallPart("read_documents", args, tool_call_id="call-2")]
            )
        return ModelResponse(parts=[TextPart("The notes say revenue grew.")])

    toolset = DocbinderToolset(run)
    function_model = FunctionModel(model)
    agent = Agent(function_model, toolsets=[docbinder_toolset(toolset)])
    result = agent.run_sync("Write my notes, then read them back.")

    assert result.output == "The notes say revenue grew."
    assert len(turns) == 3
    assert [t.name for t in offered] == [spec.name for spec in toolset.specs]
    for tool, spec in zip(offered, toolset.specs, strict=True):
        assert tool.description == spec.description
        assert tool.parameters_json_schema == dict(spec.parameters)
    written = returned(turns[1], "call-1")
    document_id, file_id = ids_in(written.model_response_str())
    assert written.metadata == {"file_ids": [file_id], "document_ids": [document_id]}
    read = returned(turns[2], "call-2")
    assert read.outcome == "success"
    assert "revenue grew 12% in the north region" in read.model_response_str()
    assert_stored_and_attached(binder, run, document_id, file_id)
    # pydantic-ai's RunContext gives the call id and the model's name.
    provenance = binder.get_file(ALICE, file_id).provenance
    assert (provenance.tool, provenance.tool_call_id) == ("write_file", "call-1")
    assert provenance.model == function_model.model_name
    assert provenance.args_sha256 == arguments_sha256({"name": "notes.md", "content": NOTES})


def test_read_documents_gives_a_vision_model_the_image_as_binary_content(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    document_id = attach_png(run)
    turns: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns.append(list(messages))
        if len(turns) == 1:
            args = {"documentList": f"docItem:{document_id}"}
            return ModelResponse(
                parts=[ToolCallPart("read_documents", args, tool_call_id="call-1")]
            )
        return ModelResponse(parts=[TextPart("A chart.")])

    agent = Agent(FunctionModel(model), toolsets=[docbinder_toolset(DocbinderToolset(run))])
    agent.run_sync("What does the chart show?")

    read = returned(turns[1], "call-1")
    images = [f for f in read.files if isinstance(f, BinaryContent)]
    assert [(f.data, f.media_type, f.is_image) for f in images] == [(PNG, "image/png", True)]
    assert "chart.png" in read.model_response_str()
    assert read.metadata == {
        "file_ids": [run.resolve(f"docItem:{document_id}").documents[0].file.id],
        "document_ids": [document_id],
    }


def test_a_failed_call_reaches_the_model_as_a_failed_tool_result(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    turns: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns.append(list(messages))
        if len(turns) == 1:
            args = {"name": "", "content": "x"}
            return ModelResponse(parts=[ToolCallPart("write_file", args, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("Sorry.")])

    agent = Agent(FunctionModel(model), toolsets=[docbinder_toolset(DocbinderToolset(run))])
    result = agent.run_sync("Write it.")

    assert result.output == "Sorry."
    failed = returned(turns[1], "call-1")
    assert failed.outcome == "failed"
    message = failed.model_response_str(wrap_if_error=False)
    assert message and "\n" not in message and "Traceback" not in message
    assert run.list_files() == []


def test_model_shaped_arguments_in_an_agent_run(tmp_path: Path) -> None:
    """Issue 20 through pydantic-ai: objects in the arguments, strict mode off where they are."""
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    turns: list[list[ModelMessage]] = []
    offered: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns.append(list(messages))
        offered.update({t.name: t for t in info.function_tools})
        if len(turns) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool, args, tool_call_id=key) for key, tool, args in CALLS]
            )
        return ModelResponse(parts=[TextPart("Done.")])

    agent = Agent(FunctionModel(model), toolsets=[docbinder_toolset(DocbinderToolset(run))])
    assert agent.run_sync("Do it all.").output == "Done."

    results = {}
    for key, tool, args in CALLS:
        Draft202012Validator(offered[tool].parameters_json_schema).validate(args)
        part = returned(turns[1], key)
        results[key] = (part.model_response_str(wrap_if_error=False), part.outcome == "failed")
    check_stored(run, results)
    assert {name for name, t in offered.items() if t.strict is False} == {
        "write_file",
        "create_chart",
        "read_documents",
    }
    transformer = OpenAIJsonSchemaTransformer(offered["create_chart"].parameters_json_schema)
    spec = transformer.walk()["properties"]["spec"]
    assert {"type": "object", "additionalProperties": True, "properties": {}} in spec["anyOf"]
