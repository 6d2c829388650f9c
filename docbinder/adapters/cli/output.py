"""Output helpers of the CLI: rich for people, one JSON document for scripts."""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from docbinder.serialization import to_wire


class _Console(Console):
    """A console that ends quietly when its reader goes away (``docbinder demo | head``)."""

    def on_broken_pipe(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0)


out = _Console(soft_wrap=True, highlight=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)


def emit_json(payload: Any) -> None:
    """Print ``payload`` (entities are converted with the wire converter) as one JSON document."""
    data = to_wire(payload)
    sys.stdout.write(json.dumps(_strip_bytes(data), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def _strip_bytes(value: Any) -> Any:
    """Replace base64 ``data`` of content parts by ``dataSize`` (bytes) to keep output small."""
    if isinstance(value, dict):
        result = {k: _strip_bytes(v) for k, v in value.items() if k != "data"}
        if "data" in value and "kind" in value:
            data = value["data"]
            result["dataSize"] = None if data is None else len(base64.b64decode(data))
        elif "data" in value:
            result["data"] = _strip_bytes(value["data"])
        return result
    if isinstance(value, list):
        return [_strip_bytes(v) for v in value]
    return value


def fail(message: str) -> None:
    """Print one ``error: ...`` line on stderr."""
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False)
