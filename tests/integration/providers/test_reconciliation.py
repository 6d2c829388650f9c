"""Provider uploads whose answer was lost (B22, ADR 0125 and 0126), through the official SDKs.

Each SDK (``openai``, ``anthropic``, ``google-genai``) against
:class:`~docbinder.testing.provider_server.ProviderServer` on 127.0.0.1, which can
store an upload and then close the connection without answering
(:meth:`~docbinder.testing.provider_server.ProviderServer.drop_answers`), fail its
list call, and pages its lists two files at a time here so every listing
follows the provider's cursors. A process killed with SIGKILL between the
upload and its commit runs as a subprocess on a shared SQLite database.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.providers.gemini_files import GeminiFiles
from docbinder.adapters.providers.openai_files import OpenAIFiles
from docbinder.application import DocBinder
from docbinder.application.steps.blob_file import BlobFile
from docbinder.application.use_cases.provide_file import ProviderTimings
from docbinder.domain.errors import ProviderError
from docbinder.domain.providers import (
    CopyState,
    ProviderCopy,
    ProviderCopyKey,
    marked_name,
    token_of,
)
from docbinder.testing.provider_server import ProviderServer
from tests.integration.frameworks import sqlite_binder
from tests.integration.providers.support import (
    ALICE,
    LEASES,
    MIME,
    PDF,
    PROVIDERS,
    SHA,
    MovableClock,
    SlowOpenAI,
    clients,
    lose_an_answer,
    make_binder,
    row,
    strangers,
)
from tests.wiring import wire_binder


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_lost_answer_is_found_at_the_provider_and_adopted(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, provider: str
) -> None:
    others = strangers(server, provider)
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers(provider)
    ref = binder.provide_file(ALICE, file_id, provider, "main")
    (stored,) = server.dropped
    assert ref.file_id == stored.file_id and ref.uploaded is True
    assert len(server.uploads_of(provider)) == 1  # not uploaded a second time
    assert server.list_pages.count(provider) >= 2  # four files, two a page: the cursor was followed
    copy = row(store, provider)
    assert copy is not None and copy.state is CopyState.READY and copy.file_id == stored.file_id
    assert token_of(stored.file_name) == copy.upload_token
    again = binder.provide_file(ALICE, file_id, provider, "main")
    assert again.file_id == stored.file_id and again.uploaded is False
    assert all(server.holds(provider, f) for f in others)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_sdks_own_retries_store_no_second_copy(
    store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer, provider: str
) -> None:
    binder = make_binder(store, clock, server)
    binder.providers.register(clients(server, retries=3)[provider])
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers(provider)
    ref = binder.provide_file(ALICE, file_id, provider, "main")
    assert [u.file_id for u in server.uploads_of(provider)] == [ref.file_id]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unlisted_lost_upload_leaves_the_row_lost_and_the_next_call_adopts_it(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, provider: str
) -> None:
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers(provider)
    server.failing_lists.add(provider)
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    lost = row(store, provider)
    assert lost is not None and lost.state is CopyState.LOST
    (stored,) = server.dropped
    assert token_of(stored.file_name) == lost.upload_token
    # the listing still fails: the next call does not upload blindly
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    assert len(server.uploads_of(provider)) == 1
    server.failing_lists.clear()
    ref = binder.provide_file(ALICE, file_id, provider, "main")  # no wait: no one uploads
    assert ref.file_id == stored.file_id and ref.uploaded is False
    assert len(server.uploads_of(provider)) == 1


def test_a_lost_upload_the_provider_never_stored_is_uploaded_again_under_its_token(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    file_id, stored = lose_an_answer(binder, server, "anthropic")
    server.forget("anthropic", stored.file_id)  # as if it had never been stored
    server.failing_lists.clear()
    ref = binder.provide_file(ALICE, file_id, "anthropic", "main")
    assert ref.uploaded is True and ref.file_id != stored.file_id
    second = server.uploads_of("anthropic")[-1]
    assert token_of(second.file_name) == token_of(stored.file_name)


def test_duplicates_under_one_token_are_deleted_when_one_is_adopted(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    others = strangers(server, "openai")
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers("openai")
    server.failing_lists.add("openai")
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, "openai", "main")
    lost = row(store, "openai")
    assert lost is not None and lost.upload_token is not None
    (first,) = server.dropped
    # a second copy under the same token, as a client's own retry of the request leaves
    second = server.store("openai", first.file_name, PDF, MIME)
    server.failing_lists.clear()
    ref = binder.provide_file(ALICE, file_id, "openai", "main")
    assert ref.file_id in (first.file_id, second.file_id)
    held = [f.file_id for f in (first, second) if server.holds("openai", f.file_id)]
    assert held == [ref.file_id]
    assert all(server.holds("openai", f) for f in others)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_deleting_the_file_deletes_the_copy_of_an_unanswered_upload_and_nothing_else(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, provider: str
) -> None:
    others = strangers(server, provider)
    file_id, stored = lose_an_answer(binder, server, provider)
    server.failing_lists.clear()
    binder.delete_file(ALICE, file_id)
    assert not server.holds(provider, stored.file_id)
    assert row(store, provider) is None
    assert all(server.holds(provider, f) for f in others)


def test_an_empty_listing_is_believed_only_after_the_settle_time(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, clock: MovableClock
) -> None:
    others = strangers(server, "gemini")
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers("gemini")
    server.failing_lists.add("gemini")
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, "gemini", "main")
    server.forget("gemini", server.dropped[0].file_id)  # the provider has nothing under the token
    server.failing_lists.clear()
    binder.delete_file(ALICE, file_id)
    kept = row(store, "gemini")
    assert kept is not None and kept.state is CopyState.DELETING and kept.upload_token
    assert binder.collect_garbage(dry_run=False).provider_copies_kept == 1
    clock.at += timedelta(minutes=11)
    report = binder.collect_garbage(dry_run=False)
    # done with: none was there to delete (gc counts it with the deleted)
    assert (report.provider_copies_kept, report.provider_copies_deleted) == (0, 1)
    assert row(store, "gemini") is None
    assert all(server.holds("gemini", f) for f in others)


def test_a_failed_listing_keeps_the_deleted_files_row_for_gc(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers("openai")
    server.failing_lists.add("openai")
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, "openai", "main")
    binder.delete_file(ALICE, file_id)
    (stored,) = server.dropped
    assert server.holds("openai", stored.file_id)
    kept = row(store, "openai")
    assert kept is not None and kept.state is CopyState.DELETING
    server.failing_lists.clear()
    report = binder.collect_garbage(dry_run=False)
    assert (report.provider_copies_deleted, report.provider_copies_kept) == (1, 0)
    assert not server.holds("openai", stored.file_id) and row(store, "openai") is None


class Recording(OpenAIFiles):
    """The OpenAI adapter, keeping the file object each upload got."""

    sources: list[Any]

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        self.sources.append(source)
        return super().upload(source, size, file_name, mime_type)


class RecordingGemini(GeminiFiles):
    sources: list[Any]

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        self.sources.append(source)
        return super().upload(source, size, file_name, mime_type)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_uploads_stream_from_the_blob_store(
    binder: DocBinder, server: ProviderServer, provider: str
) -> None:
    big = os.urandom(9 * 1024 * 1024 + 5)  # Gemini's SDK sends 8 MiB chunks: two requests
    adapter: Any = (
        Recording(server.openai_client(), "main")
        if provider == "openai"
        else RecordingGemini(server.gemini_client(), "main")
    )
    adapter.sources = []
    binder.providers.register(adapter)
    file_id = binder.store_file(ALICE, "big.bin", big, mime_type="application/pdf").item.id
    binder.provide_file(ALICE, file_id, provider, "main")
    (source,) = adapter.sources
    assert isinstance(source, BlobFile) and source.closed
    assert source.bytes_read == len(big)
    assert source.largest_read <= (64 * 1024 if provider == "openai" else 8 * 1024 * 1024)
    assert server.uploads_of(provider)[-1].data == big


def _child(tmp_path: Path, server: ProviderServer, file_id: str, when: str) -> int:
    """Run provide_file in a process that SIGKILLs itself ``when`` (``before`` / ``after``) the upload."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        import openai
        from pathlib import Path
        from docbinder.adapters.providers.openai_files import OpenAIFiles
        from docbinder.domain.model import Principal
        from tests.integration.frameworks import sqlite_binder

        class Dies(OpenAIFiles):
            def upload(self, source, size, file_name, mime_type):
                if {when!r} == "before":
                    os.kill(os.getpid(), signal.SIGKILL)
                answer = super().upload(source, size, file_name, mime_type)
                os.kill(os.getpid(), signal.SIGKILL)  # between the upload and its commit

        binder = sqlite_binder(Path({str(tmp_path)!r}))
        client = openai.OpenAI(api_key="t", base_url={server.openai_base_url!r}, max_retries=0)
        binder.providers.register(Dies(client, "main"))
        binder.provide_file(Principal("alice", "acme", "fi1"), {file_id!r}, "openai", "main")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=120, capture_output=True)
    return done.returncode


