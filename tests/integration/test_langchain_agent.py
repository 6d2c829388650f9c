"""docbinder's LangChain tools in a real LangGraph agent loop, driven by a scripted chat model.

The graph is LangGraph's own ``StateGraph`` with its prebuilt ``ToolNode`` and
``tools_condition``; the model is a LangChain ``BaseChatModel`` whose answers
are scripted from the messages it receives (no network). SQLite + local disk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

import base64

from jsonschema import Draft202012Validator
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from docbinder.integrations.langchain import docbinder_tools
from docbinder.toolset import DocbinderToolset
from tests.integration.frameworks import (
    ALICE,
    NOTES,
    PNG,
    RecordingToolset,
    assert_stored_and_attached,
    attach_png,
    ids_in,
    sloppy,
    sqlite_binder,
    text_of,
)
from tests.integration.shapes import CALLS, STRICT_CALLS, check_stored, strict_problems

Step = Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model answering turn n with ``steps[n](messages)``; records what it saw."""

    steps: list[Step]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.bound_tools = kwargs.get("tools", [])
        self.seen.append(list(messages))
        message = self.steps[len(self.seen) - 1](messages)
        return ChatResult(generations=[ChatGeneration(message=message)])


def tool_result(messages: list[BaseMessage], call_id: str) -> ToolMessage:
    found = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id]
    assert len(found) == 1
    return found[0]


def write_notes(messages: list[BaseMessage]) -> AIMessage:
    call = {"name": "write_file", "args": {"name": "notes.md", "content": NOTES}, "id": "call-1"}
    return AIMessage(content="", tool_calls=[call])


def read_back(messages: list[BaseMessage]) -> AIMessage:
    document_id, _ = ids_in(text_of(tool_result(messages, "call-1").content))
    args = {"documentList": sloppy(document_id)}
    return AIMessage(
        content="", tool_calls=[{"name": "read_documents", "args": args, "id": "call-2"}]
    )


def finish(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(content="The notes say revenue grew.")


def agent_graph(model: ScriptedChatModel, tools: list[BaseTool]) -> Any:
    bound = model.bind_tools(tools)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_agent_writes_then_reads_back_through_a_sloppy_reference(tmp_path: Path, mode: str) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    model = ScriptedChatModel(steps=[write_notes, read_back, finish])
    toolset = RecordingToolset(DocbinderToolset(run))
    graph = agent_graph(model, docbinder_tools(toolset))
    question = {"messages": [("user", "Write my notes to notes.md, then read them back.")]}

    final = graph.invoke(question) if mode == "sync" else anyio.run(graph.ainvoke, question)

    assert len(model.seen) == 3
    entry = "call" if mode == "sync" else "acall"  # async graph: the tools ran as coroutines
    assert toolset.entries == [(entry, "write_file"), (entry, "read_documents")]
    offered = {t["function"]["name"]: t["function"] for t in model.bound_tools}
    assert list(offered) == [spec.name for spec in toolset.specs]
    for spec in toolset.specs:  # the model sees the shared names, descriptions and schemas
        assert offered[spec.name]["description"] == spec.description
        assert offered[spec.name]["parameters"] == dict(spec.parameters)
    written = tool_result(model.seen[1], "call-1")
    document_id, file_id = ids_in(text_of(written.content))
    assert written.artifact == {"file_ids": [file_id], "document_ids": [document_id]}
    read = tool_result(model.seen[2], "call-2")
    assert read.status == "success"
    assert "revenue grew 12% in the north region" in text_of(read.content)
    assert final["messages"][-1].content == "The notes say revenue grew."
    assert_stored_and_attached(binder, run, document_id, file_id)
    # The id of the model's ToolCall, as LangChain handed it to the tool, is the provenance's.
    assert [c["tool_call_id"] for c in toolset.host_calls] == ["call-1", "call-2"]
    provenance = binder.get_file(ALICE, file_id).provenance
    assert (provenance.tool, provenance.tool_call_id) == ("write_file", "call-1")
    assert provenance.run_id == run.context.run_id and provenance.model is None


def test_read_documents_gives_a_vision_model_the_image_as_a_content_block(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    document_id = attach_png(run)

    def read_chart(messages: list[BaseMessage]) -> AIMessage:
        call = {"name": "read_documents", "args": {"documentList": f"docItem:{document_id}"}}
        return AIMessage(content="", tool_calls=[{**call, "id": "call-1"}])

    model = ScriptedChatModel(steps=[read_chart, finish])
    graph = agent_graph(model, docbinder_tools(DocbinderToolset(run)))

    anyio.run(graph.ainvoke, {"messages": [("user", "What does the chart show?")]})

    content = tool_result(model.seen[1], "call-1").content
    assert isinstance(content, list)
    images = [b for b in content if isinstance(b, dict) and b.get("type") == "image"]
    assert images == [
        {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"}
    ]
    assert "chart.png" in text_of(content)


def test_a_failed_call_reaches_the_model_as_an_error_tool_message(tmp_path: Path) -> None:
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)

    def bad_write(messages: list[BaseMessage]) -> AIMessage:
        call = {"name": "write_file", "args": {"name": "", "content": "x"}, "id": "call-1"}
        return AIMessage(content="", tool_calls=[call])

    model = ScriptedChatModel(steps=[bad_write, finish])
    graph = agent_graph(model, docbinder_tools(DocbinderToolset(run)))
    graph.invoke({"messages": [("user", "Write it.")]})

    failed = tool_result(model.seen[1], "call-1")
    assert failed.status == "error"
    assert "\n" not in text_of(failed.content) and "Traceback" not in text_of(failed.content)
    assert run.list_files() == []


@pytest.mark.parametrize("strict", [False, True])
def test_model_shaped_arguments_in_a_langgraph_loop(tmp_path: Path, strict: bool) -> None:
    """Issue 20 through ToolNode: the default schemas take objects, the strict ones JSON text."""
    binder = sqlite_binder(tmp_path)
    run = binder.start_new_run(ALICE)
    calls = STRICT_CALLS if strict else CALLS
    tools = docbinder_tools(DocbinderToolset(run), strict=strict)
    offered = {
        t.name: convert_to_openai_tool(t, strict=strict)["function"]["parameters"] for t in tools
    }

    def call_all(messages: list[BaseMessage]) -> AIMessage:
        tool_calls = [{"name": tool, "args": args, "id": key} for key, tool, args in calls]
        return AIMessage(content="", tool_calls=tool_calls)

    model = ScriptedChatModel(steps=[call_all, finish])
    anyio.run(agent_graph(model, tools).ainvoke, {"messages": [("user", "Do it all.")]})

    results = {}
    for key, tool, args in calls:
        Draft202012Validator(offered[tool]).validate(args)
        message = tool_result(model.seen[1], key)
        results[key] = (text_of(message.content), message.status == "error")
    check_stored(run, results)
    if strict:  # LangChain's own strict conversion leaves every schema valid for strict mode
        assert {name: strict_problems(p) for name, p in offered.items() if strict_problems(p)} == {}
    else:
        assert strict_problems(offered["create_chart"])  # open objects: not for strict mode
