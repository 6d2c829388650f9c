"""The blob-store contract run against every adapter: memory, local disk, S3 (moto server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.ports.blobs import BlobStore
from docbinder.testing.blob_suite import BlobStoreContract

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class TestMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self) -> BlobStore:
        return MemoryBlobStore()


class TestLocalDiskBlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        return LocalDiskBlobStore(tmp_path / "blobs")

    @pytest.fixture
    def supports_blob_and_prefix_key(self) -> bool:
        return False


@pytest.mark.s3
class TestS3BlobStore(BlobStoreContract):
    @pytest.fixture
    def store(self, s3_endpoint: str, s3_client: S3Client, s3_bucket: str) -> BlobStore:
        return S3BlobStore(
            s3_bucket, f"contract/{uuid.uuid4().hex}", endpoint_url=s3_endpoint, client=s3_client
        )


@pytest.mark.s3
class TestS3MultipartBlobStore(BlobStoreContract):
    """Every upload above one byte goes multipart, in 5 MiB parts (the S3 minimum)."""

    @pytest.fixture
    def store(self, s3_endpoint: str, s3_client: S3Client, s3_bucket: str) -> BlobStore:
        return S3BlobStore(
            s3_bucket,
            f"multipart/{uuid.uuid4().hex}",
            endpoint_url=s3_endpoint,
            client=s3_client,
            multipart_threshold=1,
            multipart_chunksize=5 << 20,
            max_concurrency=2,
        )
