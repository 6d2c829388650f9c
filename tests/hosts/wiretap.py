"""A stdio pass-through that records every JSON-RPC line between an MCP client and a server.

Usage: ``python wiretap.py LOG_DIR -- COMMAND [ARG ...]``. The host starts this
script as its MCP server; it starts ``COMMAND`` (docbinder's server), copies
the host's stdin to the server and the server's stdout to the host line by
line (stdio MCP frames are newline-delimited JSON, per the protocol's stdio
transport), and appends each line to ``LOG_DIR/wire-<pid>.jsonl`` as
``{"t": <seconds since the epoch>, "dir": "c2s" | "s2c", "msg": <the message>}``.
The server's stderr is inherited. A host that starts a server per call (the
LangChain adapters' default) leaves one log per process; the rendering tests
read them all.

Only the standard library: it runs on docbinder's interpreter, beside the
server, so the host's venv holds nothing of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any


class _Log:
    """One JSON line per message, written under a lock (two pumps share the file)."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def record(self, direction: str, line: bytes) -> None:
        try:
            message: Any = json.loads(line)
        except ValueError:
            message = {"unparsed": line.decode("utf-8", "replace")}
        entry = json.dumps({"t": time.time(), "dir": direction, "msg": message})
        with self._lock:
            self._file.write(entry + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _pump(source: IO[bytes], target: IO[bytes], log: _Log, direction: str) -> None:
    try:
        for line in iter(source.readline, b""):
            if line.strip():
                log.record(direction, line)
            target.write(line)
            target.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            target.close()


def main(argv: list[str]) -> int:
    """Run the tap; returns the server's exit status."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: wiretap.py LOG_DIR -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    log_dir = Path(argv[0])
    log_dir.mkdir(parents=True, exist_ok=True)
    log = _Log(log_dir / f"wire-{os.getpid()}.jsonl")
    server = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None

    def stop(signum: int, frame: object) -> None:
        server.terminate()

    signal.signal(signal.SIGTERM, stop)
    to_server = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, server.stdin, log, "c2s"), daemon=True
    )
    to_client = threading.Thread(
        target=_pump, args=(server.stdout, sys.stdout.buffer, log, "s2c"), daemon=True
    )
    to_server.start()
    to_client.start()
    status = server.wait()
    to_client.join(timeout=5)
    log.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
