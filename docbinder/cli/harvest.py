"""``docbinder harvest`` and ``docbinder materialize``: files out of and into a sandbox's directory (ADR 0100)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from docbinder.cli.common import JsonOpt, handles_errors, refuse_attach
from docbinder.cli.inputs import read_stdin_text
from docbinder.cli.output import emit_json, err, fail, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import InvalidInput


@handles_errors
def harvest(
    directory: Annotated[Path, typer.Argument(help="The output directory the sandbox wrote into.")],
    workflow: Annotated[str, typer.Option("--workflow", "-w", help="Workflow id.")],
    mount: Annotated[
        str | None,
        typer.Option(help="The path the sandbox sees DIRECTORY as (e.g. /mnt/data)."),
    ] = None,
    sandbox_id: Annotated[
        str | None, typer.Option(help="Provenance: the sandbox's id (default: local:<DIRECTORY>).")
    ] = None,
    tool_call_id: Annotated[
        str | None, typer.Option(help="Provenance: the tool call that ran the code.")
    ] = None,
    settle: Annotated[
        float,
        typer.Option(help="Seconds a file must be unmodified to count as written (default 0)."),
    ] = 0.0,
    json_flag: JsonOpt = False,
) -> None:
    """Attach every new or changed file under DIRECTORY to the workflow, with its sandbox path.

    Files whose bytes the workflow already holds under the same path are not
    attached again. Symbolic links, special files, names with control
    characters, files over ``max_file_size`` and files still being written are
    refused and listed. Exit code 1 if any file was refused.
    """
    from docbinder.harvest import LocalOutputDir
    from docbinder.harvest import harvest as harvest_files

    if not directory.is_dir():
        raise InvalidInput(f"{directory} is not a directory")
    run = STATE.start_run(workflow)
    refuse_attach(run, workflow)
    source = LocalOutputDir(directory, mount=mount, sandbox_id=sandbox_id or "")
    report = harvest_files(run, source, tool_call_id=tool_call_id, settle_seconds=settle)
    if STATE.wants_json(json_flag):
        payload: dict[str, Any] = {
            "sandboxId": report.sandbox_id,
            "harvested": [
                {
                    "path": f.path,
                    "documentRef": f.reference,
                    "fileId": f.result.item.id,
                    "sha256": f.result.item.sha256,
                    "size": f.result.item.size,
                }
                for f in report.harvested
            ],
            "unchanged": [
                {"path": h.path, "documentRef": h.reference, "fileId": h.file_id}
                for h in report.held
            ],
            "refused": [{"path": r.path, "reason": r.reason} for r in report.refused],
        }
        emit_json(payload)
    else:
        out.print(report.text)
    if report.refused:
        fail(f"{len(report.refused)} file(s) refused")
        raise typer.Exit(1)


@handles_errors
def materialize(
    document_list: Annotated[
        str,
        typer.Argument(help="The documentList as the model sent it (any shape); '-' reads stdin."),
    ],
    directory: Annotated[
        Path, typer.Argument(help="The sandbox's input directory (made when it is missing).")
    ],
    workflow: Annotated[str, typer.Option("--workflow", "-w", help="Workflow id.")],
    max_bytes: Annotated[
        int, typer.Option(help="Budget: bytes written in all (default 256 MiB).")
    ] = 256 << 20,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace regular files of the same name.")
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Write the files a documentList names into DIRECTORY under safe names, within a byte budget.

    Exit code 1 if any reference was unresolved or any file refused (each is listed).
    """
    from docbinder.harvest import materialize as write_files

    raw = read_stdin_text("the documentList on stdin") if document_list == "-" else document_list
    run = STATE.start_run(workflow)
    if not directory.exists() and not directory.is_symlink():
        directory.mkdir(parents=True)
    report = write_files(run, raw, directory, max_total_bytes=max_bytes, overwrite=overwrite)
    if STATE.wants_json(json_flag):
        emit_json(
            {
                "directory": report.directory,
                "written": [
                    {
                        "name": w.name,
                        "size": w.size,
                        "fileId": w.file_id,
                        "documentRef": w.reference,
                    }
                    for w in report.written
                ],
                "refused": [
                    {"reference": r.reference, "reason": r.reason, "name": r.name}
                    for r in report.refused
                ],
            }
        )
    else:
        out.print(
            f"wrote {len(report.written)} file(s), {report.total_bytes} bytes, into {report.directory}",
        )
        for w in report.written:
            out.print(f"  {w.name} ({w.size} bytes) <- {w.reference}")
        for r in report.refused:
            out.print(f"  {r.reference}: refused, {r.reason}")
    if report.refused:
        fail(f"{len(report.refused)} reference(s) not written")
        raise typer.Exit(1)
    if not report.written:
        err.print(
            "note: nothing to materialize: the documentList holds no references",
            markup=False,
            highlight=False,
        )
