"""The shipped blob-store contract run against every adapter: memory, local disk, S3 (moto server).

Each class subclasses :class:`docbinder.testing.BlobStoreContract` as a
third-party store's tests would, setting the capability flags it has.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.ports.blobs import BlobStore
from docbinder.testing import BlobStoreContract

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class TestMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self) -> BlobStore:
        return MemoryBlobStore()


class TestLocalDiskBlobStore(BlobStoreContract):
    supports_blob_and_prefix_key = False
    durable = True

    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        return LocalDiskBlobStore(tmp_path / "blobs")

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], BlobStore]:
        return lambda: LocalDiskBlobStore(tmp_path / "blobs")


@pytest.mark.s3
class TestS3BlobStore(BlobStoreContract):
    durable = True
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


@pytest.mark.s3
class TestS3MultipartBlobStore(TestS3BlobStore):
    """Every upload above one byte goes multipart, in 5 MiB parts (the S3 minimum)."""

    options = {  # noqa: RUF012 - read only
        "multipart_threshold": 1,
        "multipart_chunksize": 5 << 20,
        "max_concurrency": 2,
    }
