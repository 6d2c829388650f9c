"""The access model (tests/contract/access_model.py) on every metadata backend and both authorizers.

memory + memory blobs and SQLite + local-disk blobs with the role table run in
the normal suite, memory with the Casbin authorizer too. PostgreSQL + local
disk runs when ``CI=true`` or ``DOCBINDER_TEST_POSTGRES_MODEL=1``.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.adapters.system import UtcClock, UuidIdFactory
from docbinder.application import DocBinder
from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.conftest import IN_CI
from tests.contract.access_model import state_machine_factory
from tests.contract.sql_backends import SqlBackend, provision

MakeBinder = Callable[[], tuple[DocBinder, Callable[[], None] | None]]

MEMORY_SETTINGS = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SQL_SETTINGS = settings(
    max_examples=20,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

RUN_POSTGRES = IN_CI or os.environ.get("DOCBINDER_TEST_POSTGRES_MODEL", "") == "1"


def binder(uow_factory: UnitOfWorkFactory, blobs: BlobStore, authorizer: Authorizer) -> DocBinder:
    """A binder over the given adapters, wired as the container wires it."""
    return DocBinder(
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


@pytest.fixture(scope="module")
def sqlite_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    with provision("sqlite", tmp_path_factory.mktemp("access-model-sqlite")) as backend:
        yield backend


@pytest.fixture(scope="module")
def postgresql_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    if not RUN_POSTGRES:
        pytest.skip(
            "the access model on PostgreSQL runs with CI=true or DOCBINDER_TEST_POSTGRES_MODEL=1"
        )
    with provision("postgresql", tmp_path_factory.mktemp("access-model-postgresql")) as backend:
        yield backend


def test_access_model_memory_role_table() -> None:
    run_state_machine_as_test(
        state_machine_factory(memory_binders(RoleTableAuthorizer)), settings=MEMORY_SETTINGS
    )


def test_access_model_memory_casbin() -> None:
    from docbinder.adapters.rbac.casbin_authorizer import CasbinAuthorizer

    shared = CasbinAuthorizer()  # stateless for docbinder; loading the model once is enough
    run_state_machine_as_test(
        state_machine_factory(memory_binders(lambda: shared)), settings=MEMORY_SETTINGS
    )


def test_access_model_sqlite_local_disk(sqlite_backend: SqlBackend, tmp_path: Path) -> None:
    run_state_machine_as_test(
        state_machine_factory(sql_binders(sqlite_backend, tmp_path)), settings=SQL_SETTINGS
    )


@pytest.mark.postgres
def test_access_model_postgresql_local_disk(
    postgresql_backend: SqlBackend, tmp_path: Path
) -> None:
    run_state_machine_as_test(
        state_machine_factory(sql_binders(postgresql_backend, tmp_path)), settings=SQL_SETTINGS
    )
