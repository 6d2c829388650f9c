"""``Range`` answers of ``docbinder serve`` read only the range from the blob store.

A large file is stored on local disk and in S3 (a moto server); the test counts the
bytes the store reads from its backend (``os.read`` on the blob file, the
``ContentLength`` of S3's ``GetObject`` answers) while a client asks for one range,
several ranges and a range through a signed link, and checks that the count is the
range's size, not the bytes before it.
"""

from __future__ import annotations

import hashlib
import os
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.s3 import S3BlobStore
from tests.integration.http_live import auth, live_app, memory_binder

MiB = 1 << 20
SIZE = 12 * MiB
DATA = random.Random(32).randbytes(SIZE)


def _disk_counter(root: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
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


@pytest.fixture(params=["localdisk", pytest.param("s3", marks=pytest.mark.s3)])
def counted_store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, Callable[[], int]]]:
    if request.param == "localdisk":
        if not os.path.isdir("/proc/self/fd"):
            pytest.skip("counts reads through /proc/self/fd")
        root = (tmp_path / "blobs").resolve()
        yield LocalDiskBlobStore(root), _disk_counter(root, monkeypatch)
        return
    endpoint = request.getfixturevalue("s3_endpoint")
    client = request.getfixturevalue("s3_client")
    bucket = request.getfixturevalue("s3_bucket")
    counted = [0]

    def add(parsed: dict[str, Any], **_: Any) -> None:
        counted[0] += int(parsed.get("ContentLength") or 0)

    hook = f"range-test-{uuid.uuid4().hex}"
    client.meta.events.register("after-call.s3.GetObject", add, unique_id=hook)
    try:
        yield (
            S3BlobStore(bucket, "ranges", endpoint_url=endpoint, client=client),
            lambda: counted[0],
        )
    finally:
        client.meta.events.unregister("after-call.s3.GetObject", unique_id=hook)


def test_a_range_of_a_large_file_reads_only_that_range(
    counted_store: tuple[Any, Callable[[], int]],
) -> None:
    blobs, bytes_read = counted_store
    binder = memory_binder(blobs=blobs)
    with live_app(binder) as live:
        client = live.client
        workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
        stored = client.post(
            f"/v1/workflows/{workflow}/files",
            params={"name": "big.bin"},
            content=DATA,
            headers=auth("alice"),
        ).json()
        assert stored["size"] == SIZE
        url = f"/v1/files/{stored['fileId']}/content"

        before = bytes_read()
        one = client.get(url, headers={**auth("alice"), "Range": "bytes=10000000-10000999"})
        assert one.status_code == 206
        assert one.content == DATA[10_000_000:10_001_000]
        assert one.headers["content-range"] == f"bytes 10000000-10000999/{SIZE}"
        assert bytes_read() - before == 1000

        before = bytes_read()
        suffix = client.get(url, headers={**auth("alice"), "Range": "bytes=-500"})
        assert suffix.status_code == 206 and suffix.content == DATA[-500:]
        assert bytes_read() - before == 500

        before = bytes_read()
        several = client.get(
            url, headers={**auth("alice"), "Range": "bytes=11000000-11000009,11500000-11500009"}
        )
        assert several.status_code == 206
        assert DATA[11_000_000:11_000_010] in several.content
        assert DATA[11_500_000:11_500_010] in several.content
        assert bytes_read() - before == 500_010  # from the first range's start to the last's end

        before = bytes_read()
        unchanged = client.get(
            url, headers={**auth("alice"), "If-None-Match": f'"{stored["sha256"]}"'}
        )
        assert unchanged.status_code == 304
        assert bytes_read() - before == 0

        before = bytes_read()
        whole = client.get(url, headers=auth("alice"))
        assert hashlib.sha256(whole.content).hexdigest() == stored["sha256"]
        assert bytes_read() - before == SIZE


def test_a_range_through_a_signed_link_reads_only_that_range(tmp_path: Path) -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("counts reads through /proc/self/fd")
    root = (tmp_path / "blobs").resolve()
    monkeypatch = pytest.MonkeyPatch()
    try:
        bytes_read = _disk_counter(root, monkeypatch)
        binder = memory_binder(blobs=LocalDiskBlobStore(root))
        with live_app(binder) as live:
            client = live.client
            workflow = client.post("/v1/workflows", headers=auth("alice")).json()["id"]
            stored = client.post(
                f"/v1/workflows/{workflow}/files",
                params={"name": "big.bin"},
                content=DATA,
                headers=auth("alice"),
            ).json()
            link = client.post(
                f"/v1/files/{stored['fileId']}/links",
                json={"expiresIn": "10m"},
                headers=auth("alice"),
            ).json()["url"]
            before = bytes_read()
            ranged = client.get(link, headers={"Range": "bytes=9000000-9000099"})
            assert ranged.status_code == 206
            assert ranged.content == DATA[9_000_000:9_000_100]
            assert bytes_read() - before == 100
    finally:
        monkeypatch.undo()
