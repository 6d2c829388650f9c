"""The Google ADK half of ``bench_adk.py``: times ADK artifact services on request.

Runs inside the separate ADK environment (``bench/.env-adk``, made by
``python bench/bench_adk.py --setup``); it imports only the standard library
and ``google.adk`` / ``google.genai``, never docbinder. ``bench_adk.py``
starts it once and talks to it over stdin/stdout, one JSON object per line:

* ``{"cmd": "info"}`` -> versions and which services exist;
* ``{"cmd": "reset", "service": "file"|"memory", "root": DIR}`` -> a fresh
  service (``FileArtifactService(root)`` or ``InMemoryArtifactService()``);
* ``{"cmd": "run", "service": ..., "size": BYTES, "ops": N}`` -> makes ``N``
  payloads of ``size`` bytes with distinct content (untimed), then times ``N``
  operations, each ``save_artifact`` of ``types.Part.from_bytes(payload)``
  under a new file name followed by ``load_artifact`` of it (the loaded size
  is checked); replies ``{"seconds": wall, "cpu": cpu}``;
* ``{"cmd": "quit"}``.

Artifacts are session-scoped (``app_name="bench"``, ``user_id="alice"``, one
session id per service). Both services are called with ``await`` in one
asyncio event loop, as an agent would.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import os
import sys
import time
from typing import Any

from google.adk.artifacts import InMemoryArtifactService
from google.genai import types


def _file_service_class() -> Any:
    """``FileArtifactService``, or ``None`` in google-adk releases that have none."""
    try:
        module = importlib.import_module("google.adk.artifacts.file_artifact_service")
    except ImportError:
        return None
    return getattr(module, "FileArtifactService", None)


FileArtifactService = _file_service_class()

APP, USER, SESSION = "bench", "alice", "session-1"
MIME = "application/octet-stream"


def _payloads(size: int, count: int, seed: bytes) -> list[bytes]:
    """``count`` payloads of ``size`` bytes, each different (a counter replaces the first bytes)."""
    out = []
    for i in range(count):
        stamp = i.to_bytes(8, "big") + os.urandom(8)
        out.append(stamp[:size] + seed[len(stamp) : size])
    return out


class Side:
    def __init__(self) -> None:
        self.services: dict[str, Any] = {}
        self.names = (f"f{i}.bin" for i in itertools.count())
        self.seed = b""

    def info(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {
            "google_adk": version("google-adk"),
            "google_genai": version("google-genai"),
            "python": sys.version.split()[0],
            "services": ["memory"] + (["file"] if FileArtifactService is not None else []),
        }

    def reset(self, service: str, root: str | None) -> dict[str, Any]:
        if service == "file":
            if FileArtifactService is None:
                return {"error": "FileArtifactService is not in this google-adk"}
            self.services[service] = FileArtifactService(root_dir=root or ".")
        else:
            self.services[service] = InMemoryArtifactService()
        return {"ok": True}

    async def run(self, service: str, size: int, ops: int) -> dict[str, Any]:
        svc = self.services[service]
        if len(self.seed) < size:
            self.seed = os.urandom(size)
        payloads = _payloads(size, ops, self.seed)
        names = [next(self.names) for _ in range(ops)]
        cpu = time.process_time()
        started = time.perf_counter()
        for name, data in zip(names, payloads, strict=True):
            part = types.Part.from_bytes(data=data, mime_type=MIME)
            await svc.save_artifact(
                app_name=APP, user_id=USER, session_id=SESSION, filename=name, artifact=part
            )
            loaded = await svc.load_artifact(
                app_name=APP, user_id=USER, session_id=SESSION, filename=name
            )
            if loaded is None or loaded.inline_data is None:
                raise SystemExit(f"ADK lost artifact {name}")
            if len(loaded.inline_data.data or b"") != size:
                raise SystemExit(f"ADK returned the wrong size for {name}")
        seconds = time.perf_counter() - started
        return {"seconds": seconds, "cpu": time.process_time() - cpu}


async def serve() -> None:
    side = Side()
    for line in sys.stdin:
        request = json.loads(line)
        cmd = request.get("cmd")
        if cmd == "quit":
            break
        if cmd == "info":
            reply = side.info()
        elif cmd == "reset":
            reply = side.reset(request["service"], request.get("root"))
        elif cmd == "run":
            reply = await side.run(request["service"], int(request["size"]), int(request["ops"]))
        else:
            reply = {"error": f"unknown command {cmd!r}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
