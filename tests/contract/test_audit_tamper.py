"""The audit tamper test on every metadata backend: a changed, inserted or removed event is named (B11).

A binder with the audit log on writes real events (store, attach, read,
resolve, a quota refusal); the test then edits the stored log behind
docbinder's back, as someone with database access would, and
``AuditLog.verify`` must name the first bad event and how it is bad.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
import sqlalchemy as sa

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.adapters.sql.audit_rows import event_row
from docbinder.adapters.sql.schema import audit_events
from docbinder.application import DocBinder
from docbinder.domain.audit import AuditEvent
from docbinder.domain.errors import StorageError
from docbinder.domain.model import Principal, Scope
from tests.contract.sql_backends import SqlBackend, backend_binder

ALICE = Principal("alice", "m1")


class Tamper:
    """Edits one backend's stored audit log directly."""

    def __init__(
        self,
        change: Callable[[int, dict[str, Any]], None],
        delete: Callable[[int], None],
        insert_after: Callable[[int, AuditEvent], None],
        drop_head: Callable[[], None],
    ) -> None:
        self.change = change
        self.delete = delete
        self.insert_after = insert_after
        self.drop_head = drop_head


def memory_tamper(store: MemoryMetadataStore) -> Tamper:
    def change(seq: int, values: dict[str, Any]) -> None:
        index = [e.seq for e in store.audit].index(seq)
        store.audit[index] = attrs.evolve(store.audit[index], **values)

    def delete(seq: int) -> None:
        store.audit[:] = [e for e in store.audit if e.seq != seq]

    def insert_after(seq: int, forged: AuditEvent) -> None:
        index = [e.seq for e in store.audit].index(seq)
        later = [attrs.evolve(e, seq=e.seq + 1) for e in store.audit[index + 1 :]]
        store.audit[index + 1 :] = [forged, *later]
        head = store.audit_head
        assert head is not None
        store.audit_head = (head[0] + 1, head[1])

    def drop_head() -> None:
        store.audit_head = None

    return Tamper(change, delete, insert_after, drop_head)


def sql_tamper(backend: SqlBackend) -> Tamper:
    a = audit_events.c

    def change(seq: int, values: dict[str, Any]) -> None:
        row = {k: v for k, v in values.items()}
        if "detail" in row:
            row["detail"] = event_row(attrs.evolve(_dummy(), detail=row["detail"]))["detail"]
        with backend.engine.begin() as conn:
            conn.execute(sa.update(audit_events).where(a.seq == seq).values(row))

    def delete(seq: int) -> None:
        with backend.engine.begin() as conn:
            conn.execute(sa.delete(audit_events).where(a.seq == seq))

    def insert_after(seq: int, forged: AuditEvent) -> None:
        with backend.engine.begin() as conn:
            top = conn.execute(sa.select(sa.func.max(a.seq))).scalar_one()
            for number in range(top, seq, -1):  # renumber from the top, keeping the key unique
                conn.execute(sa.update(audit_events).where(a.seq == number).values(seq=number + 1))
            conn.execute(sa.insert(audit_events).values(event_row(forged)))
            conn.execute(
                sa.text("UPDATE docbinder_meta SET value = :v WHERE name = 'audit_head'"),
                {
                    "v": f"{top + 1}:"
                    + conn.execute(sa.select(a.hash).where(a.seq == top + 1)).scalar_one()
                },
            )

    def drop_head() -> None:
        with backend.engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM docbinder_meta WHERE name = 'audit_head'"))

    return Tamper(change, delete, insert_after, drop_head)


def _dummy() -> AuditEvent:
    from datetime import UTC, datetime

    return AuditEvent(id="x", at=datetime.now(UTC), action="store")


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mariadb"])
def audited(request: pytest.FixtureRequest) -> Iterator[tuple[DocBinder, Tamper]]:
    binder, store = backend_binder(request, request.param, audit=True)
    tamper = memory_tamper(store) if isinstance(store, MemoryMetadataStore) else sql_tamper(store)
    try:
        yield binder, tamper
    finally:
        binder.close()


def _write_events(binder: DocBinder) -> list[AuditEvent]:
    run = binder.start_new_run(ALICE)
    first = run.produce_file("a.txt", b"alpha")
    run.get_content([f"docItem:{first.document_id}", "docItem:missing"])
    binder.quotas.set(Scope("m1"), max_files=1)
    with pytest.raises(Exception, match="quota exceeded"):
        run.produce_file("b.txt", b"beta")
    events = binder.audit_log.list()
    assert [e.action.value for e in events] == [
        "store",
        "attach",
        "quota_refused",
        "resolve",
        "read_content",
    ]
    resolved, read = events[-2], events[-1]
    assert (resolved.outcome, resolved.detail) == (
        "not_in_workflow",
        {"reference": "docItem:missing"},
    )
    assert (read.outcome, read.file_id, read.document_id) == (
        "ok",
        first.item.id,
        first.document_id,
    )
    assert binder.audit_log.verify().ok
    return events


