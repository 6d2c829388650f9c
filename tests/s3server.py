"""pytest fixtures for S3 tests: a moto server over real HTTP on 127.0.0.1 (SPEC C13).

``s3_endpoint`` (session) starts ``moto.server.ThreadedMotoServer`` on a free
loopback port and yields its URL; ``s3_env`` (per test) sets dummy credentials
and the region through ``monkeypatch``, so nothing leaks outside S3 tests and no
real account can be reached; ``s3_bucket`` creates a fresh bucket per test and
empties and removes it afterwards; ``s3_client`` is a boto3 client for the
server. When the server cannot start, the tests are skipped locally and fail
with ``CI=true`` (see :func:`tests.conftest.backend_unavailable`).

Register with ``pytest_plugins = ["tests.s3server"]`` in ``tests/conftest.py``.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import backend_unavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

S3_REGION = "us-east-1"

DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": S3_REGION,
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/docbinder-tests/credentials",
    "AWS_CONFIG_FILE": "/nonexistent/docbinder-tests/config",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
"""Environment for S3 tests: dummy credentials, no profile files, no metadata service."""

UNSET_ENV = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 10.0) -> bool:
    """Whether 127.0.0.1:``port`` accepts connections within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def apply_dummy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set :data:`DUMMY_ENV` and remove :data:`UNSET_ENV` through ``monkeypatch``."""
    for name, value in DUMMY_ENV.items():
        monkeypatch.setenv(name, value)
    for name in UNSET_ENV:
        monkeypatch.delenv(name, raising=False)


def make_client(endpoint: str, **config: Any) -> S3Client:
    """A boto3 S3 client for ``endpoint`` with dummy credentials and path-style addressing.

    ``config`` adds ``botocore.config.Config`` options (e.g. ``retries``).
    """
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=S3_REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(s3={"addressing_style": "path"}, **config),
    )


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server on 127.0.0.1 for the whole session."""
    try:
        import boto3  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        backend_unavailable("s3", f"moto[server] or boto3 is not installed ({exc})")
        raise AssertionError("unreachable") from exc
    port = free_port()
    quiet = logging.getLogger("werkzeug")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    try:
        server.start()
    except Exception as exc:
        backend_unavailable("s3", f"moto server did not start on 127.0.0.1:{port} ({exc})")
    try:
        if not wait_for_port(port):
            backend_unavailable("s3", f"moto server on 127.0.0.1:{port} accepts no connections")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        quiet.setLevel(level)


@pytest.fixture
def s3_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy AWS credentials and region for this test only."""
    apply_dummy_env(monkeypatch)


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> S3Client:
    """A boto3 client for the moto server (explicit dummy credentials; thread-safe, shared)."""
    return make_client(s3_endpoint)


@pytest.fixture
def s3_bucket(s3_client: S3Client, s3_env: None) -> Iterator[str]:
    """A new, empty bucket for this test, with :func:`s3_env` applied; removed afterwards."""
    name = f"docbinder-test-{uuid.uuid4().hex[:16]}"
    s3_client.create_bucket(Bucket=name)
    yield name
    for uploads in s3_client.get_paginator("list_multipart_uploads").paginate(Bucket=name):
        for upload in uploads.get("Uploads", []):
            s3_client.abort_multipart_upload(
                Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"]
            )
    for listing in s3_client.get_paginator("list_objects_v2").paginate(Bucket=name):
        for item in listing.get("Contents", []):
            s3_client.delete_object(Bucket=name, Key=item["Key"])
    s3_client.delete_bucket(Bucket=name)
