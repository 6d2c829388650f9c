"""S3-compatible endpoints that demand Content-MD5 (issue 31, kind 6; CERT-Polska/karton #269).

botocore 1.36 on sends a CRC32 on operations that require a checksum; an endpoint that
still wants ``Content-MD5`` refuses ``PutObjectTagging``, so no committed-blob record was
written (one warning per file) and ``doctor`` said all was well because its probe never
tags. Here the moto server on 127.0.0.1 stands behind such an endpoint: a botocore
``before-send`` hook answers ``PutObjectTagging`` without ``Content-MD5`` the way those
servers do (400 ``InvalidRequest``). With ``s3_content_md5`` the header is sent and the
records are kept; without it the store warns once and ``doctor`` names the refusal.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from docbinder.adapters.memory import MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.adapters.s3 import blobs as s3_blobs
from docbinder.domain.model import Principal
from tests.reliability.harness import invoke_cli
from tests.wiring import wire_binder

ALICE = Principal("alice", "m1", roles=("member",))

MD5_REFUSAL = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidRequest</Code>'
    b"<Message>Missing required header for this request: Content-MD5</Message></Error>"
)
DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied</Message></Error>"
)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_kwargs: Any) -> Iterator[bytes]:
        yield self._body


class Endpoint:
    """What the S3-compatible endpoint answers to PutObjectTagging; counts what it saw."""

    def __init__(self, refusal: bytes = MD5_REFUSAL, status: int = 400) -> None:
        self.refusal, self.status = refusal, status
        self.tagging_requests = 0
        self.md5_ok = 0

    def before_send(self, request: Any, **_kwargs: Any) -> AWSResponse | None:
        if "tagging" not in request.url or request.method != "PUT":
            return None
        self.tagging_requests += 1
        sent = request.headers.get("Content-MD5")
        body = request.body if isinstance(request.body, bytes) else (request.body or b"")
        if isinstance(body, str):
            body = body.encode()
        wanted = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
        if self.status == 400 and sent is not None:
            sent = sent.decode() if isinstance(sent, bytes) else sent
            assert sent == wanted  # the header is the body's MD5, as RFC 1864 says
            self.md5_ok += 1
            return None  # the real server (moto) answers
        headers = {"Content-Type": "application/xml"}
        return AWSResponse(request.url, self.status, headers, _Raw(self.refusal))


def _store(endpoint_url: str, bucket: str, endpoint: Endpoint, **options: Any) -> S3BlobStore:
    store = S3BlobStore(bucket, "blobs", endpoint_url=endpoint_url, **options)
    store.client.meta.events.register_first("before-send.s3.PutObjectTagging", endpoint.before_send)
    return store


@pytest.mark.parametrize("content_md5", [False, True], ids=["without", "with s3_content_md5"])
def test_committed_records_on_an_endpoint_that_wants_content_md5(
    s3_endpoint: str, s3_bucket: str, content_md5: bool, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = Endpoint()
    blobs = _store(s3_endpoint, s3_bucket, endpoint, content_md5=content_md5)
    metadata = MemoryMetadataStore()
    binder = wire_binder(metadata.unit_of_work, blobs, metadata.unit_of_work)
    run = binder.start_new_run(ALICE)
    with caplog.at_level(logging.WARNING):
        items = [run.store_file(f"f{n}.txt", f"file {n}".encode()).item for n in range(4)]
    assert endpoint.tagging_requests == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    committed = [blobs.is_committed(item.blob_key) for item in items]
    if content_md5:
        assert committed == [True] * 4 and endpoint.md5_ok == 4
        assert warnings == []
        assert blobs.check_commit_records() is None
    else:
        assert committed == [False] * 4
        # One warning for the store, not one per file, naming the code and the setting.
        [warning] = warnings
        assert "InvalidRequest" in warning and "s3_content_md5" in warning, warning
        reason = blobs.check_commit_records()
        assert reason is not None and "InvalidRequest" in reason and "Content-MD5" in reason


def _doctor(s3_endpoint: str, bucket: str, home: Path, **env: str) -> dict[str, Any]:
    result = invoke_cli(
        ["--home", str(home), "--json", "doctor"],
        {
            "DOCBINDER_BLOB_URL": f"s3://{bucket}/blobs",
            "DOCBINDER_S3_ENDPOINT_URL": s3_endpoint,
            **env,
        },
    )
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    return checks["committed-blob records"]


@pytest.mark.parametrize(
    ("endpoint", "env", "status", "words"),
    [
        (Endpoint(), {}, "warn", ["InvalidRequest", "Content-MD5", "s3_content_md5 = true"]),
        (Endpoint(), {"DOCBINDER_S3_CONTENT_MD5": "true"}, "ok", ["PutObjectTagging"]),
        (Endpoint(DENIED, 403), {}, "warn", ["AccessDenied", "s3:PutObjectTagging"]),
    ],
    ids=["md5 wanted", "md5 sent", "permission missing"],
)
def test_doctor_probes_tagging_and_names_a_refusal(
    s3_endpoint: str,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    endpoint: Endpoint,
    env: dict[str, str],
    status: str,
    words: list[str],
) -> None:
    built = s3_blobs.S3BlobStore.__init__

    def behind_the_endpoint(self: S3BlobStore, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        self.client.meta.events.register_first(
            "before-send.s3.PutObjectTagging", endpoint.before_send
        )

    monkeypatch.setattr(s3_blobs.S3BlobStore, "__init__", behind_the_endpoint)
    check = _doctor(s3_endpoint, s3_bucket, tmp_path / "home", **env)
    assert check["status"] == status, check
    assert all(word in check["detail"] for word in words), check
    assert endpoint.tagging_requests >= 1