def test_after_a_kill_between_upload_and_commit_a_waiter_adopts_the_copy_soon(
    tmp_path: Path, server: ProviderServer
) -> None:
    binder = sqlite_binder(tmp_path)
    binder.providers.register(clients(server)["openai"])
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    assert _child(tmp_path, server, file_id, "after") == -9
    (stored,) = server.uploads_of("openai")
    binder.provide_file.timings = ProviderTimings(look_after=0.5, look_every=0.2, poll=0.05)
    started = time.monotonic()
    ref = binder.provide_file(ALICE, file_id, "openai", "main")
    assert time.monotonic() - started < 30  # not the 600 s of a stale claim
    assert ref.file_id == stored.file_id and len(server.uploads_of("openai")) == 1
    binder.delete_file(ALICE, file_id)
    assert not server.holds("openai", stored.file_id)


def test_after_a_kill_the_deleted_files_copy_is_found_and_deleted(
    tmp_path: Path, server: ProviderServer
) -> None:
    binder = sqlite_binder(tmp_path)
    binder.providers.register(clients(server)["openai"])
    others = strangers(server, "openai")
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    assert _child(tmp_path, server, file_id, "after") == -9
    (stored,) = server.uploads_of("openai")
    binder.delete_file(ALICE, file_id)  # the row was still "uploading": no file id recorded
    assert not server.holds("openai", stored.file_id)
    assert all(server.holds("openai", f) for f in others)


