"""The fixtures of the provider-copy tests: the local provider server, a movable clock, a
memory store and a binder over the three SDK adapters (B22).

The directory is skipped where an SDK (``anthropic``, ``openai``, ``google-genai``) is missing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("anthropic")
pytest.importorskip("openai")
pytest.importorskip("google.genai")

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.testing.provider_server import ProviderServer
from tests.integration.providers.support import MovableClock, make_binder


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer(page_size=2) as running:
        yield running


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def store() -> MemoryMetadataStore:
    return MemoryMetadataStore()


@pytest.fixture
def binder(store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer) -> DocBinder:
    return make_binder(store, clock, server)
