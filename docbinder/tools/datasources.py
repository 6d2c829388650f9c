"""Data sources for ``download_from_data_source`` (SPEC C10): a port and three adapters.

A :class:`DataSource` turns a reference (a relative path, a URL, an object key)
into a :class:`Download`: a file name, an optional MIME type and the bytes as
an iterator of chunks. Adapters stream: no adapter reads a whole body into
memory, and every adapter enforces a size limit while streaming
(:class:`~docbinder.domain.errors.SizeLimitExceeded` from inside the
iteration, so the blob store keeps nothing).

* :class:`LocalDirectorySource` reads files below one directory and refuses
  anything that would leave it (``..``, absolute paths, symbolic links out).
* :class:`HttpSource` downloads ``http``/``https`` URLs with httpx (the
  ``[tools]`` extra).
* :class:`S3Source` reads objects below a prefix of an S3 bucket with boto3
  (the ``[s3]`` extra), on AWS or any S3-compatible endpoint.

Names are matched as :func:`~docbinder.domain.names.match_name` says: a
path or key that names nothing exactly is looked for once more among the
names that look the same (Unicode NFC/NFD, e.g. a file a Mac stored
decomposed, asked for in the composed form a keyboard or a model writes); one
such name is taken, several are refused with
:class:`~docbinder.domain.errors.AmbiguousName` showing each spelling (ADR 0066).
URLs are the server's business and are sent as given.

Errors: :class:`~docbinder.domain.errors.InvalidInput` for a reference the
source refuses, :class:`~docbinder.tools.errors.DataSourceNotFound` for a
missing file, :class:`~docbinder.tools.errors.DataSourceError` for every other
failure of the source, :class:`~docbinder.domain.errors.MissingExtra` when the
adapter's library is not installed.
"""

from __future__ import annotations

import contextlib
import email.message
import ipaddress
import itertools
import logging
import os
import socket
import stat
import unicodedata
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import attrs

from docbinder.domain.errors import (
    ConfigurationError,
    InvalidInput,
    MissingExtra,
    SizeLimitExceeded,
)
from docbinder.domain.mime import normalize_mime
from docbinder.domain.names import match_name
from docbinder.tools.errors import DataSourceError, DataSourceNotFound, is_retryable_status

log = logging.getLogger(__name__)

DEFAULT_MAX_DOWNLOAD_BYTES = 1 << 30
"""Default size limit of one download, in bytes (1 GiB)."""

DEFAULT_CHUNK_SIZE = 1 << 16
"""Default size of the chunks a source yields, in bytes (64 KiB)."""

DEFAULT_TIMEOUT_S = 30.0
"""Default network timeout of the remote sources, in seconds."""

FALLBACK_NAME = "download"
"""File name of a download when neither the source nor the reference gives one."""

MAX_LOOKALIKE_CANDIDATES = 100_000
"""Directory entries or object keys read, at most, to find a name that only looks the same."""


@attrs.define(eq=False)
class Download:
    """One file fetched from a data source, not yet read.

    ``name`` is the file name (one path component, never empty); ``chunks``
    yields the bytes; ``mime_type`` is what the source claims (``None`` if it
    claims nothing: the binder sniffs the bytes anyway); ``size`` is the size
    in bytes the source announced, if any. Use it as a context manager or call
    :meth:`close` so the source releases its file or connection even when the
    chunks are never read.
    """

    name: str
    chunks: Iterator[bytes]
    mime_type: str | None = None
    size: int | None = None
    on_close: Callable[[], None] | None = attrs.field(default=None, repr=False)
    _closed: bool = attrs.field(default=False, init=False, repr=False)

    def close(self) -> None:
        """Release the source's file or connection; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        close_chunks = getattr(self.chunks, "close", None)
        try:
            if callable(close_chunks):
                close_chunks()
        finally:
            if self.on_close is not None:
                self.on_close()

    def __enter__(self) -> Download:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class DataSource(Protocol):
    """Where ``download_from_data_source`` gets files from."""

    def fetch(self, ref: str) -> Download:
        """Open the file that ``ref`` names and return it as a :class:`Download`.

        Errors are raised here (before any chunk) where the source can tell:
        :class:`InvalidInput` for a refused reference,
        :class:`DataSourceNotFound`, :class:`DataSourceError`,
        :class:`SizeLimitExceeded` when the announced size is over the limit.
        Faults while streaming are raised from the chunk iterator.
        """


# -- shared helpers -------------------------------------------------------------------------


def relative_parts(ref: object, *, what: str = "path") -> tuple[str, ...]:
    """Split a relative reference into its path components, refusing anything that could escape.

    ``/`` and ``\\`` both separate components; empty and ``.`` components are
    dropped. Raises :class:`InvalidInput` for a non-string or empty reference,
    control characters, an absolute path (``/x``, ``\\\\server\\x``, ``C:x``)
    or any ``..`` component.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(f"the {what} must be a non-empty string")
    if any(ord(ch) < 32 or ch == "\x7f" for ch in ref):
        raise InvalidInput(f"the {what} {ref!r} contains control characters")
    unified = ref.replace("\\", "/")
    windows = PureWindowsPath(ref)
    if unified.startswith("/") or windows.drive or windows.root:
        raise InvalidInput(f"the {what} {ref!r} must be relative to the data source")
    parts = tuple(p for p in unified.split("/") if p not in ("", "."))
    if ".." in parts:
        raise InvalidInput(f"the {what} {ref!r} must not contain '..'")
    if not parts:
        raise InvalidInput(f"the {what} {ref!r} names no file")
    return parts


