"""What the provider-copy tests share: the tenant and file, the three SDK adapters on one
server, a binder over them, a lost answer, the row of a key, a slow upload (B22).
"""

from __future__ import annotations

import hashlib
import io
import time
from datetime import UTC, datetime
from typing import Any, BinaryIO

import anthropic
import openai
import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.providers.anthropic_files import AnthropicFiles
from docbinder.adapters.providers.gemini_files import GeminiFiles
from docbinder.adapters.providers.openai_files import OpenAIFiles
from docbinder.application import DocBinder
from docbinder.application.use_cases.provide_file import ProviderTimings
from docbinder.domain.errors import ProviderError
from docbinder.domain.model import Principal
from docbinder.domain.providers import (
    ProviderCopy,
    ProviderCopyKey,
    marked_name,
)
from docbinder.testing.provider_server import ProviderServer
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme", "fi1")
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
SHA = hashlib.sha256(PDF).hexdigest()
PROVIDERS = ("openai", "anthropic", "gemini")
MIME = "application/pdf"


class MovableClock:
    """A clock the test moves forward."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def now(self) -> datetime:
        return self.at


def clients(server: ProviderServer, *, retries: int = 0) -> dict[str, Any]:
    """The three adapters; ``retries`` is the SDK clients' own ``max_retries``."""
    from google import genai

    return {
        "openai": OpenAIFiles(
            openai.OpenAI(api_key="t", base_url=server.openai_base_url, max_retries=retries),
            "main",
        ),
        "anthropic": AnthropicFiles(
            anthropic.Anthropic(api_key="t", base_url=server.url, max_retries=retries), "main"
        ),
        "gemini": GeminiFiles(
            genai.Client(api_key="t", http_options={"base_url": server.url}), "main"
        ),
    }


def make_binder(
    store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer, **kw: Any
) -> DocBinder:
    binder = wire_binder(store.unit_of_work, MemoryBlobStore(), clock=clock, **kw)
    for files in clients(server).values():
        binder.providers.register(files)
    return binder


def strangers(server: ProviderServer, provider: str) -> list[str]:
    """Files of the same account docbinder did not upload: the same bytes under plain names,
    and one named like a docbinder upload with a token no row of this store has."""
    plain = server.store(provider, "report.pdf", PDF, MIME)
    other = server.store(provider, marked_name("report.pdf", "not-a-token-of-ours"), PDF, MIME)
    third = server.store(provider, "notes.txt", b"notes", "text/plain")
    return [plain.file_id, other.file_id, third.file_id]


def lose_an_answer(binder: DocBinder, server: ProviderServer, provider: str) -> tuple[str, Any]:
    """Store a PDF and provide it while ``provider`` stores it, drops the answer and cannot list.

    Returns the file id and the upload the server kept.
    """
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers(provider)
    server.failing_lists.add(provider)
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    (stored,) = server.dropped
    return file_id, stored


def row(store: MemoryMetadataStore, provider: str) -> ProviderCopy | None:
    with store.unit_of_work() as uow:
        return uow.provider_copies.get(ProviderCopyKey(SHA, provider, "main", ALICE.scope))


class SlowSource(io.RawIOBase):
    """A file object over ``inner`` whose every read takes ``pause`` seconds: a slow network."""

    def __init__(self, inner: BinaryIO, pause: float) -> None:
        super().__init__()
        self._inner = inner
        self._pause = pause

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        time.sleep(self._pause)
        return self._inner.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()


class SlowOpenAI(OpenAIFiles):
    """The OpenAI adapter streaming its uploads slowly (0.1 s a 64 KiB read)."""

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        return super().upload(SlowSource(source, 0.1), size, file_name, mime_type)  # type: ignore[arg-type]


LEASES = ProviderTimings(lease=1.0, renew_every=0.2, look_after=0.5, look_every=0.2, wait=20)
