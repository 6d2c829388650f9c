"""S3-compatible endpoints that refuse boto3's default checksums (issue 17 kind 5).

A small forwarding endpoint on 127.0.0.1 stands in front of the moto server and
behaves like the services that reject checksum headers: any request carrying
``x-amz-checksum-*``, ``x-amz-sdk-checksum-algorithm`` or ``aws-chunked`` gets an S3
``InvalidArgument`` error; everything else is forwarded to moto unchanged.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from docbinder.adapters.s3 import S3BlobStore, S3StorageError
from docbinder.adapters.s3.blobs import resolve_checksums
from docbinder.domain.errors import InvalidInput
from tests.reliability.harness import invoke_cli

REJECTION = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code>'
    b"<Message>x-amz-checksum-crc32 is not supported</Message></Error>"
)


def _rejects(headers: dict[str, str]) -> bool:
    lowered = {k.lower(): v.lower() for k, v in headers.items()}
    return (
        any(k.startswith("x-amz-checksum-") for k in lowered)
        or "x-amz-sdk-checksum-algorithm" in lowered
        or "aws-chunked" in lowered.get("content-encoding", "")
    )


@pytest.fixture
def strict_endpoint(s3_endpoint: str) -> Iterator[tuple[str, list[str]]]:
    """``(url, log)``: the checksum-refusing endpoint; ``log`` lists what it refused."""
    target = urlsplit(s3_endpoint)
    refused: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else b""
            if _rejects(dict(self.headers.items())):
                refused.append(f"{self.command} {self.path}")
                self.send_response(400)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(REJECTION)))
                self.end_headers()
                self.wfile.write(REJECTION)
                return
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            try:
                upstream.request(self.command, self.path, body, dict(self.headers.items()))
                answer = upstream.getresponse()
                data = answer.read()
            finally:
                upstream.close()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", refused
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_custom_endpoints_default_to_checksums_only_when_required() -> None:
    assert resolve_checksums(None, "http://minio:9000") == "when_required"
    assert resolve_checksums("auto", None) == "when_supported"
    assert resolve_checksums("when_supported", "http://minio:9000") == "when_supported"
    with pytest.raises(InvalidInput, match="when_required"):
        resolve_checksums("sometimes", None)


def test_the_default_works_against_an_endpoint_that_refuses_checksums(
    s3_bucket: str, strict_endpoint: tuple[str, list[str]]
) -> None:
    url, refused = strict_endpoint
    store = S3BlobStore(s3_bucket, "blobs", endpoint_url=url, region_name="us-east-1")
    assert store.checksums == "when_required"
    store.put("k1", [b"hello ", b"world"])
    assert b"".join(store.open("k1")) == b"hello world"
    store.delete("k1")
    assert refused == []


def test_checksums_when_supported_are_refused_and_doctor_explains_it(
    s3_bucket: str, strict_endpoint: tuple[str, list[str]], tmp_path: object
) -> None:
    url, refused = strict_endpoint
    store = S3BlobStore(
        s3_bucket, "blobs", endpoint_url=url, region_name="us-east-1", checksums="when_supported"
    )
    with pytest.raises(S3StorageError, match="InvalidArgument"):
        store.put("k1", [b"hello"])
    assert refused
    env = {"DOCBINDER_S3_ENDPOINT_URL": url, "DOCBINDER_S3_CHECKSUMS": "when_supported"}
    args = ["--home", str(tmp_path), "--blob-url", f"s3://{s3_bucket}/blobs", "--json", "doctor"]
    result = invoke_cli(args, env=env)
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    probe = checks["blob store writable"]
    assert probe["status"] == "fail"
    assert 'set s3_checksums = "when_required"' in probe["detail"]
    assert "DOCBINDER_S3_CHECKSUMS=when_required" in probe["detail"]
    fixed = invoke_cli(args, env={"DOCBINDER_S3_ENDPOINT_URL": url})
    fixed_checks = {c["name"]: c for c in json.loads(fixed.stdout)["checks"]}
    assert fixed_checks["blob store writable"]["status"] == "ok"
    assert "checksums when_required" in fixed_checks["blob store writable"]["detail"]


def test_a_bad_checksum_setting_is_a_configuration_error(tmp_path: object) -> None:
    result = invoke_cli(["--home", str(tmp_path), "doctor"], env={"DOCBINDER_S3_CHECKSUMS": "x"})
    assert result.exit_code == 1
    assert "s3_checksums must be auto, when_required or when_supported" in result.stdout
