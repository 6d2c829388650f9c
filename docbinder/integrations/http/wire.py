"""The JSON shapes of the HTTP API (camelCase, as ``--json``); no storage internals.

A FileItem is shown without its blob key and store; everything else comes from
the wire converter (:func:`docbinder.serialization.to_wire`).
"""

from __future__ import annotations

from typing import Any

from docbinder.application.use_cases.resolve_document_list import Resolution
from docbinder.domain.model import ChatDocument, ChatMessage, ChatWorkflow, FileItem
from docbinder.domain.resolutions import ResolutionRecord
from docbinder.serialization import rejected_input_as_json, to_wire


def file_json(item: FileItem) -> dict[str, Any]:
    """A FileItem's public metadata."""
    return {
        "fileId": item.id,
        "fileName": item.file_name,
        "mimeType": item.mime_type,
        "size": item.size,
        "sha256": item.sha256,
        "createdBy": item.created_by,
        "createdAt": item.created_at.isoformat(),
        "mandateId": item.scope.mandate_id,
        "featureInstanceId": item.scope.feature_instance_id,
        "folder": item.folder,
        "tags": list(item.tags),
    }


def document_json(doc: ChatDocument) -> dict[str, Any]:
    """A ChatDocument with its ``docItem:`` reference."""
    data: dict[str, Any] = to_wire(doc)
    data["documentRef"] = f"docItem:{doc.id}"
    return data


def message_json(message: ChatMessage) -> dict[str, Any]:
    """A ChatMessage with its label, counters and documents."""
    data: dict[str, Any] = to_wire(message)
    data["documents"] = [document_json(d) for d in message.documents]
    return data


def workflow_json(workflow: ChatWorkflow, messages: list[ChatMessage]) -> dict[str, Any]:
    """A workflow with its messages in order and every document with its reference."""
    data: dict[str, Any] = to_wire(workflow)
    data["messages"] = [message_json(m) for m in messages]
    data["documents"] = [document_json(d) for m in messages for d in m.documents]
    return data


def resolution_json(resolution: Resolution) -> dict[str, Any]:
    """``{"documents", "unresolved", "suggestions"}`` of a resolution."""
    return {
        "documents": [
            {
                "reference": d.reference,
                "documentRef": f"docItem:{d.document.id}",
                "document": document_json(d.document),
                "file": file_json(d.file),
            }
            for d in resolution.documents
        ],
        # A rejected input comes back as the JSON value it was sent as, as the CLI's --json does.
        "unresolved": [rejected_input_as_json(to_wire(u)) for u in resolution.unresolved],
        "suggestions": [to_wire(s) for s in resolution.suggestions],
    }


def record_json(record: ResolutionRecord) -> dict[str, Any]:
    """A recorded resolution (the inspector's list)."""
    return {
        "at": record.at.isoformat(),
        "userId": record.user_id,
        "sent": record.sent,
        "resolved": [
            {"reference": ref, "fileName": name}
            for ref, name in zip(record.resolved, record.resolved_names, strict=False)
        ],
        "misses": [
            {"reference": m.reference, "reason": m.reason, "message": m.detail}
            for m in record.misses
        ],
        "truncated": record.truncated,
    }
