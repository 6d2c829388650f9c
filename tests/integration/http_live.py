"""``docbinder serve``'s app under a real uvicorn on a free loopback port, for the HTTP tests.

:func:`live_app` serves :func:`docbinder.integrations.http.build_app` with the
uvicorn configuration ``docbinder serve`` uses
(:func:`docbinder.integrations.httpguard.server_config`) from a thread of the test
process; clients are ``httpx`` over real TCP.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.memory.links import MemoryLinkLedger, MemoryResolutionLog
from docbinder.domain.links import LinkKeys
from docbinder.domain.model import Principal
from docbinder.integrations.http import TokenIdentity, build_app
from docbinder.integrations.httpguard import HttpLimits, server_config
from docbinder.integrations.mcp import BearerTokens, token_hash
from tests.integration.mcp_http import free_port
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme", roles=("member",))
BOB = Principal("bob", "acme", roles=("member",))
MALLORY = Principal("mallory", "evilcorp", roles=("member",))
ADMIN = Principal("root", "acme", roles=("admin",))
TOKENS = {"alice": "t-alice-secret", "bob": "t-bob-secret", "mallory": "t-mallory-secret"}
TOKENS["root"] = "t-root-secret"
PRINCIPALS = {"alice": ALICE, "bob": BOB, "mallory": MALLORY, "root": ADMIN}


def fixed_keys(*kids: str) -> LinkKeys:
    """Link keys with fixed secrets derived from the key ids (tests only)."""
    text = ",".join(
        f"{kid}:{base64.b64encode(hashlib.sha256(kid.encode()).digest()).decode()}"
        for kid in kids or ("k1",)
    )
    return LinkKeys.parse(text)


def bearer_tokens() -> BearerTokens:
    return BearerTokens({token_hash(TOKENS[name]): p for name, p in PRINCIPALS.items()})


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def memory_binder(**options: Any) -> Any:
    """A binder over memory adapters with link keys ``k1`` and a resolution log."""
    options.setdefault("link_keys", fixed_keys())
    options.setdefault("link_ledger", MemoryLinkLedger())
    options.setdefault("resolution_log", MemoryResolutionLog())
    store = options.pop("store", None) or MemoryMetadataStore()
    blobs = options.pop("blobs", None) or MemoryBlobStore()
    return wire_binder(store.unit_of_work, blobs, **options)


class Live:
    """A running app: ``url`` (no trailing slash), ``client`` (httpx), ``stop()``."""

    def __init__(self, app: Any, host: str, port: int, limits: HttpLimits) -> None:
        self.url = f"http://{host}:{port}"
        self.port = port
        self.server = uvicorn.Server(server_config(app, host=host, port=port, limits=limits))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP app did not start")
            time.sleep(0.02)
        self.client = httpx.Client(base_url=self.url, timeout=30, trust_env=False)

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def live_app(
    binder: Any,
    identity: Any = None,
    *,
    host: str = "127.0.0.1",
    limits: HttpLimits | None = None,
    **options: Any,
) -> Iterator[Live]:
    """``build_app(binder, identity)`` served on a free port of ``host`` until the block ends."""
    port = free_port(host)
    limits = limits or HttpLimits()
    identity = identity if identity is not None else TokenIdentity(bearer_tokens())
    app = build_app(binder, identity, host=host, port=port, limits=limits, **options)
    live = Live(app, host, port, limits)
    try:
        yield live
    finally:
        live.stop()
