"""Shared helpers of the tool tests: a loopback HTTP server, PNG bytes, a fake image service.

This module holds no tests; the tool test modules import from it. The server
listens on 127.0.0.1 only, on a free port, in a daemon thread, and answers
from a route table that each test fills.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from tests.unit.conftest import make_memory_binder


@attrs.define
class Route:
    """What the server answers for one path.

    ``chunks`` are written one after the other, ``delay_s`` seconds before each
    (and before the headers when ``delay_headers``); without ``length`` no
    ``Content-Length`` is sent and the body ends when the connection closes.
    """

    status: int = 200
    headers: dict[str, str] = attrs.Factory(dict)
    chunks: Sequence[bytes] = (b"",)
    length: bool = True
    delay_s: float = 0.0
    delay_headers: bool = False


@attrs.define
class Seen:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class LoopbackServer:
    """A threaded HTTP/1.0 server on 127.0.0.1 with a route table and a request log."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def _answer(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                owner.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                route = owner.routes.get(self.path.split("?", 1)[0])
                if route is None:
                    route = Route(404, {"Content-Type": "text/plain"}, (b"no such path",))
                if route.delay_headers:
                    time.sleep(route.delay_s)
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                if route.length:
                    self.send_header("Content-Length", str(sum(len(c) for c in route.chunks)))
                self.end_headers()
                try:
                    for chunk in route.chunks:
                        if route.delay_s and not route.delay_headers:
                            time.sleep(route.delay_s)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return

            do_GET = _answer
            do_POST = _answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        """The full URL of ``path``."""
        return self.base_url + path

    def route(self, path: str, **answer: object) -> str:
        """Register what ``path`` answers (see :class:`Route`); return its URL."""
        self.routes[path] = Route(**answer)  # type: ignore[arg-type]
        return self.url(path)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def serve_loopback() -> Iterator[LoopbackServer]:
    """Run a fresh loopback HTTP server until the generator is closed (body of a fixture)."""
    server = LoopbackServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: int = 4) -> bytes:
    """A small real PNG image."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buffer, format="PNG")
    return buffer.getvalue()


def image_api_answer(images: Sequence[bytes]) -> bytes:
    """The JSON body of a successful ``POST /images/generations`` with ``images`` as b64_json."""
    return json.dumps(
        {
            "created": 1700000000,
            "data": [{"b64_json": base64.b64encode(i).decode("ascii")} for i in images],
        }
    ).encode("utf-8")


def new_binder() -> DocBinder:
    """A binder over fresh in-memory adapters."""
    return make_memory_binder()


ALICE = Principal("alice", "m1", "f1", roles=("member",))

LOOPBACK = ("127.0.0.1",)
"""The allow-list HttpSource needs to reach the loopback test server (refused by default)."""
"""A member working in feature instance f1 of mandate m1."""
