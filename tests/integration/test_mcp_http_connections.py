"""Connections that never finish a request cannot take the MCP HTTP server down.

Before, uvicorn waited forever for half-sent request heads: 1,050 such connections
used up the process's file descriptors (``EMFILE``) and a valid call timed out.
The attacks here use raw sockets against the server with its limits scaled down.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.integrations.httpguard import HttpLimits
from docbinder.integrations.httpguard.connections import ensure_descriptors
from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer, token_hash
from tests.integration.mcp_http import (
    ACCEPT,
    INITIALIZE,
    closed_by_server,
    free_port,
    live,
    mcp_client,
)
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE

ROOT = Path(__file__).resolve().parents[2]
HALF_HEAD = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"


def _server() -> DocbinderMcpServer:
    return DocbinderMcpServer(make_memory_binder(), ALICE)


def _body_head(port: int, length: int) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


async def _list_files(url: str) -> str:
    async with mcp_client(url) as client:
        result = await client.call_tool("list_files", {})
        assert not result.is_error
        return str(result.content[0].text)


# -- the process never runs out of file descriptors (end to end, the CLI) -------------------


def _open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _limit_descriptors(count: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return apply


def _cli(home: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "docbinder",
        "--home",
        str(home),
        "mcp",
        "--transport",
        "streamable-http",
        "--port",
        str(port),
    ]


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update({f"DOCBINDER_{k.upper()}": v for k, v in settings.items()})
    return env


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_flood_of_half_sent_heads_never_exhausts_descriptors_and_a_valid_call_goes_through(
    tmp_path: Path,
) -> None:
    # 32 connections need 32 + 2 * 32 being accepted + 64 for docbinder = 160 descriptors;
    # the process gets 192, and the flood is 400 connections, more than it could ever hold.
    port = free_port()
    process = subprocess.Popen(
        _cli(tmp_path / "home", port),
        env=_env(http_max_connections="32", http_header_timeout="4"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_limit_descriptors(192),
    )
    flood: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        anyio.run(_list_files, url)  # opens the store: its descriptors count as idle
        idle = _open_descriptors(process.pid)
        for _ in range(400):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(HALF_HEAD.format(port=port).encode())
            flood.append(sock)
        time.sleep(0.3)
        held = _open_descriptors(process.pid)
        assert held <= idle + 32 + 4, (idle, held)
        # a client that sends its request at once is served while the flood is still held
        assert anyio.run(_list_files, url)
        still_held = [closed_by_server(sock, 0.001) is None for sock in flood[-32:]]
        assert sum(still_held) >= 16, still_held
        # after the header timeout the server has closed every half-sent head
        answers = [closed_by_server(sock, 10) for sock in flood]
        assert None not in answers
        assert any(a.startswith(b"HTTP/1.1 408 Request Timeout") for a in answers if a)
        assert _open_descriptors(process.pid) <= idle + 2
    finally:
        for sock in flood:
            sock.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.stderr is not None
    log = process.stderr.read().decode()
    process.stderr.close()
    assert "Too many open files" not in log


def test_the_server_refuses_to_start_when_the_process_may_not_open_enough_descriptors(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        _cli(tmp_path / "home", free_port()),
        env=_env(http_max_connections="32"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_descriptors(100),
        timeout=120,
    )
    assert done.returncode == 1
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "http_max_connections=32 needs 160 file descriptors" in error
    assert "may open only 100" in error


def test_a_low_soft_descriptor_limit_is_raised_to_what_the_limits_need() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = HttpLimits(max_connections=8)
    needed = limits.descriptors_needed
    assert needed == 8 + 2 * 8 + 64
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip("the hard descriptor limit of this machine is too low")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed - 1, hard))
    try:
        ensure_descriptors(limits)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (needed, hard)
        ensure_descriptors(limits)  # enough already: left as it is
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (needed, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- timeouts -------------------------------------------------------------------------------


def test_a_head_sent_byte_by_byte_is_cut_at_the_header_timeout() -> None:
    limits = HttpLimits(header_timeout=1.0)
    with live(_server(), limits=limits) as running:
        silent = running.socket()
        slow = running.socket()
        head = HALF_HEAD.format(port=running.port).encode()
        started = time.monotonic()
        answer = None
        for byte in head * 4:  # ~0.05 s a byte: the head keeps coming, never ends
            try:
                slow.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            answer = closed_by_server(slow, 0.05)
            if answer is not None:
                break
        elapsed = time.monotonic() - started
        assert answer is not None and answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer
        assert b"request head not received in time" in answer
        assert 0.9 < elapsed < 8, elapsed
        # a connection that sent nothing is closed silently
        assert closed_by_server(silent, 8) == b""


def test_a_body_that_stops_half_way_is_cut_at_the_read_timeout_and_a_slow_one_is_not() -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}'
    )
    limits = HttpLimits(read_timeout=0.6, header_timeout=30)
    with live(_server(), limits=limits) as running:
        stalled = running.socket()
        stalled.sendall(_body_head(running.port, len(body)) + body[:10])
        started = time.monotonic()
        answer = closed_by_server(stalled, 8)
        assert answer is not None and answer.startswith(b"HTTP/1.1 408 Request Timeout")
        assert 0.5 < time.monotonic() - started < 8
        # a body that keeps coming, more slowly in total than the timeout, is served
        slow = running.socket()
        slow.sendall(_body_head(running.port, len(body)))
        for start in range(0, len(body), len(body) // 5 + 1):
            time.sleep(0.3)
            slow.sendall(body[start : start + len(body) // 5 + 1])
        slow.settimeout(10)
        response = slow.recv(4096)
        assert response.startswith(b"HTTP/1.1 200 OK"), response


def test_a_request_answered_before_its_body_closes_and_cannot_hold_the_server() -> None:
    """A body trickling in after a 401 used to keep its connection busy for good: 512 of
    them, one byte every 4 s, refused every other client with 503 (http_max_connections).
    Now the rest of the body is dropped for at most the header timeout, the connection
    may be evicted meanwhile, and a client that sends its whole body reads the 401."""
    tokens = BearerTokens({token_hash("alice-token"): ALICE})
    limits = HttpLimits(max_connections=4, header_timeout=2.0, read_timeout=30)
    with live(_server(), tokens=tokens, limits=limits) as running:
        trickling = [running.socket() for _ in range(4)]
        for sock in trickling:
            sock.sendall(_body_head(running.port, 10_000_000) + b"{")
        for sock in trickling:
            sock.settimeout(5)
            assert sock.recv(4096).startswith(b"HTTP/1.1 401"), "the answer comes first"
        with httpx.Client(trust_env=False) as raw:  # evicts one of the four
            answered = raw.post(
                running.url,
                json=INITIALIZE,
                headers={**ACCEPT, "Authorization": "Bearer alice-token"},
            )
        assert answered.status_code == 200
        started = time.monotonic()
        for sock in trickling:  # the rest of the body goes nowhere, and not for long
            with contextlib.suppress(OSError):
                sock.sendall(b" " * 100)
            assert closed_by_server(sock, 8) is not None
        assert time.monotonic() - started < 6
        # a client that sends its whole body without credentials reads the 401, no reset
        with httpx.Client(trust_env=False) as raw:
            refused = raw.post(running.url, content=b"x" * 2_000_000, headers=ACCEPT)
        assert refused.status_code == 401


def test_an_idle_connection_closes_after_the_keep_alive_timeout() -> None:
    limits = HttpLimits(keep_alive_timeout=0.5)
    with live(_server(), limits=limits) as running:
        sock = running.socket()
        sock.sendall(f"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\n\r\n".encode())
        sock.settimeout(5)
        response = b""
        while not response.endswith(b"Not Found"):
            response += sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 404")
        started = time.monotonic()
        assert closed_by_server(sock, 8) == b""
        assert 0.4 < time.monotonic() - started < 4  # uvicorn's own default is 5 s


# -- the connection limit ---------------------------------------------------------------


def test_at_the_limit_a_new_connection_closes_the_longest_waiting_one() -> None:
    limits = HttpLimits(max_connections=3, header_timeout=30)
    with live(_server(), limits=limits) as running:
        waiting = [running.socket() for _ in range(3)]
        for sock in waiting:
            sock.sendall(HALF_HEAD.format(port=running.port).encode())
            time.sleep(0.05)
        newcomer = running.socket()
        assert closed_by_server(waiting[0], 3) == b""
        assert [closed_by_server(s, 0.3) for s in waiting[1:]] == [None, None]
        newcomer.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % running.port)
        newcomer.settimeout(5)
        assert newcomer.recv(4096).startswith(b"HTTP/1.1 404")


def test_at_the_limit_with_every_connection_busy_a_new_one_gets_503() -> None:
    limits = HttpLimits(max_connections=2, header_timeout=30, read_timeout=30)
    with live(_server(), limits=limits) as running:
        busy = [running.socket() for _ in range(2)]
        for sock in busy:  # heads complete, bodies still coming: busy with a request
            sock.sendall(_body_head(running.port, 100) + b"{")
        time.sleep(0.2)
        refused = running.socket()
        answer = closed_by_server(refused, 5)
        assert answer is not None and answer.startswith(b"HTTP/1.1 503 Service Unavailable")
        assert b"too many open connections" in answer
        assert [closed_by_server(s, 0.3) for s in busy] == [None, None]
        for sock in busy:
            sock.close()
        time.sleep(0.2)
        with httpx.Client(trust_env=False) as raw:
            answered = raw.post(running.url, json=INITIALIZE, headers=ACCEPT)
        assert answered.status_code == 200


# -- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("http_max_connections", "0"),
        ("http_max_connections", "2.5"),
        ("http_header_timeout", "-1"),
        ("http_read_timeout", "inf"),
        ("http_keep_alive_timeout", "soon"),
        ("http_sessions_per_principal", "0"),
        ("http_session_idle_timeout", "nan"),
    ],
)
def test_bad_limits_are_refused_naming_the_setting(name: str, value: str) -> None:
    environ = {"DOCBINDER_HOME": "/nonexistent-docbinder-home", f"DOCBINDER_{name.upper()}": value}
    with pytest.raises(
        ConfigurationError, match=rf"^{name} must be a (positive|whole number >= 1)"
    ):
        Settings.load(environ=environ)
    with pytest.raises(ConfigurationError, match=re.escape(name)):
        HttpLimits(**{name.removeprefix("http_"): 0})


def test_limits_read_from_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        "[docbinder]\nhttp_max_connections = 64\nhttp_header_timeout = 2.5\n"
        'http_allowed_hosts = ["mcp.example.org"]\n'
    )
    settings = Settings.load(
        environ={"DOCBINDER_HOME": "/nonexistent-docbinder-home"}, config_file=config
    )
    limits = HttpLimits.from_settings(settings)
    assert (limits.max_connections, limits.header_timeout) == (64, 2.5)
    assert limits.allowed_hosts == ("mcp.example.org",)
    assert limits.backlog == 64 and limits.descriptors_needed == 64 + 128 + 64
