"""DNS rebinding fails on whatever host the MCP HTTP server binds, with tokens or without.

Before, docbinder served ``127.0.0.2``, ``LOCALHOST`` and ``0:0:0:0:0:0:0:1``
without tokens while the SDK checked ``Host`` only on the literal ``127.0.0.1``,
``localhost`` and ``::1``: ``Host: evil.example`` got 200 there.
"""

from __future__ import annotations

import socket

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.integrations.httpguard import AllowedHosts, HttpLimits, normalize_host
from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer, token_hash
from tests.integration.mcp_http import ACCEPT, INITIALIZE, live, mcp_client, url_host
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")

# (bound host, address to connect to, other Host spellings of this server)
BINDS = [
    pytest.param(
        "127.0.0.1", "127.0.0.1", ["localhost", "LOCALHOST.", "127.0.0.1"], id="127.0.0.1"
    ),
    pytest.param("127.0.0.2", "127.0.0.2", ["localhost", "127.0.0.2"], id="127.0.0.2"),
    pytest.param("LOCALHOST", "127.0.0.1", ["localhost", "LocalHost", "[::1]"], id="LOCALHOST"),
    pytest.param(
        "0:0:0:0:0:0:0:1",
        "::1",
        ["[::1]", "[0:0:0:0:0:0:0:1]", "localhost"],
        id="0:0:0:0:0:0:0:1",
        marks=needs_ipv6,
    ),
]


def _post(url: str, **headers: str) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=10) as raw:
        return raw.post(url, json=INITIALIZE, headers={**ACCEPT, **headers})


async def _works(url: str, token: str | None = None) -> bool:
    async with mcp_client(url, token) as client:
        written = await client.call_tool("write_file", {"name": "a.txt", "content": "a"})
        return not written.is_error


@pytest.mark.parametrize(("host", "connect", "spellings"), BINDS)
def test_rebinding_is_refused_on_any_loopback_bind_without_tokens(
    host: str, connect: str, spellings: list[str]
) -> None:
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    with live(server, host=host, connect=connect) as running:
        port = running.port
        assert anyio.run(_works, running.url)  # the SDK's client as it connects
        evil = _post(running.url, Host=f"evil.example:{port}")
        assert evil.status_code == 421
        assert evil.text == "misdirected request: the Host header names no address of this server\n"
        assert _post(running.url, Host=f"{url_host(connect)}:{port + 1}").status_code == 421
        assert _post(running.url, Host="evil.example").status_code == 421
        foreign = _post(running.url, Origin=f"http://evil.example:{port}")
        assert foreign.status_code == 403
        assert _post(running.url, Origin="null").status_code == 403
        for spelling in spellings:
            assert _post(running.url, Host=f"{spelling}:{port}").status_code == 200, spelling
            origin = f"http://{spelling}:{port}"
            assert _post(running.url, Origin=origin).status_code == 200, origin


def test_rebinding_is_refused_before_authentication_with_tokens() -> None:
    tokens = BearerTokens({token_hash("alice-token"): ALICE})
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    with live(server, tokens=tokens) as running:
        port = running.port
        bearer = "Bearer alice-token"
        assert _post(running.url, Host=f"evil.example:{port}").status_code == 421
        assert (
            _post(running.url, Host=f"evil.example:{port}", Authorization=bearer).status_code == 421
        )
        hostile = _post(running.url, Origin=f"http://evil.example:{port}", Authorization=bearer)
        assert hostile.status_code == 403
        assert _post(running.url).status_code == 401
        assert _post(running.url, Authorization=bearer).status_code == 200
        assert anyio.run(_works, running.url, "alice-token")


