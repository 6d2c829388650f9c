"""S3 blob store (``s3://bucket/prefix``) via boto3, for AWS and S3-compatible endpoints (SPEC C13).

Importing this package does not import boto3; building an :class:`S3BlobStore`
does, and raises :class:`~docbinder.domain.errors.MissingExtra` without it.
"""

from docbinder.adapters.s3.blobs import PendingUpload, S3BlobStore
from docbinder.adapters.s3.errors import S3StorageError, S3Throttled

__all__ = ["PendingUpload", "S3BlobStore", "S3StorageError", "S3Throttled"]
