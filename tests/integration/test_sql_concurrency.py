"""Concurrent writers on every SQL backend: eight threads, each with its own unit of work.

Checks that uniqueness races end in docbinder's own errors (never an
``IntegrityError`` or ``PendingRollbackError``), that the loser of a race can
look again inside its unit and find the winner, and that concurrent messages
in one workflow get distinct sequence numbers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from docbinder.adapters.sql.schema import chat_messages, file_items
from docbinder.domain.errors import DuplicateFileItem, DuplicateLabel
from docbinder.domain.model import ChatMessage, FileItem, Scope
from docbinder.testing.metadata_suite import SHA_A, make_file, make_message, make_workflow
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, provision

THREADS = 8


@pytest.fixture(scope="module", params=SQL_BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqlBackend]:
    with provision(request.param, tmp_path_factory.mktemp(request.param)) as b:
        yield b


@pytest.fixture
def db(backend: SqlBackend) -> SqlBackend:
    backend.clean()
    return backend


def at_once(work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` in :data:`THREADS` threads released together; results or raised exceptions."""
    barrier = threading.Barrier(THREADS)

    def run(i: int) -> object:
        barrier.wait(timeout=30)
        try:
            return work(i)
        except Exception as err:
            return err

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(run, i) for i in range(THREADS)]
        return [f.result(timeout=120) for f in futures]


def count(db: SqlBackend, table: sa.Table) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_same_duplicate_key_one_row_seven_duplicates(db: SqlBackend) -> None:
    items = [make_file() for _ in range(THREADS)]  # distinct ids, one duplicate key

    def add(i: int) -> str:
        with db.store.unit_of_work() as u:
            u.files.add(items[i])
            u.commit()
        return items[i].id

    outcomes = at_once(add)
    winners = [o for o in outcomes if isinstance(o, str)]
    losers = [o for o in outcomes if isinstance(o, DuplicateFileItem)]
    assert len(winners) == 1, outcomes
    assert len(losers) == THREADS - 1, outcomes
    assert count(db, file_items) == 1
    with db.store.unit_of_work() as u:
        assert [
            f.id for f in u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1"))
        ] == winners


def test_race_loser_finds_the_winner_in_the_same_unit(db: SqlBackend) -> None:
    items = [make_file() for _ in range(THREADS)]

    def find_or_add(i: int) -> tuple[str, str]:
        item = items[i]
        with db.store.unit_of_work() as u:
            found = u.files.find_duplicates(
                item.sha256, item.file_name, item.created_by, item.scope
            )
            if found:
                return "found", found[0].id
            try:
                u.files.add(item)
            except DuplicateFileItem:
                again = u.files.find_duplicates(
                    item.sha256, item.file_name, item.created_by, item.scope
                )
                assert len(again) == 1, "the winner must be visible to the loser's retry"
                return "raced", again[0].id
            u.commit()
            return "added", item.id

    outcomes = at_once(find_or_add)
    assert all(isinstance(o, tuple) for o in outcomes), outcomes
    kinds = [o[0] for o in outcomes]  # type: ignore[index]
    ids = {o[1] for o in outcomes}  # type: ignore[index]
    assert kinds.count("added") == 1, outcomes
    assert len(ids) == 1, outcomes
    assert count(db, file_items) == 1


def test_same_label_one_message_seven_duplicate_labels(db: SqlBackend) -> None:
    workflow = make_workflow()
    with db.store.unit_of_work() as u:
        u.workflows.add_workflow(workflow)
        u.commit()
    messages = [make_message(workflow, "datasource:sharepoint") for _ in range(THREADS)]

    def add(i: int) -> ChatMessage:
        with db.store.unit_of_work() as u:
            stored = u.workflows.add_message(messages[i])
            u.commit()
        return stored

    outcomes = at_once(add)
    winners = [o for o in outcomes if isinstance(o, ChatMessage)]
    losers = [o for o in outcomes if isinstance(o, DuplicateLabel)]
    assert len(winners) == 1, outcomes
    assert len(losers) == THREADS - 1, outcomes
    assert winners[0].sequence_nr == 1
    assert count(db, chat_messages) == 1
    with db.store.unit_of_work() as u:
        assert u.workflows.list_messages(workflow.id) == winners


def test_distinct_labels_all_succeed_with_distinct_sequence_numbers(db: SqlBackend) -> None:
    workflow = make_workflow()
    with db.store.unit_of_work() as u:
        u.workflows.add_workflow(workflow)
        u.commit()

    def add(i: int) -> ChatMessage:
        with db.store.unit_of_work() as u:
            # a read first, as the bridge does, before the write
            assert u.workflows.get_workflow(workflow.id) is not None
            stored = u.workflows.add_message(make_message(workflow, f"writeFile:{i}.txt", files=2))
            u.commit()
        return stored

    outcomes = at_once(add)
    stored = [o for o in outcomes if isinstance(o, ChatMessage)]
    assert len(stored) == THREADS, outcomes
    numbers = sorted(m.sequence_nr for m in stored)
    assert numbers == list(range(1, THREADS + 1))
    with db.store.unit_of_work() as u:
        listed = u.workflows.list_messages(workflow.id)
        assert [m.sequence_nr for m in listed] == numbers
        assert len(u.workflows.recent_documents(workflow.id, 100)) == 2 * THREADS


def test_distinct_files_all_succeed(db: SqlBackend) -> None:
    items: list[FileItem] = [make_file(file_name=f"{i}.pdf") for i in range(THREADS)]

    def add(i: int) -> None:
        with db.store.unit_of_work() as u:
            u.files.add(items[i])
            u.commit()

    assert at_once(add) == [None] * THREADS
    assert count(db, file_items) == THREADS


def test_replace_based_on_one_read_wins_once(
    db: SqlBackend, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Eight ``replace(..., expected=item)`` at once: one wins, seven get ``Conflict``, no orphan blob."""
    from docbinder.adapters.localdisk import LocalDiskBlobStore
    from docbinder.domain.errors import Conflict
    from docbinder.domain.model import Principal
    from tests.contract.sql_backends import binder_over

    blobs = LocalDiskBlobStore(tmp_path_factory.mktemp("replace-blobs"))
    binder = binder_over(db.store, blobs)
    user = Principal("u1", "m1", None, roles=("member",))
    original = binder.start_run(user).store_file("notes.md", b"# v1\n").item
    outcomes = at_once(
        lambda i: binder.update_file.replace(
            user, original.id, f"# v2 by {i}\n".encode(), expected=original
        )
    )
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(o, Conflict) for o in outcomes if o not in winners), outcomes
    stored = binder.get_file(user, original.id)
    assert stored == winners[0].item  # type: ignore[attr-defined]
    assert sorted(blobs.keys()) == [stored.blob_key]
