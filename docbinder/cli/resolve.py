"""``docbinder resolve``: a documentList as a model sent it, resolved in a workflow (SPEC C6-C8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.inputs import read_stdin_text
from docbinder.cli.output import emit_json, fail, out
from docbinder.cli.render import print_content, print_resolution
from docbinder.cli.state import STATE

if TYPE_CHECKING:
    from docbinder.application import UnresolvedReference


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
    run = STATE.start_run(workflow)
    as_json = STATE.wants_json(json_flag)
    if content:
        result = run.get_content(raw)
        unresolved = result.unresolved
        if as_json:
            emit_json(result)
        else:
            print_resolution(result.resolution)
            print_content(result)
    else:
        resolution = run.resolve(raw)
        unresolved = resolution.unresolved
        if as_json:
            emit_json(resolution)
        else:
            print_resolution(resolution)
            if not resolution.references:
                out.print("nothing to resolve: the documentList holds no references")
    if unresolved:
        fail(f"{len(unresolved)} reference(s) unresolved{_workflow_hint(workflow, unresolved)}")
        raise typer.Exit(1)


def _workflow_hint(workflow: str | None, unresolved: Sequence[UnresolvedReference]) -> str:
    """Where to give the workflow, when no workflow was given and nothing failed for another cause.

    A rejected input counts too: a file name sent as a reference is told its
    document's reference only within a workflow.
    """
    from docbinder.application import UnresolvedReason

    lacking = (UnresolvedReason.NO_ACTIVE_WORKFLOW, UnresolvedReason.REJECTED_INPUT)
    if workflow is None and all(u.reason in lacking for u in unresolved):
        return (
            ": references resolve within a workflow; give it with --workflow WORKFLOW_ID "
            "(docbinder workflow ls lists the workflow ids)"
        )
    return ""
