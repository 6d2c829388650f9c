"""Listing expired files reads the expired rows through an index, not every FileItem of a mandate (B5).

ADR 0097: per retention policy one query over the ``(mandate_id,
created_at)`` index of ``file_items`` (plus, from the last read, a
``NOT EXISTS`` over the audit log's index by file). The statements
``ManageRetention.expired`` sends are captured (``statements_sent``) and
explained on the same database (``query_plan``): a walk of the whole table
fails here, and so would the old scan of every FileItem in id order.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.adapters.memory.links import MemoryLinkLedger
from docbinder.domain.errors import FileExpired
from docbinder.domain.model import Principal, Scope
from tests.contract.sql_backends import (
    SQL_BACKENDS,
    SqlBackend,
    binder_over,
    provision,
    query_plan,
    statements_sent,
)
from tests.integration.http_live import fixed_keys

ALICE = Principal("alice", "m1")
BOB = Principal("bob", "m1", "fi")


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path) as db:
        yield db


def _age(backend: SqlBackend, file_ids: list[str], days: int) -> None:
    """Move the creation of these files ``days`` into the past (as if stored then)."""
    import sqlalchemy as sa

    from docbinder.adapters.sql.schema import file_items

    with backend.engine.begin() as conn:
        for file_id in file_ids:
            created = conn.execute(
                sa.select(file_items.c.created_at).where(file_items.c.id == file_id)
            ).scalar_one()
            conn.execute(
                sa.update(file_items)
                .where(file_items.c.id == file_id)
                .values(created_at=created - timedelta(days=days))
            )


def _age_policies(backend: SqlBackend, days: int) -> None:
    """Move the time every retention policy was set ``days`` into the past (as if set then).

    A policy counting from the last read expires nothing sooner than its
    maximum age after it was set (``RetentionPolicy.set_at``).
    """
    import sqlalchemy as sa

    from docbinder.adapters.sql.schema import retention_policies

    with backend.engine.begin() as conn:
        rows = conn.execute(
            sa.select(
                retention_policies.c.mandate_id,
                retention_policies.c.feature_key,
                retention_policies.c.set_at,
            )
        ).all()
        for mandate_id, feature_key, set_at in rows:
            if set_at is not None:
                conn.execute(
                    sa.update(retention_policies)
                    .where(
                        retention_policies.c.mandate_id == mandate_id,
                        retention_policies.c.feature_key == feature_key,
                    )
                    .values(set_at=set_at - timedelta(days=days))
                )


@pytest.mark.parametrize("basis", ["created", "last_read"])
def test_expired_files_are_read_through_the_mandate_created_index(
    backend: SqlBackend, basis: str
) -> None:
    binder = binder_over(backend.store, MemoryBlobStore(), audit=True)
    try:
        run = binder.start_new_run(ALICE)
        old = [run.store_file(f"old{n}.txt", f"old {n}".encode()).item for n in range(3)]
        for n in range(20):  # young files of the same mandate: the query must not read them
            run.store_file(f"new{n}.txt", f"new {n}".encode())
        old_fi = binder.start_new_run(BOB).store_file("fi.txt", b"feature").item
        _age(backend, [f.id for f in [*old, old_fi]], 40)
        binder.retention.set(Scope("m1"), timedelta(days=30), basis)
        binder.retention.set(Scope("m1", "fi"), timedelta(days=60), basis)
        _age_policies(backend, 61)  # set before the old files, long enough ago for both
        found: list[object] = []
        statements = [
            (sql, params)
            for sql, params in statements_sent(
                backend.engine, lambda: found.extend(binder.retention.expired())
            )
            if "file_items" in sql
        ]
        # Only the mandate's old files: the feature instance keeps its own for 60 days.
        assert sorted(e.item.id for e in found) == sorted(f.id for f in old)  # type: ignore[attr-defined]
        expired_at = {e.item.id: e.expired_at for e in found}  # type: ignore[attr-defined]
        assert all(
            expired_at[f.id] <= binder.get_file(ALICE, f.id).created_at + timedelta(days=30)
            for f in old
        )
        assert len(statements) == 2, statements  # one per policy
        for statement, params in statements:
            plan = query_plan(backend, statement, params)
            if backend.name == "sqlite":
                assert "SCAN file_items" not in plan, (statement, plan)
                assert "ix_file_items_mandate_created" in plan, (statement, plan)
            elif backend.name == "postgresql":
                assert "Seq Scan on file_items" not in plan, (statement, plan)
                assert "ix_file_items_mandate_created" in plan, (statement, plan)
            else:
                [row] = [p for p in plan.split(" | ") if "table=file_items" in p]
                assert "ix_file_items_mandate_created" in row, (statement, plan)
    finally:
        binder.close()


def test_a_file_read_within_the_period_is_not_expired_from_the_last_read(
    backend: SqlBackend,
) -> None:
    binder = binder_over(backend.store, MemoryBlobStore(), audit=True)
    try:
        run = binder.start_new_run(ALICE)
        kept = run.produce_file("kept.txt", b"read lately", label="kept")
        gone = run.produce_file("gone.txt", b"never read", label="gone")
        _age(backend, [kept.item.id, gone.item.id], 40)
        assert run.get_content([f"docItem:{kept.document_id}"]).documents
        binder.audit_log.flush()
        binder.retention.set(Scope("m1"), timedelta(days=30), "last_read")
        assert binder.retention.expired() == []  # the policy is new: the log may miss reads
        _age_policies(backend, 40)
        expired = binder.retention.expired()
        assert [e.item.id for e in expired] == [gone.item.id]
        assert attrs.has(type(expired[0]))
    finally:
        binder.close()


def test_a_read_under_last_read_retention_is_seen_by_another_process_at_once(
    backend: SqlBackend,
) -> None:
    """Reads are appended in batches (ADR 0127), but a read that moves its file's expiry is
    appended at once (ADR 0142): another process's resolver and gc must not find the file
    expired while this one keeps reading it. A redeemed signed link is a read too."""
    blobs = MemoryBlobStore()
    ledger = MemoryLinkLedger()
    reader = binder_over(
        backend.store,
        blobs,
        audit=True,
        link_keys=fixed_keys(),
        link_ledger=ledger,
        public_url="http://127.0.0.1:8080",
    )
    other = binder_over(backend.store, blobs, audit=True)
    try:
        run = reader.start_new_run(ALICE)
        by_content = run.produce_file("content.txt", b"read as content", label="c")
        by_bytes = run.produce_file("bytes.bin", b"read as bytes", label="b")
        by_item = run.produce_file("item.bin", b"read with its item", label="i")
        unread = run.produce_file("unread.txt", b"never read", label="u")
        by_link = run.produce_file("link.txt", b"downloaded through a signed link", label="l")
        version = reader.versions.save(ALICE, "kept.txt", b"a version read by name")
        ids = [p.item.id for p in (by_content, by_bytes, by_item, unread, by_link)]
        ids.append(version.item.id)
        _age(backend, ids, 20)
        reader.retention.set(Scope("m1"), timedelta(days=30), "last_read")
        _age_policies(backend, 40)  # it stood before these reads
        assert run.get_content([f"docItem:{by_content.document_id}"]).documents
        with reader.open_file(ALICE, by_bytes.item.id) as chunks:
            assert b"".join(chunks) == b"read as bytes"
        _, item_reader = reader.open_file_item(ALICE, by_item.item.id)
        with item_reader as chunks:
            assert b"".join(chunks) == b"read with its item"
        latest = reader.versions.latest(ALICE, "kept.txt")
        assert latest is not None
        assert reader.versions.read(ALICE, latest) == b"a version read by name"
        link = run.link_for(by_link.item.id, expires_in="10m")
        assert reader.redeem_link(link.token).file.id == by_link.item.id
        _age(backend, ids, 20)  # 40 days old now: only a read in the last 30 keeps a file
        # no flush, no close: the reading process goes on
        assert [e.item.id for e in other.retention.expired()] == [unread.item.id]
        seen = other.start_run(ALICE, run.context.workflow_id)
        resolution = seen.resolve([f"docItem:{p.document_id}" for p in (by_content, unread)])
        assert [d.file.id for d in resolution.documents] == [by_content.item.id]
        assert [u.reason.value for u in resolution.unresolved] == ["expired"]
    finally:
        reader.close()
        other.close()


def test_a_new_policy_from_the_last_read_expires_nothing_before_its_age_has_passed(
    backend: SqlBackend,
) -> None:
    """Reads made before the policy existed may be missing from the log (ADR 0142 addendum):
    an old file is kept until ``max_age`` after the policy was set, then expires unread."""
    import time

    binder = binder_over(backend.store, MemoryBlobStore(), audit=True)
    try:
        run = binder.start_new_run(ALICE)
        old = run.produce_file("old.txt", b"stored long ago, reads unknown", label="old")
        _age(backend, [old.item.id], 40)
        binder.retention.set(Scope("m1"), timedelta(days=30), "created")
        assert [e.item.id for e in binder.retention.expired()] == [old.item.id]
        first = binder.retention.set(Scope("m1"), timedelta(seconds=1), "last_read")
        assert first.set_at is not None
        assert binder.retention.expired() == []
        resolution = run.resolve([f"docItem:{old.document_id}"])
        assert [d.file.id for d in resolution.documents] == [old.item.id]
        # replacing a policy that already counted from the last read keeps when it began
        again = binder.retention.set(Scope("m1"), timedelta(seconds=2), "last_read")
        assert again.set_at == first.set_at
        [stored] = binder.retention.policies("m1")
        assert stored.set_at == first.set_at and stored.max_age == timedelta(seconds=2)
        time.sleep(2.1)
        [expired] = binder.retention.expired()
        assert expired.item.id == old.item.id
        assert expired.expired_at == first.set_at + timedelta(seconds=2)
        [miss] = run.resolve([f"docItem:{old.document_id}"]).unresolved
        assert miss.reason.value == "expired"
        # a read by its file id is refused, and, refused, it does not bring the file back
        with pytest.raises(FileExpired):
            binder.open_file(ALICE, old.item.id)
        assert [e.item.id for e in binder.retention.expired()] == [old.item.id]
        # counting from creation again, then from the last read: a fresh start
        binder.retention.set(Scope("m1"), timedelta(days=30), "created")
        restarted = binder.retention.set(Scope("m1"), timedelta(seconds=2), "last_read")
        assert restarted.set_at is not None and restarted.set_at > first.set_at
        assert binder.retention.expired() == []
    finally:
        binder.close()


def test_a_signed_link_is_neither_minted_nor_redeemed_for_an_expired_file(
    backend: SqlBackend,
) -> None:
    """A link hands out the bytes: past the file's period it is refused ``file_expired``, so it
    cannot serve the file or, as a read, bring it back under last-read retention (B5)."""
    import time

    from docbinder.domain.errors import FileExpired
    from docbinder.domain.links import LinkRefusal, LinkRefused

    binder = binder_over(
        backend.store,
        MemoryBlobStore(),
        audit=True,
        link_keys=fixed_keys(),
        link_ledger=MemoryLinkLedger(),
        public_url="http://127.0.0.1:8080",
    )
    try:
        run = binder.start_new_run(ALICE)
        produced = run.produce_file("s.txt", b"secret", label="s")
        link = run.link_for(produced.item.id, expires_in="10m")
        binder.retention.set(Scope("m1"), timedelta(seconds=1), "last_read")
        _age_policies(backend, 1)  # set a day ago: counts from the file's creation
        time.sleep(1.1)
        with pytest.raises(LinkRefused) as refused:
            binder.redeem_link(link.token)
        assert refused.value.reason is LinkRefusal.FILE_EXPIRED
        with pytest.raises(FileExpired):
            run.link_for(produced.item.id, expires_in="10m")
        assert [e.item.id for e in binder.retention.expired()] == [produced.item.id]
        binder.retention.hold("file", produced.item.id, "m1", "case 1")
        assert binder.redeem_link(link.token).file.id == produced.item.id  # held: served
    finally:
        binder.close()
