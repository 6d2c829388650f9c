"""The audit event's canonical bytes written out field by field are the encoder's bytes (B11, ADR 0092)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from docbinder.adapters.sql.audit_rows import event_row
from docbinder.adapters.sql.schema import sqlite_utc_text
from docbinder.adapters.sqlite.audit import _CODEC, _row
from docbinder.domain.audit import (
    GENESIS_HASH,
    AuditAction,
    AuditEvent,
    canonical_event_bytes,
)

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _by_the_encoder(event: AuditEvent) -> bytes:
    """The rule as ADR 0092 writes it: canonical JSON of every field but ``hash``."""
    data = event.wire()
    del data["hash"]
    return _ENCODER.encode(data).encode("utf-8", "surrogatepass")


_TEXT = st.text(alphabet=st.characters(), max_size=40)
_OPTIONAL = st.none() | _TEXT
_DETAIL = st.dictionaries(
    _TEXT,
    st.none() | st.booleans() | st.integers() | _TEXT | st.lists(_TEXT, max_size=3),
    max_size=4,
)
_AT = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
) | st.datetimes(timezones=st.just(timezone(timedelta(hours=5, minutes=30))))


@given(
    id=_TEXT,
    at=_AT,
    action=st.sampled_from(list(AuditAction)),
    outcome=_TEXT,
    principal=_OPTIONAL,
    mandate_id=_OPTIONAL,
    file_id=_OPTIONAL,
    document_id=_OPTIONAL,
    workflow_id=_OPTIONAL,
    detail=_DETAIL,
    seq=st.integers(min_value=0, max_value=2**63),
    prev_hash=st.sampled_from([GENESIS_HASH, "ab" * 32, "é"]),
)
def test_the_written_out_bytes_are_the_encoders(**fields: object) -> None:
    event = AuditEvent(**fields)  # type: ignore[arg-type]
    assert canonical_event_bytes(event) == _by_the_encoder(event)


class _Text(str):
    """A ``str`` subclass, which the field-by-field form leaves to the encoder."""


def test_a_field_that_is_not_a_plain_str_takes_the_encoder() -> None:
    at = datetime(2026, 12, 2, 13, 0, tzinfo=UTC)
    plain = AuditEvent(id="e1", at=at, action=AuditAction.READ_CONTENT, principal="alice")
    odd = AuditEvent(id="e1", at=at, action=AuditAction.READ_CONTENT, principal=_Text("alice"))
    other = AuditEvent(id="e1", at=at, action=AuditAction.READ_CONTENT, principal=7)  # type: ignore[arg-type]
    assert canonical_event_bytes(odd) == canonical_event_bytes(plain) == _by_the_encoder(plain)
    assert canonical_event_bytes(other) == _by_the_encoder(other)
    assert b'"principal":7' in canonical_event_bytes(other)


def test_the_hash_of_a_known_event_is_unchanged() -> None:
    # Pinned: logs written before the field-by-field form must still verify.
    event = AuditEvent(
        id="0b6e1c1e-0000-4000-8000-000000000001",
        at=datetime(2026, 12, 2, 13, 0, 0, 123456, tzinfo=UTC),
        action=AuditAction.RESOLVE,
        outcome="not_in_workflow",
        principal="alice",
        mandate_id="acme",
        workflow_id="wf-1",
        detail={"reference": "docItem:x ü"},
    ).chained(3, GENESIS_HASH)
    assert event.hash == "8766d887609edf94a68ccf5f4a7d11731987679708369b0ded41f0ed51cbd350"
    assert canonical_event_bytes(event) == _by_the_encoder(event)
    whole_second = AuditEvent(
        id="e2", at=datetime(2026, 12, 2, 13, 0, 0, tzinfo=UTC), action="store", principal=None
    ).chained(4, event.hash)
    assert whole_second.hash == "cdf60b3e3285ef99cbd7d78d7bc21fe988d95d3651b09b90fa53b6842fa67486"


@given(at=_AT, detail=_DETAIL, principal=_OPTIONAL)
def test_the_sqlite_row_built_directly_is_the_codecs(
    at: datetime, detail: dict[str, object], principal: str | None
) -> None:
    event = AuditEvent(
        id="e1", at=at, action=AuditAction.RESOLVE, principal=principal, detail=detail
    ).chained(7, GENESIS_HASH)
    assert _row(event) == _CODEC.values(event_row(event))


@given(
    at=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
        lambda d: d.replace(tzinfo=UTC)
    )
    | st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([timezone(timedelta(hours=-7)), timezone(timedelta(hours=9))]),
    )
)
def test_sqlite_utc_text_is_the_utc_isoformat_with_microseconds(at: datetime) -> None:
    assert sqlite_utc_text(at) == at.astimezone(UTC).replace(tzinfo=None).isoformat(
        " ", "microseconds"
    )
