"""The examples of the README and the guides, read from their Markdown and run as a reader runs them.

A document is a list of fenced blocks, read in order. Each block runs in the document's
own directory (a fresh temporary directory per document, with its own ``HOME``), so a
later block sees the files an earlier one made; each runs in a new process:

- ```` ```python ````: saved as a script and run by this interpreter (an activated venv).
- ```` ```console ````: a terminal transcript. Each ``$ `` line is a command (a line
  ending in ``\\`` continues on the next), the lines up to the next ``$ `` what it prints
  (stdout and stderr, as a terminal shows both). The commands of one block run in one
  ``bash``, so ``cd`` and variables carry over; every command must exit 0.
- ```` ```bash ```` / ```` ```sh ````: run as one ``bash -e`` script.
- ```` ```toml ```` / ```` ```json ````: data, parsed (``tomllib``, ``json``).
- ```` ```text title="Output" ```` right after a block (nothing but blank lines between):
  what that block prints. Other ``text`` blocks and ``mermaid`` diagrams are not examples.

An expected output matches when it equals the actual one (trailing spaces and blank
lines aside) with three allowances: ``...`` inside a line matches any text on that
line; a line that is only ``...`` matches any number of lines; a UUID matches any UUID,
and the same UUID shown twice must be the same UUID both times.

Directives are HTML comments (neither GitHub nor MkDocs shows them); one quoted in a
code span of the prose is text, not a directive. Before a block:

- ``<!-- example: skip REASON -->``: not run (a fragment, or the test command itself).
- ``<!-- example: file NAME -->``: the block is written to ``NAME`` instead of run.
- ``<!-- example: background -->``: a shell block started and kept running until the
  document ends (a server); the runner waits until its ports accept connections.
- ``<!-- example: installed -->``: the block's ``python3 -m venv`` and ``pip install``
  steps are taken as done: ``.venv`` is a stand-in for the venv they make, whose
  ``python`` and ``docbinder`` run this checkout.
- ``<!-- example: wrapper NAME -->``: a Python block run under :data:`WRAPPERS` ``[NAME]``
  (a scripted model where the example names a hosted one).
- ``<!-- example: needs postgres|mysql -->``: skipped (failed with ``CI=true``) when that
  server is not reachable.
- ``<!-- example: tested-by PATH -->``: run by that test module instead (it needs what
  the runner lacks, such as a host's own venv).

Before the first block, for the whole document:

- ``<!-- examples: free-port N -->``: the number ``N`` in the blocks (a port) is a free
  port of this machine when they run, shown as ``N`` again in the output.
- ``<!-- examples: in-clone -->``: the directory holds the clone's ``README.md``,
  ``docbinder/``, ``scripts/``, ``pyproject.toml`` and ``.ci/`` (links to this checkout).
- ``<!-- examples: unique NAME -->``: ``NAME`` (a database name) is made unique per run.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

RUNNABLE = {"python", "console", "bash", "sh"}
DATA = {"toml", "json"}
OUTPUT_INFO = 'text title="Output"'
TIMEOUT = 300.0
"""Seconds one block may run."""

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.M | re.S,
)
_DIRECTIVE = re.compile(r"<!--\s*(?P<scope>examples?):\s*(?P<text>.*?)\s*-->", re.S)
_INLINE_CODE = re.compile(r"``[^\n]+?``|`[^`\n]+`")
"""Code spans of prose: a directive quoted in one (as the contributing page does) is text."""
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def example_documents() -> list[Path]:
    """The README and every page of ``docs/`` whose examples run: all but the ADRs.

    The ADRs record decisions as they were taken; the generated references
    (``docs/reference/``) hold no examples.
    """
    pages = sorted(
        p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in {"adr", "reference"}
    )
    return [ROOT / "README.md", *pages]


@dataclass
class Block:
    """One fenced block: its language, text, the line it starts on and its directives."""

    language: str
    info: str
    text: str
    line: int
    directives: list[str] = field(default_factory=list)
    output: str | None = None

    def directive(self, name: str) -> str | None:
        """The argument of directive ``name`` (``""`` when it has none), ``None`` if absent."""
        for d in self.directives:
            word, _, rest = d.partition(" ")
            if word == name:
                return rest.strip()
        return None

    @property
    def where(self) -> str:
        return f"line {self.line} ({self.language})"


@dataclass
class Document:
    """A Markdown file's blocks and its document-wide directives."""

    path: Path
    blocks: list[Block]
    settings: list[str]

    def setting(self, name: str) -> list[str]:
        """The arguments of every ``examples: name ...`` directive."""
        return [s.partition(" ")[2].strip() for s in self.settings if s.partition(" ")[0] == name]