def test_a_stale_claim_of_a_killed_upload_that_stored_nothing_is_taken_over(
    tmp_path: Path, server: ProviderServer
) -> None:
    binder = sqlite_binder(tmp_path)
    binder.providers.register(clients(server)["openai"])
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    assert _child(tmp_path, server, file_id, "before") == -9
    assert server.uploads_of("openai") == []
    binder.provide_file.timings = ProviderTimings(stale_after=1.0, look_after=0.3, look_every=0.2)
    ref = binder.provide_file(ALICE, file_id, "openai", "main")
    assert ref.uploaded is True and len(server.uploads_of("openai")) == 1


class SlowAnswer(OpenAIFiles):
    """The OpenAI adapter handing the answer of an upload back only after a pause."""

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        answer = super().upload(source, size, file_name, mime_type)
        time.sleep(1.5)
        return answer


def test_a_waiter_adopts_a_stored_upload_and_its_uploader_keeps_it(
    server: ProviderServer, store: MemoryMetadataStore
) -> None:
    import threading

    binder = wire_binder(store.unit_of_work, MemoryBlobStore())  # the real clock: claims age
    binder.providers.register(SlowAnswer(server.openai_client(), "main"))
    binder.provide_file.timings = ProviderTimings(look_after=0.2, look_every=0.1)
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    results: list[Any] = []
    uploader = threading.Thread(
        target=lambda: results.append(binder.provide_file(ALICE, file_id, "openai", "main"))
    )
    uploader.start()
    while not server.uploads_of("openai"):
        time.sleep(0.01)
    waiter = binder.provide_file(ALICE, file_id, "openai", "main")  # adopts while the answer waits
    assert uploader.is_alive()  # the waiter did not wait for the uploader's answer
    uploader.join(timeout=30)
    (first,) = results
    assert waiter.file_id == first.file_id and first.uploaded is True
    assert server.holds("openai", first.file_id)  # the uploader did not delete the adopted copy
    assert len(server.uploads_of("openai")) == 1
    copy = row(store, "openai")
    assert copy is not None and copy.state is CopyState.READY and copy.file_id == first.file_id