def clean_file_name(value: str | None) -> str | None:
    """The last path component of ``value`` without control characters, or ``None`` if empty.

    Used for names a remote side suggests (Content-Disposition, URL path), so a
    download is never named with a path.
    """
    if not value:
        return None
    last = value.replace("\\", "/").rsplit("/", 1)[-1]
    # Only printable characters and plain spaces: no control, format (bidi), or
    # line/paragraph separator characters that could fake lines in tool text.
    last = "".join(ch for ch in last if ch.isprintable() or ch == " ").strip()
    if last in ("", ".", ".."):
        return None
    return last


def limited(chunks: Iterator[bytes], max_bytes: int | None) -> Iterator[bytes]:
    """Yield ``chunks`` unchanged, raising :class:`SizeLimitExceeded` once more than ``max_bytes`` passed."""
    total = 0
    for chunk in chunks:
        if not chunk:
            continue
        total += len(chunk)
        if max_bytes is not None and total > max_bytes:
            raise SizeLimitExceeded(max_bytes)
        yield chunk


def _check_limit(name: str, value: int | float | None, *, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise InvalidInput(f"{name} must be a positive number, got {value!r}")


# -- local directory ------------------------------------------------------------------------


class LocalDirectorySource:
    """:class:`DataSource` over the files below one local directory.

    ``ref`` is a path relative to ``root`` (``reports/q3.csv``). Refused with
    :class:`InvalidInput`: absolute paths, ``..`` components, and paths that a
    symbolic link leads outside ``root``; directories and other non-regular
    files too. The file is opened in :meth:`fetch` (the final component with
    ``O_NOFOLLOW`` where the OS has it) and read in ``chunk_size`` chunks;
    ``max_bytes`` limits the size (``None`` for no limit). The name of the
    download is the last component of ``ref``; no MIME type is claimed.

    Raises :class:`ConfigurationError` if ``root`` is not an existing directory.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int | None = DEFAULT_MAX_DOWNLOAD_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        _check_limit("max_bytes", max_bytes)
        _check_limit("chunk_size", chunk_size, allow_none=False)
        try:
            resolved = Path(root).resolve(strict=True)
        except OSError as exc:
            raise ConfigurationError(f"data source directory {root!s} does not exist") from exc
        if not resolved.is_dir():
            raise ConfigurationError(f"data source directory {root!s} is not a directory")
        self.root = resolved
        self.max_bytes = max_bytes
        self.chunk_size = chunk_size

    def fetch(self, ref: str) -> Download:
        """Open ``root/ref``; see the class documentation for what is refused.

        A component that names no entry exactly is matched against the
        entries of its directory that look the same (:func:`match_name`):
        :class:`~docbinder.domain.errors.AmbiguousName` if several do; the
        download then has the name as stored.
        """
        parts = relative_parts(ref)
        candidate = self.root.joinpath(*parts)
        try:
            resolved = candidate.resolve(strict=True)
        except FileNotFoundError as exc:
            spelled = self._stored_spelling(parts)
            if spelled is None:
                raise DataSourceNotFound(f"no file {ref!r} in data source {self.root}") from exc
            parts = spelled
            try:
                resolved = self.root.joinpath(*parts).resolve(strict=True)
            except FileNotFoundError as again:
                raise DataSourceNotFound(f"no file {ref!r} in data source {self.root}") from again
            except (OSError, RuntimeError) as again:
                raise DataSourceError(
                    f"cannot open {ref!r} in data source {self.root}: {again}"
                ) from again
        except (OSError, RuntimeError) as exc:  # symlink loops, permissions on a parent
            raise DataSourceError(f"cannot open {ref!r} in data source {self.root}: {exc}") from exc
        if not resolved.is_relative_to(self.root):
            raise InvalidInput(f"the path {ref!r} leads outside the data source directory")
        try:
            fd = _open_beneath(self.root, resolved.relative_to(self.root).parts)
        except FileNotFoundError as exc:
            raise DataSourceNotFound(f"no file {ref!r} in data source {self.root}") from exc
        except OSError as exc:
            raise DataSourceError(f"cannot open {ref!r} in data source {self.root}: {exc}") from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInput(f"the path {ref!r} is not a regular file")
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            if self.max_bytes is not None and info.st_size > self.max_bytes:
                raise SizeLimitExceeded(self.max_bytes)
            handle = os.fdopen(fd, "rb", buffering=0)
        except BaseException:
            os.close(fd)
            raise
        return Download(
            name=parts[-1],
            chunks=limited(self._read(handle, ref), self.max_bytes),
            mime_type=None,
            size=info.st_size,
            on_close=handle.close,
        )

    def _stored_spelling(self, parts: tuple[str, ...]) -> tuple[str, ...] | None:
        """``parts`` with each missing component replaced by the one entry that looks the same.

        ``None`` when some component has no such entry (or its parent is no
        directory). Only names whose NFC form differs from themselves or that
        are not ASCII can have another spelling; a directory is listed only
        when its component is missing, and at most
        :data:`MAX_LOOKALIKE_CANDIDATES` entries are read.
        """
        directory = self.root
        spelled: list[str] = []
        for part in parts:
            if not os.path.lexists(directory / part):
                if part.isascii():
                    return None
                try:
                    with os.scandir(directory) as entries:
                        names = (
                            e.name for e in itertools.islice(entries, MAX_LOOKALIKE_CANDIDATES)
                        )
                        match = match_name(part, names, where=f"data source {self.root}")
                except (NotADirectoryError, FileNotFoundError):
                    return None
                except OSError as exc:
                    raise DataSourceError(
                        f"cannot list {directory} in data source {self.root}: {exc}"
                    ) from exc
                if match is None:
                    return None
                part = match
            spelled.append(part)
            directory = directory / part
        return tuple(spelled)

    def _read(self, handle: Any, ref: str) -> Iterator[bytes]:
        try:
            while True:
                try:
                    chunk = handle.read(self.chunk_size)
                except OSError as exc:
                    raise DataSourceError(f"reading {ref!r} failed: {exc}") from exc
                if not chunk:
                    return
                yield chunk
        finally:
            handle.close()


def _open_beneath(root: Path, parts: tuple[str, ...]) -> int:
    """Open ``root/parts...`` one component at a time, never following a symbolic link.

    ``parts`` is the already-resolved path below ``root``; opening each directory
    relative to its parent with ``O_NOFOLLOW`` means a component swapped for a
    link after the path was resolved makes the open fail instead of leading
    outside ``root``. The file is opened with ``O_NONBLOCK`` so a FIFO cannot
    block; the caller rejects anything that is not a regular file. Raises
    ``OSError`` (``FileNotFoundError`` for a vanished component).
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if not parts or not hasattr(os, "O_DIRECTORY") or os.open not in os.supports_dir_fd:
        return os.open(root.joinpath(*parts), os.O_RDONLY | nofollow | getattr(os, "O_BINARY", 0))
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=directory)
            os.close(directory)
            directory = child
        return os.open(parts[-1], os.O_RDONLY | nofollow | os.O_NONBLOCK, dir_fd=directory)
    finally:
        os.close(directory)