def parse(path: Path) -> Document:
    """The blocks of ``path``: outputs joined to the block before them, directives attached."""
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    settings: list[str] = []
    position = 0
    previous: Block | None = None
    for match in _FENCE.finditer(text):
        gap = text[position : match.start()]
        directives = []
        for d in _DIRECTIVE.finditer(_INLINE_CODE.sub("", gap)):
            (settings if d["scope"] == "examples" else directives).append(d["text"])
        info = match["info"].strip()
        body = _dedent(match["body"], match["indent"])
        language = info.split(" ", 1)[0].lower()
        line = text.count("\n", 0, match.start()) + 1
        if info == OUTPUT_INFO:
            if previous is None or gap.strip() or previous.output is not None:
                raise AssertionError(
                    f"{path.name} line {line}: an Output block must directly follow the block it shows"
                )
            previous.output = body
        else:
            block = Block(language, info, body, line, directives)
            blocks.append(block)
            previous = block
        position = match.end()
    return Document(path, blocks, settings)


def _dedent(body: str, indent: str) -> str:
    lines = body.splitlines()
    return "\n".join(ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines) + "\n"


# -- matching -----------------------------------------------------------------------------


def output_pattern(expected: str) -> re.Pattern[str]:
    """The regular expression an actual output must match in full (see the module doc)."""
    seen: dict[str, int] = {}
    parts: list[str] = []
    for line in _normalise(expected).split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces: list[str] = []
        for chunk_index, chunk in enumerate(line.split("...")):
            if chunk_index:
                pieces.append(r"[^\n]*?")
            position = 0
            for found in _UUID.finditer(chunk):
                pieces.append(re.escape(chunk[position : found.start()]))
                value = found.group(0)
                if value in seen:
                    pieces.append(f"(?P=u{seen[value]})")
                else:
                    seen[value] = len(seen)
                    pieces.append(f"(?P<u{seen[value]}>{_UUID.pattern})")
                position = found.end()
            pieces.append(re.escape(chunk[position:]))
        parts.append("".join(pieces) + r"\n")
    return re.compile("".join(parts), re.S)


def _normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def assert_output(expected: str, actual: str, where: str) -> None:
    """Fail with a diff unless ``actual`` matches ``expected``."""
    shown = _normalise(actual) + "\n"
    if output_pattern(expected).fullmatch(shown):
        return
    diff = "\n".join(
        difflib.unified_diff(
            _normalise(expected).split("\n"),
            shown.rstrip("\n").split("\n"),
            "shown in the document",
            "printed",
            lineterm="",
        )
    )
    raise AssertionError(f"{where}: the output differs from what the document shows\n{diff}")


# -- running ------------------------------------------------------------------------------

WRAPPERS: dict[str, str] = {
    # The Gemini example, with ADK's model registry handing the agent a scripted model
    # that calls the example's tool the way Gemini would, then answers.
    "adk-gemini-scripted": """
import runpy
import sys

from google.adk.models.registry import LLMRegistry

from tests.integration.adk_scripted import ScriptedModel, call, say


def scripted(model: str) -> ScriptedModel:
    assert model == "gemini-2.5-flash", model
    return ScriptedModel(model=model, script=[call("save_note", text="ship on Friday"), say("Noted.")])


LLMRegistry.new_llm = staticmethod(scripted)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
""",
}
"""Wrappers a Python block may run under (``<!-- example: wrapper NAME -->``)."""

SERVERS = {
    "postgres": ("127.0.0.1", 5432),
    "mysql": ("127.0.0.1", 3306),
}


class Skip(Exception):
    """The document cannot run here (a server it needs is down); the reason is the message."""


