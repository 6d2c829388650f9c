"""S3 blob store against a moto server over HTTP, plus error translation (SPEC C13)."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC
from typing import TYPE_CHECKING, Any

import pytest

from docbinder.adapters.s3 import S3BlobStore, S3StorageError, S3Throttled
from docbinder.domain.errors import (
    BlobMissing,
    InvalidInput,
    MissingExtra,
    StorageError,
)
from docbinder.testing.blob_suite import Boom, Generated, pattern
from tests.s3server import free_port, make_client

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MiB = 1 << 20


def operations(client: S3Client) -> list[str]:
    """Record the name of every S3 operation ``client`` performs, in order."""
    seen: list[str] = []

    def record(model: Any, **kwargs: Any) -> None:
        seen.append(model.name)

    client.meta.events.register("before-call.s3", record)
    return seen


def uploads_in_progress(client: S3Client, bucket: str) -> list[Any]:
    return list(client.list_multipart_uploads(Bucket=bucket).get("Uploads", []))


@pytest.fixture
def store(s3_endpoint: str, s3_client: S3Client, s3_bucket: str) -> S3BlobStore:
    return S3BlobStore(s3_bucket, "base", endpoint_url=s3_endpoint, client=s3_client)


# -- real server ----------------------------------------------------------------


@pytest.mark.s3
def test_store_builds_its_own_client_from_the_environment(s3_endpoint: str, s3_bucket: str) -> None:
    store = S3BlobStore(s3_bucket, endpoint_url=s3_endpoint, whole_bucket=True)
    assert store.put("own/client", [b"data"]) == 4
    assert b"".join(store.open("own/client")) == b"data"
    assert store.endpoint_url == s3_endpoint


@pytest.mark.s3
def test_objects_live_under_the_prefix(
    store: S3BlobStore, s3_client: S3Client, s3_bucket: str
) -> None:
    store.put("ab/0001", [b"x"])
    names = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert names == ["base/ab/0001"]
    s3_client.put_object(Bucket=s3_bucket, Key="elsewhere/ab/0002", Body=b"y")
    s3_client.put_object(Bucket=s3_bucket, Key="basement", Body=b"y")
    s3_client.put_object(Bucket=s3_bucket, Key="base/not a key", Body=b"y")
    s3_client.put_object(Bucket=s3_bucket, Key="base/dir/", Body=b"")
    assert list(store.keys()) == ["ab/0001"]


@pytest.mark.s3
def test_no_metadata_is_stored_on_objects(
    store: S3BlobStore, s3_client: S3Client, s3_bucket: str
) -> None:
    store.put("meta", [b"x"])
    head = s3_client.head_object(Bucket=s3_bucket, Key="base/meta")
    assert head.get("Metadata", {}) == {}
    assert "ContentDisposition" not in head


@pytest.mark.s3
def test_small_blob_is_one_put(s3_endpoint: str, s3_bucket: str) -> None:
    client = make_client(s3_endpoint)
    ops = operations(client)
    store = S3BlobStore(s3_bucket, endpoint_url=s3_endpoint, client=client, whole_bucket=True)
    store.put("small", [pattern(1000)])
    assert ops == ["PutObject"]
    assert "-" not in client.head_object(Bucket=s3_bucket, Key="small")["ETag"]


@pytest.mark.s3
def test_large_blob_goes_multipart(s3_endpoint: str, s3_bucket: str) -> None:
    client = make_client(s3_endpoint)
    ops = operations(client)
    store = S3BlobStore(
        s3_bucket,
        endpoint_url=s3_endpoint,
        client=client,
        whole_bucket=True,
        multipart_threshold=5 * MiB,
        multipart_chunksize=5 * MiB,
    )
    source = Generated(12 * MiB)
    assert store.put("large", source) == 12 * MiB
    assert ops.count("UploadPart") == 3
    assert ops[0] == "CreateMultipartUpload"
    assert ops[-1] == "CompleteMultipartUpload"
    assert client.head_object(Bucket=s3_bucket, Key="large")["ETag"].endswith('-3"')
    digest = __import__("hashlib").sha256()
    for chunk in store.open("large"):
        digest.update(chunk)
    assert digest.hexdigest() == source.sha256


@pytest.mark.s3
def test_zero_bytes_with_one_byte_threshold(s3_endpoint: str, s3_bucket: str) -> None:
    client = make_client(s3_endpoint)
    store = S3BlobStore(
        s3_bucket, endpoint_url=s3_endpoint, client=client, multipart_threshold=1, whole_bucket=True
    )
    assert store.put("empty", []) == 0
    assert store.stat("empty").size == 0
    assert list(store.open("empty")) == []
    assert client.head_object(Bucket=s3_bucket, Key="empty")["ContentLength"] == 0


@pytest.mark.s3
@pytest.mark.parametrize("error", [Boom("mid-upload"), KeyboardInterrupt()], ids=repr)
def test_failure_mid_multipart_aborts_the_upload(
    s3_endpoint: str, s3_bucket: str, error: BaseException
) -> None:
    client = make_client(s3_endpoint)
    ops = operations(client)
    store = S3BlobStore(
        s3_bucket,
        endpoint_url=s3_endpoint,
        client=client,
        whole_bucket=True,
        multipart_threshold=5 * MiB,
        multipart_chunksize=5 * MiB,
    )
    part_stored = threading.Event()
    client.meta.events.register("after-call.s3.UploadPart", lambda **_: part_stored.set())

    def chunks() -> Iterator[bytes]:
        yield from (pattern(MiB, seed=n) for n in range(11))
        assert part_stored.wait(timeout=20), "no part was uploaded"
        raise error

    with pytest.raises(type(error)) as caught:
        store.put("broken", chunks())
    assert caught.value is error
    assert "CreateMultipartUpload" in ops
    assert "UploadPart" in ops
    assert "AbortMultipartUpload" in ops
    assert "CompleteMultipartUpload" not in ops
    assert uploads_in_progress(client, s3_bucket) == []
    assert not store.exists("broken")
    assert "Contents" not in client.list_objects_v2(Bucket=s3_bucket)


@pytest.mark.s3
def test_stat_is_utc(store: S3BlobStore) -> None:
    store.put("t", [b"x"])
    modified = store.stat("t").modified_at
    assert modified.tzinfo is UTC


@pytest.mark.s3
def test_missing_bucket_is_a_storage_error_naming_it(s3_endpoint: str, s3_client: S3Client) -> None:
    name = f"docbinder-missing-{uuid.uuid4().hex[:8]}"
    store = S3BlobStore(name, endpoint_url=s3_endpoint, client=s3_client, whole_bucket=True)
    for call in (
        lambda: store.put("k", [b"x"]),
        lambda: list(store.keys()),
        lambda: store.delete("k"),
        lambda: store.open("k"),
        store.check_writable,
    ):
        with pytest.raises(S3StorageError) as caught:
            call()
        assert name in str(caught.value)
        assert "does not exist" in str(caught.value)
        assert caught.value.code == "NoSuchBucket"
        assert not caught.value.retryable
    assert not store.exists("k")  # HEAD on a missing bucket is a bare 404


@pytest.mark.s3
def test_check_writable_leaves_nothing(store: S3BlobStore) -> None:
    store.check_writable()
    assert list(store.keys()) == []


@pytest.mark.s3
def test_pending_uploads_are_found_and_aborted(
    store: S3BlobStore, s3_client: S3Client, s3_bucket: str
) -> None:
    started = s3_client.create_multipart_upload(Bucket=s3_bucket, Key="base/ab/killed")
    s3_client.create_multipart_upload(Bucket=s3_bucket, Key="other/killed")
    # moto reports every upload as initiated in 2010, so only the extremes are testable here
    assert store.pending_uploads(older_than_seconds=100 * 365 * 86400) == []
    [pending] = store.pending_uploads(older_than_seconds=0)
    assert pending.key == "base/ab/killed"
    assert pending.upload_id == started["UploadId"]
    assert pending.initiated_at.tzinfo is UTC
    assert store.abort_pending_uploads(older_than_seconds=0) == [pending]
    remaining = [u["Key"] for u in uploads_in_progress(s3_client, s3_bucket)]
    assert remaining == ["other/killed"]


@pytest.mark.s3
def test_open_releases_the_response(store: S3BlobStore) -> None:
    store.put("rel", [pattern(10_000)])
    chunks = store.open("rel", 1000)
    assert len(next(chunks)) == 1000
    chunks.close()
    assert list(chunks) == []
    with store.open("rel", 4000) as body:
        assert sum(len(c) for c in body) == 10_000


# -- unreachable endpoint and credentials ---------------------------------------


def test_unreachable_endpoint_is_a_retryable_storage_error(s3_env: None) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    client = make_client(endpoint, retries={"total_max_attempts": 1}, connect_timeout=2)
    store = S3BlobStore("some-bucket", endpoint_url=endpoint, client=client, whole_bucket=True)
    for call in (
        lambda: store.stat("k"),
        lambda: store.put("k", [b"x"]),
        lambda: list(store.keys()),
    ):
        with pytest.raises(S3StorageError) as caught:
            call()
        assert caught.value.retryable
        assert "cannot reach S3" in str(caught.value)
        assert endpoint in str(caught.value)
        assert type(caught.value.__cause__).__name__ == "EndpointConnectionError"


def test_missing_credentials_are_a_storage_error(
    s3_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    endpoint = f"http://127.0.0.1:{free_port()}"
    store = S3BlobStore("some-bucket", endpoint_url=endpoint, whole_bucket=True)
    with pytest.raises(S3StorageError, match="credentials") as caught:
        store.stat("k")
    assert type(caught.value.__cause__).__name__ == "NoCredentialsError"
    assert not caught.value.retryable


# -- error translation with a stubbed client ------------------------------------


@pytest.fixture(scope="module")
def stub_client() -> S3Client:
    """A client only ever used under a ``Stubber``; its endpoint is never contacted."""
    return make_client(f"http://127.0.0.1:{free_port()}")


@pytest.fixture
def stubbed(s3_env: None, stub_client: S3Client) -> Iterator[tuple[S3BlobStore, Any]]:
    """A store whose client answers from a ``botocore.stub.Stubber`` (never sends a request)."""
    from botocore.stub import Stubber

    client = stub_client
    with Stubber(client) as stubber:
        yield (
            S3BlobStore("stub-bucket", "p", endpoint_url="http://127.0.0.1:1", client=client),
            stubber,
        )
        stubber.assert_no_pending_responses()


def test_no_such_key_is_blob_missing(stubbed: tuple[S3BlobStore, Any]) -> None:
    from botocore.exceptions import ClientError

    store, stubber = stubbed
    stubber.add_client_error("get_object", "NoSuchKey", "The key does not exist", 404)
    with pytest.raises(BlobMissing) as caught:
        store.open("ab/k")
    assert "ab/k" in str(caught.value)
    assert isinstance(caught.value.__cause__, ClientError)


@pytest.mark.parametrize("method", ["stat", "exists"])
def test_head_404_is_blob_missing(stubbed: tuple[S3BlobStore, Any], method: str) -> None:
    store, stubber = stubbed
    stubber.add_client_error("head_object", "404", "Not Found", 404)
    if method == "stat":
        with pytest.raises(BlobMissing):
            store.stat("k")
    else:
        assert store.exists("k") is False


def test_no_such_bucket_on_get_is_storage_error_not_missing(
    stubbed: tuple[S3BlobStore, Any],
) -> None:
    store, stubber = stubbed
    stubber.add_client_error("get_object", "NoSuchBucket", "The bucket does not exist", 404)
    with pytest.raises(S3StorageError) as caught:
        store.open("k")
    assert not isinstance(caught.value, BlobMissing)
    assert "'stub-bucket' does not exist" in str(caught.value)


@pytest.mark.parametrize(
    ("method", "code", "status"),
    [
        ("get_object", "AccessDenied", 403),
        ("put_object", "AccessDenied", 403),
        ("delete_object", "AccessDenied", 403),
        ("list_objects_v2", "AccessDenied", 403),
        ("head_object", "403", 403),
        ("get_object", "InvalidAccessKeyId", 403),
        ("get_object", "SignatureDoesNotMatch", 403),
        ("get_object", "ExpiredToken", 400),
    ],
)
def test_access_denied_is_a_storage_error_about_credentials(
    stubbed: tuple[S3BlobStore, Any], method: str, code: str, status: int
) -> None:
    store, stubber = stubbed
    stubber.add_client_error(method, code, "Access Denied", status)
    with pytest.raises(S3StorageError) as caught:
        _call(store, method)
    assert not isinstance(caught.value, BlobMissing)
    assert "refused access" in str(caught.value)
    assert "credentials" in str(caught.value)
    assert caught.value.code == code
    assert not caught.value.retryable


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("SlowDown", 503),
        ("Throttling", 400),
        ("ThrottlingException", 400),
        ("RequestLimitExceeded", 400),
        ("TooManyRequestsException", 429),
        ("SomethingNew", 429),
    ],
)
@pytest.mark.parametrize("method", ["get_object", "put_object", "head_object"])
def test_throttling_is_a_retryable_storage_error(
    stubbed: tuple[S3BlobStore, Any], method: str, code: str, status: int
) -> None:
    store, stubber = stubbed
    stubber.add_client_error(method, code, "Please reduce your request rate.", status)
    with pytest.raises(S3Throttled) as caught:
        _call(store, method)
    assert isinstance(caught.value, StorageError)
    assert caught.value.retryable
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("code", "status"), [("InternalError", 500), ("ServiceUnavailable", 503), ("", 502)]
)
def test_server_errors_are_retryable(
    stubbed: tuple[S3BlobStore, Any], code: str, status: int
) -> None:
    store, stubber = stubbed
    stubber.add_client_error("get_object", code, "We encountered an internal error.", status)
    with pytest.raises(S3StorageError) as caught:
        store.open("k")
    assert not isinstance(caught.value, S3Throttled)
    assert caught.value.retryable


def test_other_client_errors_are_storage_errors(stubbed: tuple[S3BlobStore, Any]) -> None:
    store, stubber = stubbed
    stubber.add_client_error("put_object", "InvalidStorageClass", "Bad storage class", 400)
    with pytest.raises(S3StorageError) as caught:
        store.put("k", [b"x"])
    assert "InvalidStorageClass" in str(caught.value)
    assert not caught.value.retryable


def test_broken_download_stream_is_a_retryable_storage_error(
    stubbed: tuple[S3BlobStore, Any],
) -> None:
    from botocore.response import StreamingBody
    from urllib3.exceptions import ProtocolError

    class BrokenRaw:
        closed = False

        def __init__(self) -> None:
            self.calls = 0

        def read(self, amount: int | None = None) -> bytes:
            self.calls += 1
            if self.calls == 1:
                return b"x" * (amount or 1)
            raise ProtocolError("Connection broken: reset by peer")

        def close(self) -> None:
            BrokenRaw.closed = True

    store, stubber = stubbed
    body = StreamingBody(BrokenRaw(), 100)  # type: ignore[arg-type]
    stubber.add_response("get_object", {"Body": body})
    chunks = store.open("k", 10)
    assert next(chunks) == b"x" * 10
    with pytest.raises(S3StorageError) as caught:
        next(chunks)
    assert caught.value.retryable
    assert BrokenRaw.closed
    assert list(chunks) == []


def _call(store: S3BlobStore, method: str) -> object:
    if method == "get_object":
        return store.open("k")
    if method == "put_object":
        return store.put("k", [b"x"])
    if method == "delete_object":
        store.delete("k")
        return None
    if method == "list_objects_v2":
        return list(store.keys())
    if method == "head_object":
        return store.stat("k")
    raise AssertionError(method)


# -- construction -------------------------------------------------------------------


def test_from_url(s3_env: None) -> None:
    store = S3BlobStore.from_url("s3://my-bucket/some/prefix/", endpoint_url="http://127.0.0.1:1")
    assert store.bucket == "my-bucket"
    assert store.prefix == "some/prefix/"
    assert store.url == "s3://my-bucket/some/prefix"
    with pytest.raises(InvalidInput, match=r"no prefix.*s3_whole_bucket"):
        S3BlobStore.from_url("s3://my-bucket")
    bare = S3BlobStore.from_url("s3://my-bucket", whole_bucket=True)
    assert bare.prefix == ""
    assert bare.url == "s3://my-bucket"
    assert S3BlobStore.from_url(bare.url, whole_bucket=True).url == bare.url


@pytest.mark.parametrize(
    "url",
    [
        "file:///tmp/x",
        "s3://",
        "s3:///prefix",
        "s3://Bad_Bucket/x",
        "s3://ab/x",
        "s3://bucket/../x",
        "s3://bucket/.hidden",
        "s3://bucket/a b",
        "s3://bucket/x?versionId=1",
        "s3://bucket/x#frag",
        "s3://user@bucket/x",
        "s3://bucket:9000/x",
        "s3://bucket..name/x",
    ],
)
def test_from_url_rejects(url: str, s3_env: None) -> None:
    with pytest.raises(InvalidInput):
        S3BlobStore.from_url(url)


@pytest.mark.parametrize(
    "options",
    [{"multipart_threshold": 0}, {"multipart_chunksize": 0}, {"max_concurrency": 0}],
)
def test_invalid_transfer_options(options: dict[str, int], s3_env: None) -> None:
    with pytest.raises(InvalidInput):
        S3BlobStore("bucket", "p", **options)  # type: ignore[arg-type]


def test_invalid_chunk_size_is_rejected_before_any_request(
    stubbed: tuple[S3BlobStore, Any],
) -> None:
    store, _stubber = stubbed
    with pytest.raises(InvalidInput):
        store.open("k", 0)


def test_missing_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MissingExtra) as caught:
        S3BlobStore("bucket", "p")
    assert caught.value.extra == "s3"
    assert "pip install -e '.[s3]'" in str(caught.value)
    assert isinstance(caught.value, ImportError)


def test_importing_the_package_does_not_import_boto3() -> None:
    code = (
        "import sys, docbinder.adapters.s3\n"
        "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- commit records: object tagging (ADR 0031) ---------------------------------------------


def _refuse(store: S3BlobStore, operation: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the store's client answer ``operation`` with 403 AccessDenied (a bucket policy
    without that permission); returns the keys it was asked for."""
    from botocore.exceptions import ClientError

    asked: list[str] = []

    def refused(**kwargs: Any) -> Any:
        asked.append(kwargs["Key"])
        raise ClientError(
            {
                "Error": {"Code": "AccessDenied", "Message": "Access Denied"},
                "ResponseMetadata": {"HTTPStatusCode": 403},
            },
            operation,
        )

    name = {"PutObjectTagging": "put_object_tagging", "GetObjectTagging": "get_object_tagging"}
    monkeypatch.setattr(store.client, name[operation], refused)
    return asked


