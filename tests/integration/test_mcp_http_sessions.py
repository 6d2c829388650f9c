"""Legacy MCP sessions are counted per principal: one principal cannot lock the others out.

Before, the SDK's one session table (10,000 sessions for everybody) filled up with
one tenant's sessions and every other tenant's ``initialize`` got 503. Here the
limit (``http_sessions_per_principal``) is scaled down to a few sessions.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from docbinder.domain.model import Principal
from docbinder.integrations.httpguard import HttpLimits
from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer, token_hash
from tests.integration.mcp_http import (
    ACCEPT,
    INITIALIZE,
    LEGACY_VERSION,
    live,
    mcp_client,
)
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE

EVE = Principal("eve", "m2", None, roles=("member",))
TOKENS = BearerTokens({token_hash("alice-token"): ALICE, token_hash("eve-token"): EVE})


def _initialize(client: httpx.Client, url: str, token: str | None = None) -> httpx.Response:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    return client.post(url, json=INITIALIZE, headers=headers)


def _in_session(
    client: httpx.Client, url: str, session: str, token: str | None = None, method: str = "POST"
) -> httpx.Response:
    headers = {
        **ACCEPT,
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": LEGACY_VERSION,
        **({"Authorization": f"Bearer {token}"} if token else {}),
    }
    if method == "DELETE":
        return client.delete(url, headers=headers)
    return client.post(
        url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
    )


def _session_id(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    session = response.headers.get("mcp-session-id")
    assert session
    return str(session)


def test_a_principal_at_its_session_limit_leaves_the_others_alone() -> None:
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    with (
        live(server, tokens=TOKENS, limits=HttpLimits(sessions_per_principal=3)) as running,
        httpx.Client(trust_env=False, timeout=10) as raw,
    ):
        url = running.url
        alice = [_session_id(_initialize(raw, url, "alice-token")) for _ in range(3)]
        refused = _initialize(raw, url, "alice-token")
        assert refused.status_code == 503
        assert "mcp-session-id" not in refused.headers

        # another tenant opens a session through the SDK's client and works in it
        async def eve_works() -> tuple[str, str]:
            async with mcp_client(url, "eve-token") as eve:
                written = await eve.call_tool("write_file", {"name": "e.txt", "content": "e"})
                listed = await eve.call_tool("list_documents", {})
                return written.content[0].text, listed.content[0].text

        written, listed = anyio.run(eve_works)
        assert "documentList ref: docItem:" in written
        assert "e.txt" in listed

        # alice's sessions were neither evicted nor changed by eve's
        assert all(_in_session(raw, url, s, "alice-token").status_code == 200 for s in alice)

        # the sessionless protocol keeps no session, so the limit does not stop it
        async def alice_sessionless() -> bool:
            async with mcp_client(url, "alice-token", mode="auto") as client:
                result = await client.call_tool("list_files", {})
                return bool(result.is_error)

        assert anyio.run(alice_sessionless) is False
        # a session that ends gives its room back to its own principal
        assert _in_session(raw, url, alice[0], "alice-token", "DELETE").status_code == 200
        _session_id(_initialize(raw, url, "alice-token"))
        assert _initialize(raw, url, "alice-token").status_code == 503


def test_a_session_answers_only_the_principal_that_opened_it() -> None:
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    with live(server, tokens=TOKENS) as running, httpx.Client(trust_env=False) as raw:
        session = _session_id(_initialize(raw, running.url, "alice-token"))
        stolen = _in_session(raw, running.url, session, "eve-token")
        assert stolen.status_code == 404
        assert "Session not found" in stolen.text
        assert _in_session(raw, running.url, session, "alice-token").status_code == 200


def test_without_tokens_the_one_identity_has_the_limit_and_idle_sessions_end() -> None:
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    limits = HttpLimits(sessions_per_principal=2, session_idle_timeout=0.5)
    with live(server, limits=limits) as running, httpx.Client(trust_env=False) as raw:
        first = _session_id(_initialize(raw, running.url))
        _session_id(_initialize(raw, running.url))
        assert _initialize(raw, running.url).status_code == 503
        deadline = time.monotonic() + 10
        answer: Any = None
        while time.monotonic() < deadline:
            time.sleep(0.3)
            answer = _initialize(raw, running.url)
            if answer.status_code == 200:
                break
        assert answer is not None and answer.status_code == 200, "idle sessions never ended"
        assert _in_session(raw, running.url, first).status_code == 404


def test_the_limits_come_from_the_settings() -> None:
    from docbinder.config import Settings

    settings = Settings.load(
        environ={
            "DOCBINDER_HOME": "/nonexistent-docbinder-home",
            "DOCBINDER_HTTP_SESSIONS_PER_PRINCIPAL": "7",
            "DOCBINDER_HTTP_SESSION_IDLE_TIMEOUT": "90",
        }
    )
    limits = HttpLimits.from_settings(settings)
    assert (limits.sessions_per_principal, limits.session_idle_timeout) == (7, 90.0)
    assert HttpLimits() == HttpLimits.from_settings(
        Settings.load(environ={"DOCBINDER_HOME": "/nonexistent-docbinder-home"})
    )


def test_unlisted_principals_give_their_place_back_once_idle() -> None:
    """OIDC lists nobody: a principal's session manager is retired once idle, not kept forever."""
    from docbinder.integrations.mcp.http_sessions import PrincipalSessions

    people = {name: Principal(name, "m-oidc", None, roles=("member",)) for name in "abc"}
    limits = HttpLimits(sessions_per_principal=2, session_idle_timeout=0.4)
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    sessions = PrincipalSessions(
        server.server,
        None,
        lambda scope: people.get(dict(scope["headers"]).get(b"x-user", b"").decode()),
        limits,
        most_principals=2,
    )

    async def scenario() -> list[int]:
        statuses: list[int] = []
        transport = httpx.ASGITransport(app=sessions)
        async with (
            sessions.run(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
        ):

            async def initialize(user: str) -> int:
                headers = {**ACCEPT, "x-user": user}
                answer = await client.post("/mcp", json=INITIALIZE, headers=headers)
                return answer.status_code

            statuses += [await initialize("a"), await initialize("b")]
            statuses.append(await initialize("c"))  # two principals are active: no room
            statuses.append(await initialize("a"))  # a known principal keeps its manager
            await anyio.sleep(0.6)  # a's and b's sessions end idle; so do their managers
            statuses += [await initialize("c"), await initialize("b")]
            statuses.append(await initialize("a"))  # c and b are active now
        return statuses

    assert anyio.run(scenario) == [200, 200, 503, 200, 200, 200, 503]