class Session:
    """One document's run: its directory, environment, free ports and background servers."""

    def __init__(self, document: Document, directory: Path) -> None:
        self.document = document
        self.directory = directory
        self.home = directory / "home"
        self.home.mkdir()
        self.ports = {n: str(_free_port()) for n in document.setting("free-port")}
        suffix = uuid.uuid4().hex[:8]
        self.unique = {n: f"{n}_{suffix}" for n in document.setting("unique")}
        self.background: list[subprocess.Popen[str]] = []
        self.recorded: list[tuple[Block, str]] = []
        self.recording = False
        bin_dir = directory / ".bin"
        bin_dir.mkdir()
        _shim(bin_dir / "docbinder", "-m docbinder")
        self.env = {
            "HOME": str(self.home),
            "PATH": os.pathsep.join(
                [str(bin_dir), str(Path(sys.executable).parent), "/usr/bin:/bin"]
            ),
            "LANG": "C.UTF-8",
            "COLUMNS": "100",
            "PYTHONPATH": str(ROOT),
            "TMPDIR": str(directory),
            # offline: any attempt to reach the network fails at once
            "HTTP_PROXY": "http://127.0.0.1:9",
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        if document.setting("in-clone"):
            for name in ("README.md", "docbinder", "scripts", "pyproject.toml", ".ci"):
                (directory / name).symlink_to(ROOT / name)

    # ---------------------------------------------------------------- substitutions
    def prepare(self, text: str) -> str:
        """The block as it runs: free ports and unique names put in."""
        for number, port in self.ports.items():
            text = re.sub(rf"\b{number}\b", port, text)
        for name, unique in self.unique.items():
            text = re.sub(rf"\b{name}\b", unique, text)
        return text

    def shown(self, text: str) -> str:
        """An actual output as the document would show it: ports and names put back."""
        for number, port in self.ports.items():
            text = re.sub(rf"\b{port}\b", number, text)
        for name, unique in self.unique.items():
            text = text.replace(unique, name)
        return text

    # ---------------------------------------------------------------- blocks
    def run(self, block: Block) -> None:
        """Run one block and compare what it printed with the document's Output block."""
        if block.directive("skip") is not None or block.directive("tested-by") is not None:
            return
        needed = block.directive("needs")
        if needed is not None:
            _require_server(needed)
        name = block.directive("file")
        if name is not None:
            (self.directory / name).write_text(self.prepare(block.text), encoding="utf-8")
            if block.language in DATA:
                _parse_data(block)
            return
        if block.language in DATA:
            _parse_data(block)
            return
        if block.language not in RUNNABLE:
            return
        if block.directive("installed") is not None:
            self._stand_in_venv()
        if block.directive("background") is not None:
            self._start_background(block)
            return
        if block.language == "console":
            self._run_console(block)
            return
        printed = self._run_script(block)
        if self.recording:
            if block.output is None and printed.strip():
                self.recorded.append((block, self.shown(printed)))
            return
        if block.output is not None:
            assert_output(
                block.output, self.shown(printed), f"{self.document.path.name} {block.where}"
            )

    def _run_script(self, block: Block) -> str:
        code = self.prepare(block.text)
        if block.language == "python":
            script = self.directory / f"example_{block.line}.py"
            script.write_text(code, encoding="utf-8")
            wrapper = block.directive("wrapper")
            argv = [sys.executable, str(script)]
            if wrapper:
                wrap = self.directory / f"wrapper_{block.line}.py"
                wrap.write_text(WRAPPERS[wrapper], encoding="utf-8")
                argv = [sys.executable, str(wrap), str(script)]
        else:
            if block.directive("installed") is not None:
                code = _without_install_steps(code)
            kept = []
            for line in code.split("\n"):
                if is_install_line(line):
                    check_install_line(line, f"{self.document.path.name} {block.where}")
                    line = "true"
                kept.append(line)
            argv = ["bash", "-e", "-c", _ENDS_JOBS + "\n".join(kept)]
        return self._call(argv, block)

    def _run_console(self, block: Block) -> None:
        commands, outputs = _transcript(block.text)
        marker = f"@@docbinder-example-{uuid.uuid4().hex}@@"
        lines = [_ENDS_JOBS, "exec 2>&1"]
        for index, command in enumerate(commands):
            if block.directive("installed") is not None:
                command = _without_install_steps(command)
            if is_install_line(command):
                check_install_line(command, f"{self.document.path.name} {block.where}")
                command = "true"
            lines.append(f"printf '%s\\n' '{marker}{index}'")
            lines.append(self.prepare(command))
            lines.append(
                f"__status=$?; if [ $__status -ne 0 ]; then printf '%s\\n' "
                f"'{marker}failed {index}' ; exit $__status; fi"
            )
        printed = self._call(["bash", "-c", "\n".join(lines)], block, check=False)
        pieces = re.split(rf"^{re.escape(marker)}(\S+(?: \d+)?)\n", printed, flags=re.M)
        got: dict[int, str] = {}
        for tag, text in zip(pieces[1::2], pieces[2::2], strict=True):
            if tag.startswith("failed"):
                failed = int(tag.split()[1])
                raise AssertionError(
                    f"{self.document.path.name} {block.where}: `{commands[failed]}` failed:\n"
                    + got.get(failed, "")
                )
            got[int(tag)] = text
        if self.recording:
            if not any(o.strip() for o in outputs):
                shown = "".join(
                    f"$ {command}\n" + self.shown(got.get(i, ""))
                    for i, command in enumerate(commands)
                )
                self.recorded.append((block, shown))
            return
        for index, command in enumerate(commands):
            assert_output(
                outputs[index],
                self.shown(got.get(index, "")),
                f"{self.document.path.name} {block.where} `{command}`",
            )

    def _call(self, argv: list[str], block: Block, *, check: bool = True) -> str:
        process = subprocess.Popen(
            argv,
            cwd=self.directory,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if check else subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT)
        finally:
            _end_group(process)  # what the block left running in the background ends with it
        if check and process.returncode != 0:
            raise AssertionError(
                f"{self.document.path.name} {block.where} exited {process.returncode}:\n"
                f"{stdout}\n{stderr}"
            )
        return stdout

    def _start_background(self, block: Block) -> None:
        command = self.prepare(block.text)
        if block.language == "console":
            command = "\n".join(_transcript(block.text)[0])
            if block.directive("installed") is not None:
                command = _without_install_steps(command)
            command = self.prepare(command)
        log = self.directory / f"background_{block.line}.log"
        with log.open("w", encoding="utf-8") as sink:
            process = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.directory,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        self.background.append(process)
        ports = [int(p) for n, p in self.ports.items() if re.search(rf"\b{n}\b", block.text)]
        deadline = time.monotonic() + 60
        for port in ports:
            while True:
                if process.poll() is not None:
                    raise AssertionError(
                        f"{self.document.path.name} {block.where}: the background command "
                        f"exited {process.returncode}: {log.read_text(encoding='utf-8')}"
                    )
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{block.where}: nothing listens on port {port} after 60 s"
                    )
                time.sleep(0.05)  # polling a port that is about to open

    def _stand_in_venv(self) -> None:
        """``.venv/bin/python``, ``docbinder``, ``pip`` and ``activate`` running this checkout."""
        bin_dir = self.directory / ".venv" / "bin"
        if bin_dir.exists():
            return
        bin_dir.mkdir(parents=True)
        _shim(bin_dir / "python", "")
        _shim(bin_dir / "python3", "")
        _shim(bin_dir / "docbinder", "-m docbinder")
        _shim(bin_dir / "pytest", "-m pytest")
        (bin_dir / "activate").write_text(
            f'PATH="{bin_dir}:$PATH"\nexport PATH\n', encoding="utf-8"
        )

    def close(self) -> None:
        """End the background servers of the document."""
        for process in self.background:
            _end_group(process)


