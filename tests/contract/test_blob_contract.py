"""The shipped blob-store contract run against every adapter: memory, local disk, S3 (moto server).

Each class subclasses :class:`docbinder.testing.BlobStoreContract` as a
third-party store's tests would, setting the capability flags it has.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.ports.blobs import BlobStore
from docbinder.testing import BlobStoreContract
from tests.contract.sql_backends import SqlBackend

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class TestMemoryBlobStore(BlobStoreContract):
    locates_itself = True

    @pytest.fixture
    def store(self) -> BlobStore:
        return MemoryBlobStore()

    @pytest.fixture
    def open_streams(self, store: MemoryBlobStore) -> Callable[[], int]:
        return lambda: store.open_readers


def _descriptors_under(root: Path) -> int:
    """How many of this process's file descriptors point into ``root`` (Linux ``/proc``)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listing the directory itself, already closed
            continue
        count += target.startswith(f"{root}{os.sep}")
    return count


class TestLocalDiskBlobStore(BlobStoreContract):
    supports_blob_and_prefix_key = False
    durable = True
    locates_itself = True

    @pytest.fixture
    def copy_of(self, tmp_path: Path) -> Callable[[BlobStore], BlobStore]:
        def copy(store: BlobStore) -> BlobStore:
            assert isinstance(store, LocalDiskBlobStore)
            target = tmp_path / f"copy-{uuid.uuid4().hex}"
            shutil.copytree(store.root, target, copy_function=shutil.copy2)  # cp -a
            return LocalDiskBlobStore(target)

        return copy

    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        return LocalDiskBlobStore(tmp_path / "blobs")

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], BlobStore]:
        return lambda: LocalDiskBlobStore(tmp_path / "blobs")

    @pytest.fixture
    def open_streams(self, tmp_path: Path) -> Callable[[], int] | None:
        if not os.path.isdir("/proc/self/fd"):
            return None
        root = (tmp_path / "blobs").resolve()
        return lambda: _descriptors_under(root)

    @pytest.fixture
    def backend_bytes_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Callable[[], int] | None:
        if not os.path.isdir("/proc/self/fd"):
            return None
        return _count_bytes_read_under((tmp_path / "blobs").resolve(), monkeypatch)


