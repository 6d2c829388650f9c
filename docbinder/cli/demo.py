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
from typing import TYPE_CHECKING, Any

from rich.panel import Panel
from rich.text import Text

from docbinder.application import ContentResult, Resolution, Run, ToolFileResult
from docbinder.application.use_cases.resolve_document_list import DEFAULT_SUGGESTIONS
from docbinder.cli.output import (
    Table,
    clean,
    emit_json,
    out,
    reference_value,
    styled,
)
from docbinder.domain.model import ContentKind, check_file_name

if TYPE_CHECKING:
    from docbinder.cli.main import State

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


def run_demo(state: State, paths: list[Path], *, as_json: bool) -> None:
    """Run the demo for ``paths`` (or the shipped samples) and print the result."""
    from docbinder.cli.main import check_readable, check_sizes, new_progress, read_chunks

    paths = paths or sample_paths()
    check_readable(paths)
    check_sizes(paths, state.settings.max_file_size)
    for path in paths:
        check_file_name(path.name)
    binder = state.binder()
    run = binder.start_new_run(state.principal)
    assert run.workflow is not None
    results: list[ToolFileResult] = []
    with new_progress(paths) as progress:
        for path in paths:
            results.append(_download(run, path, read_chunks(path, progress)))
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
    out.print(table)
    out.rule("3. what a consuming tool receives")
    print_content(content)


def _download(run: Run, path: Path, chunks: Any) -> ToolFileResult:
    return run.produce_file(path.name, chunks, verb="Downloaded", label="datasource:local")


def print_resolution(resolution: Resolution) -> None:
    """Human-readable resolution: documents, unresolved references, suggestions."""
    for doc in resolution.documents:
        out.print(
            f"{doc.document.reference}  {doc.file.file_name}  "
            f"({doc.file.size} bytes, {doc.file.mime_type})  file id {doc.file.id}"
        )
    for miss in resolution.unresolved:
        line = styled("unresolved", "yellow")
        shown = miss.reference
        if miss.reason.value == "rejected_input":
            shown = json.dumps(reference_value(miss.reference), ensure_ascii=False)
        line.append(" " + clean(f"{shown}: {miss.reason.value} - {miss.message}"))
        out.print(line)
    if resolution.suggestions:
        out.print(
            f"recent documents in this workflow (at most {DEFAULT_SUGGESTIONS}, newest first):"
        )
        for sug in resolution.suggestions:
            out.print(f"  {sug.reference}  {sug.file_name}")


def print_content(result: ContentResult) -> None:
    """Human-readable content parts per document."""
    if not result.documents and result.resolution.references:
        out.print(styled("no content parts", "yellow"))
    for doc in result.documents:
        line = styled(doc.file_name, "bold")
        line.append(clean(f" ({doc.mime_type}) {doc.reference}"))
        out.print(line)
        for part in doc.parts:
            where = f" {part.position}" if part.position else ""
            cut = " (truncated)" if part.truncated else ""
            if part.kind is ContentKind.TEXT:
                text = (part.text or "").strip().replace("\n", " / ")
                text = text if len(text) <= 160 else text[:157] + "..."
                out.print(f"  text{where}{cut}: {text}")
            else:
                size = len(part.data) if part.data is not None else part.size
                out.print(f"  {part.kind.value} part{where}{cut}: {part.mime_type}, {size} bytes")
            if part.truncated_reason:
                out.print(f"    truncated: {part.truncated_reason}")
            if part.encoding_guessed and part.encoding:
                out.print(f"    encoding {part.encoding} was guessed from the bytes")
            if part.note and part.kind is not ContentKind.TEXT:
                out.print(f"    note: {part.note}")
