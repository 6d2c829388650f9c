"""docbinder's MCP server against the reference filesystem MCP server, both over stdio.

What it measures: ``N`` ``write_file`` calls of 1 KiB of Markdown text, then
``N`` reads of what was written, through the official MCP Python SDK's client
(``mcp.Client`` over stdio, protocol negotiated by the client: ``--mode``), on
each side in turn:

- **docbinder**: ``python -m docbinder --home H mcp`` on this interpreter, on a
  new home (SQLite + local disk, the shipped durability: SQLite
  ``synchronous=FULL``, blobs ``fsync``-ed); ``write_file`` ``{name, content}``,
  then ``read_documents`` with the ``docItem:`` reference each write returned;
- **reference**: ``@modelcontextprotocol/server-filesystem`` (installed with npm
  into a temporary folder, ``--npm-version``) on a new directory;
  ``write_file`` ``{path, content}``, then ``read_text_file`` ``{path}``.

With ``--floor`` a third side runs ``bench/mcp_floor_server.py``: the same two
tools as the reference on plain files, on the SDK's own stdio transport and
low-level ``Server`` (what any Python server on this SDK pays per call). With
``--http`` another side runs docbinder as ``docbinder mcp --transport
streamable-http`` on loopback, driven by ``mcp.Client(url)`` (the sessionless
revision), every call after the first passing the ``workflow`` handle.

The servers start once and stay up; each round runs the ``2N`` calls on one
side, then on the next, the side going first rotating, so all see the same
load. A side's rate is ``2N`` calls over the round's wall time; the report has
each round, the medians, the ratio docbinder / reference, the write and read
rates apart, and each side's CPU time per call, of its server process (user +
system, from ``/proc``) and of the client (this process, which runs one side at
a time); on a shared machine these are less noisy than the rates, and the
server's CPU in units of the client's (``server_per_client_cpu``: the client does
the same work for every version of one server) compares versions of a server
across runs whose machine speed differs. ``--profile FILE`` then samples docbinder's server process
with py-spy (``pip install py-spy``) during one more round and sorts the samples
into where the time goes (MCP SDK, tool set and argument coercion, produce and
read path, SQLite commit, fsync, ...), written to ``FILE`` as collapsed stacks
and summarised in the report; ``--gil`` keeps only the samples of the thread
holding the GIL (CPU spent in Python, without waits for the disk or the GIL).

Run: ``python bench/bench_mcp.py [--ops 200] [--runs 5] [--floor] [--http] [--profile FILE] [--out FILE]``
from the repository root (node and npm on ``PATH``; the npm registry reachable
for the first install).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
from benchlib import emit, free_port, machine_facts, median, note, table, temp_dir
from mcp import Client, StdioServerParameters

REFERENCE_PACKAGE = "@modelcontextprotocol/server-filesystem"
DEFAULT_NPM_VERSION = "2026.8.31"
DOC_REF = re.compile(r"docItem:[0-9a-f-]{36}")
BODY = ("# Note\n" + "docbinder keeps the files agents produce. " * 30)[:1024]
assert len(BODY.encode()) == 1024


def install_reference(folder: Path, version: str) -> Path:
    """``npm install`` the reference server into ``folder``; the path of its entry script."""
    subprocess.run(
        [
            "npm",
            "install",
            "--silent",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(folder),
            f"{REFERENCE_PACKAGE}@{version}",
        ],
        check=True,
        timeout=600,
    )
    return folder / "node_modules" / REFERENCE_PACKAGE / "dist" / "index.js"


class Side:
    """One server and its calls: ``write(i)`` returns what ``read`` needs for that file.

    ``marker`` is a part of the server's command line that finds its process.
    """

    name: str
    client: Client
    marker: str

    async def write(self, tag: str, i: int) -> str:
        raise NotImplementedError

    async def read(self, handle: str) -> None:
        raise NotImplementedError


def _text(result: Any) -> str:
    if result.is_error:
        raise RuntimeError(str(result.content[0].text if result.content else result))
    return str(result.content[0].text)


class Docbinder(Side):
    name = "docbinder"

    def __init__(self, client: Client, marker: str) -> None:
        self.client = client
        self.marker = marker

    async def write(self, tag: str, i: int) -> str:
        text = _text(
            await self.client.call_tool(
                "write_file", {"name": f"note-{tag}-{i}.md", "content": BODY}
            )
        )
        match = DOC_REF.search(text)
        assert match, text
        return match[0]

    async def read(self, handle: str) -> None:
        text = _text(await self.client.call_tool("read_documents", {"documentList": [handle]}))
        assert text.startswith("Read 1 document(s); 0 unresolved."), text


class DocbinderHttp(Docbinder):
    """docbinder over sessionless streamable HTTP: the calls carry the ``workflow`` handle.

    On that revision a request belongs to no conversation, so, as a model following the
    tool descriptions does, every call after the first write passes the workflow it named.
    """

    name = "docbinder-http"
    workflow: str | None = None

    async def write(self, tag: str, i: int) -> str:
        carried = {"workflow": self.workflow} if self.workflow else {}
        result = await self.client.call_tool(
            "write_file", {"name": f"note-{tag}-{i}.md", "content": BODY, **carried}
        )
        match = DOC_REF.search(_text(result))
        assert match, _text(result)
        self.workflow = str(result.structured_content["workflow"])
        return match[0]

    async def read(self, handle: str) -> None:
        result = await self.client.call_tool(
            "read_documents", {"documentList": [handle], "workflow": self.workflow}
        )
        assert _text(result).startswith("Read 1 document(s); 0 unresolved."), _text(result)


class Reference(Side):
    name = "reference"
    marker = REFERENCE_PACKAGE

    def __init__(self, client: Client, root: Path, read_tool: str) -> None:
        self.client = client
        self.root = root
        self.read_tool = read_tool

    async def write(self, tag: str, i: int) -> str:
        path = str(self.root / f"note-{tag}-{i}.md")
        _text(await self.client.call_tool("write_file", {"path": path, "content": BODY}))
        return path

    async def read(self, handle: str) -> None:
        text = _text(await self.client.call_tool(self.read_tool, {"path": handle}))
        assert text.startswith("# Note"), text[:200]


class Floor(Reference):
    """The SDK floor server (``bench/mcp_floor_server.py``): the reference's calls, in Python."""

    name = "sdk-floor"
    marker = "mcp_floor_server.py"


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``); 0 without."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_round(side: Side, tag: str, ops: int, pid: int | None = None) -> dict[str, float]:
    """``ops`` writes then ``ops`` reads; wall seconds of each half, the rate of both, and the
    CPU milliseconds per call of the server (process ``pid``) and of this client process."""
    cpu, client_cpu = cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    handles = [await side.write(tag, i) for i in range(ops)]
    written = time.perf_counter()
    for handle in handles:
        await side.read(handle)
    done = time.perf_counter()
    figures = {
        "ops_per_s": 2 * ops / (done - started),
        "write_ops_per_s": ops / (written - started),
        "read_ops_per_s": ops / (done - written),
        "seconds": done - started,
        "server_cpu_ms_per_call": (cpu_seconds(pid) - cpu) * 1000 / (2 * ops),
        "client_cpu_ms_per_call": (time.process_time() - client_cpu) * 1000 / (2 * ops),
    }
    client_ms = figures["client_cpu_ms_per_call"]
    # The client's own work per call is the same for every version of one server: the
    # server's CPU in client-CPU units compares versions across runs on a shared machine.
    figures["server_per_client_cpu"] = (
        figures["server_cpu_ms_per_call"] / client_ms if client_ms > 0 else 0.0
    )
    return figures


