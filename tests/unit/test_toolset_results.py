"""Structured results, output schemas and the workflow handle of the tool set (ADR 0054, 0055).

Each tool's structured result is checked against the output schema its spec
declares, on in-memory adapters; the handle schema and the public error texts
are checked on their own.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from docbinder.application import DocBinder, Run
from docbinder.application.use_cases.get_content import ContentResult
from docbinder.application.use_cases.resolve_document_list import (
    Resolution,
    UnresolvedReason,
    UnresolvedReference,
)
from docbinder.domain.errors import (
    BlobMissing,
    InvalidInput,
    StorageError,
    StoreMoved,
    WorkflowNotFound,
)
from docbinder.domain.parsing import coerce_document_references
from docbinder.tools import persist_task_result
from docbinder.toolset import (
    ERROR_SCHEMA,
    HANDLE_SENTENCE,
    OPTIONAL,
    OUTPUT_SCHEMAS,
    DocbinderToolset,
    ToolOutcome,
    handle_schema,
    handle_spec,
    public_message,
    read_documents_outcome,
)
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE, png_bytes


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


@pytest.fixture
def toolset(run: Run) -> DocbinderToolset:
    return DocbinderToolset(run)


def checked(toolset: DocbinderToolset, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """Call ``name``; its structured result must match the declared schema (or the error one)."""
    outcome = toolset.call(name, arguments)
    spec = toolset.spec(name)
    assert spec.output_schema is not None
    schema = ERROR_SCHEMA if outcome.is_error else spec.output_schema
    Draft202012Validator(schema).validate(outcome.structured)
    assert outcome.structured is not None
    assert outcome.structured["workflow"] == toolset.workflow_id == outcome.workflow_id
    return outcome


def test_every_spec_declares_a_valid_output_schema(toolset: DocbinderToolset) -> None:
    for spec in toolset.specs:
        assert spec.output_schema == OUTPUT_SCHEMAS[spec.name]
        Draft202012Validator.check_schema(spec.output_schema)
        assert spec.output_schema["required"][0] == "workflow"
    Draft202012Validator.check_schema(ERROR_SCHEMA)


def test_a_producing_result_lists_each_stored_file(
    binder: DocBinder, toolset: DocbinderToolset, run: Run
) -> None:
    outcome = checked(toolset, "write_file", {"name": "a.md", "content": "# A"})
    [produced] = outcome.produced
    item = binder.get_file(ALICE, produced.item.id)
    assert outcome.structured == {
        "workflow": run.context.workflow_id,
        "files": [
            {
                "documentRef": f"docItem:{produced.document_id}",
                "fileId": item.id,
                "name": "a.md",
                "mimeType": "text/markdown",
                "size": 3,
                "sha256": item.sha256,
                "version": None,
            }
        ],
    }
    chart = checked(
        toolset,
        "create_chart",
        {"spec": {"kind": "bar", "series": [{"labels": ["a", "b"], "values": [1, 2]}]}},
    )
    assert chart.structured is not None and chart.structured["files"][0]["mimeType"] == "image/png"


def test_without_workflow_a_file_has_no_reference(binder: DocBinder) -> None:
    toolset = DocbinderToolset(binder.start_run(ALICE))
    outcome = checked(toolset, "write_file", {"name": "a.txt", "content": "a"})
    assert outcome.structured is not None
    assert outcome.structured["workflow"] is None
    assert outcome.structured["files"][0]["documentRef"] is None


def test_consuming_results_carry_references_misses_and_text(
    toolset: DocbinderToolset, run: Run
) -> None:
    task = persist_task_result(run, [("n.md", b"# N\nalpha"), ("p.png", png_bytes())], label="two")
    notes, png = task.items
    read = checked(
        toolset, "read_documents", {"documentList": [*task.references, "docItem:nope"]}
    ).structured
    assert read is not None
    assert [(d["documentRef"], d["fileId"]) for d in read["documents"]] == [
        (task.references[0], notes.id),
        (task.references[1], png.id),
    ]
    assert read["documents"][0]["text"] == "# N\nalpha"
    assert re.fullmatch(
        r"\[image 'p\.png' \(image/png, \d+ bytes\)\]", read["documents"][1]["text"]
    )
    assert read["unresolved"] == [
        {
            "reference": "docItem:nope",
            "reason": "not_in_workflow",
            "message": "no document with this reference in the active workflow",
        }
    ]
    assert [v["documentRef"] for v in read["validReferences"]] == list(reversed(task.references))
    assert read["truncated"] is False and read["notice"] is None

    listed = checked(toolset, "list_documents", {}).structured
    assert listed is not None
    assert [d["name"] for d in listed["documents"]] == ["p.png", "n.md"]

    by_label = checked(toolset, "read_file", {"file_id": task.list_reference}).structured
    assert by_label is not None
    assert [f["fileId"] for f in by_label["files"]] == [notes.id, png.id]
    assert "alpha" in by_label["text"]

    info = checked(toolset, "get_file_info", {"file_id": task.references[0]}).structured
    assert info is not None
    assert info["files"][0]["documentRef"] == task.references[0]
    assert info["files"][0]["createdBy"] == "alice" and info["files"][0]["tags"] == []

    found = checked(toolset, "search_in_file_content", {"query": "ALPHA"}).structured
    assert found is not None
    assert found["matches"] == [
        {"fileId": notes.id, "name": "n.md", "position": None, "lineNumber": 2, "line": "alpha"}
    ]
    files = checked(toolset, "list_files", {"limit": 1}).structured
    assert files is not None and [f["fileId"] for f in files["files"]] == [png.id]
    for name, arguments in (
        ("read_file", {"file_id": "00000000-0000-4000-8000-000000000000"}),
        ("write_file", {"name": "a.txt"}),
        ("no_such_tool", {}),
    ):
        failed = toolset.call(name, arguments)
        Draft202012Validator(ERROR_SCHEMA).validate(failed.structured)
        assert failed.structured == {"workflow": run.context.workflow_id, "error": failed.text}


def test_read_documents_text_stays_within_the_same_budget(run: Run) -> None:
    toolset = DocbinderToolset(run, max_text_chars=10)
    task = persist_task_result(run, [("a.txt", b"0123456789abc"), ("b.txt", b"more")], label="t")
    read = checked(toolset, "read_documents", {"documentList": list(task.references)})
    assert read.structured is not None
    first, second = read.structured["documents"]
    assert first["text"].startswith("0123456789\n[truncated: this answer carries at most 10 ")
    assert second["text"] == "" and read.structured["truncated"] is True
    assert first["text"] in read.text  # the same characters as the text answer


def test_a_run_without_workflow_says_how_to_get_one(binder: DocBinder) -> None:
    hint = "pass the `workflow` you were given"
    toolset = DocbinderToolset(binder.start_run(ALICE), no_workflow_hint=hint)
    read = checked(toolset, "read_documents", {"documentList": ["docItem:abc"]})
    notice = "References resolve in a workflow and this call has none: pass the `workflow` you were given."
    assert read.text.splitlines()[-1] == notice
    assert read.structured is not None and read.structured["notice"] == notice
    assert read.structured["unresolved"][0]["reason"] == "no_active_workflow"
    listed = checked(toolset, "list_documents", {})
    assert listed.structured is not None
    assert listed.structured["notice"] == f"To list a workflow's documents, {hint}."
    refused = checked(toolset, "read_file", {"file_id": "docItem:abc"})
    assert refused.is_error and refused.text.endswith(f"or {hint}")


def test_handle_schema_requires_only_what_a_call_needs(toolset: DocbinderToolset) -> None:
    for spec in toolset.specs:
        schema = handle_schema(spec)
        properties = schema["properties"]
        assert list(properties) == [*spec.parameters["properties"], "workflow"]
        assert properties["workflow"]["type"] == ["string", "null"]
        assert schema["required"] == [
            k for k in spec.parameters["required"] if k not in OPTIONAL[spec.name]
        ]
        assert "workflow" not in spec.parameters["properties"]  # the spec is not changed
        shown = handle_spec(spec)
        assert shown.description == f"{spec.description} {HANDLE_SENTENCE}"
        assert shown.parameters == schema and shown.output_schema == spec.output_schema
    write = handle_schema(toolset.spec("write_file"))
    assert write["required"] == ["name", "content"]
    Draft202012Validator(write).validate({"name": "a.md", "content": "x"})  # no encoding


def test_public_messages_keep_storage_internals_out() -> None:
    internal = "s3://secret-bucket/blobs/ab/cd (sqlite:////srv/secret.db)"
    for exc in (
        BlobMissing(f"blob {internal} is missing"),
        StorageError(f"metadata store failed: {internal}"),
        StoreMoved(f"the blob store at {internal} is not where this database's files were"),
    ):
        message = public_message(exc)
        assert "secret" not in message and "s3://" not in message
        assert "docbinder doctor" in message
    assert public_message(InvalidInput("the name must be text")) == "the name must be text"
    assert public_message(WorkflowNotFound("workflow w not found")) == "workflow w not found"


def test_a_storage_fault_of_one_document_is_told_without_its_cause() -> None:
    refs = coerce_document_references(["docItem:a"])
    miss = UnresolvedReference(
        "docItem:a",
        UnresolvedReason.STORAGE_FAULT,
        "the document's file content could not be read from storage: /srv/secret/blobs/a",
        "a",
    )
    content = ContentResult((), (miss,), Resolution((), (miss,), (), refs))
    outcome = read_documents_outcome(content)
    assert "secret" not in outcome.text
    assert outcome.structured is not None and "secret" not in str(outcome.structured)
    assert "(storage_fault): the document's file content could not be read" in outcome.text
