"""uvicorn with a connection limit and header and body read timeouts.

uvicorn (0.54) waits forever for a request head that never ends: its keep-alive
timer starts only after a response, and ``limit_concurrency`` answers ``503`` only
to a request whose head has arrived. Clients that open connections and send half a
head therefore hold one file descriptor each until the process has none left
(``EMFILE``), and every other client times out. :func:`guarded_protocol` is uvicorn's
own h11 protocol plus the missing guard, at the connection level where a request
that has not arrived yet can be seen:

- a connection has :attr:`HttpLimits.header_timeout` seconds to send a whole request
  head from the moment the server waits for one (connection opened, previous
  response sent); bytes arriving slowly do not extend it. A half-sent head is
  answered ``408``, a silent connection closed;
- inside a request body, :attr:`HttpLimits.read_timeout` seconds without a byte
  close the connection (``408`` if no response started); a body the application
  has not read yet (reading paused) does not count; a request answered before its
  body has arrived (``401``, ``413``) has the rest of its body read and dropped for at
  most :attr:`HttpLimits.header_timeout` seconds (a lingering close: the client reads
  the answer instead of a reset); a body that has not ended by then closes the
  connection, one that has carries on as keep-alive, and meanwhile a newcomer may
  evict it, so a body trickling in never keeps it;
- at most :attr:`HttpLimits.max_connections` connections are open: a new one beyond
  closes the connection that has waited longest for a request head (an idle
  keep-alive connection or a half-sent head), so a flood of half-sent heads never
  keeps a client that sends its request at once from being served; when every
  connection is busy with a request, the new one is answered ``503`` and closed;
- idle keep-alive connections close after :attr:`HttpLimits.keep_alive_timeout`;
  a connection whose idle timer expires while a request waits unread on its socket
  (the event loop was busy) is kept once for :data:`UNREAD_GRACE` seconds and the
  request served, never reset under it.

The connections a server accepts come from asyncio, which accepts up to the listen
backlog at once and, on ``EMFILE``, logs and retries the accept once per backlog
entry (Python 3.11's ``_accept_connection``), keeping the process busy while no
descriptor is free. So the guard must never let the process run out: the backlog is
:attr:`HttpLimits.backlog` and :func:`ensure_descriptors` makes sure the process may
open :attr:`HttpLimits.descriptors_needed` files before it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import socket
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from docbinder.domain.errors import ConfigurationError
from docbinder.integrations.httpguard.limits import DESCRIPTOR_RESERVE, HttpLimits

log = logging.getLogger(__name__)


def _response(status: int, reason: str, body: str) -> bytes:
    data = body.encode("ascii")
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(data)}\r\nconnection: close\r\n\r\n"
    ).encode("ascii") + data


_BUSY = _response(503, "Service Unavailable", "too many open connections; retry later\n")
_HEAD_TIMEOUT = _response(408, "Request Timeout", "request head not received in time\n")
_BODY_TIMEOUT = _response(408, "Request Timeout", "request body not received in time\n")


UNREAD_GRACE = 1.0
"""Seconds an idle connection whose timer expired is kept when bytes wait unread on it.

