"""LangChain's own standard tool tests (``langchain-tests``) for every docbinder LangChain tool.

For each tool of the tool set, one ``ToolsUnitTests`` and one
``ToolsIntegrationTests`` class, with an example call that does real work in a
run on the in-memory backends (a written file, a local data source).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import attrs
import pytest

pytest.importorskip("langchain_tests")

from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from docbinder.application.binder import Run
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.integrations.langchain import docbinder_tools
from docbinder.tools import LocalDirectorySource
from tests.integration.frameworks import ALICE

SAMPLES = Path(__file__).resolve().parents[2] / "docbinder" / "samples"


@pytest.fixture
def anyio_backend() -> str:
    """LangChain's async callbacks run on asyncio."""
    return "asyncio"


@attrs.frozen
class World:
    run: Run
    tools: dict[str, BaseTool]
    document_id: str
    file_id: str


@cache
def world() -> World:
    settings = Settings.load({"database_url": "memory://", "blob_url": "memory://"}, environ={})
    run = build_binder(settings).start_new_run(ALICE)
    stored = run.produce_file(
        "notes.md", b"# Notes\nrevenue grew\n", verb="Wrote", label="writeFile:notes.md"
    )
    assert stored.document_id is not None
    sources = {"samples": LocalDirectorySource(SAMPLES)}
    tools = {t.name: t for t in docbinder_tools(run, data_sources=sources)}
    return World(run, tools, stored.document_id, stored.item.id)


def example(name: str) -> dict[str, Any]:
    """Arguments of a call of ``name`` that succeeds in :func:`world`."""
    w = world()
    chart = {
        "type": "bar",
        "data": {"labels": ["north"], "datasets": [{"label": "sales", "data": [61]}]},
    }
    examples: dict[str, dict[str, Any]] = {
        "write_file": {"name": "draft.json", "content": {"draft": True}, "encoding": None},
        "download_from_data_source": {"service": "samples", "path": "sales.csv"},
        "render_document": {
            "markdown": "# Report\n\nAll good.",
            "name": "report",
            "formats": ["html"],
            "title": None,
        },
        "create_chart": {"spec": chart, "name": "Sales"},
        "read_documents": {"documentList": f'```json\n["docItem:{w.document_id}"]\n```'},
        "list_documents": {},
        "read_file": {"file_id": w.file_id, "max_chars": None},
        "search_in_file_content": {"query": "revenue", "file_ids": [w.file_id], "limit": None},
        "get_file_info": {"file_id": w.file_id},
        "list_files": {"limit": 10},
    }
    return examples[name]


def _standard_classes() -> dict[str, type]:
    classes: dict[str, type] = {}
    for name in world().tools:

        def constructor(self: Any, name: str = name) -> BaseTool:
            return world().tools[name]

        def params(self: Any, name: str = name) -> dict[str, Any]:
            return example(name)

        body = {
            "tool_constructor": property(constructor),
            "tool_invoke_params_example": property(params),
        }
        classes[f"TestUnit_{name}"] = type(f"TestUnit_{name}", (ToolsUnitTests,), dict(body))
        classes[f"TestIntegration_{name}"] = type(
            f"TestIntegration_{name}",
            (ToolsIntegrationTests,),
            {**body, "pytestmark": [pytest.mark.anyio]},
        )
    return classes


globals().update(_standard_classes())


REQUIRED = {
    "write_file",
    "download_from_data_source",
    "render_document",
    "create_chart",
    "read_documents",
    "list_documents",
    "read_file",
    "search_in_file_content",
    "get_file_info",
}


def test_every_tool_the_issue_names_is_rendered_and_tested() -> None:
    assert set(world().tools) >= REQUIRED


@pytest.mark.parametrize("name", sorted(world().tools))
def test_each_example_call_succeeds(name: str) -> None:
    tool = world().tools[name]
    message = tool.invoke(
        {"type": "tool_call", "id": "call-1", "name": name, "args": example(name)}
    )
    assert message.status == "success", message.content
    if tool.response_format == "content_and_artifact":
        assert message.artifact["file_ids"] and message.artifact["document_ids"]
