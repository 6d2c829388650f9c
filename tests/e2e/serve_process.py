"""``docbinder serve`` as a real process on a free loopback port (the e2e and load tests)."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK_KEY = "k1:" + base64.b64encode(hashlib.sha256(b"docbinder test link key").digest()).decode()
"""A fixed link key (tests only)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_env(**settings: str) -> dict[str, str]:
    """This process's environment without ``DOCBINDER_*``, plus ``settings`` as ``DOCBINDER_<NAME>``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = str(ROOT)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update({f"DOCBINDER_{k.upper()}": v for k, v in settings.items()})
    return env


def docbinder(home: Path, *args: str, user: str = "alice", mandate: str = "acme") -> list[str]:
    """The command line of ``docbinder --home HOME --user USER --mandate MANDATE ARGS``."""
    return [
        sys.executable,
        "-m",
        "docbinder",
        "--home",
        str(home),
        "--user",
        user,
        "--mandate",
        mandate,
        *args,
    ]


class ServeProcess:
    """``docbinder serve --port <free>`` with ``env``; ``url``, ``stderr_text()``, ``stop()``."""

    def __init__(
        self, home: Path, env: dict[str, str], *args: str, port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / f"serve-{self.port}.log"
        home.mkdir(parents=True, exist_ok=True)
        self._log_handle = self.log.open("wb")
        self.process = subprocess.Popen(
            docbinder(home, "serve", "--port", str(self.port), *args),
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=self._log_handle,
        )
        deadline = time.monotonic() + 90
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"docbinder serve exited: {self.stderr_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"docbinder serve did not listen: {self.stderr_text()}"
                    ) from None
                time.sleep(0.1)

    def stderr_text(self) -> str:
        if not self._log_handle.closed:
            self._log_handle.flush()
        return self.log.read_text("utf-8", "replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._log_handle.close()
