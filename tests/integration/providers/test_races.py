"""Provider copies of a FileItem deleted while an upload of it runs (B22, ADR 0140).

Through the official SDKs against :class:`~docbinder.testing.provider_server.ProviderServer`
(the fixtures of ``conftest.py`` here): a delete that commits between
``provide_file``'s read of the FileItem and its claim of the row, and a ``gc`` that
removed the row of an unanswered upload before the provider listed it (an uploader
suspended past the settle time), must leave nothing of the store's at the provider.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.adapters.providers.openai_files import OpenAIFiles
from docbinder.application import DocBinder
from docbinder.domain.errors import DocbinderError, FileItemNotFound
from docbinder.domain.model import Principal
from docbinder.domain.providers import CopyState, ProviderCopyKey, UploadedCopy, token_of
from docbinder.testing.provider_server import ProviderServer
from tests.integration.frameworks import sqlite_binder
from tests.integration.providers.support import (
    ALICE,
    LEASES,
    MIME,
    PDF,
    PROVIDERS,
    MovableClock,
    SlowOpenAI,
    lose_an_answer,
    make_binder,
    row,
    strangers,
)


def ours(server: ProviderServer, provider: str) -> list[str]:
    """Files the provider holds named with a token of this store (not the strangers' one)."""
    tokens = [(f.file_id, token_of(f.file_name)) for f in server.listed(provider)]
    return [fid for fid, token in tokens if token not in (None, "not-a-token-of-ours")]


def deleted_after_its_read(binder: DocBinder, *, keep_blob: bool) -> None:
    """Make ``provide_file`` see its FileItem deleted right after its read check.

    The delete commits before the row is claimed, so it finds no row to mark.
    ``keep_blob``: the blob outlives the row (so the upload itself succeeds).
    """
    read = binder.provide_file._get
    if keep_blob:
        binder.blobs.delete = lambda key: None  # type: ignore[method-assign]

    def read_then_deleted(principal: Principal, fid: str) -> Any:
        item = read(principal, fid)
        binder.delete_file(principal, fid)
        return item

    binder.provide_file._get = read_then_deleted  # type: ignore[method-assign]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_file_deleted_before_its_upload_is_claimed_leaves_no_copy(
    binder: DocBinder,
    server: ProviderServer,
    store: MemoryMetadataStore,
    clock: MovableClock,
    provider: str,
) -> None:
    others = strangers(server, provider)
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    deleted_after_its_read(binder, keep_blob=True)
    with pytest.raises(FileItemNotFound):
        binder.provide_file(ALICE, file_id, provider, "main")
    clock.at += timedelta(minutes=11)
    binder.collect_garbage(dry_run=False)
    assert row(store, provider) is None
    assert ours(server, provider) == []
    assert all(server.holds(provider, f) for f in others)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_file_deleted_before_an_unanswered_upload_is_claimed_leaves_no_lost_row(
    binder: DocBinder,
    server: ProviderServer,
    store: MemoryMetadataStore,
    clock: MovableClock,
    provider: str,
) -> None:
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    deleted_after_its_read(binder, keep_blob=True)
    server.drop_answers(provider, listed=False)  # stored, unanswered, not listed yet
    with pytest.raises(DocbinderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    kept = row(store, provider)
    assert kept is not None and kept.state is CopyState.DELETING  # gc retries it
    server.unlisted.clear()  # the provider lists it late
    clock.at += timedelta(minutes=11)
    binder.collect_garbage(dry_run=False)
    assert row(store, provider) is None
    assert ours(server, provider) == []


class SuspendedUploader(OpenAIFiles):
    """An uploader whose process is suspended after the provider stored the upload.

    While it is suspended its FileItem is deleted and ``gc`` runs past the
    settle time, before the provider lists the upload: the row goes. The
    upload's answer is lost, and the uploader's own listing then finds it.
    """

    def __init__(self, inner: OpenAIFiles, binder: DocBinder, clock: MovableClock) -> None:
        super().__init__(inner._client, inner.account)
        self.binder, self.clock, self.suspended = binder, clock, False
        self.file_id = ""

    def find(self, token: str) -> list[UploadedCopy]:
        if not self.suspended:
            self.suspended = True
            self.binder.delete_file(ALICE, self.file_id)
            self.clock.at += timedelta(minutes=11)
            self.binder.collect_garbage(dry_run=False)
            server: ProviderServer = self.server
            server.unlisted.clear()  # now the provider lists it
        return super().find(token)


def test_an_upload_adopted_after_its_row_was_removed_is_deleted(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, clock: MovableClock
) -> None:
    others = strangers(server, "openai")
    binder.blobs.delete = lambda key: None  # type: ignore[method-assign]
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    inner = binder.providers.get("openai", "main")
    assert isinstance(inner, OpenAIFiles)
    uploader = SuspendedUploader(inner, binder, clock)
    uploader.server = server  # type: ignore[attr-defined]
    uploader.file_id = file_id
    binder.providers.register(uploader)
    server.drop_answers("openai", listed=False)
    with pytest.raises(DocbinderError):
        binder.provide_file(ALICE, file_id, "openai", "main")
    assert uploader.suspended
    assert row(store, "openai") is None
    assert ours(server, "openai") == []  # the upload no row holds is gone
    assert all(server.holds("openai", f) for f in others)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_upload_of_a_file_deleted_with_its_blob_leaves_no_lost_row(
    binder: DocBinder,
    server: ProviderServer,
    store: MemoryMetadataStore,
    clock: MovableClock,
    provider: str,
) -> None:
    file_id = binder.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    deleted_after_its_read(binder, keep_blob=False)  # the upload cannot read the blob
    with pytest.raises(DocbinderError):
        binder.provide_file(ALICE, file_id, provider, "main")
    kept = row(store, provider)
    # never `lost` (no caller comes for a deleted file's row): deleting for gc, or done with
    # (the provider stored what the SDK sent before the read failed, and it was listed)
    assert kept is None or kept.state is CopyState.DELETING
    clock.at += timedelta(minutes=11)
    binder.collect_garbage(dry_run=False)
    assert row(store, provider) is None
    assert ours(server, provider) == []


def test_a_suspended_uploader_resumed_after_a_takeover_leaves_one_copy(
    tmp_path: Path, server: ProviderServer
) -> None:
    """A real process is stopped (SIGSTOP) mid-upload, taken over after the lease, then resumed."""
    binder = sqlite_binder(tmp_path)
    binder.providers.register(SlowOpenAI(server.openai_client(), "main"))
    binder.provide_file.timings = LEASES
    big = os.urandom(2 * 1024 * 1024)  # about 3 s at the slow client's pace
    file_id = binder.store_file(ALICE, "big.pdf", big, mime_type=MIME).item.id
    key = ProviderCopyKey(hashlib.sha256(big).hexdigest(), "openai", "main", ALICE.scope)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from pathlib import Path
        from docbinder.domain.model import Principal
        from tests.integration.frameworks import sqlite_binder
        from tests.integration.providers.support import LEASES, SlowOpenAI
        from docbinder.testing.provider_server import ProviderServer
        import openai

        binder = sqlite_binder(Path({str(tmp_path)!r}))
        client = openai.OpenAI(api_key="t", base_url={server.openai_base_url!r}, max_retries=0)
        binder.providers.register(SlowOpenAI(client, "main"))
        binder.provide_file.timings = LEASES
        ref = binder.provide_file(Principal("alice", "acme", "fi1"), {file_id!r}, "openai", "main")
        print(ref.file_id if ref else "none")
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        claimed = None
        deadline = time.monotonic() + 60
        while claimed is None and time.monotonic() < deadline:
            with binder.provide_file._uow() as u:
                claimed = u.provider_copies.get(key)
            time.sleep(0.02)
        assert claimed is not None and claimed.state is CopyState.UPLOADING
        os.kill(child.pid, signal.SIGSTOP)
        taken = binder.provide_file(ALICE, file_id, "openai", "main")  # after the lease
        assert taken.uploaded is True
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
    with binder.provide_file._uow() as u:
        ready = u.provider_copies.get(key)
    assert ready is not None and ready.state is CopyState.READY
    assert ready.file_id == taken.file_id and ready.upload_token == claimed.upload_token
    # the resumed uploader answers with the copy the row holds, and its own copy is gone
    assert out.decode().split()[-1] == taken.file_id, err.decode()[-2000:]
    assert ours(server, "openai") == [taken.file_id]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_listing_that_fails_after_its_first_page_keeps_the_row_and_deletes_nothing_else(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore, provider: str
) -> None:
    others = strangers(server, provider)  # three files: two pages of two
    file_id, stored = lose_an_answer(binder, server, provider)
    listed = server.listed

    def first_page_only(name: str) -> list[Any]:
        server.failing_lists.add(name)  # the next page answers 500
        return listed(name)

    server.failing_lists.clear()
    server.listed = first_page_only  # type: ignore[method-assign]
    binder.delete_file(ALICE, file_id)
    kept = row(store, provider)
    assert kept is not None and kept.state is CopyState.DELETING  # not read as complete
    assert server.holds(provider, stored.file_id)
    assert all(server.holds(provider, f) for f in others)
    server.listed = listed  # type: ignore[method-assign]
    server.failing_lists.clear()
    report = binder.collect_garbage(dry_run=False)
    assert (report.provider_copies_deleted, report.provider_copies_kept) == (1, 0)
    assert not server.holds(provider, stored.file_id) and row(store, provider) is None
    assert all(server.holds(provider, f) for f in others)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_stores_sharing_an_account_never_delete_each_others_copies(
    server: ProviderServer, clock: MovableClock, provider: str
) -> None:
    first = make_binder(MemoryMetadataStore(), clock, server)
    second = make_binder(MemoryMetadataStore(), clock, server)  # same tenant names, same bytes
    mine = first.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    theirs = second.store_file(ALICE, "report.pdf", PDF, mime_type=MIME).item.id
    kept = second.provide_file(ALICE, theirs, provider, "main")
    # the first store loses an answer, so its delete lists the account for its token
    server.drop_answers(provider, listed=False)
    with pytest.raises(DocbinderError):
        first.provide_file(ALICE, mine, provider, "main")
    server.unlisted.clear()
    first.delete_file(ALICE, mine)
    clock.at += timedelta(minutes=11)
    first.collect_garbage(dry_run=False)
    assert server.holds(provider, kept.file_id)
    assert second.provide_file(ALICE, theirs, provider, "main").file_id == kept.file_id
    assert ours(server, provider) == [kept.file_id]