# -- HTTP -----------------------------------------------------------------------------------


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtra("HTTP data source", "tools", "httpx") from exc
    return httpx


def file_name_from_response(content_disposition: str | None, url: str) -> str:
    """The file name of an HTTP download.

    Order: the ``filename*`` or ``filename`` parameter of ``Content-Disposition``
    (RFC 6266, with RFC 8187 / RFC 2231 encoding), then the last segment of the
    URL path (percent-decoded), then :data:`FALLBACK_NAME`. Only the last path
    component of a suggested name is kept.
    """
    if content_disposition:
        message = email.message.Message()
        message["content-disposition"] = content_disposition
        try:
            suggested = message.get_filename()
        except Exception:  # a malformed header is ignored, the URL still names the file
            suggested = None
        name = clean_file_name(suggested)
        if name:
            return name
    path = urlsplit(url).path
    name = clean_file_name(unquote(PurePosixPath(path).name)) if path else None
    return name or FALLBACK_NAME


class HttpSource:
    """:class:`DataSource` that downloads ``http`` and ``https`` URLs with httpx, streaming.

    ``timeout_s`` (seconds) bounds connecting and each wait for more bytes, not
    the whole download. Requests send ``Accept-Encoding: identity`` (unless
    ``headers`` say otherwise), so the size limit counts the bytes as sent. ``max_bytes`` limits the (decoded) body: a larger
    ``Content-Length`` is refused before reading, and the limit is enforced
    while streaming, so nothing is stored either way. ``allowed_hosts``
    restricts the host names the source may contact, redirects included
    (``None`` allows every host). ``headers`` are sent with every request
    (e.g. ``Authorization``); ``trust_env`` lets httpx read proxy settings from
    the environment.

    The file name comes from ``Content-Disposition``, else the URL path, else
    ``download`` (:func:`file_name_from_response`); the MIME type from
    ``Content-Type`` without parameters.

    Errors: :class:`InvalidInput` (not an http/https URL, host not allowed),
    :class:`DataSourceNotFound` (HTTP 404 and 410), :class:`DataSourceError`
    (any other HTTP status of 400 or more, timeouts, connection faults, too many
    redirects), :class:`SizeLimitExceeded`, :class:`MissingExtra` (httpx missing).

    Internal addresses are refused by default (SSRF, OWASP "Server Side Request
    Forgery Prevention"): every address a host name resolves to must be global
    (``ipaddress`` ``is_global``), so loopback, private (RFC 1918, ULA), link-local
    (cloud metadata ``169.254.169.254``), shared, reserved, multicast and IPv4-mapped
    forms of them raise :class:`InvalidInput`. The check runs for the first request and
    every redirect, and again when connecting: the connection goes to the address
    that was checked, so a name that resolves differently the second time (DNS
    rebinding) cannot slip through. ``allowed_networks`` (addresses or CIDR networks,
    e.g. ``["127.0.0.1", "10.20.0.0/16"]``) opens what a host wants.
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_bytes: int | None = DEFAULT_MAX_DOWNLOAD_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        headers: Mapping[str, str] | None = None,
        allowed_hosts: Collection[str] | None = None,
        follow_redirects: bool = True,
        max_redirects: int = 5,
        trust_env: bool = True,
        allowed_networks: Collection[str] = (),
    ) -> None:
        self._httpx = _import_httpx()
        try:
            self.allowed_networks = tuple(
                ipaddress.ip_network(n, strict=False) for n in allowed_networks
            )
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"allowed_networks: {exc}") from None
        _check_limit("timeout_s", timeout_s, allow_none=False)
        _check_limit("max_bytes", max_bytes)
        _check_limit("chunk_size", chunk_size, allow_none=False)
        self.timeout_s = float(timeout_s)
        self.max_bytes = max_bytes
        self.chunk_size = chunk_size
        # Ask for the body as stored: a compressed body would be unpacked a whole
        # network read at a time, before the size limit could see it.
        self.headers = {"Accept-Encoding": "identity", **dict(headers or {})}
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        )
        self.follow_redirects = follow_redirects
        self.max_redirects = max_redirects
        self.trust_env = trust_env

    def fetch(self, ref: str) -> Download:
        """Send ``GET ref`` and return the response body as a stream; see the class documentation."""
        url = self._check_url(ref)
        httpx = self._httpx
        client = httpx.Client(
            transport=_make_checked_transport(httpx, self._checked_addresses, self.trust_env),
            timeout=httpx.Timeout(self.timeout_s),
            follow_redirects=self.follow_redirects,
            max_redirects=self.max_redirects,
            trust_env=self.trust_env,
            headers=self.headers,
            event_hooks={"request": [self._check_request]},
        )
        try:
            response = client.send(client.build_request("GET", url), stream=True)
        except BaseException as exc:
            client.close()
            if isinstance(exc, httpx.HTTPError):
                raise self._translate(exc, url) from exc
            raise

        def close() -> None:
            try:
                response.close()
            finally:
                client.close()

        try:
            self._check_response(response, url)
            name = file_name_from_response(
                response.headers.get("content-disposition"), str(response.url)
            )
            mime = normalize_mime(response.headers.get("content-type"))
            size = self._announced_size(response)
        except BaseException:
            close()
            raise
        return Download(
            name=name,
            chunks=limited(self._stream(response, url, close), self.max_bytes),
            mime_type=mime,
            size=size,
            on_close=close,
        )

    def _check_url(self, ref: object) -> str:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInput("the URL must be a non-empty string")
        url = ref.strip()
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError as exc:
            raise InvalidInput(f"{url!r} is not a valid URL: {exc}") from exc
        if parts.scheme.lower() not in ("http", "https"):
            raise InvalidInput(f"only http and https URLs can be downloaded, got {url!r}")
        if not host:
            raise InvalidInput(f"the URL {url!r} has no host")
        self._check_host(host)
        return url

    def _check_host(self, host: str) -> None:
        if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
            raise InvalidInput(f"downloads from host {host!r} are not allowed")

    def _check_request(self, request: Any) -> None:
        # Runs for every request, redirects included (and before any proxy is used).
        if request.url.scheme not in ("http", "https"):
            raise InvalidInput(f"refusing to follow a redirect to {request.url}")
        self._check_host(request.url.host)
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        with contextlib.suppress(OSError):  # a name that does not resolve: the connection says so
            self._checked_addresses(request.url.host, port)

    def _checked_addresses(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, after checking each; :class:`InvalidInput`."""
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            problem = self._address_problem(address)
            if problem is not None:
                raise InvalidInput(
                    f"downloads from {host!r} are refused: it resolves to {address}, {problem}; "
                    "a host that needs it passes allowed_networks"
                )
        return addresses

    def _address_problem(self, address: str) -> str | None:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if any(ip in network for network in self.allowed_networks):
            return None
        mapped = getattr(ip, "ipv4_mapped", None)
        if mapped is not None and any(mapped in n for n in self.allowed_networks):
            return None
        target = mapped or ip
        if target.is_loopback:
            return "a loopback address"
        if target.is_link_local:
            return "a link-local address (cloud metadata lives here)"
        if target.is_private:
            return "a private address"
        if target.is_multicast or not target.is_global:
            return "not a public address"
        return None

    def _check_response(self, response: Any, url: str) -> None:
        status = int(response.status_code)
        if status < 400:
            return
        reason = response.reason_phrase or ""
        message = f"GET {url} failed: HTTP {status} {reason}".rstrip()
        if status in (404, 410):
            raise DataSourceNotFound(message, status=status)
        if status in (401, 403):
            message += "; check the credentials the data source needs"
        raise DataSourceError(message, status=status, retryable=is_retryable_status(status))

    def _announced_size(self, response: Any) -> int | None:
        raw = response.headers.get("content-length")
        if raw is None or response.headers.get("content-encoding", "identity") != "identity":
            return None
        try:
            size = int(raw)
        except ValueError:
            return None
        if self.max_bytes is not None and size > self.max_bytes:
            raise SizeLimitExceeded(self.max_bytes)
        return size

    def _stream(self, response: Any, url: str, close: Callable[[], None]) -> Iterator[bytes]:
        try:
            try:
                yield from response.iter_bytes(self.chunk_size)
            except self._httpx.HTTPError as exc:
                raise self._translate(exc, url, while_reading=True) from exc
        finally:
            close()

    def _translate(
        self, exc: Exception, url: str, *, while_reading: bool = False
    ) -> DataSourceError:
        httpx = self._httpx
        during = " while reading the body" if while_reading else ""
        if isinstance(exc, httpx.TimeoutException):
            return DataSourceError(
                f"GET {url} timed out after {self.timeout_s:g} s{during}", retryable=True
            )
        if isinstance(exc, httpx.TooManyRedirects):
            return DataSourceError(f"GET {url} failed: more than {self.max_redirects} redirects")
        if isinstance(exc, httpx.TransportError):
            return DataSourceError(f"GET {url} failed{during}: {exc}", retryable=True)
        return DataSourceError(f"GET {url} failed{during}: {exc}")


