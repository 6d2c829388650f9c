"""docbinder's function tools in the OpenAI Agents SDK's own Runner, driven by its ScriptedModel.

``agents.testing.ScriptedModel`` is the SDK's deterministic model: each step
answers from the recorded call (its input items), so the second step copies
the reference out of the first tool output. No network; SQLite + local disk.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.items import ToolCallOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from jsonschema import Draft202012Validator, ValidationError

from docbinder.integrations.openai_agents import docbinder_tools, strict_parameters
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
from tests.integration.shapes import CALLS, STRICT_CALLS, check_stored, strict_problems


def output_of(call: ModelCall, call_id: str) -> Any:
    """The ``function_call_output`` the model receives for ``call_id``."""
    found = [
        item["output"]
        for item in call.input
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and item.get("call_id") == call_id
    ]
    assert len(found) == 1, call.input
    return found[0]


def text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "".join(part.get("text", "") for part in output if part.get("type") == "input_text")


def test_agent_writes_then_reads_back_through_a_sloppy_reference(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    seen: dict[str, Any] = {}

    def read_back(call: ModelCall) -> Any:
        document_id, _ = ids_in(text_of(output_of(call, "call-1")))
        return [
            function_call("read_documents", {"documentList": sloppy(document_id)}, call_id="call-2")
        ]

    def finish(call: ModelCall) -> Any:
        seen["read"] = output_of(call, "call-2")
        return [assistant_message("The notes say revenue grew.")]

    model = ScriptedModel(
        [
            [
                function_call(
                    "write_file",
                    {"name": "notes.md", "content": NOTES, "encoding": None},
                    call_id="call-1",
                )
            ],
            ModelStep.respond(read_back),
            ModelStep.respond(finish),
        ]
    )
    toolset = DocbinderToolset(run)
    agent = Agent(
        name="analyst", instructions="Keep notes.", tools=docbinder_tools(toolset), model=model
    )

    async def main() -> Any:
        return await Runner.run(
            agent,
            "Write my notes, then read them back.",
            run_config=RunConfig(tracing_disabled=True),
        )

    result = anyio.run(main)

    model.assert_complete()
    assert result.final_output == "The notes say revenue grew."
    offered = {t.name: t for t in model.calls[0].tools if isinstance(t, FunctionTool)}
    assert list(offered) == [spec.name for spec in toolset.specs]
    for spec in toolset.specs:
        assert offered[spec.name].description == spec.description
        assert offered[spec.name].strict_json_schema
        assert set(offered[spec.name].params_json_schema["properties"]) == set(
            spec.parameters["properties"]
        )
    schema = offered["write_file"].params_json_schema
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])
    assert "revenue grew 12% in the north region" in text_of(seen["read"])
    outputs = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    written = outputs[0]
    document_id, file_id = ids_in(str(written.output))
    assert written.custom_data == {"file_ids": [file_id], "document_ids": [document_id]}
    assert json.loads(json.dumps(outputs[1].custom_data))["document_ids"] == [document_id]
    assert_stored_and_attached(binder, run, document_id, file_id)
    # The SDK's ToolContext.tool_call_id is the provenance's call id.
    provenance = binder.get_file(ALICE, file_id).provenance
    assert (provenance.tool, provenance.tool_call_id) == ("write_file", "call-1")
    assert provenance.run_id == run.context.run_id


def run_agent(tools: list[FunctionTool], steps: list[Any]) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel(steps)
    agent = Agent(name="analyst", tools=tools, model=model)

    async def main() -> Any:
        return await Runner.run(agent, "Go.", run_config=RunConfig(tracing_disabled=True))

    return model, anyio.run(main)


def test_read_documents_gives_the_model_the_image_as_input_image(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    document_id = attach_png(run)
    seen: dict[str, Any] = {}

    def finish(call: ModelCall) -> Any:
        seen["read"] = output_of(call, "call-1")
        return [assistant_message("A chart.")]

    read = function_call(
        "read_documents", {"documentList": f"docItem:{document_id}"}, call_id="call-1"
    )
    run_agent(docbinder_tools(DocbinderToolset(run)), [[read], ModelStep.respond(finish)])

    output = seen["read"]
    assert isinstance(output, list)
    assert output[0]["type"] == "input_text" and "chart.png" in output[0]["text"]
    images = [p for p in output if p["type"] == "input_image"]
    assert images == [
        {
            "type": "input_image",
            "image_url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
            "detail": "auto",
        }
    ]


def test_a_failed_call_reaches_the_model_as_its_one_line_message(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    seen: dict[str, Any] = {}

    def finish(call: ModelCall) -> Any:
        seen["failed"] = output_of(call, "call-1")
        return [assistant_message("Sorry.")]

    bad = function_call(
        "write_file", {"name": "", "content": "x", "encoding": None}, call_id="call-1"
    )
    run_agent(docbinder_tools(DocbinderToolset(run)), [[bad], ModelStep.respond(finish)])

    assert isinstance(seen["failed"], str) and seen["failed"]
    assert "\n" not in seen["failed"] and "Traceback" not in seen["failed"]
    assert run.list_files() == []


def test_strict_schemas_make_optional_arguments_nullable() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "mode": {"type": "string", "enum": ["create", "append"], "default": "create"},
            "limit": {"type": "integer", "default": 10},
            "documentList": {"description": "any shape"},
        },
        "required": ["name", "documentList"],
    }

    strict = strict_parameters(parameters)

    assert strict["required"] == ["name", "mode", "limit", "documentList"]
    assert strict["properties"]["name"] == {"type": "string"}
    assert strict["properties"]["limit"] == {"type": ["integer", "null"]}
    assert strict["properties"]["mode"] == {
        "anyOf": [{"type": "string", "enum": ["create", "append"]}, {"type": "null"}]
    }
    assert strict["properties"]["documentList"]["anyOf"][0] == {"type": "string"}
    assert parameters["properties"]["limit"] == {"type": "integer", "default": 10}
    assert parameters["required"] == ["name", "documentList"]  # the shared schema is unchanged


def test_model_shaped_arguments_under_strict_schemas(tmp_path: Path) -> None:
    """Issue 20 through the Runner: strict schemas, objects sent as JSON text, same results."""
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    seen: dict[str, Any] = {}

    def finish(call: ModelCall) -> Any:
        seen.update({key: output_of(call, key) for key, _, _ in STRICT_CALLS})
        return [assistant_message("Done.")]

    calls = [function_call(tool, args, call_id=key) for key, tool, args in STRICT_CALLS]
    tools = docbinder_tools(DocbinderToolset(run))
    model, _ = run_agent(tools, [calls, ModelStep.respond(finish)])

    offered = {t.name: t for t in model.calls[0].tools if isinstance(t, FunctionTool)}
    for name, tool in offered.items():
        assert tool.strict_json_schema
        assert strict_problems(tool.params_json_schema) == [], name
    for _, tool_name, args in STRICT_CALLS:
        Draft202012Validator(offered[tool_name].params_json_schema).validate(args)
    as_objects = {key: (tool, args) for key, tool, args in CALLS}
    for key in ("chart", "json"):  # under strict mode an object is sent as JSON text
        tool_name, args = as_objects[key]
        with pytest.raises(ValidationError):
            Draft202012Validator(offered[tool_name].params_json_schema).validate(args)
    # The SDK gives a failure to the model as the output text: the reason is checked by text.
    check_stored(run, {key: (str(seen[key]), key == "wrong") for key in seen})
