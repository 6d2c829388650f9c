"""S3 blob store (``s3://bucket/prefix``) over boto3, for AWS and any S3-compatible endpoint (SPEC C13).

Object layout: the blob under key ``ab/1234`` is the object ``<prefix>ab/1234``
in the bucket. Object names come only from keys (made from ids), never from
file names. The only user metadata on an object is its provenance mark,
``x-amz-meta-docbinder-origin`` (:data:`ORIGIN_METADATA`), set with the upload;
the only tag is :data:`COMMITTED_TAG`, set after the FileItem naming the blob
committed (ADR 0031).

Uploads go through boto3's managed transfer (``upload_fileobj``) from a
non-seekable file object over the input chunks: inputs below
``multipart_threshold`` become one ``PutObject``; larger ones a multipart upload
of ``multipart_chunksize`` parts, with at most ``max_concurrency`` parts in
memory and in flight while the next one is read. Peak memory is therefore
about ``(max_concurrency + 1) * multipart_chunksize`` plus allocator overhead,
whatever the blob size. S3 commits an object only when ``PutObject`` or
``CompleteMultipartUpload`` succeeds, so a failed upload leaves nothing
visible; boto3 aborts the multipart upload on failure. Downloads stream ``GetObject`` bodies chunk by chunk.

boto3 is imported when a store is built; without it
:class:`~docbinder.domain.errors.MissingExtra` names the ``[s3]`` extra.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import attrs

from docbinder.adapters.blobstore_base import DATABASES_PREFIX as _RECORDS_PREFIX
from docbinder.adapters.blobstore_base import IDENTITY_NAME, PROBE_PREFIX, BlobStoreBase
from docbinder.adapters.s3.chunkreader import ChunkReader
from docbinder.adapters.s3.errors import DENIED_CODES, client_error_details, translate
from docbinder.adapters.streams import ChunkReader as Chunks
from docbinder.adapters.streams import ClosingChunks
from docbinder.domain.errors import (
    BlobMissing,
    DocbinderError,
    InvalidInput,
    MissingExtra,
    StorageError,
)
from docbinder.ports.blobs import BlobReader, BlobStat, WindowReader, check_blob_key, is_blob_key

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

MiB = 1 << 20

DEFAULT_MULTIPART_THRESHOLD = 8 * MiB
"""Inputs of at least this many bytes are uploaded in parts."""

DEFAULT_MULTIPART_CHUNKSIZE = 8 * MiB
"""Part size in bytes. S3 needs at least 5 MiB per part but the last (boto3 raises
smaller values to 5 MiB) and allows 10,000 parts, so the largest blob is
10,000 x this size (about 78 GiB at 8 MiB)."""

DEFAULT_MAX_CONCURRENCY = 3
"""Parts uploaded (and held in memory) at the same time. With 8 MiB parts a 1 GiB
upload grows the process by about 47 MiB (``bench/bench_blob_memory.py``), inside
the 64 MiB budget of SPEC §6; 4 would measure about 58 MiB."""

DEFAULT_CONNECT_TIMEOUT = 4.0
"""Seconds to wait for a TCP connection to the endpoint."""

DEFAULT_READ_TIMEOUT = 10.0
"""Seconds to wait for the endpoint to send anything on an open connection."""

DEFAULT_MAX_ATTEMPTS = 2
"""Attempts per request, the first included (botocore's ``standard`` retry mode)."""

MAX_RETRY_BACKOFF = 20.0
"""Longest pause in seconds between two attempts in botocore's ``standard`` retry mode."""


def worst_case_seconds(connect_timeout: float, read_timeout: float, max_attempts: int) -> float:
    """Upper bound in seconds for one request to a hung endpoint to fail.

    Every attempt waits at most for the connection plus one read; between
    attempts botocore's ``standard`` mode sleeps ``random() * min(20, 2 ** n)``
    seconds (``botocore/retries/standard.py``, ``ExponentialBackoff``) for the
    ``n``-th retry (``n`` from 0). With the defaults (4 s, 10 s, 2 attempts) a
    hung endpoint fails a request within 29 s: an attach stops at its first
    S3 request that fails (the identity read, cached per process, or the
    upload), so it reports the endpoint within that bound.
    """
    backoff = sum(min(MAX_RETRY_BACKOFF, 2.0**n) for n in range(max(0, max_attempts - 1)))
    return max_attempts * (connect_timeout + read_timeout) + backoff


ORIGIN_METADATA = "docbinder-origin"
"""User-metadata name (``x-amz-meta-docbinder-origin``) of a blob's provenance mark
(:func:`~docbinder.ports.blobs.blob_origin`); sent with ``PutObject`` or
``CreateMultipartUpload``, so an object never appears without it. ``CopyObject``
keeps it unless told to replace the metadata."""

COMMITTED_TAG = "docbinder-committed"
"""Object tag recording that a FileItem naming the blob committed (ADR 0031): one
``PutObjectTagging`` per newly stored blob, after the commit (it replaces the object's
tag set; docbinder writes its objects without tags). Needs ``s3:PutObjectTagging``;
``gc`` reads it with ``GetObjectTagging`` (``s3:GetObjectTagging``) for the orphan
candidates it would otherwise remove. Tagging keeps ``LastModified`` and the metadata."""

COMMITTED_VALUE = "v1"
"""Value of :data:`COMMITTED_TAG` (any value counts when reading)."""

_UNSUPPORTED_CODES = frozenset({"NotImplemented", "MethodNotAllowed", "XNotImplemented"})
"""Error codes of S3-compatible servers without object tagging."""

MD5_OPERATIONS = ("PutObjectTagging", "DeleteObjects", "PutBucketLifecycleConfiguration")
"""Operations S3 marks ``httpChecksumRequired``: botocore 1.36 on sends a CRC32 there, which
endpoints that still want ``Content-MD5`` refuse (e.g. CERT-Polska/karton #269)."""

_MD5_WORDS = ("content-md5", "contentmd5", "content md5")


def add_content_md5(request: Any, **_kwargs: Any) -> None:
    """botocore ``before-sign`` hook: set ``Content-MD5`` (RFC 1864: base64 of the body's MD5).

    Registered for :data:`MD5_OPERATIONS` when ``s3_content_md5`` is set;
    the CRC32 botocore adds stays (an endpoint that does not know it ignores
    it). The body is the request's serialised XML (bytes or text).
    """
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif not isinstance(body, bytes | bytearray):
        return  # a stream: botocore's own checksum covers it
    digest = hashlib.md5(body, usedforsecurity=False).digest()
    request.headers["Content-MD5"] = base64.b64encode(digest).decode("ascii")


def tagging_refusal(exc: BaseException, *, content_md5: bool) -> str | None:
    """Why a ``PutObjectTagging`` was refused, as one line with the error code; ``None`` for a fault.

    A refusal means the record cannot be kept here (a warning once per
    store, ADR 0031): a 403 (the credentials lack ``s3:PutObjectTagging``),
    a server without tagging (501, ``NotImplemented``), or any other 4xx
    but 404 (``NoSuchKey`` is the missing blob), e.g. ``InvalidRequest`` /
    ``InvalidDigest`` from an endpoint that wants ``Content-MD5``. Faults
    (5xx, timeouts, a missing object) give ``None``: the caller raises.
    """
    code, status, message = client_error_details(exc)
    said = f"{code or status}" + (f" ({message})" if message else "")
    if code in DENIED_CODES or status == 403:
        return f"{said}: the credentials lack s3:PutObjectTagging"
    if code in _UNSUPPORTED_CODES or status == 501:
        return f"{said}: the server does not support object tagging"
    if status is not None and 400 <= status < 500 and status != 404 and code != "NoSuchKey":
        text = f"{code} {message}".lower()
        if any(word in text for word in _MD5_WORDS) or code in ("InvalidDigest", "BadDigest"):
            hint = (
                "Content-MD5 is sent (s3_content_md5 = true) and still refused"
                if content_md5
                else "the endpoint wants Content-MD5: set s3_content_md5 = true "
                "(DOCBINDER_S3_CONTENT_MD5=true)"
            )
        else:
            hint = (
                "the endpoint refused PutObjectTagging; if it wants Content-MD5, set "
                "s3_content_md5 = true"
            )
        return f"{said}: {hint}"
    return None


DATABASES_PREFIX = _RECORDS_PREFIX
"""Objects ``<prefix>.docbinder-databases/<id>`` (empty) name the metadata databases writing here."""

LOCATION_OBJECT = ".docbinder-location"
"""Empty object under the prefix whose ``LastModified`` and ``ETag`` are the store's location (ADR 0030)."""

IDENTITY_OBJECT = IDENTITY_NAME
"""Object under the prefix holding the store's identity (a UUID); not a valid key, so never listed."""

# General purpose bucket naming rules of Amazon S3: 3-63 characters of lower-case
# letters, digits, dots and hyphens, starting and ending with a letter or digit.
_BUCKET_RE = re.compile(r"\A[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_MAX_PREFIX = 512  # prefix + longest key (255) stays below S3's 1,024-byte object key limit


def _import_boto3() -> Any:
    """Import boto3 or raise :class:`MissingExtra` naming the ``[s3]`` extra."""
    try:
        import boto3
        import boto3.s3.transfer
    except ImportError as exc:
        raise MissingExtra("S3 blob store", "s3", "boto3") from exc
    return boto3


def _normalise_prefix(prefix: str) -> str:
    """``""`` or ``"seg/seg/"``; segments follow the key rules. :class:`InvalidInput` otherwise."""
    stripped = prefix.strip("/")
    if not stripped:
        return ""
    if len(stripped) > _MAX_PREFIX or not is_blob_key(stripped):
        raise InvalidInput(
            f"invalid S3 prefix {prefix!r}: use [A-Za-z0-9._-] segments joined by '/', "
            f"none starting with '.', at most {_MAX_PREFIX} characters"
        )
    return stripped + "/"


@attrs.frozen
class PendingUpload:
    """An unfinished multipart upload under the store's prefix (left by a killed process)."""

    key: str
    """The full object key in the bucket (prefix included)."""
    upload_id: str
    initiated_at: datetime
    """When the upload was started (UTC)."""


CHECKSUM_MODES = ("when_required", "when_supported")
"""botocore's values for ``request_checksum_calculation`` / ``response_checksum_validation``."""


ChecksumMode = Literal["when_required", "when_supported"]


def resolve_checksums(checksums: str | None, endpoint_url: str | None) -> ChecksumMode:
    """The checksum mode for a store: ``checksums`` if given, else by endpoint.

    boto3 (botocore 1.36 on) adds CRC checksums to every upload by default
    (``when_supported``; over https as ``aws-chunked`` trailers), which several
    S3-compatible services reject. ``None`` or ``"auto"`` means ``when_supported``
    for AWS (no ``endpoint_url``) and ``when_required`` (checksums only where an
    operation demands them) for any custom endpoint. Raises :class:`InvalidInput`
    for another value.
    """
    if checksums is None or checksums == "auto":
        return "when_required" if endpoint_url else "when_supported"
    if checksums == "when_required":
        return "when_required"
    if checksums == "when_supported":
        return "when_supported"
    raise InvalidInput(
        f"S3 checksums must be auto, when_required or when_supported, got {checksums!r}"
    )


class S3BlobStore(BlobStoreBase):
    """:class:`~docbinder.ports.blobs.BlobStore` over one S3 bucket, below an optional prefix.

    ``bucket`` follows the S3 bucket naming rules; ``prefix`` is ``""`` or
    key-like segments (``"docbinder/prod"``). ``endpoint_url`` selects an
    S3-compatible service (MinIO, Ceph, moto, ...) and switches to path-style
    addressing; ``region_name`` defaults to boto3's configuration. ``client``
    replaces the boto3 client this store would build (credentials then come
    from it); otherwise credentials come from boto3's usual chain
    (environment, profile, instance role). Sizes are in bytes. The primitives
    of :class:`~docbinder.adapters.blobstore_base.BlobStoreBase` are one
    request each: ``PutObject`` (or a multipart upload), ``GetObject``,
    ``HeadObject``, ``DeleteObject``, ``ListObjectsV2`` pages, and the
    commit record's ``PutObjectTagging``/``GetObjectTagging``.

    Nothing connects before the first call. Errors: :class:`InvalidInput` for
    bad keys or settings, :class:`BlobMissing` for absent blobs,
    :class:`~docbinder.adapters.s3.errors.S3StorageError` (a
    :class:`StorageError`) for everything S3 or the network refuses; see
    :mod:`docbinder.adapters.s3.errors` for the mapping.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        client: S3Client | None = None,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunksize: int = DEFAULT_MULTIPART_CHUNKSIZE,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        whole_bucket: bool = False,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        checksums: str | None = None,
        content_md5: bool = False,
    ) -> None:
        if not isinstance(bucket, str) or not _BUCKET_RE.match(bucket) or ".." in bucket:
            raise InvalidInput(f"invalid S3 bucket name {bucket!r}")
        for name, value in (
            ("multipart_threshold", multipart_threshold),
            ("multipart_chunksize", multipart_chunksize),
            ("max_concurrency", max_concurrency),
        ):
            if value < 1:
                raise InvalidInput(f"{name} must be at least 1, got {value}")
        for name, seconds in (("connect_timeout", connect_timeout), ("read_timeout", read_timeout)):
            if not isinstance(seconds, int | float) or not 0 < seconds < float("inf"):
                raise InvalidInput(f"{name} must be a positive number of seconds, got {seconds!r}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInput(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
        super().__init__()
        self._bucket = bucket
        self._prefix = _normalise_prefix(prefix)
        if not self._prefix and not whole_bucket:
            raise InvalidInput(
                f"S3 blob URL s3://{bucket} has no prefix: use s3://{bucket}/<prefix> "
                "(for example s3://{bucket}/docbinder), or set s3_whole_bucket = true if "
                "everything in the bucket belongs to docbinder".replace("{bucket}", bucket)
            )
        self._endpoint_url = endpoint_url
        self.checksums = resolve_checksums(checksums, endpoint_url)
        """``when_required`` or ``when_supported``: when boto3 adds request checksums and
        validates response checksums (see :func:`resolve_checksums`)."""
        boto3 = _import_boto3()
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        self._boto_errors: tuple[type[Exception], ...] = (ClientError, BotoCoreError)
        self._owns_client = client is None
        if client is None:
            config = Config(
                retries={"mode": "standard", "total_max_attempts": max_attempts},
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                s3={"addressing_style": "path"} if endpoint_url else None,
                request_checksum_calculation=self.checksums,
                response_checksum_validation=self.checksums,
            )
            session = boto3.session.Session()
            client = session.client(
                "s3", endpoint_url=endpoint_url, region_name=region_name, config=config
            )
        self._client: S3Client = client
        self.content_md5 = content_md5
        """Whether ``Content-MD5`` is sent where S3 requires a checksum (:data:`MD5_OPERATIONS`)."""
        if content_md5:
            events = client.meta.events
            for operation in MD5_OPERATIONS:
                events.register(f"before-sign.s3.{operation}", add_content_md5)
        transfer_config = boto3.s3.transfer.TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=max_concurrency,
            use_threads=True,
            preferred_transfer_client="classic",
        )
        # Parts read from a non-seekable stream wait in memory for an upload thread;
        # cap them at the number of threads (boto3's default of 10 would allow 80 MiB).
        transfer_config.max_in_memory_upload_chunks = max_concurrency
        self._transfer_config = transfer_config

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        client: S3Client | None = None,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunksize: int = DEFAULT_MULTIPART_CHUNKSIZE,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        whole_bucket: bool = False,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        checksums: str | None = None,
        content_md5: bool = False,
    ) -> S3BlobStore:
        """Build a store from ``s3://bucket`` or ``s3://bucket/prefix/path``.

        Keyword arguments are those of the constructor. Raises
        :class:`InvalidInput` for another scheme, a missing or invalid bucket,
        an invalid prefix, credentials, a port, a query or a fragment in the URL.
        """
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise InvalidInput(f"not an s3://bucket[/prefix] URL: {url!r}")
        if parts.query or parts.fragment or "@" in parts.netloc or ":" in parts.netloc:
            raise InvalidInput(f"an s3:// URL holds only a bucket and a prefix: {url!r}")
        return cls(
            parts.netloc,
            parts.path,
            endpoint_url=endpoint_url,
            region_name=region_name,
            client=client,
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=max_concurrency,
            whole_bucket=whole_bucket,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_attempts=max_attempts,
            checksums=checksums,
            content_md5=content_md5,
        )

    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    def prefix(self) -> str:
        """``""`` or the object-key prefix ending in ``/``."""
        return self._prefix

    @property
    def endpoint_url(self) -> str | None:
        """The S3-compatible endpoint, or ``None`` for AWS."""
        return self._endpoint_url

    @property
    def client(self) -> S3Client:
        """The boto3 S3 client in use."""
        return self._client

    def close(self) -> None:
        """Close the HTTP connection pool of the boto3 client this store built; idempotent.

        A ``client`` handed to the constructor belongs to the caller and is
        left open. A later call on this store opens new connections (botocore
        allows it), so close only when done with the store.
        """
        if self._owns_client:
            self._client.close()

    @property
    def url(self) -> str:
        """``s3://bucket`` or ``s3://bucket/prefix`` (without the endpoint)."""
        return f"s3://{self._bucket}/{self._prefix}".rstrip("/")

    def __repr__(self) -> str:
        return f"S3BlobStore({self.url!r}, endpoint_url={self._endpoint_url!r})"

    # -- helpers ------------------------------------------------------------

    def _where(self) -> str:
        return f"{self.url} at {self._endpoint_url}" if self._endpoint_url else self.url

    def _error(self, exc: BaseException, key: str | None = None) -> DocbinderError:
        return translate(exc, bucket=self._bucket, where=self._where(), key=key)

    def _object_key(self, name: str) -> str:
        return self._prefix + name

    def presigned_get(
        self, key: str, *, expires_in: int, file_name: str, mime_type: str, disposition: str
    ) -> str:
        """A presigned ``GetObject`` URL for blob ``key`` (see :class:`~docbinder.ports.blobs.PresigningBlobStore`).

        Signed locally by botocore (Signature Version 4); nothing is sent to S3.
        ``file_name`` is carried only inside ``disposition``.
        """
        check_blob_key(key)
        if not 1 <= expires_in <= 604800:
            raise InvalidInput("expires_in must be from 1 to 604800 seconds")
        try:
            url: str = self._client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self._bucket,
                    "Key": self._object_key(key),
                    "ResponseContentType": mime_type,
                    "ResponseContentDisposition": disposition,
                },
                ExpiresIn=expires_in,
            )
        except self._boto_errors as exc:
            raise self._error(exc, key) from exc
        return url

    # -- primitives (BlobStoreBase) ---------------------------------------------------

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        """Upload ``chunks`` to ``name`` with ``mark`` as :data:`ORIGIN_METADATA`; the bytes stored.

        Either the whole object becomes visible (replacing an older one) or
        nothing changes. An exception raised by ``chunks`` (also
        ``KeyboardInterrupt``) propagates unchanged after the upload was
        abandoned and any multipart upload aborted; S3 faults raise
        :class:`StorageError`. Without ``replace`` (the store's own small
        records) the body is sent whole in a conditional ``PutObject``
        (``If-None-Match: *``): an object already there stays.
        """
        object_key = self._object_key(name)
        if not replace:
            body = b"".join(chunks)
            self._put_if_absent(object_key, body)
            return len(body)
        source = ChunkReader(chunks)
        extra: dict[str, Any] = {}
        if mark is not None:
            extra["Metadata"] = {ORIGIN_METADATA: mark}
        try:
            self._client.upload_fileobj(
                source,  # type: ignore[arg-type]
                self._bucket,
                object_key,
                ExtraArgs=extra or None,
                Config=self._transfer_config,
            )
        except BaseException as exc:
            if source.error is None:
                if isinstance(exc, self._boto_errors):
                    raise self._error(exc, name) from exc
                raise
        if source.error is not None:
            # Raised outside the handler so the caller's exception is not chained to ours.
            raise source.error
        log.debug("s3 stored blob %s (%d bytes) in %s", name, source.bytes_read, self.url)
        return source.bytes_read

    def _open(self, name: str, chunk_size: int) -> BodyChunks:
        """Start ``GetObject`` now; faults while streaming raise :class:`StorageError`.

        The HTTP response is released when the reader is exhausted, closed or
        collected.
        """
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._object_key(name))
        except self._boto_errors as exc:
            raise self._error(exc, name) from exc
        body = response["Body"]
        return BodyChunks(
            body.iter_chunks(chunk_size),
            body.close,
            self._boto_errors,
            lambda e: self._error(e, name),
        )

    def _open_range(self, name: str, offset: int, length: int, chunk_size: int) -> BlobReader:
        """Start a ranged ``GetObject`` now (``Range: bytes=<offset>-<offset+length-1>``).

        S3 sends only those bytes (RFC 9110 section 14; ``206``). A range that starts
        at or past the object's end is answered ``416 InvalidRange`` by S3, and an
        empty ``length`` is not a range at all: both give no bytes once a ``HEAD``
        showed the object is there (:class:`BlobMissing` otherwise).
        """
        if length == 0:
            self._stat(name)
            return Chunks(iter(()))
        try:
            response = self._client.get_object(
                Bucket=self._bucket,
                Key=self._object_key(name),
                Range=f"bytes={offset}-{offset + length - 1}",
            )
        except self._boto_errors as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code == "InvalidRange":
                self._stat(name)
                return Chunks(iter(()))
            raise self._error(exc, name) from exc
        body = response["Body"]
        chunks = BodyChunks(
            body.iter_chunks(chunk_size),
            body.close,
            self._boto_errors,
            lambda e: self._error(e, name),
        )
        if "ContentRange" not in response:  # a server that ignored the Range sent it all
            return WindowReader(chunks, offset, length)
        return chunks

    def _stat(self, name: str) -> BlobStat:
        """Size (``ContentLength``), ``LastModified`` (UTC, whole seconds) and mark of the object.

        ``LastModified`` of an object made by a multipart upload is when the
        upload began, not when it finished. The mark is the
        :data:`ORIGIN_METADATA` user metadata (``None`` without it). S3
        answers ``HEAD`` on a missing bucket with a bare 404, so that is
        :class:`BlobMissing` too (``exists`` is ``False``);
        :meth:`check_writable` tells the two apart.
        """
        try:
            head = self._client.head_object(Bucket=self._bucket, Key=self._object_key(name))
        except self._boto_errors as exc:
            raise self._error(exc, name) from exc
        return BlobStat(
            size=head["ContentLength"],
            modified_at=head["LastModified"].astimezone(UTC),
            origin=head.get("Metadata", {}).get(ORIGIN_METADATA),
        )

    def _delete(self, name: str) -> None:
        """Delete the object; S3 accepts deleting an absent key."""
        try:
            self._client.delete_object(Bucket=self._bucket, Key=self._object_key(name))
        except self._boto_errors as exc:
            raise self._error(exc, name) from exc

    def _list(self, prefix: str) -> Iterator[str]:
        """The names of the objects under the store's prefix plus ``prefix`` (``ListObjectsV2``).

        1,000 per page; faults raise :class:`StorageError` while iterating, a
        missing bucket too.
        """
        paginator = self._client.get_paginator("list_objects_v2")
        start = len(self._prefix)
        try:
            for page in paginator.paginate(Bucket=self._bucket, Prefix=self._prefix + prefix):
                for item in page.get("Contents", ()):
                    yield item["Key"][start:]
        except self._boto_errors as exc:
            raise self._error(exc) from exc

    def _record_commit(self, name: str) -> str | None:
        """Tag the object with :data:`COMMITTED_TAG` (one ``PutObjectTagging`` request).

        Why not, when the request is refused (``AccessDenied``: the
        credentials lack ``s3:PutObjectTagging``) or the server has no object
        tagging. :class:`BlobMissing` for an absent object,
        :class:`StorageError` for other faults.
        """
        try:
            self._client.put_object_tagging(
                Bucket=self._bucket,
                Key=self._object_key(name),
                Tagging={"TagSet": [{"Key": COMMITTED_TAG, "Value": COMMITTED_VALUE}]},
            )
        except self._boto_errors as exc:
            reason = tagging_refusal(exc, content_md5=self.content_md5)
            if reason is None:
                raise self._error(exc, name) from exc
            return reason
        return None

    def check_commit_records(self) -> str | None:
        """Tag, read back and delete one probe object; ``None`` if records work, else why not.

        For ``doctor``: the write probe never tags, so a refused
        ``PutObjectTagging`` (permission, no tagging, an endpoint that wants
        ``Content-MD5``) shows only here, with the error code and what is
        missing. :class:`StorageError` for other faults.
        """
        key = f"{PROBE_PREFIX}{secrets.token_hex(16)}"
        self.put(key, [b"docbinder tagging probe\n"])
        try:
            reason = self._record_commit(key)
            if reason is None and not self._has_commit_record(key):
                reason = "the tag was accepted but not read back: the server drops object tags"
            return reason
        finally:
            self.delete(key)

    def _has_commit_record(self, name: str) -> bool:
        """Whether the object carries :data:`COMMITTED_TAG` (one ``GetObjectTagging`` request).

        ``False`` on a server without object tagging (nothing could be
        recorded there). A refused request (the credentials lack
        ``s3:GetObjectTagging``) raises :class:`StorageError` naming the
        permission: ``gc`` then stops instead of guessing.
        :class:`BlobMissing` for an absent object.
        """
        try:
            answer = self._client.get_object_tagging(
                Bucket=self._bucket, Key=self._object_key(name)
            )
        except self._boto_errors as exc:
            code, status, _ = client_error_details(exc)
            if code in _UNSUPPORTED_CODES or status == 501:
                return False
            error = self._error(exc, name)
            if code in DENIED_CODES or status == 403:
                raise StorageError(
                    f"{error}; gc needs s3:GetObjectTagging to tell blobs whose FileItem "
                    "committed from leftovers"
                ) from exc
            raise error from exc
        return any(tag.get("Key") == COMMITTED_TAG for tag in answer.get("TagSet", ()))

    def _put_if_absent(self, object_key: str, body: bytes) -> None:
        """Write ``body`` under ``object_key`` unless an object is there (``If-None-Match: *``).

        When another writer made it first S3 answers 412 (or a conflict), and
        this is not an error: the caller reads the winner's object.
        :class:`StorageError` for other faults.
        """
        try:
            self._client.put_object(Bucket=self._bucket, Key=object_key, Body=body, IfNoneMatch="*")
        except self._boto_errors as exc:
            code, status, _ = client_error_details(exc)
            if status != 412 and code not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise self._error(exc) from exc

    # -- location (ADR 0030) ------------------------------------------------------------

    def location(self, *, create: bool = False) -> str | None:
        """Bucket, prefix, and ``LastModified`` and ``ETag`` of ``<prefix>.docbinder-location``.

        The object is empty; S3 assigns its ``LastModified`` when it is
        written, so a copy (``aws s3 sync``/``cp`` into another bucket or
        prefix, a restore of a backup or of an older version, even into the
        same place) has a new one, while reading it again through another
        endpoint host name or client does not change it. A separate object,
        not the identity, so that putting a lost identity back (ADR 0022)
        does not move the store. ``None`` when the object is missing; with
        ``create`` it is made by a conditional ``PutObject`` (``If-None-Match:
        *``: of two racing writers one wins, both read the winner's).
        :class:`StorageError` for other faults.
        """
        object_key = self._prefix + LOCATION_OBJECT
        head = self._head_location(object_key)
        if head is None and create:
            self._put_if_absent(object_key, b"")
            head = self._head_location(object_key)
        if head is None:
            return None
        modified = head["LastModified"].astimezone(UTC).isoformat()
        return (
            f"s3 bucket {self._bucket} prefix {self._prefix} location modified {modified} "
            f"etag {head.get('ETag', '')}"
        )

    def _head_location(self, object_key: str) -> Any:
        try:
            return self._client.head_object(Bucket=self._bucket, Key=object_key)
        except self._boto_errors as exc:
            code, status, _ = client_error_details(exc)
            if code in ("NoSuchKey", "NoSuchBucket", "NotFound", "404") or status == 404:
                return None
            raise self._error(exc) from exc

    # -- maintenance --------------------------------------------------------

    def pending_uploads(self, older_than_seconds: float = 24 * 3600.0) -> list[PendingUpload]:
        """Multipart uploads under the prefix started at least ``older_than_seconds`` ago.

        A running ``put`` finishes or aborts its own upload; old ones were left
        by a killed process and still cost storage until aborted.
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=older_than_seconds)
        found: list[PendingUpload] = []
        paginator = self._client.get_paginator("list_multipart_uploads")
        try:
            for page in paginator.paginate(Bucket=self._bucket, Prefix=self._prefix):
                for upload in page.get("Uploads", ()):
                    initiated = upload["Initiated"].astimezone(UTC)
                    if initiated <= cutoff:
                        found.append(PendingUpload(upload["Key"], upload["UploadId"], initiated))
        except self._boto_errors as exc:
            raise self._error(exc) from exc
        return found

    def upload_size(self, upload: PendingUpload) -> int:
        """Bytes already stored by the parts of an unfinished multipart upload (``ListParts``)."""
        total = 0
        paginator = self._client.get_paginator("list_parts")
        try:
            for page in paginator.paginate(
                Bucket=self._bucket, Key=upload.key, UploadId=upload.upload_id
            ):
                total += sum(int(part.get("Size", 0)) for part in page.get("Parts", ()))
        except self._boto_errors as exc:
            error = self._error(exc, upload.key)
            if isinstance(error, BlobMissing):  # finished or aborted meanwhile
                return 0
            raise error from exc
        return total

    def abort_pending_uploads(self, older_than_seconds: float = 24 * 3600.0) -> list[PendingUpload]:
        """Abort what :meth:`pending_uploads` finds; return the uploads aborted."""
        aborted: list[PendingUpload] = []
        for upload in self.pending_uploads(older_than_seconds):
            try:
                self._client.abort_multipart_upload(
                    Bucket=self._bucket, Key=upload.key, UploadId=upload.upload_id
                )
            except self._boto_errors as exc:
                error = self._error(exc, upload.key)
                if isinstance(error, BlobMissing):  # NoSuchUpload: finished or aborted meanwhile
                    continue
                raise error from exc
            log.info("s3 aborted stale multipart upload %s of %s", upload.upload_id, upload.key)
            aborted.append(upload)
        return aborted


class BodyChunks(ClosingChunks):
    """Iterator over a streaming S3 body that translates read faults and always releases it.

    ``chunks`` yields the body's bytes, ``close`` releases the connection,
    ``errors`` are the botocore classes to translate with ``translate``.
    """

    def __init__(
        self,
        chunks: Iterator[bytes],
        close: Callable[[], None],
        errors: tuple[type[Exception], ...],
        translate: Callable[[BaseException], DocbinderError],
    ) -> None:
        self._chunks: Iterator[bytes] | None = chunks
        self._close = close
        self._errors = errors
        self._translate = translate

    def __next__(self) -> bytes:
        if self._chunks is None:
            raise StopIteration
        try:
            return next(self._chunks)
        except StopIteration:
            self.close()
            raise
        except self._errors as exc:
            self.close()
            raise self._translate(exc) from exc

    def close(self) -> None:
        """Release the HTTP response; further iteration yields nothing."""
        if self._chunks is not None:
            self._chunks = None
            self._close()
