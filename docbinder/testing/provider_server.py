"""A local HTTP server that answers as OpenAI's, Anthropic's and Gemini's Files APIs do (B22).

For tests and offline examples: point each official SDK at :attr:`ProviderServer.url`
(``openai.OpenAI(base_url=server.openai_base_url)``,
``anthropic.Anthropic(base_url=server.url)``,
``genai.Client(http_options={"base_url": server.url})``) and it uploads,
retrieves and deletes files here, on 127.0.0.1 at a free port, never on the
network. The answers have the shapes the providers document:

* OpenAI: ``POST /v1/files`` (multipart, ``purpose``, ``expires_after``) answers
  a ``file`` object with ``expires_at`` (Unix seconds); ``GET`` and
  ``DELETE /v1/files/{id}``; a missing id answers 404 with
  ``{"error": {"type": "invalid_request_error", ...}}``. ``POST /v1/responses``
  checks every ``input_file`` / ``input_image`` part.
* Anthropic: ``POST /v1/files`` answers ``FileMetadata`` (``file_...`` ids,
  RFC 3339 times); ``GET`` / ``DELETE /v1/files/{id}``; 404 is
  ``{"type": "error", "error": {"type": "not_found_error", ...}}``.
  ``POST /v1/messages`` checks every ``document`` / ``image`` block.
* Gemini: the resumable upload (``POST /upload/v1beta/files`` answers the
  ``x-goog-upload-url`` header, the upload URL with ``upload, finalize``
  answers ``{"file": {...}}`` with ``expirationTime`` 48 hours on);
  ``GET`` / ``DELETE /v1beta/files/{id}``; 404 is ``{"error": {"code": 404,
  "status": "NOT_FOUND", ...}}``. ``POST /v1beta/models/{model}:generateContent``
  checks every ``fileData`` / ``inlineData`` part.

Each provider's list call is served with its pagination, at most
:attr:`ProviderServer.page_size` files a page: OpenAI ``GET /v1/files``
(``purpose``, ``limit``, ``after``, ``order``; ``has_more``), Anthropic
``GET /v1/files`` (``limit``, ``page``; ``next_page``), Gemini
``GET /v1beta/files`` (``pageSize``, ``pageToken``; ``nextPageToken``).
Gemini's resumable upload takes the bytes in one or several chunks
(``upload`` at ``X-Goog-Upload-Offset``, the last with ``upload, finalize``).

A message request naming an unknown file id, or a block of a shape the
provider does not document, answers 400 with the provider's error shape and
is recorded in :attr:`ProviderServer.rejected`. :meth:`ProviderServer.forget`
drops a file as the provider does when it expires; :attr:`ProviderServer.failing_deletes`
makes deletes of a provider answer 500; :meth:`ProviderServer.drop_answers`
makes the next uploads of a provider store the file and then close the
connection without answering (an answer lost on the way back);
:attr:`ProviderServer.failing_lists` makes a provider's list call answer 500;
:attr:`ProviderServer.unlisted` leaves files out of the list calls (a listing that shows a
new file only later).
"""

from __future__ import annotations

import base64
import contextlib
import email.parser
import email.policy
import itertools
import json
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

GEMINI_FILE_LIFETIME = timedelta(hours=48)
"""How long Gemini keeps an uploaded file (Gemini API documentation, Files API)."""

GEMINI_URI_BASE = "https://generativelanguage.googleapis.com/v1beta/files/"
"""What a Gemini file URI looks like; only ever used as a name here."""

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass
class StoredFile:
    """One file the server holds: provider, id, name, MIME type, bytes, upload and expiry times."""

    provider: str
    file_id: str
    file_name: str
    mime_type: str
    data: bytes
    created_at: datetime
    expires_at: datetime | None = None
    uri: str | None = None