@pytest.mark.s3
def test_a_refused_commit_tag_is_said_once_and_never_fails_the_attach(
    store: S3BlobStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from docbinder.adapters.memory import MemoryMetadataStore
    from docbinder.domain.model import Principal
    from tests.wiring import wire_binder

    asked = _refuse(store, "PutObjectTagging", monkeypatch)
    binder = wire_binder(MemoryMetadataStore().unit_of_work, store)
    run = binder.start_new_run(Principal("u1", "m1", roles=("member",)))
    with caplog.at_level("WARNING", logger="docbinder"):
        first = run.produce_file("a.txt", b"alpha")
        second = run.produce_file("b.txt", b"beta")
    assert first.document_id is not None and second.document_id is not None
    assert asked == [f"base/{first.item.blob_key}", f"base/{second.item.blob_key}"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "s3:PutObjectTagging" in warnings[0]
    monkeypatch.undo()
    assert not store.is_committed(first.item.blob_key)


@pytest.mark.s3
def test_a_refused_commit_tag_read_stops_gc_and_names_the_permission(
    store: S3BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("ab/ab1", [b"x"])
    _refuse(store, "GetObjectTagging", monkeypatch)
    with pytest.raises(StorageError, match="s3:GetObjectTagging"):
        store.is_committed("ab/ab1")


@pytest.mark.s3
def test_a_commit_tag_costs_one_request_and_keeps_the_object(store: S3BlobStore) -> None:
    store.identity(create=True)
    store.put("ab/ab1", [b"x"])
    before = store.stat("ab/ab1")
    seen = operations(store.client)
    assert store.mark_committed("ab/ab1") is True
    assert seen == ["PutObjectTagging"]
    assert store.stat("ab/ab1") == before and store.is_committed("ab/ab1")
