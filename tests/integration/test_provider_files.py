"""The provider Files bridge (B22) with the official SDKs against a local server on 127.0.0.1.

Each SDK (``openai``, ``anthropic``, ``google-genai``) is pointed at
:class:`~docbinder.testing.provider_server.ProviderServer`, which answers with the
providers' documented shapes; nothing reaches the network. Memory metadata and
blobs, a clock the tests move; one case runs on the SQLite default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import pytest

pytest.importorskip("anthropic")
pytest.importorskip("openai")
pytest.importorskip("google.genai")

import anthropic
import openai
from google import genai

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.providers.anthropic_files import AnthropicFiles
from docbinder.adapters.providers.gemini_files import GeminiFiles
from docbinder.adapters.providers.openai_files import OpenAIFiles
from docbinder.application import DocBinder
from docbinder.domain.errors import FileItemNotFound, ProviderUploadForbidden
from docbinder.domain.model import Principal, Scope
from docbinder.domain.providers import CopyState, ProviderCopyKey, marked_name, token_of
from docbinder.testing.provider_server import ProviderServer
from tests.integration.frameworks import sqlite_binder
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme", "fi1")
BOB = Principal("bob", "globex", "fi1")
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
PROVIDERS = ("openai", "anthropic", "gemini")


class MovableClock:
    """A clock the test moves forward."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def now(self) -> datetime:
        return self.at


def clients(server: ProviderServer, *, openai_expiry: int | None = None) -> dict[str, Any]:
    return {
        "openai": OpenAIFiles(
            openai.OpenAI(api_key="test", base_url=server.openai_base_url, max_retries=0),
            "main",
            expires_after=openai_expiry,
        ),
        "anthropic": AnthropicFiles(
            anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0), "main"
        ),
        "gemini": GeminiFiles(
            genai.Client(api_key="test", http_options={"base_url": server.url}), "main"
        ),
    }


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def store() -> MemoryMetadataStore:
    return MemoryMetadataStore()


def make_binder(
    store: MemoryMetadataStore,
    clock: MovableClock,
    server: ProviderServer,
    **options: Any,
) -> DocBinder:
    binder = wire_binder(store.unit_of_work, MemoryBlobStore(), clock=clock, **options)
    for files in clients(server, openai_expiry=3600).values():
        binder.providers.register(files)
    return binder


@pytest.fixture
def binder(store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer) -> DocBinder:
    return make_binder(store, clock, server)


