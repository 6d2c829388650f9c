"""``docbinder workflow new | show | advance | ls``: create and inspect workflows (SPEC C4)."""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

import typer

from docbinder.cli.common import JsonOpt, handles_errors, nothing_stored_yet
from docbinder.cli.output import Table, emit_json, fail, out
from docbinder.cli.state import STATE
from docbinder.domain.counters import CounterStep
from docbinder.domain.model import ChatMessage, ChatWorkflow

LEVELS = ("round", "task", "action")
"""What ``--next`` moves on, in the order of the counters."""


@handles_errors
def workflow_new(json_flag: JsonOpt = False) -> None:
    """Create a workflow for the current identity; print its id."""
    wf = STATE.binder().create_workflow(STATE.principal)
    if STATE.wants_json(json_flag):
        emit_json({"id": wf.id, "workflow": wf})
    else:
        out.print(wf.id)


@handles_errors
def workflow_show(workflow_id: str, json_flag: JsonOpt = False) -> None:
    """Show a workflow's messages and their documents."""
    binder = STATE.binder()
    wf = binder.get_workflow(STATE.principal, workflow_id)
    messages = binder.list_messages(STATE.principal, workflow_id)
    deleted = binder.find_deleted_files(STATE.principal, messages)
    if STATE.wants_json(json_flag):
        emit_json(_shown_with_deleted(wf, messages, deleted))
        return
    out.print(f"workflow {wf.id}  scope {wf.scope}  owner {wf.created_by}  status {wf.status}")
    out.print(f"now at {wf.counters}")
    # One block per message rather than a table: a reference (44 characters)
    # and a label stay whole and readable at any terminal width.
    for msg in messages:
        _print_message(msg, deleted)
    if not messages:
        out.print("no messages yet")


def _shown_with_deleted(wf: ChatWorkflow, messages: list[ChatMessage], deleted: set[str]) -> Any:
    """The workflow's wire form with its messages, each document with its ``documentRef``
    (``docItem:<id>``, as the HTTP API names it) and marked ``fileDeleted``."""
    import attrs

    from docbinder.serialization import to_wire

    shown = to_wire(attrs.evolve(wf, messages=tuple(messages)))
    for msg in shown["messages"]:
        for doc in msg["documents"]:
            doc["documentRef"] = f"docItem:{doc['id']}"
            doc["fileDeleted"] = doc["fileId"] in deleted
    return shown


def _print_message(msg: ChatMessage, deleted: set[str]) -> None:
    out.print(
        f"#{msg.sequence_nr}  docList:{msg.documents_label}"
        f"  (round {msg.round_number}, task {msg.task_number}, action {msg.action_number})"
    )
    for doc in msg.documents:
        gone = "  [file deleted: resolves as file_missing]" if doc.file_id in deleted else ""
        out.print(
            f"    {doc.reference}  {doc.file_name}  ({doc.file_size} bytes, {doc.mime_type}){gone}"
        )


_LEVEL_HELP = "Set the {} to this number (lower levels not given become 0)."


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
    step = _counter_step(round_, task, action, next_level)
    run = STATE.start_run(workflow_id)
    counters = run.binder.advance_counters(run.context, step)
    if STATE.wants_json(json_flag):
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


def _counter_step(
    round_: int | None, task: int | None, action: int | None, next_level: str | None
) -> CounterStep:
    """The step the options ask for; a usage error (exit code 2) unless exactly one form is given."""
    absolute = (round_, task, action) != (None, None, None)
    if absolute and next_level is not None:
        _usage_error("give --next or --round/--task/--action, not both")
    if not absolute and next_level is None:
        _usage_error("give --next round|task|action or at least one of --round, --task, --action")
    if next_level is None:
        return CounterStep.to(round=round_, task=task, action=action)
    level = next_level.strip().lower()
    if level not in LEVELS:
        _usage_error(f"--next must be round, task or action, got {next_level!r}")
    return CounterStep.next(level)


def _usage_error(message: str) -> NoReturn:
    fail(message)
    raise typer.Exit(2)


@handles_errors
def workflow_ls(json_flag: JsonOpt = False) -> None:
    """List the workflows of the current mandate that the identity may read."""
    workflows = [] if nothing_stored_yet() else STATE.binder().list_workflows(STATE.principal)
    if STATE.wants_json(json_flag):
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