@contextlib.asynccontextmanager
async def connected(params: StdioServerParameters, mode: str) -> AsyncIterator[Client]:
    async with Client(params, mode=mode) as client:
        yield client


def _children_running(command_part: str) -> list[int]:
    """Pids of this process's descendants whose command line contains ``command_part``."""
    found = []
    parents = {os.getpid()}
    for _ in range(3):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid in parents:
                parents.add(int(entry.name))
                if command_part in cmdline and int(entry.name) not in found:
                    found.append(int(entry.name))
    return found


IDLE_LEAVES = (
    "Condition.wait (threading",
    "Event.wait (threading",
    "EpollSelector.select (",
    "WorkerThread.run (anyio",
    "_read_from_self (asyncio",
    "_wait_for_tstate_lock (",
    "readline (",
    "read (",
)
"""Leaf frames of a thread that waits (idle worker threads, the event loop's poll, stdin)."""

BUCKETS = (
    (
        "local-disk blob store (writes, fsync)",
        lambda f: "docbinder/adapters/localdisk/" in f or "fsync" in f,
    ),
    (
        "SQLite (SQLAlchemy, driver, commit)",
        lambda f: any(p in f for p in ("docbinder/adapters/sql/", "sqlalchemy/", "sqlite3/")),
    ),
    (
        "tool set (argument coercion, result text)",
        lambda f: "docbinder/toolset/" in f or "docbinder/tools/arguments.py" in f,
    ),
    (
        "produce / read use cases (application, tools, domain, other adapters)",
        lambda f: any(
            p in f
            for p in (
                "docbinder/application/",
                "docbinder/tools/",
                "docbinder/domain/",
                "docbinder/adapters/",
            )
        ),
    ),
    ("docbinder's MCP server module", lambda f: "docbinder/integrations/mcp/" in f),
    (
        "MCP SDK (protocol, pydantic models, JSON)",
        lambda f: any(p in f for p in ("mcp/", "mcp_types/", "pydantic", "json/")),
    ),
    (
        "event loop and worker threads (asyncio, anyio)",
        lambda f: any(p in f for p in ("asyncio/", "anyio/", "threading.py", "selectors.py")),
    ),
)
"""Where a busy sample's time goes: the bucket of its innermost frame that has one."""


