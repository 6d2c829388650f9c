"""The rendering harness's own logic, on made-up reports: no host, no server.

Each way a host passes a result on (the whole result, only ``structuredContent``
as JSON text, the structured part kept aside, images as base64 inside JSON, a
call refused before it reached the server) is reduced to facts here, so a
wrong fact is the harness's fault, not a host's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.hosts.harness import facts, match_calls, read_wire, sent_ids, server_has_handles
from tests.hosts.harness import hostlib as hl

REF = "docItem:3a21afab-b1a0-4441-8c09-c1c5c3ac93c4"
REF2 = "docItem:b547f4f1-1e17-44ba-a3d1-7e5345edb997"
HANDLE = "0f3c8a2e-1111-4222-8333-944455556666"
LINK = {"type": "resource_link", "uri": "docbinder://documents/3a21afab", "name": "notes.md"}
STRUCTURED = {"workflow": HANDLE, "files": [{"documentRef": REF, "fileId": "f1", "size": 40}]}
READ_STRUCTURED = {"workflow": HANDLE, "references": [REF, REF2]}
WRITE_TEXT = (
    f"Wrote 'notes.md' (40 bytes)\n  documentList ref: {REF}\n  file id: f1\nworkflow: {HANDLE}"
)
READ_TEXT = f"Read 2 document(s); 0 unresolved.\n--- {REF} ---\n{hl.NOTES}"


def result(text: str, *extra: dict[str, Any], structured: Any = None) -> dict[str, Any]:
    content = [{"type": "text", "text": text}, *extra]
    out: dict[str, Any] = {"content": content, "isError": False}
    if structured is not None:
        out["structuredContent"] = structured
    return out


def report(views: list[dict[str, Any]], wire: list[Any]) -> dict[str, Any]:
    tools = ["write_file", "write_file", "read_documents"]
    steps = [{"tool": t, "arguments": {}, "view": v} for t, v in zip(tools, views, strict=True)]
    return {"steps": steps, "wire": wire}


PNG_VIEW = hl.view([f"Wrote 'dot.png' (74 bytes)\n  documentList ref: {REF2}"])
WIRE = [
    result(WRITE_TEXT, LINK, structured=STRUCTURED),
    result("Wrote 'dot.png'", structured=STRUCTURED),
    result(READ_TEXT, {"type": "image", "data": hl.PNG_B64}, structured=READ_STRUCTURED),
]


def test_a_host_that_passes_the_whole_result_shows_every_part() -> None:
    views = [
        hl.view([WRITE_TEXT], raw=WIRE[0]),
        PNG_VIEW,
        hl.view([READ_TEXT], [hl.image("image/png", hl.PNG)], raw=WIRE[2]),
    ]
    cells = facts(report(views, WIRE))
    assert {
        k: cells[k] for k in ("produce.text", "produce.resource_link", "produce.structured")
    } == {
        "produce.text": True,
        "produce.resource_link": True,
        "produce.structured": True,
    }
    assert cells["produce.handle"] and cells["consume.handle"]
    assert cells["consume.image"] and not cells["consume.image_as_text"]
    assert cells["consume.notes"] and cells["consume.structured"]
    assert cells["consume.resolved"] == 2
    assert cells["produce.sent_resource_link"] and cells["produce.sent_structured"]


def test_structured_content_as_json_text_only() -> None:
    views = [
        hl.view([json.dumps(STRUCTURED)], raw=json.dumps(STRUCTURED)),
        PNG_VIEW,
        hl.view([json.dumps(READ_STRUCTURED)], raw=json.dumps(READ_STRUCTURED)),
    ]
    cells = facts(report(views, WIRE))
    assert cells["produce.structured"] and cells["consume.structured"]
    assert not cells["produce.text"] and not cells["produce.resource_link"]
    assert cells["produce.handle"]  # the "workflow" key of the JSON
    assert not cells["consume.image"] and not cells["consume.notes"]
    assert cells["consume.resolved"] == 2  # what the server read, whatever the model saw


def test_references_and_file_ids_count_in_whatever_part_reached_the_model() -> None:
    meta = {"docbinder/documentIds": [REF.split(":")[1]], "docbinder/fileIds": ["f1"]}
    sent = {**WIRE[0], "_meta": meta}
    assert set(sent_ids(sent)) == {REF, "f1"} == set(sent_ids(WIRE[0]))  # _meta or structure
    as_text = [hl.view([WRITE_TEXT]), PNG_VIEW, hl.view([READ_TEXT])]
    as_json = [hl.view([json.dumps(STRUCTURED)]), PNG_VIEW, hl.view([READ_TEXT])]
    reference_only = [hl.view([f"documentList ref: {REF}"]), PNG_VIEW, hl.view([READ_TEXT])]
    for views, seen in ((as_text, True), (as_json, True), (reference_only, False)):
        assert facts(report(views, [sent, WIRE[1], WIRE[2]]))["produce.ids"] is seen
    assert not facts(report(as_text, [None, WIRE[1], WIRE[2]]))["produce.ids"]  # nothing sent


def test_structured_content_kept_aside_never_counts() -> None:
    blocks = [{"type": "text", "text": WRITE_TEXT}, {"type": "file", "url": LINK["uri"]}]
    views = [hl.view([WRITE_TEXT], raw=blocks, aside={"structured_content": STRUCTURED}), PNG_VIEW]
    views.append(
        hl.view([READ_TEXT], raw=[READ_TEXT], aside={"structured_content": READ_STRUCTURED})
    )
    cells = facts(report(views, WIRE))
    assert cells["produce.resource_link"] and not cells["produce.structured"]
    assert not cells["consume.structured"]


def test_an_image_as_base64_inside_json_is_no_image() -> None:
    payload = json.dumps(WIRE[2])
    views = [hl.view([WRITE_TEXT]), PNG_VIEW, hl.view([payload], raw=WIRE[2])]
    cells = facts(report(views, WIRE))
    assert cells["consume.image_as_text"] and not cells["consume.image"]
    assert cells["consume.structured"]  # the result's structuredContent key, inside the JSON


def test_a_call_that_never_reached_the_server_is_not_accepted() -> None:
    refused = hl.view(["An error occurred while running the tool. Please try again."])
    views = [refused, PNG_VIEW, hl.view([READ_TEXT])]
    cells = facts(report(views, [None, WIRE[1], WIRE[2]]))
    assert not cells["produce.ok"] and not cells["produce.text"]
    assert cells["png.ok"] and cells["consume.ok"]


def test_the_scripted_model_passes_the_handle_once_it_saw_one() -> None:
    first = hl.next_call([])
    assert first == ("write_file", {"name": hl.NOTES_NAME, "content": hl.NOTES})
    without = hl.next_call([hl.view([f"documentList ref: {REF}"])])
    assert without is not None and "workflow" not in without[1]
    for seen in (
        hl.view([WRITE_TEXT]),
        hl.view([json.dumps(STRUCTURED)]),
        hl.view([], raw=STRUCTURED),
    ):
        second = hl.next_call([seen])
        assert second is not None and second[1]["workflow"] == HANDLE, seen
        third = hl.next_call([seen, PNG_VIEW])
        assert third == ("read_documents", {"documentList": [REF, REF2], "workflow": HANDLE})
    assert hl.next_call([PNG_VIEW] * 3) is None


def test_the_tap_logs_are_matched_to_the_steps(tmp_path: Path) -> None:
    lines = [
        {"t": 1.0, "dir": "c2s", "msg": {"id": 1, "method": "tools/list"}},
        {"t": 1.1, "dir": "s2c", "msg": {"id": 1, "result": {"tools": [{"name": "write_file"}]}}},
        {
            "t": 2.0,
            "dir": "c2s",
            "msg": {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"name": "dot.png"}},
            },
        },
        {"t": 2.1, "dir": "s2c", "msg": {"id": 2, "result": WIRE[1]}},
    ]
    (tmp_path / "wire-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    later = {"id": 1, "method": "tools/call", "params": {"name": "read_documents", "arguments": {}}}
    (tmp_path / "wire-2.jsonl").write_text(
        json.dumps({"t": 3.0, "dir": "c2s", "msg": later}) + "\n"
    )
    calls, tools = read_wire(tmp_path)
    assert [(c["name"], c["result"] is not None) for c in calls] == [
        ("write_file", True),
        ("read_documents", False),
    ]
    assert tools == [{"name": "write_file"}] and not server_has_handles(tools)
    steps = [
        {"tool": "write_file", "arguments": {"name": "notes.md"}},
        {"tool": "write_file", "arguments": {"name": "dot.png"}},
        {"tool": "read_documents", "arguments": {"documentList": []}},
    ]
    assert match_calls(steps, calls) == [None, WIRE[1], None]
    with_handles = [{"name": "write_file", "inputSchema": {"properties": {"workflow": {}}}}]
    assert server_has_handles(with_handles)
