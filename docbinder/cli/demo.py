"""``docbinder demo``: the main job end to end on real files.

1. A workflow is created and bound to the run (SPEC C4).
2. Each file goes through a file-producing tool path: store -> duplicate
   check -> attach -> the unified tool-result text (C1, C2, C3, C5).
3. The references are fed back in the four shapes models send (list of
   strings, list of dicts, dict wrapper, single string) plus a sloppy one
   (a markdown code fence, odd case, trailing punctuation) and resolved (C6, C7).
4. What a consuming tool receives is printed: documents and content parts (C8).
"""

from __future__ import annotations

import json
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.inputs import check_readable, check_sizes, new_progress, read_chunks
from docbinder.cli.output import Table, clean, emit_json, out
from docbinder.cli.render import print_content
from docbinder.cli.state import STATE, State
from docbinder.domain.model import check_file_name

if TYPE_CHECKING:
    from docbinder.application import ContentResult, Resolution, Run, ToolFileResult

SAMPLES = (
    "quarterly-report.md",
    "sales.csv",
    "platform-overview.html",
    "project-brief.pdf",
    "revenue-chart.png",
)


def sample_paths() -> list[Path]:
    """Paths of the sample files shipped inside the package."""
    root = files("docbinder") / "samples"
    paths = []
    for name in SAMPLES:
        with as_file(root / name) as path:
            paths.append(Path(path))
    return paths


def shapes(results: list[ToolFileResult]) -> list[tuple[str, Any]]:
    """The documentList shapes a model sends back, built from the tool results."""
    refs = [r.reference for r in results if r.reference]
    ids = [r.document_id for r in results if r.document_id]
    fence = (
        "```json\n" + json.dumps([ref.replace("docItem:", "DOCITEM: ") for ref in refs]) + "\n```."
    )
    return [
        ("list of strings", refs),
        (
            "list of dicts",
            [{"id": i, "name": r.item.file_name} for i, r in zip(ids, results, strict=False)],
        ),
        ("dict wrapper", {"documents": [{"id": i} for i in ids]}),
        ("single string", refs[0] if refs else ""),
        ("sloppy (code fence, odd case)", fence),
    ]


@handles_errors
def demo(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Files to run through the bridge (default: shipped samples)."),
    ] = None,
    json_flag: JsonOpt = False,
) -> None:
    """The main job end to end on real files: store, attach, tool text, references back, content."""
    run_demo(STATE, list(files or []), as_json=STATE.wants_json(json_flag))


Round = tuple[str, Any, "Resolution"]
"""One documentList shape: its name, the value sent, and what it resolved to."""


def run_demo(state: State, paths: list[Path], *, as_json: bool) -> None:
    """Run the demo for ``paths`` (or the shipped samples) and print the result.

    Every file is checked (readable, within ``max_file_size``, a usable name)
    before anything is stored.
    """
    paths = paths or sample_paths()
    check_readable(paths)
    check_sizes(paths, state.settings.max_file_size)
    for path in paths:
        check_file_name(path.name)
    run = state.binder().start_new_run(state.principal)
    assert run.workflow is not None
    with new_progress(paths) as progress:
        results = [_download(run, path, read_chunks(path, progress)) for path in paths]
    rounds = [(name, value, run.resolve(value)) for name, value in shapes(results)]
    content = run.get_content([r.reference for r in results if r.reference])
    if as_json:
        emit_json(
            {
                "workflowId": run.workflow.id,
                "toolResults": results,
                "shapes": [
                    {"shape": name, "input": value, "resolution": resolution}
                    for name, value, resolution in rounds
                ],
                "content": content,
            }
        )
        return
    _print_demo(state, run, results, rounds, content)


def _print_demo(
    state: State,
    run: Run,
    results: list[ToolFileResult],
    rounds: list[Round],
    content: ContentResult,
) -> None:
    from rich.panel import Panel
    from rich.text import Text

    assert run.workflow is not None
    settings = state.settings
    out.print(
        Panel.fit(
            Text(
                clean(
                    f"workflow {run.workflow.id}\n"
                    f"user {state.principal.user_id} in mandate {state.principal.mandate_id}\n"
                    f"metadata {settings.database_url}\nblobs    {settings.blob_url}"
                )
            ),
            title="docbinder demo",
        )
    )
    out.rule("1. what each file-producing tool returns to the model")
    for result in results:
        note = "  (duplicate: existing FileItem reused)" if result.duplicate else ""
        out.print(result.text + note)
    out.rule("2. references sent back by the model, resolved in the workflow")
    out.print(_rounds_table(rounds))
    out.rule("3. what a consuming tool receives")
    print_content(content)


def _rounds_table(rounds: list[Round]) -> Any:
    table = Table("shape the model used", "input (start)", "resolved", "unresolved")
    for name, value, resolution in rounds:
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        shown = " ".join(shown.split())
        shown = shown if len(shown) <= 34 else shown[:33] + "…"
        asked = len(resolution.references.references)
        table.add_row(
            name,
            shown,
            f"{len(resolution.documents)} of {asked}",
            ", ".join(f"{u.reference} ({u.reason.value})" for u in resolution.unresolved) or "-",
        )
    return table


def _download(run: Run, path: Path, chunks: Any) -> ToolFileResult:
    return run.produce_file(path.name, chunks, verb="Downloaded", label="datasource:local")
