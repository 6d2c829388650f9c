"""``docbinder audit ls | export | verify | head | prune``: the audit log (feature row B11)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import emit_json, err, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import InvalidInput

if TYPE_CHECKING:
    from docbinder.application.use_cases.audit_log import AuditLog


def _since(value: str | None) -> datetime | None:
    """``--since``: an ISO 8601 time (UTC when it names no zone) or a duration back from now (``2h``)."""
    if value is None:
        return None
    from docbinder.domain.governance import parse_duration

    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        try:
            return datetime.now(UTC) - parse_duration(value)
        except InvalidInput:
            raise InvalidInput(
                f"--since must be an ISO 8601 time or a duration such as 2h, got {value!r}"
            ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _log() -> AuditLog:
    """The binder's audit log; a note on stderr when this process does not record (``audit`` off)."""
    log = STATE.binder().audit_log
    if not log.enabled:
        err.print(
            "note: the audit log is off in this process (audit = false): what it does is not "
            "recorded; the events shown are what processes with audit = true "
            "(DOCBINDER_AUDIT=true) stored"
        )
    return log


@handles_errors
def audit_ls(
    file: Annotated[str | None, typer.Option("--file", help="Only events of this file id.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="Only events by this user id.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events at or after this time (ISO 8601, or 2h, 30d)."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many events.")] = None,
    json_flag: JsonOpt = False,
) -> None:
    """List audit events, oldest first."""
    events = _log().list(file_id=file, user=user, since=_since(since), limit=limit)
    if STATE.wants_json(json_flag):
        emit_json([e.wire() for e in events])
        return
    for e in events:
        target = e.file_id or e.document_id or e.workflow_id or "-"
        out.print(
            f"{e.seq:>6} {e.at.isoformat()} {e.action.value:<14} {e.outcome:<16} "
            f"{e.principal or '-'} {target}"
        )


@handles_errors
def audit_export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """Write the whole audit log as JSON Lines (one event per line, oldest first)."""
    lines = _log().export_lines()
    if output is None:
        for line in lines:
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    with output.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")


@handles_errors
def audit_verify(json_flag: JsonOpt = False) -> None:
    """Check the hash chain; name the first changed, inserted or removed event (exit 1 if any)."""
    result = _log().verify()
    if STATE.wants_json(json_flag):
        emit_json(
            {
                "ok": result.ok,
                "checked": result.checked,
                "head": None
                if result.head is None
                else {"seq": result.head[0], "hash": result.head[1]},
                "broken": None
                if result.broken is None
                else {
                    "seq": result.broken.seq,
                    "kind": result.broken.kind,
                    "message": result.broken.message,
                },
            }
        )
    elif result.ok:
        head = "empty" if result.head is None else f"head {result.head[0]} {result.head[1]}"
        out.print(f"audit log intact: {result.checked} event(s) checked, {head}")
    if result.broken is not None:
        raise InvalidInput(
            f"audit log broken at event {result.broken.seq}: {result.broken.message}"
        )


@handles_errors
def audit_head(json_flag: JsonOpt = False) -> None:
    """Print the chain head (seq and hash of the newest event): keep it outside the database."""
    head = _log().head()
    if STATE.wants_json(json_flag):
        emit_json(None if head is None else {"seq": head[0], "hash": head[1]})
    elif head is None:
        out.print("the audit log is empty")
    else:
        out.print(f"{head[0]} {head[1]}")


@handles_errors
def audit_prune(json_flag: JsonOpt = False) -> None:
    """Remove events older than the audit_retention setting (the chain stays verifiable)."""
    removed = STATE.binder().audit_log.prune()
    if STATE.wants_json(json_flag):
        emit_json({"removed": removed})
    else:
        out.print(f"removed {removed} audit event(s) older than audit_retention")