@dataclass
class ProviderServer:
    """The server; use it as a context manager (starts on enter, stops on exit)."""

    files: dict[tuple[str, str], StoredFile] = field(default_factory=dict)
    uploads: list[StoredFile] = field(default_factory=list)
    """Every upload received, in order (what "uploaded once" counts)."""
    deletes: list[tuple[str, str]] = field(default_factory=list)
    """``(provider, file id)`` of every delete that removed a file."""
    accepted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``(provider, block)`` of every file block a message request carried and the checks passed."""
    rejected: list[tuple[str, str]] = field(default_factory=list)
    """``(provider, reason)`` of every message request answered 400."""
    failing_deletes: set[str] = field(default_factory=set)
    """Providers whose ``DELETE`` answers 500 (to test retries)."""
    failing_lists: set[str] = field(default_factory=set)
    """Providers whose list call answers 500."""
    unlisted: set[str] = field(default_factory=set)
    """File ids the list calls leave out while they are held: a provider that lists a new file
    only later (lookups and deletes by id still find it)."""
    page_size: int = 100
    """Most files one page of a list answer holds (whatever ``limit`` the client asks)."""
    list_pages: list[str] = field(default_factory=list)
    """The provider of every list page served, in order."""
    dropped: list[StoredFile] = field(default_factory=list)
    """The uploads stored whose answer was dropped."""
    _drops: dict[str, int] = field(default_factory=dict)
    _drops_unlisted: set[str] = field(default_factory=set)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _sessions: dict[str, tuple[str, str | None, int, bytearray]] = field(default_factory=dict)

    # -- life ---------------------------------------------------------------

    def __enter__(self) -> ProviderServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic's and Gemini's base URL)."""
        assert self._server is not None, "the server is started by entering it"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        """``<url>/v1``: the OpenAI SDK's base URL."""
        return f"{self.url}/v1"

    def openai_client(self) -> Any:
        """An ``openai.OpenAI`` client pointed at this server (API key ``test``, no retries)."""
        import openai

        return openai.OpenAI(api_key="test", base_url=self.openai_base_url, max_retries=0)

    def anthropic_client(self) -> Any:
        """An ``anthropic.Anthropic`` client pointed at this server (API key ``test``, no retries)."""
        import anthropic

        return anthropic.Anthropic(api_key="test", base_url=self.url, max_retries=0)

    def gemini_client(self) -> Any:
        """A ``google.genai.Client`` (Gemini API) pointed at this server (API key ``test``)."""
        from google import genai

        return genai.Client(api_key="test", http_options={"base_url": self.url})

    # -- what tests look at -------------------------------------------------

    def uploads_of(self, provider: str) -> list[StoredFile]:
        """The uploads one provider received, in order."""
        with self._lock:
            return [f for f in self.uploads if f.provider == provider]

    def holds(self, provider: str, file_id: str) -> bool:
        """Whether the provider holds ``file_id`` now."""
        with self._lock:
            return (provider, file_id) in self.files

    def drop_answers(self, provider: str, count: int = 1, *, listed: bool = True) -> None:
        """Store the next ``count`` uploads to ``provider``, then close the connection unanswered.

        With ``listed=False`` those uploads are also left out of the list
        calls (added to :attr:`unlisted`) until a test lists them.
        """
        with self._lock:
            self._drops[provider] = self._drops.get(provider, 0) + count
            if not listed:
                self._drops_unlisted.add(provider)

    def store(self, provider: str, file_name: str, data: bytes, mime_type: str) -> StoredFile:
        """Put a file into the provider's account as an upload from elsewhere would (not counted in :attr:`uploads`)."""
        lifetime = GEMINI_FILE_LIFETIME if provider == "gemini" else None
        stored = self._new_file(provider, file_name, mime_type, data, lifetime)
        with self._lock:
            self.uploads.remove(stored)
        return stored

    def listed(self, provider: str) -> list[StoredFile]:
        """The files the provider holds, oldest first (the order of its list call)."""
        with self._lock:
            return [f for (p, _), f in self.files.items() if p == provider]

    def _take_drop(self, provider: str) -> bool:
        with self._lock:
            left = self._drops.get(provider, 0)
            if left:
                self._drops[provider] = left - 1
            return bool(left)

    def forget(self, provider: str, file_id: str) -> None:
        """Drop a file as the provider does when it expires: later lookups answer 404."""
        with self._lock:
            self.files.pop((provider, file_id), None)

    # -- the providers' behaviour -------------------------------------------

    def _new_file(
        self,
        provider: str,
        name: str,
        mime: str,
        data: bytes,
        lifetime: timedelta | None,
    ) -> StoredFile:
        n = next(self._ids)
        now = datetime.now(UTC).replace(microsecond=0)
        if provider == "openai":
            file_id = f"file-{uuid.uuid4().hex[:22]}"
        elif provider == "anthropic":
            file_id = f"file_011{uuid.uuid4().hex[:21]}"
        else:
            file_id = f"files/{uuid.uuid4().hex[:12]}-{n}"
        stored = StoredFile(
            provider,
            file_id,
            name,
            mime,
            data,
            now,
            None if lifetime is None else now + lifetime,
            GEMINI_URI_BASE + file_id.removeprefix("files/") if provider == "gemini" else None,
        )
        with self._lock:
            self.files[(provider, file_id)] = stored
            self.uploads.append(stored)
        return stored

    def _get(self, provider: str, file_id: str) -> StoredFile | None:
        with self._lock:
            return self.files.get((provider, file_id))

    def _delete(self, provider: str, file_id: str) -> bool:
        with self._lock:
            gone = self.files.pop((provider, file_id), None)
            if gone is not None:
                self.deletes.append((provider, file_id))
            return gone is not None


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _openai_file(f: StoredFile) -> dict[str, Any]:
    return {
        "id": f.file_id,
        "object": "file",
        "bytes": len(f.data),
        "created_at": int(f.created_at.timestamp()),
        "expires_at": None if f.expires_at is None else int(f.expires_at.timestamp()),
        "filename": f.file_name,
        "purpose": "user_data",
        "status": "processed",
        "status_details": None,
    }