def bucket_of(stack: list[str]) -> str:
    """The bucket of the innermost frame of ``stack`` (root first) that falls in one."""
    for frame in reversed(stack):
        for name, test in BUCKETS:
            if test(frame):
                return name
    return "other (interpreter, logging, ...)"


def summarise_profile(path: Path) -> dict[str, Any]:
    """Shares of py-spy's busy samples per bucket, and the top leaf frames.

    Samples whose leaf frame waits (:data:`IDLE_LEAVES`) are counted apart as idle.
    """
    buckets: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = idle = 0
    for line in path.read_text().splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text:
            continue
        count = int(count_text)
        frames = stack_text.split(";")
        if frames[-1].startswith(IDLE_LEAVES):
            idle += count
            continue
        total += count
        buckets[bucket_of(frames)] += count
        leaves[frames[-1]] += count
    return {
        "samples": total,
        "idle_samples": idle,
        "buckets": {k: round(v / total, 3) for k, v in buckets.most_common()} if total else {},
        "top_leaves": [[k, round(v / total, 3)] for k, v in leaves.most_common(15)]
        if total
        else [],
    }


async def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    entry = install_reference(work / "npm", args.npm_version)
    home, root, floor_root = work / "home", work / "reference-root", work / "floor-root"
    root.mkdir()
    floor_root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    ours = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "docbinder",
            "--home",
            str(home),
            "--user",
            "bench",
            "--mandate",
            "bench",
            "mcp",
        ],
        env=env,
    )
    theirs = StdioServerParameters(command="node", args=[str(entry), str(root)], env=env)
    http_home = work / "home-http"
    floor = StdioServerParameters(
        command=sys.executable,
        args=[str(Path(__file__).with_name("mcp_floor_server.py")), str(floor_root)],
        env=env,
    )
    names = [
        "docbinder",
        "reference",
        *(["sdk-floor"] if args.floor else []),
        *(["docbinder-http"] if args.http else []),
    ]
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    async with contextlib.AsyncExitStack() as stack:
        ours_client = await stack.enter_async_context(connected(ours, args.mode))
        ref_client = await stack.enter_async_context(connected(theirs, args.mode))
        listed = {t.name for t in (await ref_client.list_tools()).tools}
        read_tool = "read_text_file" if "read_text_file" in listed else "read_file"
        sides: list[Side] = [
            Docbinder(ours_client, f"--home {home} "),
            Reference(ref_client, root, read_tool),
        ]
        if args.floor:
            floor_client = await stack.enter_async_context(connected(floor, args.mode))
            sides.append(Floor(floor_client, floor_root, "read_text_file"))
        if args.http:
            url = stack.enter_context(http_server(http_home, env))
            http_client = await stack.enter_async_context(Client(url, mode=args.mode))
            sides.append(DocbinderHttp(http_client, f"--home {http_home} "))
        protocols = {side.name: side.client.protocol_version for side in sides}
        pids = {side.name: _pid_of(side.marker) for side in sides}
        for side in sides:  # warm-up: first calls pay imports and schema creation
            await run_round(side, "warm", max(5, args.ops // 10))
        for r in range(args.runs):
            shift = r % len(sides)
            for side in sides[shift:] + sides[:shift]:
                figures = await run_round(side, f"r{r}", args.ops, pids[side.name])
                rounds[side.name].append(figures)
                note(
                    f"round {r + 1} {side.name}: {figures['ops_per_s']:.0f} ops/s, "
                    f"server {figures['server_cpu_ms_per_call']:.2f} ms CPU per call"
                )
        profile = None
        if args.profile:
            profile = await profile_round(sides[0], args, Path(args.profile))
    medians = {
        name: {key: round(median([f[key] for f in figures]), 2) for key in figures[0]}
        for name, figures in rounds.items()
    }
    ratio = medians["docbinder"]["ops_per_s"] / medians["reference"]["ops_per_s"]
    per_round = [
        round(d["ops_per_s"] / ref["ops_per_s"], 3)
        for d, ref in zip(rounds["docbinder"], rounds["reference"], strict=True)
    ]
    report: dict[str, Any] = {
        "benchmark": "bench_mcp",
        "ops": args.ops,
        "runs": args.runs,
        "mode": args.mode,
        "protocols": protocols,
        "reference": f"{REFERENCE_PACKAGE}@{args.npm_version} (node {_node_version()})",
        "reference_read_tool": read_tool,
        "rounds": rounds,
        "medians": medians,
        "ratio": round(ratio, 3),
        "per_round_ratio": per_round,
        "profile": profile,
    }
    if args.floor:
        floor_rate = medians["sdk-floor"]["ops_per_s"]
        report["floor_ratio"] = round(floor_rate / medians["reference"]["ops_per_s"], 3)
        report["docbinder_over_floor"] = round(medians["docbinder"]["ops_per_s"] / floor_rate, 3)
    if args.http:
        report["http_over_stdio"] = round(
            medians["docbinder-http"]["ops_per_s"] / medians["docbinder"]["ops_per_s"], 3
        )
    return report


@contextlib.contextmanager
def http_server(home: Path, env: dict[str, str]) -> Iterator[str]:
    """``docbinder mcp --transport streamable-http`` on a free loopback port; yields its URL."""
    port = free_port()
    command = [
        *(sys.executable, "-m", "docbinder", "--home", str(home)),
        *("--user", "bench", "--mandate", "bench", "mcp"),
        *("--transport", "streamable-http", "--port", str(port)),
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP server exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not start listening") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _pid_of(marker: str) -> int | None:
    """The pid of the one server process whose command line contains ``marker``, if found."""
    found = _children_running(marker)
    return found[0] if len(found) == 1 else None


async def profile_round(side: Side, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One more docbinder round with py-spy attached to its server process."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    [pid] = _children_running(side.marker)
    recorder = subprocess.Popen(
        [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--rate",
            "500",
            "-o",
            str(out),
            *(["--gil"] if args.gil else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    await anyio.sleep(1.0)  # py-spy attaches
    figures = await run_round(side, "profiled", args.ops, pid)
    recorder.send_signal(signal.SIGINT)
    _, err = recorder.communicate(timeout=60)
    if not out.exists():
        raise RuntimeError(f"py-spy wrote no profile: {err.decode()[-2000:]}")
    return {"round": figures, "gil_only": args.gil, "file": str(out), **summarise_profile(out)}


def _node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ops", type=int, default=200, help="writes (and reads) per round")
    parser.add_argument("--runs", type=int, default=5, help="rounds per side (at least 5)")
    parser.add_argument("--mode", default="auto", help="mcp.Client mode: auto or legacy")
    parser.add_argument("--npm-version", default=DEFAULT_NPM_VERSION)
    parser.add_argument(
        "--floor", action="store_true", help="also run the SDK floor server (a third side)"
    )
    parser.add_argument(
        "--http",
        action="store_true",
        help="also run docbinder over sessionless streamable HTTP, carrying the handle",
    )
    parser.add_argument("--profile", help="sample docbinder's server with py-spy into FILE")
    parser.add_argument(
        "--gil", action="store_true", help="profile only the thread holding the GIL (CPU in Python)"
    )
    parser.add_argument("--dir", help="parent of the temporary folders (default: system temp)")
    parser.add_argument("--out", help="also write the JSON report to FILE")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (medians)")
    with temp_dir("bench-mcp-", args.dir) as work:
        report = {"machine": machine_facts(), **anyio.run(measure, args, work)}
    rows = [
        [
            name,
            m["ops_per_s"],
            m["write_ops_per_s"],
            m["read_ops_per_s"],
            m["server_cpu_ms_per_call"],
        ]
        for name, m in report["medians"].items()
    ]
    note(table(["side", "ops/s", "write ops/s", "read ops/s", "server CPU ms/call"], rows))
    note(f"ratio docbinder / reference: {report['ratio']} (per round {report['per_round_ratio']})")
    if "floor_ratio" in report:
        note(
            f"SDK floor / reference: {report['floor_ratio']}; "
            f"docbinder / SDK floor: {report['docbinder_over_floor']}"
        )
    if report["profile"]:
        note(json.dumps(report["profile"]["buckets"], indent=1))
    emit(report, args.out)


if __name__ == "__main__":
    main()
