"""``docbinder attach``: store files and attach each to a workflow (SPEC C1-C3, C5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docbinder.cli.common import JsonOpt, handles_errors, refuse_attach
from docbinder.cli.inputs import (
    STDIN,
    check_readable,
    check_sizes,
    new_progress,
    read_chunks,
    read_stdin_chunks,
    stored_name,
)
from docbinder.cli.output import emit_json, err, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import DocbinderError, InvalidInput
from docbinder.domain.model import Provenance

if TYPE_CHECKING:
    from docbinder.application import Run, ToolFileResult

CLI_TOOL = "docbinder attach"
"""The tool ``attach`` records as the files' producer unless ``--tool`` names another."""


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
    tool: Annotated[
        str,
        typer.Option(help="Provenance: the tool that produced the files (default: this command)."),
    ] = CLI_TOOL,
    tool_call_id: Annotated[
        str | None, typer.Option(help="Provenance: the host's id of that tool call.")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Provenance: the model that asked for the call.")
    ] = None,
    parent: Annotated[
        list[str] | None,
        typer.Option(help="Provenance: id of a file these were made from (repeatable)."),
    ] = None,
    json_flag: JsonOpt = False,
) -> None:
    """Store FILEs and attach each to the workflow; print the tool-result text.

    Each FileItem records its provenance (``files show --json``): ``--tool``
    (default ``docbinder attach``), ``--tool-call-id``, ``--model``, the
    ``--parent`` files, the run and workflow of this command.

    Every file is checked (readable, within the size limit, a usable name) and the
    workflow's permission is checked before anything is stored. If storing one file
    still fails, the files before it stay stored and attached, and the error names
    the file that failed and those that were kept. ``-`` reads one file from stdin;
    it needs ``--name``.
    """
    names = _checked_names(files, name)
    provenance = Provenance(
        tool=tool, tool_call_id=tool_call_id, model=model, parents=tuple(parent or ())
    )
    run = _attaching_run(workflow)
    as_json = STATE.wants_json(json_flag)
    if workflow is None:
        err.print(
            "note: no --workflow given: files are stored without a documentList reference"
            + (" and --label is not used" if label else "")
        )
    on_disk = [path for path in files if path != STDIN]
    results: list[ToolFileResult] = []
    with new_progress(on_disk) as progress:
        for path in files:
            chunks = read_stdin_chunks() if path == STDIN else read_chunks(path, progress)
            result = _store_one(run, path, names[path], chunks, label, results, as_json, provenance)
            results.append(result)
            if not as_json:
                _print_result(result, label or f"writeFile:{names[path]}", results[:-1])
    if as_json:
        emit_json(results[0] if len(results) == 1 else results)


def _checked_names(files: list[Path], name: str | None) -> dict[Path, str]:
    """The name each FILE is stored under, once every file passed the checks (nothing stored yet).

    Raises :class:`InvalidInput` for a misused ``--name`` or ``-``, an unusable
    name; ``OSError`` for an unreadable file; :class:`SizeLimitExceeded` for one
    over ``max_file_size``.
    """
    if name is not None and len(files) != 1:
        raise InvalidInput("--name names one file; give exactly one FILE (or '-') with it")
    if STDIN in files and (name is None or len(files) != 1):
        raise InvalidInput("'-' reads one file from stdin and needs --name NAME")
    on_disk = [path for path in files if path != STDIN]
    check_readable(on_disk)
    check_sizes(on_disk, STATE.settings.max_file_size)
    return {path: name if name is not None else stored_name(path) for path in files}


def _attaching_run(workflow: str | None) -> Run:
    """The run to attach in; :class:`AccessDenied` before anything is stored if it may not add."""
    run = STATE.start_run(workflow)
    if workflow is not None:
        refuse_attach(run, workflow)
    return run


def _store_one(
    run: Run,
    path: Path,
    file_name: str,
    chunks: Iterator[bytes],
    label: str | None,
    kept: list[ToolFileResult],
    as_json: bool,
    provenance: Provenance,
) -> ToolFileResult:
    """Store and attach one file; a failure names the file and those ``kept`` before it.

    With ``as_json`` the results kept so far are printed before the error, so a
    script still learns their ids.
    """
    try:
        return run.produce_file(
            file_name,
            chunks,
            verb="Wrote",
            label=label or f"writeFile:{file_name}",
            provenance=provenance,
        )
    except (DocbinderError, OSError) as exc:
        names = ", ".join(r.item.file_name for r in kept)
        note = f"; stored before it: {names}" if names else ""
        if as_json and kept:
            emit_json(kept[0] if len(kept) == 1 else kept)
        shown = "stdin" if path == STDIN else str(path)
        raise DocbinderError(f"{shown}: {exc}{note}") from exc


def _print_result(result: ToolFileResult, wanted: str, earlier: list[ToolFileResult]) -> None:
    """The tool-result text, and where the label went when ``wanted`` was taken."""
    note = "  (duplicate: existing FileItem reused)" if result.duplicate else ""
    out.print(result.text + note)
    if result.label is None or result.label == wanted:
        return
    holder = next((r.item.file_name for r in earlier if r.label == wanted), None)
    taken = (
        f"went to {holder!r} earlier in this command"
        if holder is not None
        else "is taken in this workflow"
    )
    out.print(f"label {wanted!r} {taken}; this file's message is docList:{result.label}")