def run_document(path: Path, directory: Path) -> int:
    """Run every example of ``path`` in ``directory``, in order; raises on the first mismatch.

    Returns how many blocks ran (a document the site lists has at least one).
    """
    document = parse(path)
    session = Session(document, directory)
    try:
        for block in document.blocks:
            session.run(block)
    finally:
        session.close()
    return len(document.blocks)


def record(path: Path, directory: Path) -> int:
    """Run ``path`` and write what its blocks print into it where it shows nothing yet.

    A Python or shell block without an Output block gets one; a console block whose
    commands show nothing gets their output. Outputs already shown are left as they
    are. Returns how many blocks were filled in. For writing a new page: read what was
    written, and put ``...`` where a run prints what differs from run to run.
    """
    document = parse(path)
    session = Session(document, directory)
    session.recording = True
    try:
        for block in document.blocks:
            session.run(block)
    finally:
        session.close()
    lines = path.read_text(encoding="utf-8").split("\n")
    for block, shown in sorted(session.recorded, key=lambda r: -r[0].line):
        start = block.line - 1
        end = start + 1
        fence = lines[start].strip().split(block.info)[0] if block.info else lines[start].strip()
        while lines[end].strip() != fence:
            end += 1
        body = shown.rstrip("\n").split("\n")
        if block.language == "console":
            lines[start + 1 : end] = body
        else:
            lines[end + 1 : end + 1] = ["", f"```{OUTPUT_INFO}", *body, "```"]
    path.write_text("\n".join(lines), encoding="utf-8")
    return len(session.recorded)