def store_pdf(binder: DocBinder, who: Principal = ALICE, name: str = "report.pdf") -> str:
    return binder.store_file(who, name, PDF, mime_type="application/pdf").item.id


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_file_sent_twice_is_uploaded_once(
    binder: DocBinder, server: ProviderServer, provider: str
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    first = run.provide_file(file_id, provider, "main")
    second = run.provide_file(file_id, provider, "main")
    assert first.uploaded is True and second.uploaded is False
    assert second.file_id == first.file_id
    uploads = server.uploads_of(provider)
    assert [(u.file_id, u.data) for u in uploads] == [(first.file_id, PDF)]
    # the provider keeps the name with the upload's token before the suffix
    token = token_of(uploads[0].file_name)
    assert token is not None and uploads[0].file_name == marked_name("report.pdf", token)
    # a second FileItem with the same bytes in the same tenant reuses the copy
    again = run.provide_file(store_pdf(binder, name="copy.pdf"), provider, "main")
    assert again.file_id == first.file_id and len(server.uploads_of(provider)) == 1
    assert server.holds(provider, first.file_id)


def test_an_expired_id_is_uploaded_again(
    binder: DocBinder, server: ProviderServer, clock: MovableClock
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    first = run.provide_file(file_id, "openai", "main")
    assert first.expires_at is not None
    assert timedelta(minutes=59) < first.expires_at - clock.at <= timedelta(hours=1, seconds=1)
    clock.at += timedelta(minutes=30)
    assert run.provide_file(file_id, "openai", "main").file_id == first.file_id
    clock.at += timedelta(minutes=26)  # within the 5-minute margin of its expiry
    renewed = run.provide_file(file_id, "openai", "main")
    assert renewed.uploaded is True and renewed.file_id != first.file_id
    assert [u.file_id for u in server.uploads_of("openai")] == [first.file_id, renewed.file_id]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_id_the_provider_forgot_is_uploaded_again(
    binder: DocBinder, server: ProviderServer, provider: str
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    first = run.provide_file(file_id, provider, "main")
    server.forget(provider, first.file_id)  # the provider answers 404 from now on
    # without verify the recorded id is handed out as it is
    assert run.provide_file(file_id, provider, "main", verify=False).file_id == first.file_id
    renewed = run.provide_file(file_id, provider, "main")
    assert renewed.uploaded is True and renewed.file_id != first.file_id
    assert server.holds(provider, renewed.file_id)
    assert run.provide_file(file_id, provider, "main").file_id == renewed.file_id
    assert len(server.uploads_of(provider)) == 2


def test_a_tenants_upload_is_never_reused_for_another_tenant(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    alice_file = store_pdf(binder, ALICE)
    bob_file = store_pdf(binder, BOB)  # the same bytes in another mandate
    other_feature = Principal("carol", "acme", "fi2")
    carol_file = store_pdf(binder, other_feature)  # same mandate, another feature instance
    a = binder.start_new_run(ALICE).provide_file(alice_file, "anthropic", "main")
    b = binder.start_new_run(BOB).provide_file(bob_file, "anthropic", "main")
    c = binder.start_new_run(other_feature).provide_file(carol_file, "anthropic", "main")
    assert len({a.file_id, b.file_id, c.file_id}) == 3
    assert all(ref.uploaded for ref in (a, b, c))
    assert len(server.uploads_of("anthropic")) == 3
    # bob cannot reach alice's FileItem, hence not its provider copy
    with pytest.raises(FileItemNotFound):
        binder.start_new_run(BOB).provide_file(alice_file, "anthropic", "main")
    sha = binder.get_file(ALICE, alice_file).sha256
    with store.unit_of_work() as uow:
        rows = {
            scope: uow.provider_copies.get(ProviderCopyKey(sha, "anthropic", "main", scope))
            for scope in (ALICE.scope, BOB.scope, other_feature.scope)
        }
    assert {s: r.file_id for s, r in rows.items() if r is not None} == {
        ALICE.scope: a.file_id,
        BOB.scope: b.file_id,
        other_feature.scope: c.file_id,
    }


def test_deleting_the_file_deletes_its_provider_copies(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    refs = [run.provide_file(file_id, provider, "main") for provider in PROVIDERS]
    assert all(server.holds(r.provider.value, r.file_id) for r in refs)
    binder.delete_file(ALICE, file_id)
    assert [server.holds(r.provider.value, r.file_id) for r in refs] == [False] * 3
    assert sorted(p for p, _ in server.deletes) == sorted(PROVIDERS)
    with store.unit_of_work() as uow:
        assert uow.provider_copies.of_content(ALICE.scope, _sha()) == []


def _sha() -> str:
    import hashlib

    return hashlib.sha256(PDF).hexdigest()


def test_a_failed_provider_delete_is_kept_and_gc_retries_it(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    ref = run.provide_file(file_id, "gemini", "main")
    server.failing_deletes.add("gemini")
    binder.delete_file(ALICE, file_id)
    assert server.holds("gemini", ref.file_id)  # the provider refused: the copy is still there
    with store.unit_of_work() as uow:
        (kept,) = uow.provider_copies.of_content(ALICE.scope, _sha())
    assert kept.state is CopyState.DELETING and kept.file_id == ref.file_id
    assert binder.collect_garbage(dry_run=True).provider_copies_kept == 1
    failing = binder.collect_garbage(dry_run=False)
    assert (failing.provider_copies_deleted, failing.provider_copies_kept) == (0, 1)
    server.failing_deletes.clear()
    report = binder.collect_garbage(dry_run=False)
    assert (report.provider_copies_deleted, report.provider_copies_kept) == (1, 0)
    assert not server.holds("gemini", ref.file_id)
    with store.unit_of_work() as uow:
        assert uow.provider_copies.of_content(ALICE.scope, _sha()) == []


def test_a_copy_waiting_for_its_delete_is_deleted_before_the_content_goes_up_again(
    binder: DocBinder, server: ProviderServer
) -> None:
    run = binder.start_new_run(ALICE)
    first = run.provide_file(store_pdf(binder), "openai", "main")
    server.failing_deletes.add("openai")
    binder.delete_file(ALICE, binder.list_files(ALICE)[0].id)
    server.failing_deletes.clear()
    again = run.provide_file(store_pdf(binder), "openai", "main")
    assert not server.holds("openai", first.file_id)
    assert again.uploaded and again.file_id != first.file_id


def test_a_tenant_the_setting_lists_is_refused_naming_it(
    store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer
) -> None:
    binder = make_binder(store, clock, server, provider_uploads_denied=("acme/fi1", "globex"))
    for who in (ALICE, BOB):
        file_id = store_pdf(binder, who)
        with pytest.raises(ProviderUploadForbidden, match="provider_uploads_denied") as refused:
            binder.start_new_run(who).provide_file(file_id, "openai", "main")
        assert refused.value.setting == "provider_uploads_denied"
        assert isinstance(refused.value, PermissionError)
    other = Principal("dave", "acme", "fi2")  # another feature instance of acme is not listed
    assert binder.start_new_run(other).provide_file(store_pdf(binder, other), "openai", "main")
    assert len(server.uploads_of("openai")) == 1


def test_the_setting_is_read_from_the_configuration(tmp_path: Path) -> None:
    from docbinder.config import Settings
    from docbinder.container import build_binder

    settings = Settings.load(
        {
            "home": str(tmp_path),
            "database_url": "memory://",
            "blob_url": "memory://",
            "provider_uploads_denied": ["acme"],
        },
        environ={},
    )
    binder = build_binder(settings)
    file_id = store_pdf(binder)
    with pytest.raises(
        ProviderUploadForbidden, match="setting provider_uploads_denied lists 'acme'"
    ):
        binder.start_new_run(ALICE).provide_file(file_id, "openai", "main")


class SlowUploads(OpenAIFiles):
    """The OpenAI adapter with a pause in each upload, so concurrent callers overlap."""

    def upload(self, source: BinaryIO, size: int, file_name: str, mime_type: str) -> Any:
        time.sleep(0.3)
        return super().upload(source, size, file_name, mime_type)


def test_concurrent_callers_for_one_key_upload_once(
    binder: DocBinder, server: ProviderServer
) -> None:
    binder.providers.register(
        SlowUploads(openai.OpenAI(api_key="t", base_url=server.openai_base_url), "main")
    )
    file_id = store_pdf(binder)
    barrier = threading.Barrier(6)
    results: list[Any] = []

    def call() -> None:
        barrier.wait(timeout=10)
        try:
            results.append(binder.start_new_run(ALICE).provide_file(file_id, "openai", "main"))
        except Exception as err:  # reported by the assertion below
            results.append(err)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(server.uploads_of("openai")) == 1, results
    assert len({r.file_id for r in results}) == 1, results
    assert sum(r.uploaded for r in results) == 1


def test_a_failed_upload_leaves_no_claim_behind(binder: DocBinder, server: ProviderServer) -> None:
    from docbinder.domain.errors import ProviderError

    broken = OpenAIFiles(
        openai.OpenAI(api_key="t", base_url=f"{server.url}/nowhere", max_retries=0), "main"
    )
    binder.providers.register(broken)
    file_id = store_pdf(binder)
    with pytest.raises(ProviderError) as failed:
        binder.start_new_run(ALICE).provide_file(file_id, "openai", "main")
    assert failed.value.status == 404 and failed.value.provider == "openai"
    binder.providers.register(clients(server)["openai"])
    assert binder.start_new_run(ALICE).provide_file(file_id, "openai", "main").uploaded


def test_on_the_sqlite_default(tmp_path: Path, server: ProviderServer) -> None:
    binder = sqlite_binder(tmp_path)
    for files in clients(server).values():
        binder.providers.register(files)
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    refs = {p: run.provide_file(file_id, p, "main") for p in PROVIDERS}
    assert {p: run.provide_file(file_id, p, "main").file_id for p in PROVIDERS} == {
        p: r.file_id for p, r in refs.items()
    }
    assert refs["gemini"].uri is not None and refs["gemini"].expires_at is not None
    assert len(server.uploads) == 3
    binder.delete_file(ALICE, file_id)
    assert not any(server.holds(p, r.file_id) for p, r in refs.items())
    assert Scope("acme", "fi1") == ALICE.scope


def test_deleting_file_versions_deletes_their_provider_copies(
    binder: DocBinder, server: ProviderServer, store: MemoryMetadataStore
) -> None:
    first = binder.versions.save(ALICE, "plan", b"%PDF-1.4 v0", mime_type="application/pdf")
    second = binder.versions.save(ALICE, "plan", b"%PDF-1.4 v1", mime_type="application/pdf")
    run = binder.start_new_run(ALICE)
    refs = [run.provide_file(v.item.id, "anthropic", "main") for v in (first, second)]
    assert all(server.holds("anthropic", r.file_id) for r in refs)
    assert binder.versions.delete(ALICE, "plan") == 2
    assert [server.holds("anthropic", r.file_id) for r in refs] == [False, False]
    with store.unit_of_work() as uow:
        assert uow.provider_copies.deleting(100) == []
        assert uow.provider_copies.of_content(ALICE.scope, first.item.sha256) == []


def test_replacing_the_content_deletes_the_old_contents_copies(
    binder: DocBinder, server: ProviderServer
) -> None:
    run = binder.start_new_run(ALICE)
    file_id = store_pdf(binder)
    old = run.provide_file(file_id, "openai", "main")
    binder.update_file.replace(ALICE, file_id, b"%PDF-1.4 revised\n%%EOF\n")
    assert not server.holds("openai", old.file_id)
    new = run.provide_file(file_id, "openai", "main")
    assert new.uploaded and new.file_id != old.file_id
    assert server.uploads_of("openai")[-1].data == b"%PDF-1.4 revised\n%%EOF\n"


def test_uploads_and_refusals_are_audit_events(
    store: MemoryMetadataStore, clock: MovableClock, server: ProviderServer
) -> None:
    binder = make_binder(store, clock, server, audit=True, provider_uploads_denied=("globex",))
    file_id = store_pdf(binder)
    run = binder.start_new_run(ALICE)
    ref = run.provide_file(file_id, "gemini", "main")
    run.provide_file(file_id, "gemini", "main")  # reused: no second upload event
    bob_file = store_pdf(binder, BOB)
    with pytest.raises(ProviderUploadForbidden):
        binder.start_new_run(BOB).provide_file(bob_file, "gemini", "main")
    uploads = [e for e in binder.audit_log.list(file_id=file_id) if e.action == "provider_upload"]
    assert [(e.principal, e.detail["providerFileId"], e.detail["provider"]) for e in uploads] == [
        ("alice", ref.file_id, "gemini")
    ]
    refused = [e for e in binder.audit_log.list(file_id=bob_file) if e.action == "access_refused"]
    assert [(e.principal, e.outcome) for e in refused] == [("bob", "provider_uploads_denied")]
    assert binder.audit_log.verify().broken is None