def _anthropic_file(f: StoredFile) -> dict[str, Any]:
    return {
        "id": f.file_id,
        "type": "file",
        "filename": f.file_name,
        "mime_type": f.mime_type,
        "size_bytes": len(f.data),
        "created_at": _rfc3339(f.created_at),
        "expires_at": None if f.expires_at is None else _rfc3339(f.expires_at),
        "downloadable": False,
    }


def _gemini_file(f: StoredFile) -> dict[str, Any]:
    import hashlib

    assert f.expires_at is not None
    return {
        "name": f.file_id,
        "displayName": f.file_name,
        "mimeType": f.mime_type,
        "sizeBytes": str(len(f.data)),
        "createTime": _rfc3339(f.created_at),
        "updateTime": _rfc3339(f.created_at),
        "expirationTime": _rfc3339(f.expires_at),
        "sha256Hash": base64.b64encode(hashlib.sha256(f.data).hexdigest().encode()).decode(),
        "uri": f.uri,
        "state": "ACTIVE",
        "source": "UPLOADED",
    }


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, str, bytes]]:
    """The parts of a ``multipart/form-data`` body: name -> (file name, content type, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
    )
    parts: dict[str, tuple[str | None, str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = (part.get_filename(), part.get_content_type(), payload)
    return parts


def _proto(fields: dict[str, Any], camel: str) -> Any:
    """A field of a Gemini JSON object by either spelling proto JSON accepts (``fileUri``, ``file_uri``)."""
    if camel in fields:
        return fields[camel]
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return fields.get(snake)


def _base64(text: str, *, urlsafe: bool) -> bytes:
    """Decode base64 strictly; proto JSON (Gemini) also takes the URL-safe alphabet."""
    try:
        if urlsafe and ("-" in text or "_" in text):
            return base64.b64decode(text, altchars=b"-_", validate=True)
        return base64.b64decode(text, validate=True)
    except ValueError as err:
        raise _Refused(400, f"data is not base64: {err}") from err


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_GEMINI_FILE = re.compile(r"^/v1beta/(files/[A-Za-z0-9-]+)$")
_GENERATE = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")
_FILES = re.compile(r"^/v1/files/([^/]+)$")


def _handler_for(state: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        # -- plumbing --------------------------------------------------------

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _provider(self) -> str:
            if self.path.startswith("/v1beta") or self.path.startswith("/upload/v1beta"):
                return "gemini"
            return "anthropic" if "anthropic-version" in self.headers else "openai"

        def _error(self, provider: str, status: int, message: str) -> None:
            if provider == "openai":
                kind = "invalid_request_error"
                self._send(
                    status,
                    {"error": {"message": message, "type": kind, "param": None, "code": None}},
                )
            elif provider == "anthropic":
                kind = {404: "not_found_error", 400: "invalid_request_error"}.get(
                    status, "api_error"
                )
                self._send(status, {"type": "error", "error": {"type": kind, "message": message}})
            else:
                code = {404: "NOT_FOUND", 400: "INVALID_ARGUMENT"}.get(status, "INTERNAL")
                self._send(status, {"error": {"code": status, "message": message, "status": code}})

        # -- verbs ---------------------------------------------------------

        def do_POST(self) -> None:
            provider = self._provider()
            body = self._body()
            path = self.path.split("?", 1)[0]
            try:
                if path == "/v1/files":
                    self._upload(provider, body)
                elif path == "/upload/v1beta/files":
                    self._gemini_start(body)
                elif path == "/upload/v1beta/files/session":
                    self._gemini_finish(body)
                elif path == "/v1/responses":
                    self._openai_response(json.loads(body))
                elif path == "/v1/messages":
                    self._anthropic_message(json.loads(body))
                elif (m := _GENERATE.match(path)) is not None:
                    self._gemini_generate(m.group(1), json.loads(body))
                else:
                    self._error(provider, 404, f"no route {path}")
            except _Refused as refused:
                with state._lock:
                    state.rejected.append((provider, refused.reason))
                self._error(provider, refused.status, refused.reason)
            except (ValueError, KeyError, TypeError, AttributeError) as err:  # a malformed body
                with state._lock:
                    state.rejected.append((provider, f"malformed request: {err}"))
                self._error(provider, 400, f"malformed request: {err}")

        def _drop(self, stored: StoredFile) -> bool:
            """Close the connection without an answer if the test asked for it; whether it did."""
            if not state._take_drop(stored.provider):
                return False
            with state._lock:
                state.dropped.append(stored)
                if stored.provider in state._drops_unlisted:
                    state.unlisted.add(stored.file_id)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True

        def _list(self, provider: str) -> None:
            from urllib.parse import parse_qs, urlsplit

            query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            if provider in state.failing_lists:
                self._error(provider, 500, "internal error")
                return
            with state._lock:
                hidden = set(state.unlisted)
            files = [f for f in state.listed(provider) if f.file_id not in hidden]
            with state._lock:
                state.list_pages.append(provider)
            if provider == "openai":
                purpose = query.get("purpose")
                if purpose not in (None, "user_data"):
                    files = []
                if query.get("order", "desc") == "desc":
                    files.reverse()
                start = 0
                if "after" in query:
                    ids = [f.file_id for f in files]
                    start = ids.index(query["after"]) + 1 if query["after"] in ids else len(ids)
                limit = min(int(query.get("limit", 10000)), state.page_size)
                page = files[start : start + limit]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [_openai_file(f) for f in page],
                        "first_id": page[0].file_id if page else None,
                        "last_id": page[-1].file_id if page else None,
                        "has_more": start + limit < len(files),
                    },
                )
                return
            if provider == "anthropic":
                start = int(query.get("page", "page_0").removeprefix("page_"))
                limit = min(int(query.get("limit", 20)), state.page_size)
                page = files[start : start + limit]
                more = start + limit < len(files)
                self._send(
                    200,
                    {
                        "data": [_anthropic_file(f) for f in page],
                        "next_page": f"page_{start + limit}" if more else None,
                    },
                )
                return
            start = int(query.get("pageToken", "0"))
            limit = min(int(query.get("pageSize", 10)), state.page_size)
            page = files[start : start + limit]
            answer: dict[str, Any] = {"files": [_gemini_file(f) for f in page]}
            if start + limit < len(files):
                answer["nextPageToken"] = str(start + limit)
            self._send(200, answer)

        def do_GET(self) -> None:
            provider = self._provider()
            if self.path.split("?", 1)[0] in ("/v1/files", "/v1beta/files"):
                self._list(provider)
                return
            file_id = self._file_id()
            found = None if file_id is None else state._get(provider, file_id)
            if found is None:
                self._error(provider, 404, f"File {file_id} not found")
                return
            shape = {"openai": _openai_file, "anthropic": _anthropic_file, "gemini": _gemini_file}
            self._send(200, shape[provider](found))

        def do_DELETE(self) -> None:
            provider = self._provider()
            file_id = self._file_id()
            if provider in state.failing_deletes:
                self._error(provider, 500, "internal error")
                return
            if file_id is None or not state._delete(provider, file_id):
                self._error(provider, 404, f"File {file_id} not found")
                return
            if provider == "openai":
                self._send(200, {"id": file_id, "object": "file", "deleted": True})
            elif provider == "anthropic":
                self._send(200, {"id": file_id, "type": "file_deleted"})
            else:
                self._send(200, {})

        def _file_id(self) -> str | None:
            path = self.path.split("?", 1)[0]
            m = _GEMINI_FILE.match(path) or _FILES.match(path)
            return None if m is None else m.group(1)

        # -- uploads -------------------------------------------------------

        def _upload(self, provider: str, body: bytes) -> None:
            parts = _multipart(self.headers.get("Content-Type", ""), body)
            if "file" not in parts or parts["file"][0] is None:
                raise _Refused(400, "a file part with a file name is required")
            name, mime, data = parts["file"]
            assert name is not None
            lifetime: timedelta | None = None
            if provider == "openai":
                purpose = parts.get("purpose", (None, "", b""))[2].decode()
                if purpose != "user_data":
                    raise _Refused(400, f"purpose must be user_data here, got {purpose!r}")
                if "expires_after[seconds]" in parts:
                    anchor = parts.get("expires_after[anchor]", (None, "", b""))[2].decode()
                    seconds = int(parts["expires_after[seconds]"][2])
                    if anchor != "created_at" or not 3600 <= seconds <= 2592000:
                        raise _Refused(400, "expires_after must be created_at and 3600..2592000 s")
                    lifetime = timedelta(seconds=seconds)
                stored = state._new_file(provider, name, mime, data, lifetime)
                if not self._drop(stored):
                    self._send(200, _openai_file(stored))
                return
            if "expires_in_seconds" in parts:
                lifetime = timedelta(seconds=int(parts["expires_in_seconds"][2]))
            stored = state._new_file(provider, name, mime, data, lifetime)
            if not self._drop(stored):
                self._send(200, _anthropic_file(stored))

        def _gemini_start(self, body: bytes) -> None:
            if self.headers.get("X-Goog-Upload-Protocol") != "resumable":
                raise _Refused(400, "only the resumable upload protocol is served")
            if self.headers.get("X-Goog-Upload-Command") != "start":
                raise _Refused(400, "the first request must be the start command")
            meta = json.loads(body or b"{}").get("file", {})
            session = uuid.uuid4().hex
            with state._lock:
                state._sessions[session] = (
                    # proto JSON: either spelling of a field name is accepted
                    meta.get("displayName") or meta.get("display_name") or "unnamed",
                    meta.get("mimeType")
                    or meta.get("mime_type")
                    or self.headers.get("X-Goog-Upload-Header-Content-Type"),
                    int(self.headers.get("X-Goog-Upload-Header-Content-Length") or 0),
                    bytearray(),
                )
            self._send(
                200,
                {},
                {
                    "x-goog-upload-url": f"{state.url}/upload/v1beta/files/session?upload_id={session}",
                    "x-goog-upload-status": "active",
                },
            )

        def _gemini_finish(self, body: bytes) -> None:
            session = self.path.rsplit("upload_id=", 1)[-1]
            with state._lock:
                found = state._sessions.get(session)
            if found is None:
                raise _Refused(404, "no such upload session")
            name, mime, size, received = found
            command = self.headers.get("X-Goog-Upload-Command", "")
            if "upload" not in command:
                raise _Refused(400, f"unknown upload command {command!r}")
            if int(self.headers.get("X-Goog-Upload-Offset") or 0) != len(received):
                raise _Refused(400, f"offset differs from the {len(received)} bytes received")
            received.extend(body)
            if "finalize" not in command:
                self._send(200, {}, {"x-goog-upload-status": "active"})
                return
            with state._lock:
                state._sessions.pop(session, None)
            if size != len(received):
                raise _Refused(400, f"announced {size} bytes, received {len(received)}")
            stored = state._new_file(
                "gemini",
                name,
                mime or "application/octet-stream",
                bytes(received),
                GEMINI_FILE_LIFETIME,
            )
            if not self._drop(stored):
                self._send(200, {"file": _gemini_file(stored)}, {"x-goog-upload-status": "final"})

        # -- messages ------------------------------------------------------

        def _known(self, provider: str, file_id: object) -> StoredFile:
            if not isinstance(file_id, str):
                raise _Refused(400, "file_id must be a string")
            found = state._get(provider, file_id)
            if found is None:
                raise _Refused(400, f"file {file_id} is not one of this account's files")
            return found

        def _accept(self, provider: str, block: dict[str, Any]) -> None:
            with state._lock:
                state.accepted.append((provider, block))

        def _openai_response(self, request: dict[str, Any]) -> None:
            items = request.get("input")
            if not isinstance(items, list):
                raise _Refused(400, "input must be a list of messages here")
            for item in items:
                for part in item.get("content", []) if isinstance(item, dict) else []:
                    kind = part.get("type")
                    if kind == "input_file":
                        if "file_id" in part:
                            self._known("openai", part["file_id"])
                        elif not (
                            isinstance(part.get("file_data"), str)
                            and part["file_data"].startswith("data:")
                            and isinstance(part.get("filename"), str)
                        ):
                            raise _Refused(
                                400, "input_file needs file_id, or file_data and filename"
                            )
                        self._accept("openai", part)
                    elif kind == "input_image":
                        if part.get("detail") not in ("auto", "low", "high", "original"):
                            raise _Refused(400, "input_image needs detail")
                        if "file_id" in part:
                            found = self._known("openai", part["file_id"])
                            if found.mime_type not in IMAGE_TYPES:
                                raise _Refused(400, f"{found.file_id} is no image")
                        elif not str(part.get("image_url", "")).startswith("data:image/"):
                            raise _Refused(400, "input_image needs file_id or an image data URL")
                        self._accept("openai", part)
                    elif kind not in ("input_text",):
                        raise _Refused(400, f"unknown content part type {kind!r}")
            self._send(
                200,
                {
                    "id": f"resp_{uuid.uuid4().hex}",
                    "object": "response",
                    "created_at": int(time.time()),
                    "status": "completed",
                    "model": request.get("model", "gpt"),
                    "output": [
                        {
                            "type": "message",
                            "id": f"msg_{uuid.uuid4().hex}",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "read", "annotations": []}],
                        }
                    ],
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                },
            )

        def _anthropic_message(self, request: dict[str, Any]) -> None:
            for message in request.get("messages", []):
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    kind = block.get("type")
                    if kind not in ("document", "image"):
                        continue
                    source = block.get("source", {})
                    stype = source.get("type")
                    if stype == "file":
                        found = self._known("anthropic", source.get("file_id"))
                        if kind == "image" and found.mime_type not in IMAGE_TYPES:
                            raise _Refused(400, f"{found.file_id} is no image")
                    elif stype == "base64":
                        allowed = IMAGE_TYPES if kind == "image" else ("application/pdf",)
                        if source.get("media_type") not in allowed:
                            raise _Refused(
                                400, f"media_type {source.get('media_type')!r} not allowed"
                            )
                        _base64(str(source.get("data", "")), urlsafe=False)
                    elif not (
                        kind == "document"
                        and stype == "text"
                        and isinstance(source.get("data"), str)
                    ):
                        raise _Refused(400, f"unknown {kind} source {stype!r}")
                    self._accept("anthropic", block)
            self._send(
                200,
                {
                    "id": f"msg_{uuid.uuid4().hex[:24]}",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "read"}],
                    "model": request.get("model", "claude"),
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            )

        def _gemini_generate(self, model: str, request: dict[str, Any]) -> None:
            for content in request.get("contents", []):
                for part in content.get("parts", []):
                    if _proto(part, "fileData") is not None:
                        data = _proto(part, "fileData")
                        uri = _proto(data, "fileUri") or ""
                        if not uri.startswith(GEMINI_URI_BASE):
                            raise _Refused(400, f"fileUri {uri!r} is no file of this API")
                        found = self._known("gemini", "files/" + uri.removeprefix(GEMINI_URI_BASE))
                        if _proto(data, "mimeType") != found.mime_type:
                            raise _Refused(400, "fileData.mimeType differs from the file's")
                        self._accept("gemini", part)
                    elif _proto(part, "inlineData") is not None:
                        data = _proto(part, "inlineData")
                        if not isinstance(_proto(data, "mimeType"), str):
                            raise _Refused(400, "inlineData needs mimeType")
                        _base64(str(_proto(data, "data") or ""), urlsafe=True)
                        self._accept("gemini", part)
            self._send(
                200,
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": "read"}]},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": 1,
                        "candidatesTokenCount": 1,
                        "totalTokenCount": 2,
                    },
                    "modelVersion": model,
                },
            )

    return Handler
