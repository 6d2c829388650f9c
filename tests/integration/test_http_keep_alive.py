"""A request that reached an idle keep-alive connection is served, never reset under it.

The load test of ``docbinder serve`` (``bench/bench_serve.py``) saw requests cut with
nothing logged; the cut there was the client pool's (ADR 0083), but the guard had two
ways of its own to cut a request, tested here. One: the server's event loop is
busy when a connection's keep-alive timer expires, the client's next request reaches the
socket in the meantime, and the timer then closes the socket with the request unread,
which makes the kernel answer with a reset. The test arranges exactly that on the
guarded uvicorn protocol (``httpguard.server_config``): it keeps the server's loop busy
across the keep-alive deadline with two callbacks of its own, sends the next request on
the idle connection while the loop is stuck, and reads the answer over a raw socket.

The other: a request begun while the previous streamed response finished had its body
taken for the rest of an answered one and was cut at the header timeout (the last test).
A request sent as the server closes at its deadline, which no server can serve, is the
client's to send again (RFC 9112 section 9.3.1; ``tests/e2e/serve_load.py`` does, for GETs).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from docbinder.integrations.httpguard import HttpLimits, server_config
from tests.integration.mcp_http import free_port

REQUEST = b"GET /hello HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"


class Served:
    def __init__(self, keep_alive: float) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

        async def hello(request: Request) -> PlainTextResponse:
            self.loop = asyncio.get_running_loop()
            return PlainTextResponse("hello")

        self.port = free_port()
        limits = HttpLimits(keep_alive_timeout=keep_alive, header_timeout=30.0)
        self.config = server_config(
            Starlette(routes=[Route("/hello", hello)]),
            host="127.0.0.1",
            port=self.port,
            limits=limits,
        )
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)

    @property
    def connections(self) -> set[Any]:
        return set(self.config.http.table.open)  # type: ignore[union-attr]


@pytest.fixture
def served() -> Iterator[Served]:
    served = Served(keep_alive=0.5)
    try:
        yield served
    finally:
        served.server.should_exit = True
        served.thread.join(timeout=30)


def read_response(sock: socket.socket) -> bytes:
    """One response (headers and a body of ``content-length`` bytes) or what came before EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_request_that_arrived_as_the_keep_alive_timer_ran_is_served(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(REQUEST)
        assert read_response(sock).startswith(b"HTTP/1.1 200")
        (connection,) = served.connections
        loop = served.loop
        assert loop is not None
        waited = time.monotonic() + 5
        while connection.timeout_keep_alive_task is None:  # the server thread arms it next
            assert time.monotonic() < waited, "no keep-alive timer was armed"
            time.sleep(0.001)
        deadline = connection.timeout_keep_alive_task.when()  # the loop's clock: monotonic

        def busy_across_the_deadline() -> None:
            # One callback keeps the loop until just past the deadline; the next iteration
            # then runs a second one, due before the keep-alive timer and taking the same
            # turn, so the timer runs only after it: the request below arrives meanwhile.
            loop.call_at(deadline - 0.05, time.sleep, 0.06)
            loop.call_at(deadline - 0.001, time.sleep, 0.6)

        loop.call_soon_threadsafe(busy_across_the_deadline)
        while time.monotonic() < deadline + 0.15:
            time.sleep(0.01)
        sock.sendall(REQUEST)  # reaches the socket while the server's loop is stuck
        try:
            answer = read_response(sock)
        except ConnectionResetError:
            pytest.fail("the server reset the connection under a request it had received")
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert answer.endswith(b"hello")


def test_an_idle_connection_still_closes_at_its_keep_alive_timeout(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(REQUEST)
        assert read_response(sock).startswith(b"HTTP/1.1 200")
        began = time.monotonic()
        assert sock.recv(1) == b""  # the server closed the idle connection
        assert 0.3 < time.monotonic() - began < 3.0
    assert served.connections == set()


def test_a_request_sent_while_the_last_response_finishes_gets_its_body_read() -> None:
    """The next request may start inside the previous response's last step.

    A streamed response whose ``Content-Length`` bytes are all sent, but whose final
    (empty) body message comes later, lets the client send its next request first;
    uvicorn starts that request within ``on_response_complete``. Its body still arriving
    then is the body of a request being served (``http_read_timeout``), not the rest of a
    body answered early (a lingering close of at most ``http_header_timeout``).
    """
    from starlette.responses import StreamingResponse

    async def tail(request: Request) -> StreamingResponse:
        async def chunks() -> Any:
            yield b"done"
            await asyncio.sleep(0.4)  # the client has every byte and sends its next request

        return StreamingResponse(chunks(), headers={"content-length": "4"})

    async def echo(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"got {len(await request.body())} bytes")

    port = free_port()
    limits = HttpLimits(keep_alive_timeout=5.0, header_timeout=0.5, read_timeout=10.0)
    config = server_config(
        Starlette(routes=[Route("/tail", tail), Route("/echo", echo, methods=["POST"])]),
        host="127.0.0.1",
        port=port,
        limits=limits,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /tail HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            assert read_response(sock).endswith(b"done")
            sock.sendall(
                b"POST /echo HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\n12345"
            )
            time.sleep(1.5)  # past the header timeout, well within the read timeout
            sock.sendall(b"67890")
            try:
                answer = read_response(sock)
            except ConnectionResetError:
                pytest.fail("the server closed a request whose body was on its way")
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            assert answer.endswith(b"got 10 bytes")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
