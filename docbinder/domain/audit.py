"""The audit log's events and their hash chain (feature row B11, ADR 0092).

Every :class:`AuditEvent` of a metadata store carries ``seq`` (1, 2, 3, ...
in the order stored), the hash of the event before it and its own hash:
SHA-256 (FIPS 180-4) over :func:`canonical_event_bytes`, the canonical JSON
(sorted keys, no spaces, UTF-8) of every field but ``hash``, the previous
hash included. Changing, inserting or removing an event therefore breaks the
chain at that event, and :func:`verify_chain` names the first one.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

import attrs

from docbinder.domain.errors import InvalidInput

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
# The encoder :func:`docbinder.domain.model.canonical_json` builds on every call, built once:
# the same bytes for the same value.

GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first event of a chain that was never pruned."""

HEADLESS = (
    "the audit log holds events but its head (docbinder_meta row 'audit_head') is missing: "
    "no event is appended until it is back; run `docbinder audit verify`, then put the row back "
    "with the value '<seq>:<hash>' of the head you exported with `docbinder audit head`"
)
"""Why an append is refused when a store's audit head was removed (ADR 0141)."""


class AuditAction(enum.StrEnum):
    """What an audit event records."""

    STORE = "store"
    ATTACH = "attach"
    READ_BYTES = "read_bytes"
    READ_CONTENT = "read_content"
    RESOLVE = "resolve"
    LINK_MINT = "link_mint"
    LINK_REDEEM = "link_redeem"
    LINK_REVOKE = "link_revoke"
    DELETE = "delete"
    QUOTA_REFUSED = "quota_refused"
    ACCESS_REFUSED = "access_refused"
    PROVIDER_UPLOAD = "provider_upload"


READ_ACTIONS: tuple[str, ...] = (
    AuditAction.READ_BYTES.value,
    AuditAction.READ_CONTENT.value,
    AuditAction.LINK_REDEEM.value,
)
"""The actions that read a file's content, and so count as its last read for ``last_read``
retention (B5, ADR 0142) when their outcome is ``ok``: a redeemed signed link hands the bytes
out as a read does."""