def _transcript(text: str) -> tuple[list[str], list[str]]:
    """The commands of a console block and, for each, the lines shown after it."""
    commands: list[str] = []
    outputs: list[str] = []
    lines = iter(text.rstrip("\n").split("\n"))
    for line in lines:
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command = command + "\n" + next(lines)
            commands.append(command)
            outputs.append("")
        elif not commands:
            raise AssertionError(f"a console block must start with a `$ ` command, got {line!r}")
        else:
            outputs[-1] += line + "\n"
    return commands, outputs


def _without_install_steps(command: str) -> str:
    """``command`` without its ``python3 -m venv ...`` and ``pip install ...`` steps."""
    steps = [s.strip() for s in command.split("&&")]
    kept = [s for s in steps if not re.match(r"(python3? -m venv|(\S*/)?pip install)\b", s)]
    return " && ".join(kept) or "true"


_ENDS_JOBS = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
"""A block's first line: what it started in the background ends when the block does."""

_INSTALL = re.compile(r"^\s*(?:\S*/)?pip3? install\b")


def is_install_line(command: str) -> bool:
    """Whether ``command`` is a ``pip install`` line (checked, never run: it needs the network)."""
    return bool(_INSTALL.match(command))


def extras() -> set[str]:
    """The extras ``pyproject.toml`` declares."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return set(tomllib.load(fh)["project"]["optional-dependencies"])


def check_install_line(command: str, where: str) -> None:
    """Fail unless every docbinder requirement of ``command`` installs from a clone.

    docbinder is installed as ``-e .`` or ``-e '.[extra,...]'`` with extras that
    ``pyproject.toml`` declares; a bare ``docbinder`` names a package that is not
    published under this project's control, so it is refused.
    """
    [command] = [s for s in re.split(r"&&|;|\|", command) if is_install_line(s)][:1] or [command]
    words = shlex.split(command.split("#", 1)[0])
    known = extras()
    for word in words[words.index("install") + 1 :]:
        if word.startswith("-") and word != "-e":
            continue
        if re.match(r"docbinder\b", word, re.I):
            raise AssertionError(f"{where}: {word!r} is no published package: use -e '.[extra]'")
        found = re.fullmatch(r"\.(?:\[(?P<extras>[^\]]*)\])?", word)
        if found and found["extras"]:
            named = {e.strip() for e in found["extras"].split(",")}
            unknown = {e for e in named if not e.startswith("<")} - known  # <extra>: a placeholder
            if unknown:
                raise AssertionError(f"{where}: no extra {sorted(unknown)} in pyproject.toml")


def _parse_data(block: Block) -> None:
    if block.language == "toml":
        tomllib.loads(block.text)
    else:
        json.loads(block.text)


def _shim(path: Path, arguments: str) -> None:
    path.write_text(
        f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec {shlex.quote(sys.executable)} {arguments} "$@"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _require_server(name: str) -> None:
    host, port = SERVERS[name]
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        raise Skip(f"{name} at {host}:{port}: {exc}") from None


def _end_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def blocks_of(paths: list[Path]) -> Iterator[tuple[Path, Block]]:
    """Every block of ``paths`` with its document."""
    for path in paths:
        for block in parse(path).blocks:
            yield path, block


if __name__ == "__main__":
    import tempfile

    for name in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as scratch:
            print(name, record(Path(name).resolve(), Path(scratch)), "block(s) filled in")