def _count_bytes_read_under(root: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count the bytes ``os.read`` returns from files under ``root`` (wraps ``os.read``)."""
    counted = [0]
    real_read = os.read

    def read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(f"{root}{os.sep}"):
                counted[0] += len(data)
        except OSError:
            pass
        return data

    monkeypatch.setattr(os, "read", read)
    return lambda: counted[0]


def _count_body_bytes(client: S3Client) -> Iterator[Callable[[], int]]:
    """Sum the ``ContentLength`` of ``client``'s ``GetObject`` answers (botocore event hook)."""
    counted = [0]

    def add(parsed: dict[str, Any], **_: Any) -> None:
        counted[0] += int(parsed.get("ContentLength") or 0)

    hook = f"count-body-bytes-{uuid.uuid4().hex}"
    client.meta.events.register("after-call.s3.GetObject", add, unique_id=hook)
    try:
        yield lambda: counted[0]
    finally:
        client.meta.events.unregister("after-call.s3.GetObject", unique_id=hook)


def _count_open_bodies(client: S3Client) -> Iterator[Callable[[], int]]:
    """Count ``GetObject`` response bodies of ``client`` not yet closed (botocore event hook)."""
    open_bodies: set[int] = set()

    def track(parsed: dict[str, Any], **_: Any) -> None:
        body = parsed.get("Body")
        if body is None:
            return
        open_bodies.add(id(body))
        release = body.close

        def close() -> None:
            open_bodies.discard(id(body))
            release()

        body.close = close

    hook = f"count-open-bodies-{uuid.uuid4().hex}"
    client.meta.events.register("after-call.s3.GetObject", track, unique_id=hook)
    try:
        yield lambda: len(open_bodies)
    finally:
        client.meta.events.unregister("after-call.s3.GetObject", unique_id=hook)


@pytest.mark.s3
class TestS3BlobStore(BlobStoreContract):
    durable = True
    locates_itself = True

    @pytest.fixture
    def copy_of(
        self, s3_endpoint: str, s3_client: S3Client, s3_bucket: str
    ) -> Callable[[BlobStore], BlobStore]:
        def copy(store: BlobStore) -> BlobStore:
            assert isinstance(store, S3BlobStore)
            prefix = f"copy/{uuid.uuid4().hex}/"
            listed = s3_client.list_objects_v2(Bucket=s3_bucket, Prefix=store.prefix)
            for item in listed.get("Contents", []):  # aws s3 sync into another prefix
                s3_client.copy_object(
                    Bucket=s3_bucket,
                    Key=prefix + item["Key"].removeprefix(store.prefix),
                    CopySource={"Bucket": s3_bucket, "Key": item["Key"]},
                )
            return S3BlobStore(
                s3_bucket, prefix, endpoint_url=s3_endpoint, client=s3_client, **self.options
            )

        return copy

    options: dict[str, Any] = {}  # noqa: RUF012 - read only

    @pytest.fixture
    def reopen(
        self, s3_endpoint: str, s3_client: S3Client, s3_bucket: str
    ) -> Callable[[], BlobStore]:
        prefix = f"contract/{uuid.uuid4().hex}"
        return lambda: S3BlobStore(
            s3_bucket, prefix, endpoint_url=s3_endpoint, client=s3_client, **self.options
        )

    @pytest.fixture
    def store(self, reopen: Callable[[], BlobStore]) -> BlobStore:
        return reopen()

    @pytest.fixture
    def open_streams(self, s3_client: S3Client) -> Iterator[Callable[[], int]]:
        yield from _count_open_bodies(s3_client)

    @pytest.fixture
    def backend_bytes_read(self, s3_client: S3Client) -> Iterator[Callable[[], int]]:
        yield from _count_body_bytes(s3_client)


@pytest.mark.s3
class TestS3MultipartBlobStore(TestS3BlobStore):
    """Every upload above one byte goes multipart, in 5 MiB parts (the S3 minimum)."""

    options = {  # noqa: RUF012 - read only
        "multipart_threshold": 1,
        "multipart_chunksize": 5 << 20,
        "max_concurrency": 2,
    }


# -- the inline tier (ADR 0110): small blobs in the metadata database, the rest in a bulk store


class TestInlineTierOverMemory(BlobStoreContract):
    """Memory metadata and a memory bulk store: blobs up to 64 KiB inline, the large one in bulk."""

    locates_itself = True

    @pytest.fixture
    def store(self) -> BlobStore:
        return InlineTierBlobStore(MemoryBlobStore(), MemoryMetadataStore().unit_of_work)


class TestInlineTierSmallLimit(BlobStoreContract):
    """A 100-byte limit: most blobs of the suite go to the bulk store, the tiny ones inline."""

    locates_itself = True

    @pytest.fixture
    def store(self) -> BlobStore:
        return InlineTierBlobStore(MemoryBlobStore(), MemoryMetadataStore().unit_of_work, limit=100)


class TestInlineTierOff(BlobStoreContract):
    """``inline_blob_limit = 0``: the tier writes nothing inline and is the bulk store."""

    locates_itself = True

    @pytest.fixture
    def store(self) -> BlobStore:
        return InlineTierBlobStore(MemoryBlobStore(), MemoryMetadataStore().unit_of_work, limit=0)


class _InlineTierOverSql(BlobStoreContract):
    """The inline tier in a SQL database over a local-disk bulk store (durable: ``reopen``)."""

    durable = True
    locates_itself = True

    @pytest.fixture
    def backend(self) -> SqlBackend:
        raise NotImplementedError

    @pytest.fixture
    def reopen(self, backend: SqlBackend, tmp_path: Path) -> Callable[[], BlobStore]:
        backend.clean()
        metadata = backend.store
        return lambda: InlineTierBlobStore(
            LocalDiskBlobStore(tmp_path / "blobs"),
            metadata.unit_of_work,
            metadata.read_unit_of_work,
        )

    @pytest.fixture
    def store(self, reopen: Callable[[], BlobStore]) -> BlobStore:
        return reopen()


class TestInlineTierSqlite(_InlineTierOverSql):
    @pytest.fixture
    def backend(self, sqlite_backend: SqlBackend) -> SqlBackend:
        return sqlite_backend


class TestInlineTierPostgres(_InlineTierOverSql):
    @pytest.fixture
    def backend(self, postgresql_backend: SqlBackend) -> SqlBackend:
        return postgresql_backend


class TestInlineTierMariadb(_InlineTierOverSql):
    @pytest.fixture
    def backend(self, mariadb_backend: SqlBackend) -> SqlBackend:
        return mariadb_backend
