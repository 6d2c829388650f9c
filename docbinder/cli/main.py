"""``docbinder``: the command line (SPEC C15).

Every command takes ``--json`` (one JSON document on stdout, camelCase keys
from the wire converter). Bad input gives one ``error: ...`` line on stderr and
exit code 1 (2 for usage errors), never a traceback, and writes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, BinaryIO, TypeVar

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
from typer.core import TyperGroup

from docbinder.application import DocBinder, Run, ToolFileResult
from docbinder.cli.output import (
    SafeLogHandler,
    Table,
    clean,
    emit_json,
    err,
    fail,
    out,
    styled,
)
from docbinder.config import Settings
from docbinder.domain.counters import CounterStep
from docbinder.domain.errors import (
    AccessDenied,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    SizeLimitExceeded,
)
from docbinder.domain.model import Principal, check_file_name

PROGRESS_THRESHOLD = 8 << 20
"""Files larger than this many bytes get a progress bar."""

# typer bundles its own click; its exception base is reached through a public class.
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


class _OneLineErrors(TyperGroup):
    """The top-level command: a usage error (bad option value, unknown command) is one
    ``error:`` line on stderr with exit code 2, like every other bad input."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except _ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]  # the help text, asked for by no arguments
            else:
                fail(exc.format_message() + self._global_option_hint(exc))  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        except typer.Abort:
            fail("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def _global_option_hint(self, exc: Exception) -> str:
        """For a global option given after a command (``mcp --home DIR``): where it goes."""
        name = getattr(exc, "option_name", None)
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ != "NoSuchOption" or not name or ctx is None:
            return ""
        param = next((p for p in self.params if name in p.opts), None)
        if param is None:
            return ""
        takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
        commands: list[str] = []
        while ctx.parent is not None:
            commands.insert(0, ctx.info_name)
            ctx = ctx.parent
        given = f"{name} VALUE" if takes_value else name
        return (
            f"; {name} is a global option: give it before the command "
            f"(docbinder {given} {' '.join(commands)} ...)"
        )


app = typer.Typer(
    cls=_OneLineErrors,
    name="docbinder",
    help="Store files produced by agent tools, attach them to a workflow, and resolve the references a model sends back.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
workflow_app = typer.Typer(help="Create and inspect workflows.", no_args_is_help=True)
files_app = typer.Typer(help="List, inspect and read stored files.", no_args_is_help=True)
app.add_typer(workflow_app, name="workflow")
app.add_typer(files_app, name="files")
store_app = typer.Typer(help="Check and accept the blob store's location.", no_args_is_help=True)
app.add_typer(store_app, name="store")


class State:
    """Options of the top-level callback, and the binder built from them on first use."""

    def __init__(self) -> None:
        self.overrides: dict[str, Any] = {}
        self.config_file: Path | None = None
        self.user = "local-user"
        self.mandate = "default"
        self.feature_instance: str | None = None
        self.roles: tuple[str, ...] = ("member",)
        self.json = False
        self._settings: Settings | None = None
        self._binder: DocBinder | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.load(self.overrides, config_file=self.config_file)
        return self._settings

    @property
    def principal(self) -> Principal:
        return Principal(self.user, self.mandate, self.feature_instance, roles=self.roles)

    def binder(self, *, prepare: bool = True) -> DocBinder:
        """The binder; for the embedded SQLite default the schema is migrated on first use."""
        if self._binder is None:
            from docbinder.container import build_binder

            self._binder = build_binder(self.settings, prepare=prepare)
            self._warn_of_unknown_roles(self._binder)
        return self._binder

    def _warn_of_unknown_roles(self, binder: DocBinder) -> None:
        """A ``--role`` the role table does not know grants nothing: say so once, on stderr."""
        # Only the role table says which roles exist (``known_roles``); with another
        # authorizer (Casbin) the policy gives roles their meaning.
        known = getattr(binder.access.authorizer, "known_roles", None)
        if not isinstance(known, frozenset):
            return
        for role in self.roles:
            if role not in known:
                err.print(
                    f"warning: role {role!r} is not one of {', '.join(sorted(known))}; "
                    "it grants nothing",
                    markup=False,
                )


STATE = State()

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(func: F) -> F:
    """Turn docbinder and OS errors into one ``error:`` line and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = func(*args, **kwargs)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return result
        except typer.Exit:
            raise
        except BrokenPipeError:
            # The reader went away (``docbinder ... | head``): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None
        except FileItemNotFound as exc:
            fail(f"{exc} (docbinder files ls lists the files you may read, with their ids)")
            raise typer.Exit(1) from None
        except DocbinderError as exc:
            fail(str(exc))
            raise typer.Exit(1) from None
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            fail("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def _json(flag: bool) -> bool:
    return flag or STATE.json


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as package_version

        try:
            out.print(f"docbinder {package_version('docbinder')}")
        except PackageNotFoundError:
            out.print("docbinder (version unknown: not installed as a package)")
        raise typer.Exit(0)


@app.callback()
def main(
    home: Annotated[
        Path | None,
        typer.Option(help="Data directory of the embedded default (env DOCBINDER_HOME)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="TOML configuration file (env DOCBINDER_CONFIG).")
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            help="Metadata URL: sqlite:///..., postgresql+psycopg://..., mysql+pymysql://..., memory://"
        ),
    ] = None,
    blob_url: Annotated[
        str | None, typer.Option(help="Blob URL: file:///dir, s3://bucket/prefix, memory://")
    ] = None,
    authorizer: Annotated[str | None, typer.Option(help="roletable (default) or casbin.")] = None,
    user: Annotated[
        str | None, typer.Option(envvar="DOCBINDER_USER", help="User id (default: the login name).")
    ] = None,
    mandate: Annotated[
        str, typer.Option(envvar="DOCBINDER_MANDATE", help="Mandate (tenant) id.")
    ] = "default",
    feature_instance: Annotated[
        str | None, typer.Option(envvar="DOCBINDER_FEATURE_INSTANCE", help="Feature instance id.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(
            envvar="DOCBINDER_ROLE",
            help="Role (repeatable): viewer, member, admin (default: member).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON document on stdout.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option("--verbose", "-v", count=True, help="Show log lines (-v info, -vv debug)."),
    ] = 0,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Global options: configuration, identity, output."""
    STATE.__init__()  # type: ignore[misc]
    STATE.overrides = {
        "home": str(home) if home else None,
        "database_url": database_url,
        "blob_url": blob_url,
        "authorizer": authorizer,
    }
    STATE.config_file = config
    STATE.user = user or _login_name()
    STATE.mandate = mandate
    STATE.feature_instance = feature_instance
    STATE.roles = tuple(role) if role else ("member",)
    STATE.json = json_output
    level = logging.ERROR if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger("docbinder")
    root.handlers[:] = [SafeLogHandler(console=err, show_path=False, show_time=False)]
    root.setLevel(level)
    root.propagate = False


def _login_name() -> str:
    try:
        name = getpass.getuser()
    except Exception:
        return "local-user"
    return "".join(ch for ch in name if not ch.isspace()) or "local-user"


# ---------------------------------------------------------------- files and streams


def check_readable(paths: list[Path]) -> None:
    """Raise ``OSError`` for the first path that is not a readable regular file (before any write)."""
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(2, "no such file", str(path))
        if not path.is_file():
            raise IsADirectoryError(21, "not a regular file", str(path))
        if not os.access(path, os.R_OK):
            raise PermissionError(13, "permission denied", str(path))


def read_chunks(path: Path, progress: Progress | None) -> Iterator[bytes]:
    """Stream ``path`` in 1 MiB chunks, advancing a progress bar for large files."""
    size = path.stat().st_size
    task = None
    if progress is not None and size > PROGRESS_THRESHOLD:
        task = progress.add_task(path.name, total=size)
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            if task is not None and progress is not None:
                progress.advance(task, len(chunk))
            yield chunk


def new_progress(paths: list[Path]) -> Progress:
    """A progress bar on stderr, enabled only when one of ``paths`` is over the threshold."""
    large = any(p.stat().st_size > PROGRESS_THRESHOLD for p in paths)
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
        transient=True,
        disable=not large,
    )


def read_stdin_text(what: str) -> str:
    """All of stdin decoded as UTF-8 (a BOM dropped); :class:`InvalidInput` naming the bad byte."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None


def start_run(workflow: str | None) -> Run:
    """Bind the CLI identity and the given workflow (if any)."""
    return STATE.binder().start_run(STATE.principal, workflow)


# ---------------------------------------------------------------- commands


@app.command()
@handles_errors
def demo(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Files to run through the bridge (default: shipped samples)."),
    ] = None,
    json_flag: JsonOpt = False,
) -> None:
    """The main job end to end on real files: store, attach, tool text, references back, content."""
    from docbinder.cli.demo import run_demo

    run_demo(STATE, list(files or []), as_json=_json(json_flag))


STDIN = Path("-")


@app.command()
@handles_errors
def attach(
    files: Annotated[list[Path], typer.Argument(help="Files to store and attach ('-': stdin).")],
    workflow: Annotated[
        str | None, typer.Option("--workflow", "-w", help="Workflow id (omit for no workflow).")
    ] = None,
    label: Annotated[
        str | None, typer.Option(help="documents_label (default: writeFile:<name>).")
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="File name to store under (needed for '-'; one file only)."),
    ] = None,
    json_flag: JsonOpt = False,
) -> None:
    """Store FILEs and attach each to the workflow; print the tool-result text.

    Every file is checked (readable, within the size limit, a usable name) and the
    workflow's permission is checked before anything is stored. If storing one file
    still fails, the files before it stay stored and attached, and the error names
    the file that failed and those that were kept. ``-`` reads one file from stdin;
    it needs ``--name``.
    """
    if name is not None and len(files) != 1:
        raise InvalidInput("--name names one file; give exactly one FILE (or '-') with it")
    if STDIN in files and (name is None or len(files) != 1):
        raise InvalidInput("'-' reads one file from stdin and needs --name NAME")
    on_disk = [path for path in files if path != STDIN]
    check_readable(on_disk)
    check_sizes(on_disk, STATE.settings.max_file_size)
    names = {path: name if name is not None else stored_name(path) for path in files}
    run = start_run(workflow)
    if workflow is not None and not run.can_attach():
        raise AccessDenied(
            f"user {run.principal.user_id} may not add documents to workflow {workflow}"
        )
    results: list[ToolFileResult] = []
    as_json = _json(json_flag)
    if workflow is None:
        err.print(
            "note: no --workflow given: files are stored without a documentList reference"
            + (" and --label is not used" if label else "")
        )
    with new_progress(on_disk) as progress:
        for path in files:
            file_name = names[path]
            chunks = read_stdin_chunks() if path == STDIN else read_chunks(path, progress)
            try:
                result = run.produce_file(
                    file_name, chunks, verb="Wrote", label=label or f"writeFile:{file_name}"
                )
            except (DocbinderError, OSError) as exc:
                kept = ", ".join(r.item.file_name for r in results)
                note = f"; stored before it: {kept}" if kept else ""
                if as_json and results:
                    emit_json(results[0] if len(results) == 1 else results)
                shown = "stdin" if path == STDIN else str(path)
                raise DocbinderError(f"{shown}: {exc}{note}") from exc
            results.append(result)
            if not as_json:
                note = "  (duplicate: existing FileItem reused)" if result.duplicate else ""
                out.print(result.text + note)
                wanted = label or f"writeFile:{file_name}"
                if result.label is not None and result.label != wanted:
                    holder = next(
                        (r.item.file_name for r in results[:-1] if r.label == wanted), None
                    )
                    taken = (
                        f"went to {holder!r} earlier in this command"
                        if holder is not None
                        else "is taken in this workflow"
                    )
                    out.print(
                        f"label {wanted!r} {taken}; this file's message is docList:{result.label}"
                    )
    if as_json:
        emit_json(results[0] if len(results) == 1 else results)


def stored_name(path: Path) -> str:
    """The name ``path`` is stored under; :class:`InvalidInput` naming the file if unusable.

    A name that is not valid UTF-8 (decoded by Python with surrogate escapes) cannot
    be stored as text; the message says so and points at ``--name``.
    """
    try:
        return check_file_name(path.name)
    except InvalidInput as exc:
        if any("\udc80" <= ch <= "\udcff" for ch in path.name):
            raise InvalidInput(
                f"the name of {str(path)!r} is not valid UTF-8; "
                "store it under another name with --name NAME"
            ) from None
        raise InvalidInput(
            f"{str(path)!r}: {exc}; store it under another name with --name NAME"
        ) from None


def read_stdin_chunks() -> Iterator[bytes]:
    """Stdin's bytes in 1 MiB chunks."""
    source = sys.stdin.buffer
    while chunk := source.read(1 << 20):
        yield chunk


def check_sizes(paths: list[Path], limit: int | None) -> None:
    """Raise :class:`SizeLimitExceeded` naming the first file over ``limit`` bytes."""
    if limit is None:
        return
    for path in paths:
        if path.stat().st_size > limit:
            raise SizeLimitExceeded(limit, str(path))


@app.command()
@handles_errors
def resolve(
    document_list: Annotated[
        str,
        typer.Argument(help="The documentList as the model sent it (any shape); '-' reads stdin."),
    ],
    workflow: Annotated[str | None, typer.Option("--workflow", "-w", help="Workflow id.")] = None,
    content: Annotated[
        bool,
        typer.Option("--content", help="Also print the content parts a consuming tool receives."),
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Resolve a documentList against the workflow. Exit code 1 if any reference is unresolved."""
    raw = read_stdin_text("the documentList on stdin") if document_list == "-" else document_list
    run = start_run(workflow)
    if content:
        result = run.get_content(raw)
        unresolved = result.unresolved
        if _json(json_flag):
            emit_json(result)
        else:
            from docbinder.cli.demo import print_content, print_resolution

            print_resolution(result.resolution)
            print_content(result)
    else:
        resolution = run.resolve(raw)
        unresolved = resolution.unresolved
        if _json(json_flag):
            emit_json(resolution)
        else:
            from docbinder.cli.demo import print_resolution

            print_resolution(resolution)
            if not resolution.references:
                out.print("nothing to resolve: the documentList holds no references")
    if unresolved:
        from docbinder.application.use_cases.resolve_document_list import UnresolvedReason

        hint = ""
        if workflow is None and all(
            u.reason is UnresolvedReason.NO_ACTIVE_WORKFLOW for u in unresolved
        ):
            hint = (
                ": references resolve within a workflow; give it with --workflow WORKFLOW_ID "
                "(docbinder workflow ls lists the workflow ids)"
            )
        fail(f"{len(unresolved)} reference(s) unresolved{hint}")
        raise typer.Exit(1)


@workflow_app.command("new")
@handles_errors
def workflow_new(json_flag: JsonOpt = False) -> None:
    """Create a workflow for the current identity; print its id."""
    wf = STATE.binder().create_workflow(STATE.principal)
    if _json(json_flag):
        emit_json({"id": wf.id, "workflow": wf})
    else:
        out.print(wf.id)


@workflow_app.command("show")
@handles_errors
def workflow_show(workflow_id: str, json_flag: JsonOpt = False) -> None:
    """Show a workflow's messages and their documents."""
    binder = STATE.binder()
    wf = binder.get_workflow(STATE.principal, workflow_id)
    messages = binder.list_messages(STATE.principal, workflow_id)
    deleted = binder.find_deleted_files(STATE.principal, messages)
    if _json(json_flag):
        import attrs

        from docbinder.serialization import to_wire

        shown = to_wire(attrs.evolve(wf, messages=tuple(messages)))
        for msg in shown["messages"]:
            for doc in msg["documents"]:
                doc["fileDeleted"] = doc["fileId"] in deleted
        emit_json(shown)
        return
    out.print(f"workflow {wf.id}  scope {wf.scope}  owner {wf.created_by}  status {wf.status}")
    out.print(f"now at {wf.counters}")
    # One block per message rather than a table: a reference (44 characters)
    # and a label stay whole and readable at any terminal width.
    for msg in messages:
        out.print(
            f"#{msg.sequence_nr}  docList:{msg.documents_label}"
            f"  (round {msg.round_number}, task {msg.task_number}, action {msg.action_number})"
        )
        for doc in msg.documents:
            gone = "  [file deleted: resolves as file_missing]" if doc.file_id in deleted else ""
            out.print(
                f"    {doc.reference}  {doc.file_name}  ({doc.file_size} bytes, {doc.mime_type}){gone}"
            )
    if not messages:
        out.print("no messages yet")


_LEVEL_HELP = "Set the {} to this number (lower levels not given become 0)."


@workflow_app.command("advance")
@handles_errors
def workflow_advance(
    workflow_id: str,
    round_: Annotated[
        int | None, typer.Option("--round", min=0, help=_LEVEL_HELP.format("round"))
    ] = None,
    task: Annotated[int | None, typer.Option(min=0, help=_LEVEL_HELP.format("task"))] = None,
    action: Annotated[int | None, typer.Option(min=0, help=_LEVEL_HELP.format("action"))] = None,
    next_level: Annotated[
        str | None,
        typer.Option(
            "--next",
            help="Start the next round, task or action (one more; the levels below back to 0;"
            " any case).",
            metavar="round|task|action",
        ),
    ] = None,
    json_flag: JsonOpt = False,
) -> None:
    """Move a workflow's round, task or action forward; print where it is now.

    Documents attached afterwards carry the new numbers. Numbers never go back:
    a change behind the current ones is refused and nothing changes (exit code 1).
    """
    absolute = (round_, task, action) != (None, None, None)
    if absolute and next_level is not None:
        fail("give --next or --round/--task/--action, not both")
        raise typer.Exit(2)
    if not absolute and next_level is None:
        fail("give --next round|task|action or at least one of --round, --task, --action")
        raise typer.Exit(2)
    if next_level is not None and next_level.strip().lower() not in ("round", "task", "action"):
        fail(f"--next must be round, task or action, got {next_level!r}")
        raise typer.Exit(2)
    run = start_run(workflow_id)
    if next_level is not None:
        step = CounterStep.next(next_level.strip().lower())
    else:
        step = CounterStep.to(round=round_, task=task, action=action)
    counters = run.binder.advance_counters(run.context, step)
    if _json(json_flag):
        emit_json(
            {
                "id": workflow_id,
                "currentRound": counters.round,
                "currentTask": counters.task,
                "currentAction": counters.action,
            }
        )
    else:
        out.print(f"workflow {workflow_id} now at {counters}")


@workflow_app.command("ls")
@handles_errors
def workflow_ls(json_flag: JsonOpt = False) -> None:
    """List the workflows of the current mandate that the identity may read."""
    workflows = STATE.binder().list_workflows(STATE.principal)
    if _json(json_flag):
        # The listing reads no messages: leave the field out rather than show it empty
        # (``workflow show ID --json`` has them).
        from docbinder.serialization import to_wire

        emit_json([{k: v for k, v in to_wire(wf).items() if k != "messages"} for wf in workflows])
        return
    # Creation times are UTC (the model refuses others); without the offset they take 19
    # columns and stay on one line at 80 columns next to the 36 of the id.
    table = Table("id", "scope", "owner", "created (UTC)", whole=("created (UTC)",))
    for wf in workflows:
        table.add_row(
            wf.id, str(wf.scope), wf.created_by, wf.created_at.strftime("%Y-%m-%d %H:%M:%S")
        )
    out.print(table)


@files_app.command("ls")
@handles_errors
def files_ls(
    limit: Annotated[int, typer.Option(help="At most this many files.")] = 100,
    json_flag: JsonOpt = False,
) -> None:
    """List the files the identity may read, newest first."""
    items = STATE.binder().list_files(STATE.principal, limit=limit)
    if _json(json_flag):
        emit_json(items)
        return
    # One line per file, id first, so ids stay whole at any width (as in ``workflow show``).
    for item in items:
        out.print(
            f"{item.id}  {item.file_name}  ({item.size} bytes, {item.mime_type})  "
            f"scope {item.scope}  by {item.created_by}"
        )
    if not items:
        out.print("no files")


_REFERENCE_PREFIXES = (
    "docitem",
    "doc_item",
    "doc-item",
    "doclist",
    "doc_list",
    "doc-list",
    "file:",
)

WorkflowOpt = Annotated[
    str | None,
    typer.Option(
        "--workflow",
        "-w",
        help="Workflow a docItem:<id> or docList:<label> reference is resolved in.",
    ),
]


def file_id_of(text: str, workflow: str | None, command: str) -> str:
    """The FileItem id that ``text`` names for ``docbinder files <command>``.

    ``text`` is a file id, ``file:<id>``, or one document reference in any shape the
    documentList parser reads (``docItem:<id>``, ``docList:<label>``, also quoted,
    bracketed or in odd case; :mod:`docbinder.domain.parsing`). A document reference
    names a ChatDocument of one workflow, so it is resolved in ``workflow`` with the
    CLI identity, as ``docbinder resolve`` would, and gives the id of its file. Text
    that holds no reference is taken as a file id as it is.

    Raises :class:`InvalidInput` for several references, an unusable one, a
    ``docList`` whose documents point at several files, or a document reference
    without ``workflow`` (the message names the command to run);
    :class:`~docbinder.domain.errors.WorkflowNotFound`, :class:`AccessDenied` or
    :class:`NotFound` when the reference does not resolve in the workflow.
    """
    from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
    from docbinder.domain.errors import NotFound
    from docbinder.domain.parsing import coerce_document_references
    from docbinder.domain.references import DocumentItemReference, FileReference

    stripped = text.strip()
    parsed = coerce_document_references(stripped)
    prefixed = stripped.lower().lstrip("[(<{'\"`* ").startswith(_REFERENCE_PREFIXES)
    if len(parsed.references) != 1 or parsed.rejected:
        if not prefixed:
            return text  # no reference in it: a file id, looked up as given
        raise InvalidInput(
            f"{stripped} is not one file id or document reference; give a file id, "
            "file:<id>, docItem:<id> or docList:<label>"
        )
    [reference] = parsed.references
    if isinstance(reference, FileReference):
        return reference.file_id
    if isinstance(reference, DocumentItemReference) and reference.bare:
        return text  # a bare id: the file id the tool-result block shows next to it
    if workflow is None:
        import shlex

        raise InvalidInput(
            f"{reference} is a document reference, resolved within its workflow: run "
            f"docbinder files {command} {shlex.quote(str(reference))} --workflow WORKFLOW_ID "
            "(docbinder workflow ls lists the workflow ids)"
        )
    resolution = start_run(workflow).resolve(str(reference))
    if resolution.unresolved:
        miss = resolution.unresolved[0]
        error = AccessDenied if miss.reason is UnresolvedReason.ACCESS_DENIED else NotFound
        raise error(f"{reference} in workflow {workflow}: {miss.message}")
    file_ids = list(dict.fromkeys(resolved.file.id for resolved in resolution.documents))
    if len(file_ids) != 1:
        raise InvalidInput(
            f"{reference} names documents of {len(file_ids)} files in workflow {workflow} "
            f"({', '.join(file_ids)}); give one of these file ids"
        )
    return file_ids[0]


@files_app.command("show")
@handles_errors
def files_show(file_id: str, workflow: WorkflowOpt = None, json_flag: JsonOpt = False) -> None:
    """Show one file's metadata.

    FILE_ID is a file id, ``file:<id>``, or a ``docItem:<id>`` / ``docList:<label>``
    reference with --workflow.
    """
    item = STATE.binder().get_file(STATE.principal, file_id_of(file_id, workflow, "show"))
    if _json(json_flag):
        emit_json(item)
        return
    from docbinder.serialization import to_wire

    for key, value in to_wire(item).items():
        out.print(
            f"{key:>10}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}"
        )


@files_app.command("cat")
@handles_errors
def files_cat(file_id: str, workflow: WorkflowOpt = None, json_flag: JsonOpt = False) -> None:
    """Write one file's bytes to stdout (``--json``: metadata and base64 ``data`` in one document).

    FILE_ID as for ``files show``.
    """
    binder = STATE.binder()
    file_id = file_id_of(file_id, workflow, "cat")
    if _json(json_flag):
        import base64

        item = binder.get_file(STATE.principal, file_id)
        with binder.open_file(STATE.principal, file_id) as chunks:
            data = b"".join(chunks)
        emit_json({"file": item, "base64": base64.b64encode(data).decode("ascii")})
        return
    sink: BinaryIO = sys.stdout.buffer
    with binder.open_file(STATE.principal, file_id) as chunks:
        for chunk in chunks:
            sink.write(chunk)
    sink.flush()


@files_app.command("rm")
@handles_errors
def files_rm(
    file_id: str,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even if workflow documents refer to the file (they then "
            "resolve as file_missing).",
        ),
    ] = False,
    workflow: WorkflowOpt = None,
    json_flag: JsonOpt = False,
) -> None:
    """Delete one file (metadata, then its blob); refuses while documents refer to it.

    FILE_ID as for ``files show``; a document reference deletes the file it points at.
    """
    file_id = file_id_of(file_id, workflow, "rm")
    binder = STATE.binder()
    references = binder.count_file_references(STATE.principal, file_id)
    item = binder.delete_file(STATE.principal, file_id, force=force)
    if _json(json_flag):
        emit_json({"deleted": item.id, "references": references})
        return
    out.print(f"deleted {item.id} ({item.file_name})")
    if references:
        err.print(
            f"warning: {references} document(s) in workflows referred to it; they now resolve "
            "as file_missing and `workflow show` marks them"
        )


@app.command()
@handles_errors
def gc(
    apply: Annotated[
        bool, typer.Option("--apply", help="Remove what is found (without it: a dry run).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would be removed (the default).")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Apply even when the run looks like a configuration mistake (an empty "
            "database or store, more than half of the rows or blobs at once, a lost store "
            "identity or registration). Never lowers the grace floor.",
        ),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            help="Keep orphan blobs, temp files and unfinished uploads younger than this many "
            "seconds, and remove a FileItem without blob only once it was marked at least this "
            "long ago; a store still running may own them, so keep it above your longest upload. "
            "--apply refuses less than 300 s unless --below-grace-floor."
        ),
    ] = 3600.0,
    below_grace_floor: Annotated[
        bool,
        typer.Option(
            "--below-grace-floor",
            help="Allow --grace below 300 s with --apply: only while no docbinder process "
            "stores or updates files in this blob store (a running store can lose its file).",
        ),
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Find orphan blobs and FileItems without blob of the connected store; --apply removes them.

    Never creates or migrates a database. Considers only FileItems recorded
    in the connected blob store and only keys of docbinder's own layout. A
    FileItem without blob is marked first and removed by a later --apply after
    the grace period. Removes only blobs whose mark proves this store wrote
    them for this database, and never one the store records as committed (a
    FileItem named it once: reported). Refuses (exit 1) when the removal looks like a
    wrong setting, unless --force, and a grace below 300 s unless
    --below-grace-floor.
    """
    import math

    from docbinder.application.use_cases.collect_garbage import (
        COMMITTED_ORPHANS_HINT,
        MIN_GRACE_SECONDS,
    )
    from docbinder.cli.setup import (
        abort_stale_uploads,
        check_database_ready,
        remove_stale_temp_files,
    )

    if not math.isfinite(grace) or grace < 0:
        raise InvalidInput(f"--grace must be a finite number of seconds >= 0, got {grace}")
    if apply and dry_run:
        raise InvalidInput("--apply and --dry-run contradict each other: give one")
    if force and not apply:
        err.print("note: --force takes effect only with --apply; this is a dry run", markup=False)
    check_database_ready(STATE.settings)
    binder = STATE.binder(prepare=False)
    report = binder.collect_garbage(
        dry_run=not apply,
        grace_seconds=grace,
        force=force,
        allow_short_grace=below_grace_floor,
    )
    temp = remove_stale_temp_files(binder.blobs, grace, dry_run=not apply)
    uploads = abort_stale_uploads(binder.blobs, grace, dry_run=not apply)
    # Cached extractions only hold what can be extracted again: pruning the
    # entries of hashes no FileItem has never loses data.
    pruned = (
        binder.prune_extraction_cache(dry_run=not apply)
        if binder.prune_extraction_cache is not None
        else None
    )
    stale_cache = len(pruned.stale_hashes) if pruned is not None else 0
    if _json(json_flag):
        emit_json(
            {
                "dryRun": report.dry_run,
                "orphanBlobs": list(report.orphan_blobs),
                "youngBlobs": list(report.young_blobs),
                "orphanRows": list(report.orphan_rows),
                "markedRows": list(report.marked_rows),
                "staleTempFiles": temp,
                "staleUploads": uploads,
                "staleCacheEntries": stale_cache,
                "bytesFreed": report.bytes_freed,
                "storeId": report.store_id,
                "otherStoreRows": dict(report.foreign_rows),
                "unattributedRows": report.unattributed_rows,
                "adoptedRows": report.adopted_rows,
                "otherKeys": report.other_keys,
                "refusal": report.refusal,
                "forced": report.forced,
                "otherDatabaseBlobs": report.other_database_blobs,
                "unprovenBlobs": list(report.unproven_blobs),
                "displacedRows": dict(report.displaced_rows),
                "belowGraceFloor": report.short_grace,
                "formerDatabaseBlobs": report.former_database_blobs,
                "databaseMoved": report.database_moved,
                "storeMoved": report.store_moved,
                "locationChecked": report.location_checked,
                "committedBlobs": list(report.committed_blobs),
            }
        )
        return
    if report.dry_run:
        out.print("dry run: nothing was changed (`docbinder gc --apply` removes)")
    verb = "would remove" if report.dry_run else "removed"
    out.print(
        f"{verb} {len(report.orphan_blobs)} orphan blob(s) ({report.bytes_freed} bytes), "
        f"{len(report.orphan_rows)} FileItem(s) without blob, {len(temp)} stale temp file(s), "
        f"{len(uploads)} unfinished upload(s), {stale_cache} cached extraction(s) of "
        f"content no FileItem has; kept {len(report.young_blobs)} orphan blob(s) "
        f"younger than {grace:g} s"
    )
    for key in report.orphan_blobs:
        out.print(f"  blob {key}")
    for file_id in report.orphan_rows:
        out.print(f"  file {file_id}")
    if report.marked_rows:
        out.print(
            f"{'would mark' if report.dry_run else 'marked'} {len(report.marked_rows)} "
            f"FileItem(s) whose blob is missing; a later `gc --apply` removes them once marked "
            f"for {grace:g} s, if the blob is still missing:"
        )
        for file_id in report.marked_rows:
            out.print(f"  file {file_id}")
    for store, count in report.foreign_rows:
        out.print(f"not touched: {count} FileItem(s) of another blob store ({store})")
    if report.unattributed_rows:
        out.print(
            f"not touched: {report.unattributed_rows} older FileItem(s) whose blob is not in "
            f"{binder.blobs.url} (they may belong to another store)"
        )
    if report.other_keys:
        out.print(
            f"not touched: {report.other_keys} object(s) in {binder.blobs.url} that "
            "docbinder did not write"
        )
    if report.other_database_blobs:
        out.print(
            f"not touched: {report.other_database_blobs} blob(s) written by another metadata "
            "database sharing this store (its own gc collects them)"
        )
    if report.former_database_blobs:
        out.print(
            f"not touched: {report.former_database_blobs} blob(s) marked with an id this "
            "database had before it was copied or moved (the database it was copied from "
            "may still use them)"
        )
    if report.database_moved:
        out.print(
            "note: this database was copied or moved since its last write: it gets a new "
            "database id on the next write"
        )
    if report.unproven_blobs:
        out.print(
            f"not touched: {len(report.unproven_blobs)} file(s) in docbinder's layout that this "
            "store cannot prove it wrote (no or another store's provenance mark: put there by "
            "something else, copied without their marks, or written before marks existed; "
            "or a compact mark of a database not registered in this store):"
        )
        for key in report.unproven_blobs:
            out.print(f"  blob {key}")
    if report.committed_blobs:
        out.print(
            f"not touched: {len(report.committed_blobs)} blob(s) this database committed are "
            f"named by no FileItem: {COMMITTED_ORPHANS_HINT}:"
        )
        for key in report.committed_blobs:
            out.print(f"  blob {key}")
    if report.refusal and report.dry_run:
        err.print(f"warning: `gc --apply` would refuse: {report.refusal}")
    if report.forced:
        err.print(f"note: --force overrode: {report.refusal}")
    if report.short_grace:
        err.print(
            f"note: --below-grace-floor: ran with a grace of {grace:g} s, below the floor of "
            f"{MIN_GRACE_SECONDS} s"
        )
    elif report.dry_run and grace < MIN_GRACE_SECONDS:
        err.print(
            f"warning: `gc --apply --grace {grace:g}` would refuse: below the floor of "
            f"{MIN_GRACE_SECONDS} s (--below-grace-floor, only while nothing writes)"
        )


@store_app.command("adopt")
@handles_errors
def store_adopt(
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Adopt even when FileItems of this store have no blob in it (it then is "
            "not a whole move of the store).",
        ),
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Accept the blob store at blob_url, where it is now, as the store of its identity.

    Only for a store moved on purpose (copied to a new disk, bucket or prefix
    and the old place retired): writes, deletes and gc then trust it again.
    Refuses when the store has no identity, and, unless --force, when
    FileItems of the store have no blob in it (an older copy or backup).
    """
    from docbinder.application.steps.store_registration import AdoptStoreLocation
    from docbinder.cli.setup import check_database_ready

    check_database_ready(STATE.settings)
    binder = STATE.binder(prepare=False)
    adoption = AdoptStoreLocation(binder.uow_factory, binder.blobs)(force=force)
    if _json(json_flag):
        emit_json(
            {
                "storeId": adoption.store_id,
                "url": adoption.url,
                "previous": adoption.previous,
                "location": adoption.location,
                "missingBlobs": adoption.missing_blobs,
            }
        )
        return
    if adoption.previous == adoption.location:
        out.print(f"blob store {adoption.url} ({adoption.store_id}) was already at this location")
    else:
        out.print(
            f"adopted blob store {adoption.url} ({adoption.store_id}) at its current location"
        )
    if adoption.missing_blobs:
        err.print(
            f"note: --force: {adoption.missing_blobs} FileItem(s) of this store have no blob "
            "in it; `docbinder gc` (a dry run) lists them"
        )


@app.command()
@handles_errors
def migrate(json_flag: JsonOpt = False) -> None:
    """Create or upgrade the metadata schema (Alembic migrations)."""
    from docbinder.container import run_migrations

    revision = run_migrations(STATE.settings)
    if _json(json_flag):
        emit_json({"revision": revision})
    else:
        out.print(f"schema at revision {revision}")


@app.command()
@handles_errors
def doctor(json_flag: JsonOpt = False) -> None:
    """Diagnose configuration, storage and the known failure modes. Exit code 1 if a check fails."""
    from docbinder.cli.doctor import run_doctor

    checks = run_doctor(STATE)
    failed = [c for c in checks if c.status == "fail"]
    if _json(json_flag):
        emit_json({"ok": not failed, "checks": [c.as_dict() for c in checks]})
    else:
        for check in checks:
            colour = {"ok": "green", "warn": "yellow", "fail": "red"}[check.status]
            line = styled(f"{check.status:>4}", colour)
            line.append(" " + clean(f"{check.name}: {check.detail}", multiline=False))
            out.print(line)
            if check.status != "ok" and check.guards:
                out.print(f"       (if this fails: {check.guards})")
    if failed:
        raise typer.Exit(1)


@app.command()
@handles_errors
def mcp(
    transport: Annotated[
        str, typer.Option(help="stdio (default; one session per process) or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="HTTP host to bind; anything but loopback needs --tokens.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workflow: Annotated[
        str | None,
        typer.Option(
            "--workflow", "-w", help="Join this workflow (default: a new workflow per session)."
        ),
    ] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(
            envvar="DOCBINDER_MCP_TOKENS",
            help="TOML file of bearer token hashes and their principals (HTTP only).",
        ),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="Data source NAME=DIRECTORY for download_from_data_source (repeatable)."),
    ] = None,
    image_url: Annotated[
        str | None,
        typer.Option(
            envvar="DOCBINDER_IMAGE_URL",
            help="OpenAI-compatible images API root (enables generate_image); "
            "key from DOCBINDER_IMAGE_API_KEY.",
        ),
    ] = None,
    image_model: Annotated[
        str, typer.Option(envvar="DOCBINDER_IMAGE_MODEL", help="Image model name.")
    ] = "dall-e-2",
) -> None:
    """Serve the docbinder tools and the workflow's documents over MCP (needs the mcp extra: pip install 'docbinder\\[mcp]')."""
    import anyio

    from docbinder.integrations.mcp import BearerTokens, DocbinderMcpServer, check_http_host
    from docbinder.tools import LocalDirectorySource, OpenAICompatibleImageGenerator

    if transport not in ("stdio", "streamable-http"):
        raise InvalidInput(f"--transport must be stdio or streamable-http, got {transport!r}")
    if transport == "stdio" and tokens is not None:
        raise InvalidInput("--tokens applies to --transport streamable-http only")
    if not 0 < port < 65536:
        raise InvalidInput(f"--port must be from 1 to 65535, got {port}")
    sources = {}
    for entry in source or []:
        name, sep, directory = entry.partition("=")
        if not sep or not name.strip() or not directory:
            raise InvalidInput(f"--source must look like NAME=DIRECTORY, got {entry!r}")
        sources[name.strip()] = LocalDirectorySource(Path(directory).expanduser())
    generator = None
    if image_url:
        generator = OpenAICompatibleImageGenerator(
            image_url, os.environ.get("DOCBINDER_IMAGE_API_KEY"), model=image_model
        )
    token_map = BearerTokens.load(tokens) if tokens is not None else None
    server = DocbinderMcpServer(
        STATE.binder(),
        STATE.principal,
        workflow_id=workflow,
        data_sources=sources,
        image_generator=generator,
    )
    if workflow is not None and token_map is None:
        STATE.binder().get_workflow(STATE.principal, workflow)  # fail now, not at the first call
    # MCP clients start the server with a few environment variables only, so the store
    # it serves may not be the one the user's shell gives the CLI: the first line of its
    # log (stderr, which clients keep) names it.
    from docbinder.cli.doctor import masked_url

    store = f"metadata {masked_url(STATE.settings.database_url)}, blobs {STATE.binder().blobs.url}"
    who = (
        "bearer-token principals"
        if token_map
        else f"user {STATE.principal.user_id} of mandate {STATE.principal.mandate_id}"
    )
    about = f"as {who}; {store}; workflow: {workflow or 'a new one per session'}"
    if transport == "stdio":
        err.print(f"docbinder MCP server on stdio {about}", markup=False)
        _exit_on_interrupt()
        anyio.run(server.run_stdio)
        return
    check_http_host(host, token_map)
    shown = f"[{host}]" if ":" in host else host
    err.print(f"docbinder MCP server on http://{shown}:{port}/mcp {about}", markup=False)
    from docbinder.integrations.httpguard import HttpLimits

    server.run_http(
        host=host, port=port, tokens=token_map, limits=HttpLimits.from_settings(STATE.settings)
    )


def _exit_on_interrupt() -> None:
    """Make Ctrl-C (SIGINT) end the stdio server at once, with exit status 130.

    The stdio transport reads standard input in a worker thread that a
    ``KeyboardInterrupt`` cannot stop: the process would wait for the next
    line or the end of input. A tool call cut off this way is what a killed
    process leaves (a temp file or an unnamed blob that ``gc`` removes,
    never a FileItem without its blob: SPEC section 5).
    """
    import signal

    def stop(_signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(2, b"error: interrupted\n")
        os._exit(130)

    signal.signal(signal.SIGINT, stop)


def run() -> None:
    """Console-script entry point."""
    app()
