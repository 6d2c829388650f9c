"""Which files the file-level tools answer for: the host's ``FileScope`` (ADR 0054, addendum).

With ``FileScope.WORKFLOW`` (the MCP server's) ``read_file``, ``get_file_info``,
``search_in_file_content`` and ``list_files`` answer only for files a document
of the run's workflow points at, a file id from elsewhere gets the words of an
unknown id, and a run without workflow gets the host's hint; with
``FileScope.PRINCIPAL`` (the in-process hosts' default) every file the
principal may read, as the other tests of the tool set check.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from docbinder.application import DocBinder, Run
from docbinder.toolset import (
    ERROR_SCHEMA,
    NO_WORKFLOW_HINT,
    DocbinderToolset,
    FileScope,
    ToolOutcome,
    unknown_file,
    workflow_files,
)
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE

UNKNOWN = "00000000-0000-4000-8000-0000000000aa"
FILE_TOOLS = ("read_file", "get_file_info", "search_in_file_content", "list_files")


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


def scoped(run: Run) -> DocbinderToolset:
    return DocbinderToolset(run, file_scope=FileScope.WORKFLOW)


def checked(toolset: DocbinderToolset, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """Call ``name``; its structured result matches the declared schema (or the error one)."""
    outcome = toolset.call(name, arguments)
    spec = toolset.spec(name)
    assert spec.output_schema is not None
    Draft202012Validator(ERROR_SCHEMA if outcome.is_error else spec.output_schema).validate(
        outcome.structured
    )
    return outcome


def test_file_tools_answer_only_for_the_files_of_the_workflow(binder: DocBinder, run: Run) -> None:
    tools = scoped(run)
    [mine] = checked(tools, "write_file", {"name": "mine.txt", "content": "ours: north"}).file_ids
    loose = run.store_file("loose.txt", b"loose: north").item  # stored, attached nowhere
    elsewhere = DocbinderToolset(binder.start_new_run(ALICE))  # the same user, another workflow
    [theirs] = checked(elsewhere, "write_file", {"name": "t.txt", "content": "t: north"}).file_ids

    assert checked(tools, "read_file", {"file_id": mine}).text == "ours: north"
    assert not checked(tools, "get_file_info", {"file_id": f"file:{mine}"}).is_error
    listed = checked(tools, "list_files", {})
    assert listed.file_ids == (mine,) and listed.structured is not None
    assert [f["name"] for f in listed.structured["files"]] == ["mine.txt"]
    found = checked(tools, "search_in_file_content", {"query": "north"})
    assert found.file_ids == (mine,) and "loose" not in found.text and "t.txt" not in found.text

    unknown = {
        tool: checked(tools, tool, arguments).text
        for tool, arguments in (
            ("read_file", {"file_id": UNKNOWN}),
            ("get_file_info", {"file_id": UNKNOWN}),
            ("search_in_file_content", {"query": "north", "file_ids": [UNKNOWN]}),
        )
    }
    assert set(unknown.values()) == {f"file {UNKNOWN} not found"} == {str(unknown_file(UNKNOWN))}
    for outside in (loose.id, theirs):
        for tool, arguments in (
            ("read_file", {"file_id": outside}),
            ("read_file", {"file_id": f"file:{outside}"}),
            ("get_file_info", {"file_id": outside}),
            ("search_in_file_content", {"query": "north", "file_ids": [mine, outside]}),
        ):
            refused = checked(tools, tool, arguments)
            assert refused.is_error, (tool, arguments)
            assert refused.text == unknown[tool].replace(UNKNOWN, outside)
    # the in-process default reaches every file the principal may read
    assert DocbinderToolset(run).call("read_file", {"file_id": loose.id}).text == "loose: north"


def test_a_file_of_several_documents_is_listed_once_newest_first(run: Run) -> None:
    tools = scoped(run)
    first = run.store_file("a.txt", b"a").item
    second = run.store_file("b.txt", b"b").item
    run.persist_action_result([first], label="one")
    run.persist_action_result([second, first], label="two")  # a.txt again, in a newer message
    listed = checked(tools, "list_files", {})
    assert listed.file_ids == (first.id, second.id)
    assert checked(tools, "list_files", {"limit": 1}).file_ids == (first.id,)
    assert [d.file.id for d in workflow_files(run)] == [first.id, second.id]
    assert [d.file.id for d in workflow_files(run, limit=1)] == [first.id]


def test_without_workflow_each_file_tool_says_how_to_get_one(binder: DocBinder) -> None:
    hint = "pass the `workflow` id of your earlier answer"
    tools = DocbinderToolset(
        binder.start_run(ALICE), file_scope=FileScope.WORKFLOW, no_workflow_hint=hint
    )
    [file_id] = checked(tools, "write_file", {"name": "a.txt", "content": "a"}).file_ids
    for tool, arguments in (
        ("read_file", {"file_id": file_id}),
        ("read_file", {"file_id": "docItem:abc"}),
        ("get_file_info", {"file_id": f"file:{file_id}"}),
    ):
        refused = checked(tools, tool, arguments)
        assert refused.is_error and refused.text == (
            f"{tool} answers only for the files of the call's workflow, and this call has "
            f"none: {hint}."
        )
    for tool, arguments in (
        ("list_files", {}),
        ("search_in_file_content", {"query": "a"}),
        ("search_in_file_content", {"query": "a", "file_ids": [file_id]}),
    ):
        told = checked(tools, tool, arguments)
        assert not told.is_error and told.file_ids == ()
        assert told.text.endswith(f": {hint}.") and told.structured is not None
        assert told.structured["notice"] == told.text and told.structured["workflow"] is None


def test_the_tool_descriptions_say_which_files_they_reach(run: Run) -> None:
    wide, narrow = DocbinderToolset(run), scoped(run)
    assert narrow.spec("list_files").description.startswith("List the files of the active workflow")
    assert "not only this workflow's" in wide.spec("list_files").description
    assert "every file of the active workflow" in narrow.spec("search_in_file_content").description
    assert "every file you may read" in wide.spec("search_in_file_content").description
    for tool in ("read_file", "get_file_info"):
        assert "file id of a file of the active workflow" in narrow.spec(tool).description
        assert "file id of a file of the active workflow" not in wide.spec(tool).description
    for tool in FILE_TOOLS:  # same arguments and result shape, whatever the scope
        assert narrow.spec(tool).output_schema == wide.spec(tool).output_schema
        assert set(narrow.spec(tool).parameters["properties"]) == set(
            wide.spec(tool).parameters["properties"]
        )
    assert NO_WORKFLOW_HINT in DocbinderToolset(run).no_workflow_hint
