"""In-memory binder fixtures for the unit tests."""

from __future__ import annotations

import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from docbinder.ports.metadata import UnitOfWorkFactory
from docbinder.testing.plugin import PrincipalFactory
from tests.wiring import wire_binder


def make_memory_binder(
    max_file_size: int | None = None, uow_factory: UnitOfWorkFactory | None = None
) -> DocBinder:
    """A binder over fresh in-memory adapters and the role-table authorizer.

    ``uow_factory`` replaces the fresh memory store's own (to wrap it in a test).
    """
    return wire_binder(
        uow_factory or MemoryMetadataStore().unit_of_work,
        MemoryBlobStore(),
        max_file_size=max_file_size,
    )


@pytest.fixture
def binder(docbinder_binder: DocBinder) -> DocBinder:
    """The plugin's in-memory binder (``docbinder.testing.plugin``)."""
    return docbinder_binder


@pytest.fixture
def u1(docbinder_principal_factory: PrincipalFactory) -> Principal:
    return docbinder_principal_factory("u1", "m1", "f1")


@pytest.fixture
def u2(docbinder_principal_factory: PrincipalFactory) -> Principal:
    return docbinder_principal_factory("u2", "m2")