def test_gemini_connection_errors_are_provider_errors() -> None:
    """A refused connection is a ProviderError (status None: no answer), as the other adapters give."""
    import socket

    from google import genai

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    files = GeminiFiles(
        genai.Client(api_key="t", http_options={"base_url": f"http://127.0.0.1:{port}"}), "main"
    )
    for call in (
        lambda: files.exists("files/x"),
        lambda: files.delete("files/x"),
        lambda: files.find("t"),
        lambda: files.upload(io.BytesIO(b"x"), 1, "x.pdf", MIME),
    ):
        with pytest.raises(ProviderError) as failed:
            call()
        assert failed.value.status is None and failed.value.provider == "gemini"


def test_the_same_content_after_a_deleted_unanswered_upload_goes_up_under_its_token(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    file_id, stored = lose_an_answer(binder, server, "openai")
    server.forget("openai", stored.file_id)
    server.failing_lists.clear()
    binder.delete_file(ALICE, file_id)  # nothing listed yet: the row stays "deleting"
    kept = row(store, "openai")
    assert kept is not None and kept.state is CopyState.DELETING
    again = binder.store_file(ALICE, "again.pdf", PDF, mime_type=MIME).item.id
    ref = binder.provide_file(ALICE, again, "openai", "main")  # no error, no wait
    assert ref.uploaded is True
    assert token_of(server.uploads_of("openai")[-1].file_name) == kept.upload_token
    copy = row(store, "openai")
    assert copy is not None and copy.state is CopyState.READY and copy.file_id == ref.file_id


def memory_or_sqlite(kind: str, tmp_path: Path) -> tuple[DocBinder, Any]:
    """A binder on the real clock and its unit-of-work factory: in memory, or SQLite on disk."""
    if kind == "memory":
        store = MemoryMetadataStore()
        return wire_binder(store.unit_of_work, MemoryBlobStore()), store.unit_of_work
    binder = sqlite_binder(tmp_path)
    return binder, binder.provide_file._uow  # the test reads the row itself


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_live_slow_upload_renews_its_claim_and_keeps_it_past_the_lease(
    tmp_path: Path, server: ProviderServer, kind: str
) -> None:
    import threading

    binder, uow = memory_or_sqlite(kind, tmp_path)
    binder.providers.register(SlowOpenAI(server.openai_client(), "main"))
    binder.provide_file.timings = LEASES
    big = os.urandom(2 * 1024 * 1024)  # 32 reads of 64 KiB: about 3 s, three leases
    file_id = binder.store_file(ALICE, "big.pdf", big, mime_type=MIME).item.id
    key = ProviderCopyKey(hashlib.sha256(big).hexdigest(), "openai", "main", ALICE.scope)
    results: list[Any] = []
    uploader = threading.Thread(
        target=lambda: results.append(binder.provide_file(ALICE, file_id, "openai", "main"))
    )
    uploader.start()
    claimed = None
    while claimed is None:
        with uow() as u:
            claimed = u.provider_copies.get(key)
        time.sleep(0.01)
    started = time.monotonic()
    waiter = binder.provide_file(ALICE, file_id, "openai", "main")  # waits for the live upload
    assert time.monotonic() - started > LEASES.lease  # it waited longer than a lease
    uploader.join(timeout=30)
    (first,) = results
    assert first.uploaded is True and waiter.file_id == first.file_id and not waiter.uploaded
    assert len(server.uploads_of("openai")) == 1  # never taken over, never uploaded twice
    assert server.list_pages.count("openai") == 0  # no listing while the uploader renews
    with uow() as u:
        ready = u.provider_copies.get(key)
    assert ready is not None and ready.state is CopyState.READY


def test_a_claim_whose_uploader_never_renews_is_taken_over_after_the_lease(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, clock: MovableClock
) -> None:
    others = strangers(server, "openai")
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    key = ProviderCopyKey(SHA, "openai", "main", ALICE.scope)
    dead = ProviderCopy(
        key, "uploading", "dead-claim", clock.now(), size=len(PDF), upload_token="t-dead"
    )
    with store.unit_of_work() as u:  # an uploader that crashed before the provider stored anything
        assert u.provider_copies.claim(dead) is None
        u.commit()
    binder.provide_file.timings = attrs.evolve(LEASES, wait=10)
    started = time.monotonic()
    ref = binder.provide_file(ALICE, file_id, "openai", "main")
    assert LEASES.lease < time.monotonic() - started < 8  # a lease, not the 600 s stale time
    assert ref.uploaded is True
    assert server.list_pages.count("openai") >= 1  # listed for the token before taking it over
    (upload,) = server.uploads_of("openai")
    assert token_of(upload.file_name) == "t-dead"  # under the dead claim's token
    copy = row(store, "openai")
    assert copy is not None and copy.state is CopyState.READY and copy.file_id == ref.file_id
    assert all(server.holds("openai", f) for f in others)


def test_a_claim_is_not_taken_over_while_the_listing_fails(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, clock: MovableClock
) -> None:
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    key = ProviderCopyKey(SHA, "openai", "main", ALICE.scope)
    dead = ProviderCopy(key, "uploading", "dead-claim", clock.now(), upload_token="t-dead")
    with store.unit_of_work() as u:
        u.provider_copies.claim(dead)
        u.commit()
    server.failing_lists.add("openai")
    binder.provide_file.timings = attrs.evolve(LEASES, wait=10)
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, "openai", "main")
    assert server.uploads_of("openai") == [] and row(store, "openai") == dead


