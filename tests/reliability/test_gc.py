"""``gc`` never removes live data: races between its scan and writers (SPEC section 5, C15)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.contract.sql_backends import SqlBackend, provision
from tests.reliability.harness import LEDGER, check_consistent, invoke_cli, make_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class _UpdateDuringScan:
    """A blob store that runs ``action`` right after gc listed its keys."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.key: str | None = None
        self.action: list[object] = []
        self.fired = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def keys(self) -> Iterator[str]:
        yield from list(self.inner.keys())
        if self.action:
            self.action.pop()()  # type: ignore[operator]
            self.fired += 1


@pytest.fixture(params=["memory", "sqlite+localdisk"])
def stack(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[UnitOfWorkFactory, BlobStore]]:
    if request.param == "memory":
        yield MemoryMetadataStore().unit_of_work, MemoryBlobStore()
        return
    backend: SqlBackend
    with provision("sqlite", tmp_path) as backend:
        yield backend.store.unit_of_work, LocalDiskBlobStore(tmp_path / "blobs")


def test_gc_keeps_a_file_whose_content_was_replaced_during_its_scan(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """The listing saw the old blob key; an update then switched the row to a new blob
    (not listed) and removed the old one.

    The row is live data: gc must not remove it as "FileItem without blob", nor
    its new blob as an orphan, even with no grace period.
    """
    uow_factory, blobs = stack
    racy = _UpdateDuringScan(blobs)
    binder = make_binder(uow_factory, racy)  # type: ignore[arg-type]
    writer = make_binder(uow_factory, blobs)
    item = binder.start_run(U1).store_file("notes.md", b"# v1\n").item
    racy.key = item.blob_key
    racy.action.append(lambda: writer.update_file.replace(U1, item.id, b"# v2\n"))

    report = binder.collect_garbage(dry_run=False, grace_seconds=0)

    assert racy.fired == 1
    LEDGER.injected["gc.scan-vs-update"] += 1
    assert report.orphan_rows == () and report.marked_rows == () and report.orphan_blobs == ()
    current = binder.get_file(U1, item.id)
    assert current.blob_key != item.blob_key
    assert b"".join(binder.open_file(U1, item.id)) == b"# v2\n"
    check_consistent(uow_factory, blobs)
    LEDGER.survived["gc.scan-vs-update"] += 1


def test_gc_still_removes_a_row_whose_blob_is_really_gone(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    uow_factory, blobs = stack
    binder = make_binder(uow_factory, blobs)
    kept = binder.start_run(U1).store_file("kept.txt", b"kept").item
    lost = binder.start_run(U1).store_file("lost.txt", b"lost").item
    blobs.delete(lost.blob_key)  # an operator removed it by hand
    dry = binder.collect_garbage(dry_run=True, grace_seconds=0)
    assert dry.orphan_rows == () and dry.marked_rows == (lost.id,)
    assert {i.id for i in binder.list_files(U1)} == {kept.id, lost.id}
    # One run only marks it: a run can never remove a row it has just seen without blob.
    first = binder.collect_garbage(dry_run=False, grace_seconds=0)
    assert first.orphan_rows == () and first.marked_rows == (lost.id,)
    assert {i.id for i in binder.list_files(U1)} == {kept.id, lost.id}
    done = binder.collect_garbage(dry_run=False, grace_seconds=0)
    assert done.orphan_rows == (lost.id,)
    assert [i.id for i in binder.list_files(U1)] == [kept.id]


def test_gc_with_the_default_grace_never_takes_a_blob_from_a_running_store(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """gc runs while a store is between its blob write and its metadata commit."""
    uow_factory, blobs = stack
    written = threading.Event()
    resume = threading.Event()

    class _PausingBlobs:
        def __init__(self, inner: BlobStore) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def put(self, key: str, data: object) -> int:
            size = self.inner.put(key, data)  # type: ignore[arg-type]
            written.set()
            assert resume.wait(60), "gc did not finish"
            return size

    producer = make_binder(uow_factory, _PausingBlobs(blobs))  # type: ignore[arg-type]
    collector: DocBinder = make_binder(uow_factory, blobs)
    outcome: list[object] = []

    def store() -> None:
        outcome.append(producer.start_new_run(U1).produce_file("slow.csv", b"a,b\n1,2\n"))

    thread = threading.Thread(target=store)
    thread.start()
    try:
        assert written.wait(60), "the store never wrote its blob"
        report = collector.collect_garbage(dry_run=False)
    finally:
        resume.set()
        thread.join(60)
    assert report.orphan_blobs == () and len(report.young_blobs) == 1
    [result] = outcome
    assert b"".join(collector.open_file(U1, result.item.id)) == b"a,b\n1,2\n"  # type: ignore[attr-defined]
    check_consistent(uow_factory, blobs)


def test_gc_aborts_a_multipart_upload_left_by_a_killed_process(
    s3_bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    store = S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")
    started = store.client.create_multipart_upload(Bucket=s3_bucket, Key="blobs/ab/abandoned")
    store.client.upload_part(
        Bucket=s3_bucket,
        Key="blobs/ab/abandoned",
        UploadId=started["UploadId"],
        PartNumber=1,
        Body=b"x" * (5 << 20),
    )
    where = ["--database-url", f"sqlite:///{tmp_path / 'docbinder.db'}", "--blob-url", store.url]
    env = {"DOCBINDER_S3_ENDPOINT_URL": s3_endpoint, "DOCBINDER_S3_REGION": "us-east-1"}
    assert invoke_cli([*where, "migrate"], env).exit_code == 0
    result = invoke_cli([*where, "--json", "gc", "--apply", "--grace", "0"], env)
    assert result.exit_code == 0, result.stderr
    assert store.pending_uploads(older_than_seconds=-3600) == []
