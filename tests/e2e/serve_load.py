"""A bounded, mixed load on several ``docbinder serve`` processes, and the check that nothing was lost.

:func:`run_load` sends ``requests`` requests from ``clients`` concurrent clients, each
request to one of ``urls`` in turn: uploads (random bytes, 1 to 64 KiB), downloads
(checked against the SHA-256 of what was uploaded), resolves (sloppy documentLists of
known references plus an unknown one) and links (minted on one process, redeemed on
another; with S3 blobs the redemption follows the redirect to the presigned GET, so
``link_redeem`` times both hops). Afterwards every workflow is read back from another process and every
upload is downloaded again: a document missing from its workflow or bytes that differ
count as lost. A GET whose kept-alive connection closes under it is sent again once, as
RFC 9112 section 9.3.1 allows for idempotent requests, and counted in ``retried``; any
other failure is an error. Only loopback URLs are accepted; the run is bounded by its
request count and ``deadline`` seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

OPERATIONS = (("upload", 0.25), ("download", 0.35), ("resolve", 0.25), ("link", 0.15))


@dataclass
class Uploaded:
    workflow: str
    file_id: str
    reference: str
    sha256: str


@dataclass
class LoadReport:
    """Latencies (seconds) per kind of request, errors, and what the check found lost."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    """GET requests sent again once after their connection closed under them (not errors)."""
    lost: list[str] = field(default_factory=list)
    uploads: list[Uploaded] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    loop_lag: float = 0.0
    """Longest delay (seconds) of the client's event loop waking up during the load."""

    def add(self, kind: str, seconds: float) -> None:
        self.latencies.setdefault(kind, []).append(seconds)
        self.requests += 1

    def percentiles(self) -> dict[str, dict[str, float]]:
        """p50 and p99 (milliseconds) and the count per kind, and for all requests."""
        out: dict[str, dict[str, float]] = {}
        every = [s for values in self.latencies.values() for s in values]
        for kind, values in [*sorted(self.latencies.items()), ("all", every)]:
            ordered = sorted(values)
            if not ordered:
                continue
            out[kind] = {
                "count": len(ordered),
                "p50_ms": round(1000 * ordered[len(ordered) // 2], 2),
                "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
            }
        return out


def describe(steps: list[str]) -> str:
    """Where a failed request was, from httpcore's trace events: which connection, how far."""
    reused = not any(step.startswith("connection.connect_tcp") for step in steps)
    done = [s.removeprefix("http11.") for s in steps if s.endswith(".complete")]
    return f"{'kept-alive' if reused else 'new'} connection, done: {', '.join(done) or 'nothing'}"


def _check_loopback(urls: list[str]) -> None:
    for url in urls:
        host = urlsplit(url).hostname or ""
        if not (host == "localhost" or host.startswith("127.") or host == "::1"):
            raise ValueError(f"the load test only targets loopback addresses, got {url}")


async def run_load(
    urls: list[str],
    *,
    clients: int = 64,
    requests: int = 2000,
    workflows: int = 16,
    seed: int = 7,
    deadline: float = 600.0,
) -> LoadReport:
    """Run the mixed load (see the module) and the lost-nothing check; return the report."""
    _check_loopback(urls)
    rng = random.Random(seed)
    report = LoadReport()
    # The client's pool never closes a connection on its own: httpcore 1.0.9 can close one
    # it has just given to a waiting request (its idle expiry ran out, or the pool was full
    # and it made room; encode/httpcore issue 1110), and that request then fails with a
    # ReadError while the server, reset, loses it (ADR 0083). So no idle expiry and room for
    # every origin (each server, and S3 behind the link redirects): a connection the server
    # closed is seen readable and dropped before reuse, and a GET that still meets a close
    # is sent again once (above).
    room = (len(urls) + 1) * (clients + 8)
    limits = httpx.Limits(
        max_connections=room, max_keepalive_connections=room, keepalive_expiry=None
    )
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as http:
        turn = 0

        def server() -> str:
            nonlocal turn
            turn += 1
            return urls[turn % len(urls)]

        async def timed(kind: str, method: str, url: str, **options: Any) -> httpx.Response:
            began = time.perf_counter()
            steps: list[str] = []

            async def trace(event: str, info: dict[str, Any]) -> None:
                steps.append(event)  # httpcore's steps: connect_tcp, send_request_headers, ...

            try:
                response = await http.request(method, url, extensions={"trace": trace}, **options)
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                # A kept-alive connection can close as a request goes out on it (the
                # server's idle timer ran at that moment); a client retries an idempotent
                # request once on a new connection (RFC 9112 section 9.3.1). Counted.
                how = describe(steps)
                if method != "GET":
                    raise httpx.ReadError(f"{type(exc).__name__} {exc} ({how})") from exc
                report.retried.append(f"{kind}: {type(exc).__name__}: {exc} ({how})")
                response = await http.request(method, url, **options)
            report.add(kind, time.perf_counter() - began)
            return response

        ids = []
        for _ in range(workflows):
            created = await timed("create", "POST", f"{server()}/v1/workflows")
            ids.append(created.json()["id"])
        by_workflow: dict[str, list[Uploaded]] = {w: [] for w in ids}

        async def upload(workflow: str) -> None:
            data = os.urandom(rng.randint(1024, 64 * 1024))
            response = await timed(
                "upload",
                "POST",
                f"{server()}/v1/workflows/{workflow}/files",
                params={"name": f"part-{rng.randint(0, 10**9)}.bin"},
                content=data,
            )
            if response.status_code != 201:
                report.errors.append(f"upload {response.status_code}: {response.text[:200]}")
                return
            body = response.json()
            sha = hashlib.sha256(data).hexdigest()
            if body["sha256"] != sha or body["size"] != len(data):
                report.errors.append(f"upload answered {body['sha256']} for {sha}")
            done = Uploaded(workflow, body["fileId"], body["documentRef"], sha)
            report.uploads.append(done)
            by_workflow[workflow].append(done)

        for workflow in ids:
            await upload(workflow)

        remaining = requests

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0 and time.monotonic() - started < deadline:
                remaining -= 1
                kind = rng.choices([k for k, _ in OPERATIONS], [w for _, w in OPERATIONS])[0]
                try:
                    await one(kind)
                except httpx.HTTPError as exc:
                    report.errors.append(f"{kind}: {type(exc).__name__}: {exc}")

        async def one(kind: str) -> None:
            if kind == "upload":
                await upload(rng.choice(ids))
                return
            if kind == "resolve":
                workflow = rng.choice(ids)
                known = rng.sample(by_workflow[workflow], min(3, len(by_workflow[workflow])))
                text = ", ".join(f"`{u.reference.upper()}`" for u in known) + ", docItem:nope"
                response = await timed(
                    "resolve",
                    "POST",
                    f"{server()}/v1/workflows/{workflow}/resolve",
                    json={"documentList": text},
                )
                body = response.json() if response.status_code == 200 else {}
                got = [d["documentRef"] for d in body.get("documents", [])]
                if got != [u.reference for u in known] or len(body.get("unresolved", [])) != 1:
                    report.errors.append(f"resolve {response.status_code}: {got}")
                return
            target = rng.choice(report.uploads)
            if kind == "download":
                response = await timed(
                    "download", "GET", f"{server()}/v1/files/{target.file_id}/content"
                )
                if (
                    response.status_code != 200
                    or hashlib.sha256(response.content).hexdigest() != target.sha256
                ):
                    report.errors.append(f"download {response.status_code} of {target.file_id}")
                return
            minted = await timed(
                "link_mint",
                "POST",
                f"{server()}/v1/files/{target.file_id}/links",
                json={"expiresIn": 300},
            )
            if minted.status_code != 201:
                report.errors.append(f"link mint {minted.status_code}: {minted.text[:200]}")
                return
            token = minted.json()["url"].rpartition("/v1/links/")[2]
            redeemed = await timed(
                "link_redeem", "GET", f"{server()}/v1/links/{token}", follow_redirects=True
            )
            if (
                redeemed.status_code != 200
                or hashlib.sha256(redeemed.content).hexdigest() != target.sha256
            ):
                report.errors.append(f"link redeem {redeemed.status_code} of {target.file_id}")

        async def watch_lag() -> None:
            # How late this process's event loop wakes from a 0.1 s sleep: a client whose loop
            # is that late reads answers that long after they came, while the server's idle
            # timers run on its own clock.
            while not done.is_set():
                began = time.monotonic()
                await asyncio.sleep(0.1)
                report.loop_lag = max(report.loop_lag, time.monotonic() - began - 0.1)

        done = asyncio.Event()
        watcher = asyncio.create_task(watch_lag())
        await asyncio.gather(*(worker() for _ in range(clients)))
        done.set()
        await watcher
        report.seconds = time.monotonic() - started

        # Nothing lost: every workflow lists its uploads, every upload reads back the same.
        for workflow, uploads in by_workflow.items():
            view = (await http.get(f"{server()}/v1/workflows/{workflow}")).json()
            listed = {d["documentRef"] for d in view["documents"]}
            report.lost += [
                f"{u.reference} missing from {workflow}"
                for u in uploads
                if u.reference not in listed
            ]
        for done in report.uploads:
            response = await http.get(f"{server()}/v1/files/{done.file_id}/content")
            if hashlib.sha256(response.content).hexdigest() != done.sha256:
                report.lost.append(f"file {done.file_id} reads back different bytes")
    return report
