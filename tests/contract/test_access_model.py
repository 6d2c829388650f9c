"""The access model (docbinder/testing/access_model.py) on every metadata backend and both authorizers.

memory + memory blobs and SQLite + local-disk blobs with the role table run in
the normal suite, memory with the Casbin authorizer too. PostgreSQL + local
disk runs when ``CI=true`` or ``DOCBINDER_TEST_POSTGRES_MODEL=1`` (then an
unreachable server fails the test in CI, as every backend does). The
``sqlite_backend`` / ``postgresql_backend`` fixtures come from
``tests/contract/conftest.py``; each example empties the database and gets a
fresh blob directory.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application import DocBinder
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.container import compose_binder
from docbinder.domain.errors import FileItemNotFound
from docbinder.domain.model import Principal
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.access_model import (
    MachineStats,
    random_id,
    state_machine_factory,
    without_id,
)
from tests.conftest import IN_CI
from tests.contract.sql_backends import SqlBackend

MakeBinder = Callable[[], tuple[DocBinder, Callable[[], None] | None]]

MEMORY_SETTINGS = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
CASBIN_SETTINGS = settings(MEMORY_SETTINGS, max_examples=25)
"""Casbin decides about three times slower than the role table; fewer examples keep it short."""
SQL_SETTINGS = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

RUN_POSTGRES = IN_CI or os.environ.get("DOCBINDER_TEST_POSTGRES_MODEL", "") == "1"


def binder(uow_factory: UnitOfWorkFactory, blobs: BlobStore, authorizer: Authorizer) -> DocBinder:
    """A binder over the given adapters, wired as the container wires it."""
    return compose_binder(
        uow_factory=uow_factory,
        blobs=blobs,
        authorizer=authorizer,
        clock=UtcClock(),
        ids=UuidIdFactory(),
        extractor=DefaultContentExtractor(),
        mime=SniffingMimeDetector(),
    )


def memory_binders(authorizer: Callable[[], Authorizer]) -> MakeBinder:
    """Fresh memory metadata and blobs for every example."""

    def make() -> tuple[DocBinder, Callable[[], None] | None]:
        return binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore(), authorizer()), None

    return make


def sql_binders(backend: SqlBackend, blob_root: Path) -> MakeBinder:
    """An emptied database and a fresh local-disk blob directory for every example."""
    counter = itertools.count()

    def make() -> tuple[DocBinder, Callable[[], None] | None]:
        backend.clean()
        root = blob_root / f"example-{next(counter)}"
        made = binder(backend.store.unit_of_work, LocalDiskBlobStore(root), RoleTableAuthorizer())
        return made, lambda: shutil.rmtree(root, ignore_errors=True)

    return make


def coverage_gaps(stats: MachineStats) -> list[str]:
    """What the runs failed to reach: invariant checks over stored files and attached documents."""
    gaps = []
    if stats.checks == 0:
        gaps.append("no invariant was checked")
    if stats.most_files < 2:
        gaps.append(f"at most {stats.most_files} file(s) existed at a check")
    if stats.most_documents < 1:
        gaps.append("no document was attached at a check")
    return gaps


def test_access_model_memory_role_table() -> None:
    stats = MachineStats()
    run_state_machine_as_test(
        state_machine_factory(memory_binders(RoleTableAuthorizer), stats), settings=MEMORY_SETTINGS
    )
    assert coverage_gaps(stats) == []


def test_access_model_memory_casbin() -> None:
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer

    shared = CasbinAuthorizer()  # stateless for docbinder; loading the model once is enough
    stats = MachineStats()
    run_state_machine_as_test(
        state_machine_factory(memory_binders(lambda: shared), stats), settings=CASBIN_SETTINGS
    )
    assert coverage_gaps(stats) == []


def test_access_model_sqlite_local_disk(sqlite_backend: SqlBackend, tmp_path: Path) -> None:
    stats = MachineStats()
    run_state_machine_as_test(
        state_machine_factory(sql_binders(sqlite_backend, tmp_path), stats), settings=SQL_SETTINGS
    )
    assert coverage_gaps(stats) == []


@pytest.mark.postgres
@pytest.mark.skipif(
    not RUN_POSTGRES,
    reason="the access model on PostgreSQL runs with CI=true or DOCBINDER_TEST_POSTGRES_MODEL=1",
)
def test_access_model_postgresql_local_disk(postgresql_backend: SqlBackend, tmp_path: Path) -> None:
    stats = MachineStats()
    run_state_machine_as_test(
        state_machine_factory(sql_binders(postgresql_backend, tmp_path), stats),
        settings=SQL_SETTINGS,
    )
    assert coverage_gaps(stats) == []


def test_attach_answers_alike_for_a_foreign_and_an_unknown_file_id() -> None:
    """Attaching by another mandate's file id and by an unknown id looks the same (no oracle)."""
    made, _cleanup = memory_binders(RoleTableAuthorizer)()
    caller = made.start_new_run(Principal("ann", "mandate-1", None, ("member",)))
    other = made.start_new_run(Principal("ben", "mandate-2", None, ("member",)))
    foreign = other.store_file("secret.txt", b"secret").item
    own = caller.store_file("own.txt", b"own").item
    answers: list[tuple[object, str]] = []
    for ident in (foreign.id, random_id()):
        try:
            document = caller.attach(attrs.evolve(own, id=ident), label=f"probe-{ident}")
        except FileItemNotFound as exc:
            answers.append((type(exc), without_id(str(exc), ident)))
        else:
            (unresolved,) = caller.resolve([f"docItem:{document.id}"]).unresolved
            assert isinstance(unresolved.reason, UnresolvedReason)
            answers.append((unresolved.reason, unresolved.message))
    assert answers[0] == answers[1]