def test_a_killed_upload_that_stored_nothing_is_taken_over_after_the_lease(
    tmp_path: Path, server: ProviderServer
) -> None:
    binder = sqlite_binder(tmp_path)
    binder.providers.register(clients(server)["openai"])
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    assert _child(tmp_path, server, file_id, "before") == -9
    binder.provide_file.timings = attrs.evolve(LEASES, wait=10)  # stale_after stays 600 s
    started = time.monotonic()
    ref = binder.provide_file(ALICE, file_id, "openai", "main")
    assert time.monotonic() - started < 8
    assert ref.uploaded is True and len(server.uploads_of("openai")) == 1


def test_the_renewal_must_be_shorter_than_the_lease() -> None:
    with pytest.raises(ValueError, match="renew_every"):
        ProviderTimings(lease=5.0, renew_every=5.0)
    with pytest.raises(ValueError, match="renew_every"):
        ProviderTimings(renew_every=0)


def late_duplicate(binder: DocBinder, server: ProviderServer, provider: str) -> tuple[str, Any]:
    """A ready copy whose token also names an earlier upload the provider listed only later.

    The first upload is stored, its answer lost and the listing does not show it; the next
    call finds nothing and uploads again under the row's token. Returns the file id and the
    first upload (now listed).
    """
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    server.drop_answers(provider, listed=False)
    with pytest.raises(ProviderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    ref = binder.provide_file(ALICE, file_id, provider, "main")
    (first,) = server.dropped
    assert ref.uploaded is True and ref.file_id != first.file_id
    assert token_of(server.uploads_of(provider)[-1].file_name) == token_of(first.file_name)
    server.unlisted.clear()  # the provider lists the first upload now
    return file_id, first


@pytest.mark.parametrize("provider", PROVIDERS)
def test_deleting_the_file_deletes_a_late_duplicate_of_its_ready_copy_and_nothing_else(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, provider: str
) -> None:
    others = strangers(server, provider)
    file_id, first = late_duplicate(binder, server, provider)
    ready = row(store, provider)
    assert ready is not None and ready.state is CopyState.READY and ready.file_id != first.file_id
    binder.delete_file(ALICE, file_id)
    assert not server.holds(provider, ready.file_id)  # the recorded copy
    assert not server.holds(provider, first.file_id)  # and the one named with its token
    assert row(store, provider) is None
    assert all(server.holds(provider, f) for f in others)


def test_a_failed_listing_keeps_a_ready_copys_row_for_gc(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    file_id, first = late_duplicate(binder, server, "anthropic")
    server.failing_lists.add("anthropic")
    binder.delete_file(ALICE, file_id)
    kept = row(store, "anthropic")
    assert kept is not None and kept.state is CopyState.DELETING
    assert server.holds("anthropic", first.file_id)
    server.failing_lists.clear()
    report = binder.collect_garbage(dry_run=False)
    assert (report.provider_copies_deleted, report.provider_copies_kept) == (1, 0)
    assert not server.holds("anthropic", first.file_id) and row(store, "anthropic") is None


def test_a_copy_uploaded_again_after_the_provider_lost_it_keeps_the_rows_token(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    file_id, first = late_duplicate(binder, server, "openai")
    ready = row(store, "openai")
    assert ready is not None and ready.file_id is not None
    server.forget("openai", ready.file_id)  # deleted in the provider's console
    again = binder.provide_file(ALICE, file_id, "openai", "main")
    assert again.uploaded is True
    assert token_of(server.uploads_of("openai")[-1].file_name) == ready.upload_token
    binder.delete_file(ALICE, file_id)
    assert not server.holds("openai", again.file_id)
    assert not server.holds("openai", first.file_id)  # still found under the one token


@pytest.mark.parametrize("provider", PROVIDERS)
def test_gc_lists_an_account_once_for_all_its_copies_to_delete(
    store: MemoryMetadataStore, clock: MovableClock, provider: str
) -> None:
    with ProviderServer() as busy:  # pages of 100, as Gemini's largest
        binder = make_binder(store, clock, busy)
        for i in range(250):  # an account with many files of others
            busy.store(provider, f"other-{i}.pdf", b"x", MIME)
        scope, rows, held = ALICE.scope, [], []
        for i in range(8):
            token = f"tok-{i}-{provider}"
            sha = hashlib.sha256(f"{i}".encode()).hexdigest()
            key = ProviderCopyKey(sha, provider, "main", scope)
            rows.append(ProviderCopy(key, "deleting", f"c{i}", clock.now(), upload_token=token))
            held.append(busy.store(provider, marked_name(f"f{i}.pdf", token), b"y", MIME).file_id)
        with store.unit_of_work() as u:
            for copy in rows:
                u.provider_copies.claim(copy)
            u.commit()
        pages = len(busy.list_pages)
        report = binder.collect_garbage(dry_run=False)
        assert report.provider_copies_deleted == 8 and report.provider_copies_kept == 0
        assert not any(busy.holds(provider, f) for f in held)
        assert len(busy.listed(provider)) == 250  # the others' files stay
        # 258 files, 100 a page: one listing is 3 pages (one listing per copy made it 24)
        assert len(busy.list_pages) - pages == 3


def test_an_earlier_copy_about_to_expire_is_not_adopted_after_a_lost_answer(
    store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer
) -> None:
    binder = make_binder(store, clock, server)
    binder.providers.register(OpenAIFiles(server.openai_client(), "main", expires_after=3600))
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    old = binder.provide_file(ALICE, file_id, "openai", "main")
    clock.at += timedelta(seconds=3600 - 120)  # within the 300 s margin of its expiry
    server.drop_answers("openai", listed=False)
    with pytest.raises(ProviderError):  # the listing shows only the expiring copy
        binder.provide_file(ALICE, file_id, "openai", "main")
    lost = row(store, "openai")
    assert lost is not None and lost.state is CopyState.LOST and lost.file_id != old.file_id
    assert server.holds("openai", old.file_id)  # left to expire: a model call may still name it
    assert lost.upload_token == token_of(server.dropped[-1].file_name)