def test_an_untouched_log_verifies(audited: tuple[DocBinder, Tamper]) -> None:
    binder, _ = audited
    events = _write_events(binder)
    result = binder.audit_log.verify()
    assert result.ok and result.checked == len(events)
    assert result.head == (events[-1].seq, events[-1].hash)
    exported = list(binder.audit_log.export_lines())
    assert len(exported) == len(events) and '"action": "store"' in exported[0]


def test_a_changed_event_is_named(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    _write_events(binder)
    tamper.change(3, {"outcome": "ok"})  # hide the quota refusal
    broken = binder.audit_log.verify().broken
    assert broken is not None and (broken.seq, broken.kind) == (3, "changed")


def test_a_removed_event_is_named(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    _write_events(binder)
    tamper.delete(2)
    broken = binder.audit_log.verify().broken
    assert broken is not None and broken.kind == "removed" and broken.seq == 3


def test_a_removed_newest_event_is_named(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    events = _write_events(binder)
    tamper.delete(events[-1].seq)
    broken = binder.audit_log.verify().broken
    assert broken is not None and broken.kind == "removed"


def test_an_inserted_event_is_named(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    events = _write_events(binder)
    # A forger who knows the hash rule writes a well-formed event after event 1.
    forged = AuditEvent(
        id="forged", at=events[0].at, action="delete", principal="mallory", mandate_id="m1"
    ).chained(2, events[0].hash)
    tamper.insert_after(1, forged)
    broken = binder.audit_log.verify().broken
    assert broken is not None and (broken.seq, broken.kind) == (2, "inserted")


def test_newest_events_removed_with_the_head_are_named(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    events = _write_events(binder)
    tamper.delete(events[-1].seq)
    tamper.delete(events[-2].seq)
    tamper.drop_head()
    result = binder.audit_log.verify()
    assert result.broken is not None and result.broken.kind == "removed"
    assert result.broken.seq == events[-2].seq and "head" in result.broken.message


def test_a_log_without_its_head_takes_no_event(audited: tuple[DocBinder, Tamper]) -> None:
    binder, tamper = audited
    events = _write_events(binder)
    tamper.drop_head()
    run = binder.start_new_run(ALICE)
    binder.quotas.set(Scope("m1"), max_files=None)
    with pytest.raises(StorageError, match="audit_head"):
        run.produce_file("c.txt", b"gamma")
    assert [e.seq for e in binder.audit_log.list()] == [e.seq for e in events]  # no fork
    assert binder.audit_log.verify().broken is not None
    with pytest.raises(StorageError, match="audit_head"):  # not "empty": there is no head to export
        binder.audit_log.head()


@pytest.mark.parametrize(
    ("column", "value"),
    [("detail", "not json"), ("action", "bogus"), ("at", "garbage"), ("seq", 3.5)],
)
@pytest.mark.parametrize("name", ["sqlite", "postgresql", "mariadb"])
def test_a_row_that_is_no_event_is_named_as_changed(
    request: pytest.FixtureRequest, name: str, column: str, value: object
) -> None:
    """A stored value no event has (typed columns refuse some, SQLite takes any): verify names
    the row as changed and counts the events before it; listing it is one clean error."""
    from docbinder.domain.errors import AuditEventUnreadable

    if column in {"at", "seq"} and name != "sqlite":
        pytest.skip(f"{name} refuses {value!r} in a typed column itself")
    binder, backend = backend_binder(request, name, audit=True)
    assert isinstance(backend, SqlBackend)
    try:
        _write_events(binder)
        with backend.engine.begin() as conn:
            conn.execute(
                sa.text(f"UPDATE audit_events SET {column} = :v WHERE seq = 3"), {"v": value}
            )
        result = binder.audit_log.verify()
        assert result.broken is not None and result.checked == 2
        assert (result.broken.seq, result.broken.kind) == (3, "changed")
        assert "its stored row is invalid" in result.broken.message
        with pytest.raises(AuditEventUnreadable, match="its stored row is invalid"):
            binder.audit_log.list()
        assert [e.seq for e in binder.audit_log.list(limit=2)] == [1, 2]
    finally:
        binder.close()
