"""The audit log's rows and ``docbinder_meta`` marks, shared by the SQL and SQLite adapters (B11).

``audit_head`` and ``audit_anchor`` hold ``<seq>:<hash>`` of the newest event
and of the last pruned one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from docbinder.domain.audit import AuditEvent
from docbinder.domain.errors import AuditEventUnreadable, StorageError

HEAD = "audit_head"
ANCHOR = "audit_anchor"
_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def parse_mark(value: str | None) -> tuple[int, str] | None:
    """``'<seq>:<hash>'`` as ``(seq, hash)``; ``None`` for ``None``; :class:`StorageError` if malformed."""
    if value is None:
        return None
    seq, _, digest = value.partition(":")
    if not seq.isdigit() or len(digest) != 64:
        raise StorageError(f"the audit log's stored mark {value!r} is malformed")
    return int(seq), digest


def detail_text(detail: Mapping[str, Any]) -> str:
    """An event's ``detail`` as its column's JSON text (sorted keys, ASCII; ``{}`` when empty)."""
    return _JSON.encode(dict(detail)) if detail else "{}"


def event_row(event: AuditEvent) -> dict[str, Any]:
    """The row of a stored (chained) event."""
    return {
        "seq": event.seq,
        "id": event.id,
        "at": event.at,
        "action": event.action.value,
        "outcome": event.outcome,
        "principal": event.principal,
        "mandate_id": event.mandate_id,
        "file_id": event.file_id,
        "document_id": event.document_id,
        "workflow_id": event.workflow_id,
        "detail": detail_text(event.detail),
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


def unreadable(seq: object, err: Exception) -> AuditEventUnreadable:
    """The error for a stored row that is no event: names its ``seq`` when that is an integer."""
    number = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    where = f"audit event {number}" if number is not None else "an audit event"
    return AuditEventUnreadable(
        f"{where}: its stored row is invalid ({err}); `docbinder audit verify` names the first "
        "changed event",
        seq=number,
    )


def load_event(row: Any) -> AuditEvent:
    """The event of a stored row (a mapping of column name -> value).

    Raises :class:`~docbinder.domain.errors.AuditEventUnreadable` for a row no
    event gives (a time, action or detail that does not parse, a ``seq`` that
    is not an integer): a changed row, which reading must not crash on.
    """
    try:
        if not isinstance(row["seq"], int) or isinstance(row["seq"], bool):
            raise ValueError(f"seq {row['seq']!r} is not an integer")
        return AuditEvent(
            id=row["id"],
            at=row["at"],
            action=row["action"],
            outcome=row["outcome"],
            principal=row["principal"],
            mandate_id=row["mandate_id"],
            file_id=row["file_id"],
            document_id=row["document_id"],
            workflow_id=row["workflow_id"],
            detail=json.loads(row["detail"]),
            seq=int(row["seq"]),
            prev_hash=row["prev_hash"],
            hash=row["hash"],
        )
    except Exception as err:  # a corrupt row: verify reports it, reading it must not crash
        raise unreadable(row["seq"], err) from err