def _check_detail(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    # Only the shape: the values are encoded (and so checked) once, when the event is chained.
    if type(value) is not dict and not isinstance(value, Mapping):
        raise InvalidInput(f"{attribute.name} must be a JSON object")


def _copy(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


def _action(value: str) -> AuditAction:
    return value if type(value) is AuditAction else AuditAction(value)


@attrs.frozen(slots=False)  # a dict: chaining copies it in one step (ADR 0127)
class AuditEvent:
    """One event of the audit log (B11).

    ``at`` is when it happened (UTC); ``principal`` the acting user id
    (``None`` for an operator's command); ``mandate_id`` the tenant;
    ``action`` an :class:`AuditAction`; ``outcome`` ``ok`` or what stopped it
    (``duplicate``, ``quota_exceeded``, ``access_denied``, an unresolved
    reason such as ``not_in_workflow`` or ``expired``); ``file_id``,
    ``document_id``, ``workflow_id`` what it concerns; ``detail`` a small JSON
    object (a reference, the quota). ``seq``, ``prev_hash`` and ``hash`` are
    set when the event is stored (0 and ``""`` before).
    """

    id: str
    at: datetime
    action: AuditAction = attrs.field(converter=_action)
    outcome: str = "ok"
    principal: str | None = None
    mandate_id: str | None = None
    file_id: str | None = None
    document_id: str | None = None
    workflow_id: str | None = None
    detail: Mapping[str, Any] = attrs.field(factory=dict, converter=_copy, validator=_check_detail)
    seq: int = 0
    prev_hash: str = ""
    hash: str = ""

    def chained(self, seq: int, prev_hash: str) -> AuditEvent:
        """This event as the ``seq``-th of its chain after an event whose hash is ``prev_hash``."""
        # A copy of the fields' dict: they were converted and checked when this
        # event was made, and the copy is not shared before its hash is set.
        placed = object.__new__(AuditEvent)
        fields = placed.__dict__
        fields.update(self.__dict__)
        fields["seq"] = seq
        fields["prev_hash"] = prev_hash
        fields["hash"] = event_hash(placed)
        return placed

    def at_text(self) -> str:
        """``at`` in ISO 8601 (``datetime.isoformat``), as the canonical JSON and the wire form give it.

        Formatted once per event and kept beside the fields (a chained copy keeps it):
        the hash and a SQLite row both need it.
        """
        fields = self.__dict__
        text: str | None = fields.get("_at_text")
        if text is None:
            text = fields["_at_text"] = self.at.isoformat()
        return text

    def wire(self) -> dict[str, Any]:
        """The event as JSON (camelCase keys, ISO 8601 time), as ``audit ls --json`` and the export give it."""
        data = self._unhashed()
        data["hash"] = self.hash
        return data

    def _unhashed(self) -> dict[str, Any]:
        """:meth:`wire` without ``hash``: what the hash covers."""
        return {
            "seq": self.seq,
            "id": self.id,
            "at": self.at_text(),
            "action": self.action.value,
            "outcome": self.outcome,
            "principal": self.principal,
            "mandateId": self.mandate_id,
            "fileId": self.file_id,
            "documentId": self.document_id,
            "workflowId": self.workflow_id,
            "detail": dict(self.detail),
            "prevHash": self.prev_hash,
        }


def canonical_event_bytes(event: AuditEvent) -> bytes:
    """The bytes an event's hash covers: canonical JSON of every field but ``hash`` (``prevHash`` included).

    The JSON of :func:`docbinder.domain.model.canonical_json`: sorted keys, no
    spaces, non-ASCII kept as UTF-8. Written out field by field in the sorted
    key order when every text field is a plain ``str`` or ``None`` (the same
    bytes as encoding :meth:`AuditEvent.wire` without ``hash``, which the
    tests check); any other value takes the encoder.
    """
    text = _canonical_text(event)
    if text is None:
        text = _CANONICAL.encode(event._unhashed())
    return text.encode("utf-8", "surrogatepass")


_TEXT_FIELDS = ("id", "outcome", "principal", "mandate_id", "file_id", "document_id", "workflow_id")


def _canonical_text(event: AuditEvent) -> str | None:
    """The canonical JSON of ``event`` without ``hash``, or ``None`` when a field is not plain."""
    fields = event.__dict__
    texts: dict[str, str] = {}
    for name in _TEXT_FIELDS:
        value = fields[name]
        if value is None:
            texts[name] = "null"
        elif type(value) is str:
            texts[name] = encode_basestring(value)
        else:
            return None
    if type(event.seq) is not int or type(event.prev_hash) is not str:
        return None
    detail = event.detail
    # Keys in sorted order: action, at, detail, documentId, fileId, id, mandateId,
    # outcome, prevHash, principal, seq, workflowId.
    return (
        f'{{"action":{encode_basestring(event.action._value_)},'
        f'"at":{encode_basestring(event.at_text())},'
        f'"detail":{_CANONICAL.encode(dict(detail)) if detail else "{}"},'
        f'"documentId":{texts["document_id"]},"fileId":{texts["file_id"]},'
        f'"id":{texts["id"]},"mandateId":{texts["mandate_id"]},'
        f'"outcome":{texts["outcome"]},"prevHash":{encode_basestring(event.prev_hash)},'
        f'"principal":{texts["principal"]},"seq":{int.__repr__(event.seq)},'
        f'"workflowId":{texts["workflow_id"]}}}'
    )


def event_hash(event: AuditEvent) -> str:
    """SHA-256 hex of :func:`canonical_event_bytes`."""
    return hashlib.sha256(canonical_event_bytes(event)).hexdigest()


@attrs.frozen
class ChainBreak:
    """Where a chain stops being what was written: the first bad event.

    ``seq`` is the event at which the break shows; ``kind`` is ``changed``
    (its content no longer gives its hash), ``inserted`` (it was not written
    by the chain: its predecessor's successor links past it), ``removed``
    (events before it, or after the last one, are missing) or ``reordered``.
    ``message`` says it in one line.
    """

    seq: int
    kind: str
    message: str


def verify_chain(
    events: Iterable[AuditEvent],
    *,
    anchor: tuple[int, str] | None = None,
    head: tuple[int, str] | None = None,
    require_head: bool = False,
) -> tuple[int, ChainBreak | None]:
    """Check ``events`` (in ``seq`` order) as one chain; return how many were checked and the first break.

    ``anchor`` is ``(seq, hash)`` of the last event pruned away (the log's
    retention), ``None`` if none was; ``head`` the ``(seq, hash)`` the store
    recorded for its newest event, which catches removed newest events.
    ``require_head``: the events are a store's, which moves its head with
    every append, so events (or an anchor) without a head are a break
    (``removed``: the head was deleted, and the newest events may have been
    deleted with it, ADR 0141); without it a missing ``head`` is not checked
    (an exported log).
    """
    expected_seq, expected_prev = (anchor[0] + 1, anchor[1]) if anchor else (1, GENESIS_HASH)
    previous: AuditEvent | None = None
    before_previous_hash: str | None = None
    checked = 0
    for event in events:
        if event.prev_hash != expected_prev:
            if event.seq > expected_seq and previous is not None:
                kind, text = "removed", f"event(s) {expected_seq}..{event.seq - 1} were removed"
            elif event.seq > expected_seq:
                kind, text = "removed", f"event(s) before {event.seq} were removed"
            elif before_previous_hash is not None and event.prev_hash == before_previous_hash:
                assert previous is not None
                kind, text = "inserted", f"event {previous.seq} was inserted into the chain"
                return checked, ChainBreak(previous.seq, kind, text)
            else:
                kind = "changed"
                text = (
                    f"event {event.seq} does not follow the event before it "
                    "(changed, or events before it removed and the rest renumbered)"
                )
            return checked, ChainBreak(event.seq, kind, text)
        if event.hash != event_hash(event):
            return checked, ChainBreak(
                event.seq, "changed", f"event {event.seq} was changed: its hash no longer matches"
            )
        if event.seq != expected_seq:
            return checked, ChainBreak(
                event.seq, "reordered", f"event {event.seq} stands where {expected_seq} should"
            )
        before_previous_hash = expected_prev
        previous = event
        expected_seq, expected_prev = event.seq + 1, event.hash
        checked += 1
    if head is None and require_head and (checked or anchor is not None):
        return checked, ChainBreak(
            expected_seq,
            "removed",
            f"the store keeps no head but holds events up to {expected_seq - 1}: the head was "
            "removed, and newest events may have been removed with it",
        )
    if head is not None and head[0] < expected_seq - 1:
        return checked, ChainBreak(
            head[0] + 1,
            "inserted",
            f"event {head[0] + 1} was inserted after the store's head (event {head[0]})",
        )
    if head is not None and (head[0], head[1]) != (expected_seq - 1, expected_prev):
        return checked, ChainBreak(
            expected_seq,
            "removed",
            f"the store's head is event {head[0]}, the chain ends at {expected_seq - 1}: "
            "newest events were removed",
        )
    return checked, None