def _make_checked_transport(
    httpx: Any, resolve: Callable[[str, int], list[str]], trust_env: bool
) -> Any:
    """An httpx transport whose connections go only to addresses ``resolve`` checked.

    httpcore connects through a network backend; this one resolves the host itself,
    lets ``resolve`` check every address, and connects to the first checked one (TLS
    still verifies the host name). The pool is rebuilt around it because httpx takes
    no backend argument.
    """
    import httpcore

    class _CheckedBackend(httpcore.SyncBackend):
        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            try:
                addresses = resolve(host, port)
            except OSError as exc:
                raise httpcore.ConnectError(str(exc)) from exc
            return super().connect_tcp(addresses[0], port, timeout, local_address, socket_options)

    transport = httpx.HTTPTransport(trust_env=trust_env)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=trust_env),
        network_backend=_CheckedBackend(),
    )
    return transport


# -- S3 -------------------------------------------------------------------------------------

_S3_MISSING = frozenset({"NoSuchKey", "NotFound", "404"})


class S3Source:
    """:class:`DataSource` over the objects below ``prefix`` in an S3 bucket.

    ``ref`` is a key relative to ``prefix`` (``reports/q3.csv`` reads the
    object ``<prefix>/reports/q3.csv``); it is checked like a relative path
    (:func:`relative_parts`), so it can never name an object outside the
    prefix. ``endpoint_url`` selects any S3-compatible service (path-style
    addressing is then used unless ``addressing_style`` says otherwise);
    ``client`` may pass a ready boto3 S3 client instead. Credentials come from
    boto3's usual chain. The body is streamed in ``chunk_size`` chunks;
    ``max_bytes`` limits the size. The download's name is the last component
    of ``ref``, its MIME type the object's ``ContentType``.

    boto3 is imported when the source is built: without it
    :class:`MissingExtra` names the ``[s3]`` extra. Errors:
    :class:`DataSourceNotFound` (no such object), :class:`DataSourceError`
    (any other S3 or connection fault, with the S3 error code).
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        *,
        region_name: str | None = None,
        addressing_style: str | None = None,
        client: Any = None,
        max_bytes: int | None = DEFAULT_MAX_DOWNLOAD_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if not isinstance(bucket, str) or not bucket.strip():
            raise ConfigurationError("the S3 data source needs a bucket name")
        _check_limit("max_bytes", max_bytes)
        _check_limit("chunk_size", chunk_size, allow_none=False)
        self.bucket = bucket
        self.prefix = "/".join(p for p in prefix.split("/") if p)
        self.endpoint_url = endpoint_url
        self.max_bytes = max_bytes
        self.chunk_size = chunk_size
        if client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:
                raise MissingExtra("S3 data source", "s3", "boto3") from exc
            style = addressing_style or ("path" if endpoint_url else "auto")
            s3_options: Any = {"addressing_style": style}
            client = boto3.session.Session().client(
                "s3",
                endpoint_url=endpoint_url,
                region_name=region_name,
                config=Config(s3=s3_options),
            )
        self._client = client

    @property
    def where(self) -> str:
        """``s3://bucket/prefix`` (plus the endpoint), for messages."""
        location = f"s3://{self.bucket}/{self.prefix}"
        return f"{location} at {self.endpoint_url}" if self.endpoint_url else location

    def key_for(self, ref: str) -> str:
        """The object key ``ref`` names below the prefix; :class:`InvalidInput` if refused."""
        parts = relative_parts(ref, what="key")
        return "/".join((self.prefix, *parts)) if self.prefix else "/".join(parts)

    def fetch(self, ref: str) -> Download:
        """``GetObject`` of :meth:`key_for` ``(ref)``, streamed; see the class documentation.

        A key that names no object is looked for once more among the keys that
        look the same (:meth:`stored_key`); the download then has the name as stored.
        """
        key = self.key_for(ref)
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            error = self._translate(exc, ref)
            if not isinstance(error, DataSourceNotFound):
                raise error from exc
            stored = self.stored_key(ref)
            if stored is None:
                raise error from exc
            key = stored
            try:
                response = self._client.get_object(Bucket=self.bucket, Key=key)
            except Exception as again:
                raise self._translate(again, ref) from again
        body = response["Body"]
        try:
            size = response.get("ContentLength")
            if self.max_bytes is not None and isinstance(size, int) and size > self.max_bytes:
                raise SizeLimitExceeded(self.max_bytes)
            mime = normalize_mime(response.get("ContentType"))
        except BaseException:
            body.close()
            raise
        return Download(
            name=key.rsplit("/", 1)[-1],
            chunks=limited(self._stream(body, ref), self.max_bytes),
            mime_type=mime,
            size=size if isinstance(size, int) else None,
            on_close=body.close,
        )

    def stored_key(self, ref: str) -> str | None:
        """The one object key below the prefix that looks the same as :meth:`key_for` ``(ref)``.

        ``None`` when the key is ASCII or no key matches. Listed
        (``ListObjectsV2``) are only the keys that share the longest prefix
        every other spelling must share too: the key up to the letter that
        carries the first accent (in NFD) or the first other non-ASCII
        character; at most :data:`MAX_LOOKALIKE_CANDIDATES` keys. A key whose
        spellings differ earlier (singleton decompositions such as the Kelvin
        sign) is not found. Raises
        :class:`~docbinder.domain.errors.AmbiguousName` when several keys
        match, :class:`DataSourceError` when listing fails.
        """
        wanted = "/".join(relative_parts(ref, what="key"))
        if wanted.isascii():
            return None
        decomposed = unicodedata.normalize("NFD", wanted)
        first = next(i for i, ch in enumerate(decomposed) if not ch.isascii())
        base = f"{self.prefix}/" if self.prefix else ""
        listing = base + decomposed[: max(first - 1, 0)]
        try:
            keys = list(self._keys_below(listing))
        except Exception as exc:
            raise self._translate(exc, ref) from exc
        names = [k[len(base) :] for k in keys if k.startswith(base)]
        match = match_name(wanted, names, where=f"S3 data source {self.where}")
        return None if match is None else base + match

    def _keys_below(self, prefix: str) -> Iterator[str]:
        """Keys starting with ``prefix``, at most :data:`MAX_LOOKALIKE_CANDIDATES` of them."""
        paginator = self._client.get_paginator("list_objects_v2")
        seen = 0
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for entry in page.get("Contents") or ():
                yield str(entry["Key"])
                seen += 1
                if seen >= MAX_LOOKALIKE_CANDIDATES:
                    return

    def _stream(self, body: Any, ref: str) -> Iterator[bytes]:
        try:
            try:
                yield from body.iter_chunks(self.chunk_size)
            except Exception as exc:
                raise self._translate(exc, ref, while_reading=True) from exc
        finally:
            body.close()

    def _translate(
        self, exc: Exception, ref: str, *, while_reading: bool = False
    ) -> DataSourceError:
        try:
            from botocore import exceptions as bx
        except ImportError:  # pragma: no cover - a client without botocore
            return DataSourceError(f"S3 data source {self.where} failed for {ref!r}: {exc}")
        during = " while reading" if while_reading else ""
        if isinstance(exc, bx.ClientError):
            response: Any = getattr(exc, "response", None) or {}
            code = str((response.get("Error") or {}).get("Code") or "")
            raw_status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            status = raw_status if isinstance(raw_status, int) else None
            if code == "NoSuchBucket":
                return DataSourceError(
                    f"S3 data source {self.where}: the bucket does not exist (NoSuchBucket)",
                    status=status,
                )
            if code in _S3_MISSING or status == 404:
                return DataSourceNotFound(
                    f"no object {ref!r} in S3 data source {self.where}", status=status
                )
            return DataSourceError(
                f"S3 data source {self.where} failed for {ref!r}{during}: {code or status}",
                status=status,
                retryable=status is not None and is_retryable_status(status),
            )
        if isinstance(exc, bx.BotoCoreError):
            return DataSourceError(
                f"S3 data source {self.where} failed for {ref!r}{during}: {exc}", retryable=True
            )
        return DataSourceError(f"S3 data source {self.where} failed for {ref!r}{during}: {exc}")
