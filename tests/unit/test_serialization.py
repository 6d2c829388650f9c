"""The wire converter: camelCase keys, and save -> load -> equal for every entity."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    ContentPart,
    FileItem,
    PageCoverage,
    Principal,
    Scope,
)
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    FileReference,
    RejectedReference,
)
from docbinder.serialization import from_wire, to_wire

NOW = datetime(2026, 11, 30, 9, 30, 1, 123456, tzinfo=UTC)
SCOPE = Scope("m1", "f1")
ITEM = FileItem(
    id="f-1",
    file_name="Étude d’opportunités v3.pptx",
    mime_type="application/vnd.openxmlformats-officedocument.presentationml.presentation",
    size=3,
    sha256="a" * 64,
    created_by="u1",
    scope=SCOPE,
    created_at=NOW,
    blob_key="f-/f-1",
    folder="decks",
    tags=("q3", "draft"),
)
DOC = ChatDocument(
    id="d-1",
    message_id="msg-1",
    workflow_id="wf-1",
    file_id="f-1",
    file_name="a.txt",
    file_size=3,
    mime_type="text/plain",
    round_number=2,
    task_number=1,
    action_number=4,
)
MESSAGE = ChatMessage(
    id="msg-1",
    workflow_id="wf-1",
    documents_label="writeFile:a.txt",
    published_at=NOW,
    message="done",
    documents=(DOC,),
    round_number=2,
    task_number=1,
    action_number=4,
    sequence_nr=7,
)
WORKFLOW = ChatWorkflow(
    id="wf-1", scope=SCOPE, created_by="u1", created_at=NOW, messages=(MESSAGE,)
)

ENTITIES = [
    SCOPE,
    Scope("m2"),
    Principal("u1", "m1", "f1", roles=("viewer", "admin")),
    ITEM,
    DOC,
    MESSAGE,
    WORKFLOW,
    ContentPart("d-1", "x.png", "image/png", "image", data=b"\x89PNG\x00", size=5),
    ContentPart("d-1", "x.pdf", "application/pdf", "text", text="page one", position="page 1"),
    ContentPart(
        "d-1",
        "scan.pdf",
        "application/pdf",
        "text",
        text="INVOICE 42",
        position="page 2",
        ocr=True,
        ocr_engine="tesseract 5.5.4 (eng)",
        ocr_confidence=0.91,
        coverage=PageCoverage(3, text_layer=1, ocr=1, nothing=1, empty_pages=(3,)),
    ),
    RejectedReference("42", "number_not_allowed"),
]


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: type(e).__name__)
def test_round_trip_through_json(entity: object) -> None:
    wire = json.loads(json.dumps(to_wire(entity)))
    assert from_wire(wire, type(entity)) == entity


def test_keys_are_camel_case_on_the_wire() -> None:
    assert set(to_wire(DOC)) == {
        "id",
        "messageId",
        "workflowId",
        "fileId",
        "fileName",
        "fileSize",
        "mimeType",
        "roundNumber",
        "taskNumber",
        "actionNumber",
    }
    message = to_wire(MESSAGE)
    assert message["documentsLabel"] == "writeFile:a.txt"
    assert message["publishedAt"] == "2026-11-30T09:30:01.123456+00:00"
    assert to_wire(ITEM)["scope"] == {"mandateId": "m1", "featureInstanceId": "f1"}


def test_references_are_their_canonical_strings() -> None:
    refs = [
        DocumentItemReference("a1"),
        DocumentListReference("writeFile:r.md"),
        FileReference("f9"),
    ]
    assert to_wire(refs) == ["docItem:a1", "docList:writeFile:r.md", "file:f9"]


def test_ocr_fields_and_coverage_are_camel_case_on_the_wire() -> None:
    part = ContentPart(
        "d-1",
        "scan.png",
        "image/png",
        "text",
        text="x",
        ocr=True,
        ocr_engine="tesseract",
        ocr_confidence=0.5,
        coverage=PageCoverage(1, ocr=1),
    )
    wire = to_wire(part)
    assert wire["ocr"] is True and wire["ocrEngine"] == "tesseract" and wire["ocrConfidence"] == 0.5
    assert wire["coverage"] == {
        "pages": 1,
        "textLayer": 0,
        "ocr": 1,
        "nothing": 0,
        "unread": 0,
        "emptyPages": [],
    }
