"""What every host driver shares: the scripted conversation and the report it prints.

A driver runs in its host's own venv (``python drivers/<host>.py CONFIG_JSON``),
so this module uses the standard library only. The conversation is the same
for every host; only how the host shows a tool result to its model differs,
and each driver turns that into a *view* of one tool result::

    {"texts": [str, ...],                 # what the model reads as text
     "images": [{"mime_type": str, "size": int}, ...],  # images given as images
     "raw": <JSON>,                       # the host's own rendering, as the model got it
     "aside": <JSON or null>}             # what the host kept beside it (never shown)

The scripted model decides each call from the views it has seen so far:

1. ``write_file`` a small Markdown file (no ``encoding``, as a model writes text);
2. ``write_file`` a small PNG as base64 (``encoding: "base64"``);
3. ``read_documents`` with every ``docItem:`` reference it saw;
4. a final answer.

Once a result carried a workflow handle (a ``workflow: <id>`` line or a
``"workflow"`` key), the later calls pass it as the ``workflow`` argument.
The driver prints one JSON report on stdout (:func:`emit`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import struct
import sys
import zlib
from typing import Any

NOTES_NAME = "notes.md"
NOTES = "# Notes\nrevenue grew 27 % in the north\n"
PNG_NAME = "dot.png"
FINAL_ANSWER = "Both files are written and read back."

DOC_REF = re.compile(r"docItem:[0-9A-Fa-f-]{36}")
HANDLE = re.compile(r'(?:^|[\s{,"\\])workflow\\*"?\s*:\s*\\*"?([0-9A-Za-z][0-9A-Za-z._:-]{7,199})')


def png_bytes(size: int = 8, rgb: tuple[int, int, int] = (10, 120, 200)) -> bytes:
    """A ``size`` x ``size`` PNG of one colour (PNG spec: signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


PNG = png_bytes()
PNG_B64 = base64.b64encode(PNG).decode("ascii")


def config() -> dict[str, Any]:
    """The driver's configuration: ``argv[1]`` as JSON (``{"server": [...], ...}``)."""
    return dict(json.loads(sys.argv[1]))


def view(
    texts: list[str],
    images: list[dict[str, Any]] | None = None,
    raw: Any = None,
    aside: Any = None,
) -> dict[str, Any]:
    """One tool result as the model saw it (see the module docstring)."""
    return {"texts": texts, "images": images or [], "raw": raw, "aside": aside}


def image(mime_type: str, data: bytes | str) -> dict[str, Any]:
    """An image given to the model as an image: its MIME type and size in bytes.

    ``data`` is the bytes, base64 text or a ``data:`` URL (RFC 2397).
    """
    if isinstance(data, str):
        if data.startswith("data:") and "," in data:
            header, data = data.split(",", 1)
            mime_type = mime_type or header[5:].split(";")[0]
        try:
            data = base64.b64decode(data, validate=True)
        except ValueError:
            data = data.encode()
    return {"mime_type": mime_type, "size": len(data)}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def seen_text(views: list[dict[str, Any]]) -> str:
    """Every string the model was shown in ``views`` (texts and the raw rendering)."""
    return "\n".join(s for v in views for s in (*v["texts"], *_strings(v["raw"])))


def references(views: list[dict[str, Any]]) -> list[str]:
    """The ``docItem:`` references the model saw, in order, each once."""
    found = DOC_REF.findall(seen_text(views))
    return list(dict.fromkeys(found))


def _keyed_handles(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["workflow"]] if isinstance(value.get("workflow"), str) else []
        return own + [h for v in value.values() for h in _keyed_handles(v)]
    if isinstance(value, list | tuple):
        return [h for v in value for h in _keyed_handles(v)]
    return []


def handle(views: list[dict[str, Any]]) -> str | None:
    """The last workflow handle the model saw (a ``workflow: <id>`` text or key), or ``None``."""
    found = [h for v in views for h in (*HANDLE.findall(seen_text([v])), *_keyed_handles(v["raw"]))]
    return found[-1] if found else None


def next_call(views: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The scripted model's next tool call given the results seen so far; ``None`` to finish."""
    workflow = handle(views)
    extra = {"workflow": workflow} if workflow else {}
    if len(views) == 0:
        return "write_file", {"name": NOTES_NAME, "content": NOTES}
    if len(views) == 1:
        return "write_file", {"name": PNG_NAME, "content": PNG_B64, "encoding": "base64", **extra}
    if len(views) == 2:
        return "read_documents", {"documentList": references(views), **extra}
    return None


def calls_for(views: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The calls the scripted model made to see ``views`` (call ``k`` from ``views[:k]``)."""
    made = []
    for k in range(len(views)):
        call = next_call(views[:k])
        assert call is not None
        made.append(call)
    return made


def emit(host: str, versions: dict[str, str], views: list[dict[str, Any]], **extra: Any) -> None:
    """Print the report: the host, its package versions and each step (call + view)."""
    steps = [
        {"tool": tool, "arguments": arguments, "view": v}
        for (tool, arguments), v in zip(calls_for(views), views, strict=True)
    ]
    json.dump({"host": host, "versions": versions, "steps": steps, **extra}, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def versions(*distributions: str) -> dict[str, str]:
    """Installed versions of ``distributions`` (``importlib.metadata``)."""
    from importlib.metadata import version

    return {name: version(name) for name in distributions}


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (pydantic models dumped, bytes as base64, others as text)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return jsonable(dump(mode="json", by_alias=True, exclude_none=True))
        except TypeError:
            return jsonable(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **jsonable(fields)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