Once per wait: a request that reached the socket before the timer ran is read and
served; a client sending bytes only at the deadline gains this much once, no more.
"""


def unread_bytes_waiting(transport: asyncio.BaseTransport) -> bool:
    """Whether the socket of ``transport`` has bytes (or an end of stream) not read yet.

    Asks the kernel with ``poll`` and a zero timeout; ``False`` without a socket.
    """
    sock = transport.get_extra_info("socket")
    if sock is None or not hasattr(select, "poll"):  # pragma: no cover - Windows has no poll
        return False
    try:
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return False


class ConnectionTable:
    """The open connections of one server and which of them wait for a request head.

    ``waiting`` keeps the order in which connections started to wait, oldest first.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: set[GuardedH11Protocol] = set()
        self.waiting: dict[GuardedH11Protocol, None] = {}

    def admit(self, connection: GuardedH11Protocol) -> bool:
        """Count ``connection`` in; at the limit, first close the longest waiting one.

        ``False`` when every open connection is busy with a request.
        """
        if len(self.open) >= self.limit:
            victim = next(iter(self.waiting), None)
            if victim is None:
                return False
            victim.evict()
        self.open.add(connection)
        return True

    def drop(self, connection: GuardedH11Protocol) -> None:
        """Forget ``connection`` (closed or being closed)."""
        self.open.discard(connection)
        self.waiting.pop(connection, None)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the guard of the module; made by :func:`guarded_protocol`."""

    limits: ClassVar[HttpLimits]
    table: ClassVar[ConnectionTable]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.limits.keep_alive_timeout  # type: ignore[assignment]
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._head_started = False
        self._counted = False
        self._lingering = False
        self._linger_timer: asyncio.TimerHandle | None = None
        self._extended = False  # an idle close was put off once for bytes waiting unread

    # -- asyncio.Protocol -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.table.admit(self):
            log.warning(
                "refused a connection: %d connections are open and busy (http_max_connections)",
                self.table.limit,
            )
            transport.write(_BUSY)
            transport.close()
            return
        self._counted = True
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        if log.isEnabledFor(logging.DEBUG):
            self._tell("connection lost", repr(exc) if exc is not None else "closed")
        self._forget()
        super().connection_lost(exc)

    def _tell(self, what: str, why: str) -> None:
        """A debug line on what happened to this connection, with the state of both sides."""
        log.debug(
            "%s (%s): client %s, server %s, request running %s, open %d",
            what,
            why,
            self.conn.their_state.__name__,
            self.conn.our_state.__name__,
            self.cycle is not None and not self.cycle.response_complete,
            len(self.table.open),
        )

    def data_received(self, data: bytes) -> None:
        self._extended = False
        if self.conn.their_state is h11.IDLE:
            self._head_started = True
        super().data_received(data)
        if self._lingering:
            if self.conn.their_state is h11.SEND_BODY:
                return  # still dropping the rest of the body, under the linger timer
            # The rest of the body came in time: the connection carries on (keep-alive).
            self._lingering = False
            if self._linger_timer is not None:
                self._linger_timer.cancel()
                self._linger_timer = None
            self.table.waiting.pop(self, None)
        self._follow()

    def on_response_complete(self) -> None:
        # Whether the request answered is still sending its body, asked before uvicorn
        # starts the next cycle: a client may send its next request as soon as it has a
        # response's last byte, before the server finished that response, and uvicorn then
        # begins that request here; its body still arriving is no lingering close.
        unfinished = self.conn.their_state is h11.SEND_BODY
        super().on_response_complete()
        if self._counted and unfinished and self.conn.their_state is h11.SEND_BODY:
            # Answered before its body arrived (401, 413, 404). Closing at once would
            # reset a client still sending it, before it reads the answer; waiting for
            # the whole body lets one sending it byte by byte hold the connection for
            # good. So the rest is read and dropped for at most ``header_timeout``
            # seconds (a lingering close, as web servers do), and meanwhile the
            # connection may be evicted like one waiting for a head.
            self._lingering = True
            for timer in (self._head_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            self._head_timer = self._body_timer = None
            self._linger_timer = self.loop.call_later(self.limits.header_timeout, self._close)
            self.table.waiting[self] = None
            return
        self._follow()

    # -- closing an idle connection ---------------------------------------------------------
    def timeout_keep_alive_handler(self) -> None:
        """uvicorn's keep-alive expiry, except for a request that has already arrived.

        The timer and the socket are served by one event loop: when the loop is busy, a
        request can reach the socket after the loop last looked at it but before the
        expired timer runs. Closing then would reset the connection under a request
        the server has received (the client reads ``ECONNRESET``; nothing is logged),
        so the connection is kept once for :data:`UNREAD_GRACE` seconds and the loop
        reads the request (which cancels the timer).
        """
        self.timeout_keep_alive_task = None
        if self.transport.is_closing():  # closed meanwhile (the client's end of stream)
            return
        if self._defer_close():
            self.timeout_keep_alive_task = self.loop.call_later(
                UNREAD_GRACE, self.timeout_keep_alive_handler
            )
            return
        self._tell("closing", "keep-alive timeout")
        super().timeout_keep_alive_handler()

    def _defer_close(self) -> bool:
        """Whether bytes wait unread on the socket and this wait has not been extended yet."""
        if self._extended or self.transport.is_closing():
            return False
        if not unread_bytes_waiting(self.transport):
            return False
        self._extended = True
        return True

    # -- the guard --------------------------------------------------------------------------
    def evict(self) -> None:
        """Close this connection to make room for a new one (it waits for a request head)."""
        self._tell("closing", "evicted for a new connection")
        self._forget()
        if not self.transport.is_closing():
            self.transport.close()

    def _forget(self) -> None:
        self.table.drop(self)
        self._counted = False
        for timer in (self._head_timer, self._body_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = self._linger_timer = None

    def _close(self) -> None:
        """Forget this connection and close it (a lingering close ended)."""
        self._tell("closing", "lingering close ended")
        self._forget()
        if not self.transport.is_closing():
            self.transport.close()

    def _follow(self) -> None:
        """Arm or disarm the timers after what the client's side of the connection did."""
        if not self._counted or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._head_timer is None:
                self._head_started = False
                self._head_timer = self.loop.call_later(
                    self.limits.header_timeout, self._head_timed_out
                )
                self.table.waiting[self] = None
        else:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            self.table.waiting.pop(self, None)
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        if state is h11.SEND_BODY:
            self._body_timer = self.loop.call_later(self.limits.read_timeout, self._body_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._defer_close():  # the head (or the rest of it) came; the loop reads it next
            self._head_timer = self.loop.call_later(UNREAD_GRACE, self._head_timed_out)
            return
        self._tell("closing", "header timeout")
        if self._head_started:
            self.transport.write(_HEAD_TIMEOUT)
        self._forget()
        self.transport.close()

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:  # the application has not read what came; not the client
            self._body_timer = self.loop.call_later(self.limits.read_timeout, self._body_timed_out)
            return
        self._tell("closing", "read timeout")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_BODY_TIMEOUT)
        self._forget()
        self.transport.close()


