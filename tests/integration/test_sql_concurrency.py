"""Concurrent writers on every SQL backend: eight threads, each with its own unit of work.

Uniqueness races (same duplicate key, same label, the loser finding the winner
in its unit, distinct sequence numbers) are in the shipped metadata contract
(``docbinder.testing.MetadataContract``, run on every backend); here: distinct
files and compare-and-set replaces, counted in the SQL tables themselves.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from docbinder.adapters.sql.schema import file_items
from docbinder.domain.model import FileItem
from docbinder.testing.metadata_suite import THREADS, at_once, make_file
from tests.contract.sql_backends import SQL_BACKENDS, SqlBackend, provision


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


def count(db: SqlBackend, table: sa.Table) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


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
