"""Peak memory and throughput of ``BlobStore.put`` for a large generated stream (SPEC §6, C13).

Usage::

    python bench/bench_blob_memory.py --size-mib 512 --backend localdisk
    python bench/bench_blob_memory.py --size-mib 512 --backend s3

The input is a generator that yields one pre-made block of random bytes
``size-mib`` times, so the stream is never materialised. Memory is the growth
of this process's resident set: the kernel's peak (``VmHWM`` in
``/proc/self/status``) is reset through ``/proc/self/clear_refs`` just before
the measured call (proc(5)), and the result is ``VmHWM`` after minus ``VmRSS``
before. Where that reset is unavailable, ``ru_maxrss`` of getrusage(2) is used,
which can only under-report growth when an earlier peak was higher.

For ``s3`` the moto server runs in a separate process on 127.0.0.1 (it keeps
every object in its own memory), so only the client side is measured.

For ``localdisk`` the script also measures the floor the specification compares
against: SHA-256 plus a plain write of the same stream to a file with the same
durability (``fsync``), and ``put`` with SHA-256 computed on the way, as the
application does. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docbinder.ports.blobs import BlobStore

MiB = 1 << 20


# -- memory -------------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0); whether it worked."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def _maxrss_kib() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage // 1024 if sys.platform == "darwin" else usage


def measure(action: Callable[[], Any]) -> dict[str, Any]:
    """Run ``action``; return its result, wall time (s) and peak RSS growth (MiB)."""
    gc.collect()
    rss_before = _status_kib("VmRSS")
    exact = rss_before is not None and _reset_peak()
    maxrss_before = _maxrss_kib()
    started = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - started
    if exact:
        assert rss_before is not None
        peak = _status_kib("VmHWM") or 0
        growth_kib = peak - rss_before
        method = "VmHWM after clear_refs minus VmRSS before"
    else:
        growth_kib = _maxrss_kib() - maxrss_before
        method = "ru_maxrss difference (lower bound)"
    return {
        "result": result,
        "seconds": elapsed,
        "peak_rss_growth_mib": round(growth_kib / 1024, 2),
        "memory_method": method,
    }


# -- input ----------------------------------------------------------------------------


def stream(size_mib: int, block: bytes, digest: Any = None) -> Iterator[bytes]:
    """Yield ``block`` ``size_mib`` times (updating ``digest`` if given); nothing is kept."""
    for _ in range(size_mib):
        if digest is not None:
            digest.update(block)
        yield block


def _throughput(size_mib: int, seconds: float) -> float:
    return round(size_mib / seconds, 1) if seconds > 0 else float("inf")


# -- backends -------------------------------------------------------------------------


def bench_put(store: BlobStore, size_mib: int, block: bytes) -> dict[str, Any]:
    store.put("warmup/blob", [block[:1024]])  # imports and pools exist before measuring
    store.delete("warmup/blob")
    put = measure(lambda: store.put("bench/blob", stream(size_mib, block)))
    assert put["result"] == size_mib * MiB, put["result"]
    assert store.stat("bench/blob").size == size_mib * MiB

    def read_back() -> int:
        total = 0
        for chunk in store.open("bench/blob", MiB):
            total += len(chunk)
        return total

    read = measure(read_back)
    assert read["result"] == size_mib * MiB
    store.delete("bench/blob")
    return {
        "put_seconds": round(put["seconds"], 3),
        "put_mib_per_s": _throughput(size_mib, put["seconds"]),
        "put_peak_rss_growth_mib": put["peak_rss_growth_mib"],
        "open_seconds": round(read["seconds"], 3),
        "open_mib_per_s": _throughput(size_mib, read["seconds"]),
        "open_peak_rss_growth_mib": read["peak_rss_growth_mib"],
        "memory_method": put["memory_method"],
    }


def bench_localdisk(size_mib: int, block: bytes, directory: str | None) -> dict[str, Any]:
    from docbinder.adapters.localdisk import LocalDiskBlobStore

    with tempfile.TemporaryDirectory(prefix="docbinder-bench-", dir=directory) as tmp:
        store = LocalDiskBlobStore(Path(tmp) / "blobs")
        figures = bench_put(store, size_mib, block)

        def hashed_put() -> str:
            digest = hashlib.sha256()
            store.put("bench/hashed", stream(size_mib, block, digest))
            return digest.hexdigest()

        def floor() -> str:
            digest = hashlib.sha256()
            target = Path(tmp) / "floor.bin"
            with open(target, "wb") as out:
                for chunk in stream(size_mib, block, digest):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            return digest.hexdigest()

        floor_run = measure(floor)
        hashed = measure(hashed_put)
        assert hashed["result"] == floor_run["result"]
        figures.update(
            {
                "root": store.url,
                "floor_hash_copy_mib_per_s": _throughput(size_mib, floor_run["seconds"]),
                "put_with_sha256_mib_per_s": _throughput(size_mib, hashed["seconds"]),
                "put_with_sha256_vs_floor": round(floor_run["seconds"] / hashed["seconds"], 3),
                "put_with_sha256_peak_rss_growth_mib": hashed["peak_rss_growth_mib"],
            }
        )
    return figures


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"moto server did not listen on 127.0.0.1:{port} within {timeout} s")


def bench_s3(
    size_mib: int, block: bytes, chunksize_mib: int | None, concurrency: int | None
) -> dict[str, Any]:
    import boto3
    from botocore.config import Config

    from docbinder.adapters.s3 import S3BlobStore
    from docbinder.adapters.s3.blobs import DEFAULT_MAX_CONCURRENCY, DEFAULT_MULTIPART_CHUNKSIZE

    chunksize = chunksize_mib * MiB if chunksize_mib else DEFAULT_MULTIPART_CHUNKSIZE
    concurrency = concurrency or DEFAULT_MAX_CONCURRENCY

    port = _free_port()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, 30)
        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard"}),
        )
        client.create_bucket(Bucket="docbinder-bench")
        store = S3BlobStore(
            "docbinder-bench",
            "bench",
            endpoint_url=endpoint,
            client=client,
            multipart_chunksize=chunksize,
            multipart_threshold=chunksize,
            max_concurrency=concurrency,
        )
        figures = bench_put(store, size_mib, block)
        figures.update(
            {
                "endpoint": endpoint,
                "multipart_chunksize_mib": chunksize / MiB,
                "max_concurrency": concurrency,
                "note": "moto server in a separate process; client-side memory only",
            }
        )
        return figures
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size-mib", type=int, default=512, help="stream size in MiB")
    parser.add_argument("--backend", choices=["localdisk", "s3"], default="localdisk")
    parser.add_argument(
        "--dir", default=None, help="parent of the local-disk store (default: temp)"
    )
    parser.add_argument(
        "--chunksize-mib", type=int, default=None, help="S3 part size in MiB (store default)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="S3 parts in flight (store default)"
    )
    args = parser.parse_args(argv)
    if args.size_mib < 1:
        parser.error("--size-mib must be at least 1")
    block = os.urandom(MiB)
    if args.backend == "localdisk":
        figures = bench_localdisk(args.size_mib, block, args.dir)
    else:
        figures = bench_s3(args.size_mib, block, args.chunksize_mib, args.concurrency)
    report = {
        "benchmark": "blob put peak memory and throughput",
        "backend": args.backend,
        "size_mib": args.size_mib,
        "input": "generator yielding one 1 MiB block repeatedly (never materialised)",
        "python": platform.python_version(),
        "platform": platform.platform(),
        **figures,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