def guarded_protocol(limits: HttpLimits) -> type[GuardedH11Protocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` keeping ``limits``, with its own table.

    Use one class per server: its :class:`ConnectionTable` counts that server's
    connections.
    """

    class Guarded(GuardedH11Protocol):
        pass

    Guarded.limits = limits
    Guarded.table = ConnectionTable(limits.max_connections)
    return Guarded


def server_config(
    app: Any, *, host: str, port: int, limits: HttpLimits, log_level: str = "warning"
) -> uvicorn.Config:
    """The uvicorn configuration of an HTTP face: ``app`` on ``host:port`` under ``limits``.

    HTTP/1.1 through :func:`guarded_protocol`, no WebSocket, the app's lifespan on,
    listen backlog :attr:`HttpLimits.backlog`.
    """
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        backlog=limits.backlog,
        http=guarded_protocol(limits),
        ws="none",
        lifespan="on",
        log_level=log_level,
    )


def ensure_descriptors(limits: HttpLimits) -> None:
    """Make sure the process may open :attr:`HttpLimits.descriptors_needed` files.

    Raises the soft ``RLIMIT_NOFILE`` up to the hard one when it is lower; raises
    :class:`ConfigurationError` naming ``http_max_connections`` when even the hard
    limit is too low.
    """
    if sys.platform == "win32":  # pragma: no cover - no RLIMIT_NOFILE there
        return
    import resource

    needed = limits.descriptors_needed
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ConfigurationError(
            f"http_max_connections={limits.max_connections} needs {needed} file descriptors "
            f"(the connections, {2 * limits.backlog} being accepted and {DESCRIPTOR_RESERVE} "
            f"for docbinder itself), but this process may open only {hard} (ulimit -Hn); "
            "lower http_max_connections"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def listen(host: str, port: int, limits: HttpLimits) -> socket.socket:
    """A TCP socket bound to ``host:port`` (IPv6 when ``host`` has a colon), as uvicorn binds one.

    Bound before anything says it serves: an address in use or not of this
    machine raises :class:`ConfigurationError` naming it and ``--port``. The
    socket is inheritable (forked workers share it); uvicorn starts listening
    on it with :attr:`HttpLimits.backlog`. Raises :class:`ConfigurationError`
    as :func:`ensure_descriptors` too.
    """
    ensure_descriptors(limits)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise ConfigurationError(
            f"cannot listen on {host}:{port}: {err.strerror or err} (another process may hold "
            "the port: give --port another one, or stop that process)"
        ) from err
    sock.set_inheritable(True)
    return sock


def serve(
    app: Any, *, host: str, port: int, limits: HttpLimits, sock: socket.socket | None = None
) -> None:
    """Serve ``app`` on ``sock`` (default: :func:`listen` on ``host:port``) with uvicorn under ``limits`` until interrupted."""
    sock = sock or listen(host, port, limits)
    uvicorn.Server(server_config(app, host=host, port=port, limits=limits)).run(sockets=[sock])


def serve_workers(
    make_app: Callable[[], Any],
    *,
    host: str,
    port: int,
    limits: HttpLimits,
    workers: int,
    sock: socket.socket | None = None,
) -> int:
    """Serve the app ``make_app()`` builds from ``workers`` forked processes sharing one socket.

    The parent binds ``host:port`` once (``sock``, default :func:`listen`), forks ``workers`` children and waits; each child
    builds its own app (its own database connections and clients: nothing is shared but
    the listening socket) and serves it under ``limits`` as :func:`serve` does. SIGINT and
    SIGTERM to the parent are passed to the children, which finish their requests and end.
    Returns the exit status: 0 when every child ended cleanly. POSIX only.
    """
    import os
    import signal
    import traceback

    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, got {workers}")
    sock = sock or listen(host, port, limits)
    children: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # the child: its own app, the inherited socket
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                uvicorn.Server(server_config(make_app(), host=host, port=port, limits=limits)).run(
                    sockets=[sock]
                )
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    sock.close()

    stopping: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        stopping.append(signum)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    status = 0
    for child in children:
        while True:
            try:
                _, code = os.waitpid(child, 0)
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries on its own
                continue
        # uvicorn re-raises the signal it stopped on once it has shut down gracefully.
        stopped = stopping and os.WIFSIGNALED(code) and os.WTERMSIG(code) == signal.SIGTERM
        if code != 0 and not stopped:
            status = 1
    return status