def test_a_wildcard_bind_takes_addresses_and_the_configured_names_only() -> None:
    tokens = BearerTokens({token_hash("alice-token"): ALICE})
    server = DocbinderMcpServer(make_memory_binder(), ALICE)
    limits = HttpLimits(allowed_hosts=("mcp.example.org",))
    with live(server, host="0.0.0.0", connect="127.0.0.1", tokens=tokens, limits=limits) as running:
        port, bearer = running.port, "Bearer alice-token"
        for good in (
            f"127.0.0.1:{port}",
            f"192.0.2.7:{port}",
            "mcp.example.org",
            "MCP.example.org:443",
        ):
            assert _post(running.url, Host=good, Authorization=bearer).status_code == 200, good
        assert (
            _post(
                running.url,
                Host="mcp.example.org",
                Origin="https://mcp.example.org",
                Authorization=bearer,
            ).status_code
            == 200
        )
        for bad in (f"evil.example:{port}", f"mcp.example.org.evil.example:{port}"):
            assert _post(running.url, Host=bad, Authorization=bearer).status_code == 421, bad


@pytest.mark.parametrize(
    ("value", "normal"),
    [
        ("LOCALHOST", "localhost"),
        ("localhost.", "localhost"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("127.0.0.2", "127.0.0.2"),
        ("Mcp.Example.ORG", "mcp.example.org"),
        ("", None),
        ("evil example", None),
        ("a/b", None),
        ("[127.0.0.1]", None),
        ("127.000.0.1", None),
    ],
)
def test_hosts_are_compared_in_one_spelling(value: str, normal: str | None) -> None:
    assert normalize_host(value) == normal


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("127.9.9.9:8000", True),
        ("[::1]:8000", True),
        ("localhost:8000", True),
        ("127.0.0.1", False),  # port 80
        ("127.0.0.1:8001", False),
        ("127.0.0.1:08000", True),
        ("127.0.0.1:", False),
        ("127.0.0.1:x", False),
        ("::1:8000", False),  # IPv6 must be bracketed
        ("[::1", False),
        ("10.0.0.1:8000", False),
        ("evil.example:8000", False),
        ("localhost.evil.example:8000", False),
    ],
)
def test_host_headers_of_a_loopback_bind(header: str, allowed: bool) -> None:
    assert AllowedHosts.for_bind("127.0.0.1", 8000).allows_host(header) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),
        ("http://127.0.0.1:8000", True),
        ("HTTP://LOCALHOST:8000", True),
        ("https://127.0.0.1:8000", True),
        ("http://127.0.0.1", False),
        ("http://127.0.0.1:8000/path", False),
        ("http://user@127.0.0.1:8000", False),
        ("ftp://127.0.0.1:8000", False),
        ("null", False),
        ("http://evil.example:8000", False),
    ],
)
def test_origins_of_a_loopback_bind(origin: str | None, allowed: bool) -> None:
    assert AllowedHosts.for_bind("127.0.0.1", 8000).allows_origin(origin) is allowed


def test_allowed_hosts_from_the_settings_and_bad_entries() -> None:
    settings = Settings.load(
        environ={
            "DOCBINDER_HOME": "/nonexistent-docbinder-home",
            "DOCBINDER_HTTP_ALLOWED_HOSTS": "mcp.example.org, Proxy.Example.org",
        }
    )
    assert settings.http_allowed_hosts == ("mcp.example.org", "Proxy.Example.org")
    allowed = AllowedHosts.for_bind("::", 9000, settings.http_allowed_hosts)
    assert allowed.allows_host("proxy.example.org:443") and allowed.allows_host("[::1]:9000")
    assert not allowed.allows_host("other.example.org:9000")
    with pytest.raises(ConfigurationError, match="http_allowed_hosts"):
        Settings.load(
            environ={
                "DOCBINDER_HOME": "/nonexistent-docbinder-home",
                "DOCBINDER_HTTP_ALLOWED_HOSTS": "https://mcp.example.org/",
            }
        )
    with pytest.raises(ConfigurationError, match="give names without scheme or port"):
        AllowedHosts.for_bind("127.0.0.1", 8000, ["mcp.example.org:443"])
