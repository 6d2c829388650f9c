"""``docbinder retention set | show | rm | hold | release``: how long files are kept (feature row B5)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from docbinder.application.steps.results import printable
from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import emit_json, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import InvalidInput, NotFound
from docbinder.domain.governance import (
    LegalHold,
    RetentionBasis,
    RetentionPolicy,
    duration_text,
    parse_duration,
    scope_label,
)

MandateOpt = Annotated[
    str | None,
    typer.Option("--mandate", help="Mandate of the policy (default: the global --mandate)."),
]
FeatureOpt = Annotated[
    str | None,
    typer.Option("--feature-instance", help="Feature instance (omit: the whole mandate)."),
]


def policy_wire(policy: RetentionPolicy) -> dict[str, Any]:
    """A policy as ``--json`` prints it (``maxAgeSeconds``, ``basis``, ``setAt``: ISO 8601 UTC or ``null``)."""
    return {
        "mandateId": policy.scope.mandate_id,
        "featureInstanceId": policy.scope.feature_instance_id,
        "maxAgeSeconds": int(policy.max_age.total_seconds()),
        "basis": policy.basis.value,
        "setAt": None if policy.set_at is None else policy.set_at.isoformat(),
    }


def policy_text(policy: RetentionPolicy) -> str:
    """A policy as one line: what expires when, and for ``last_read`` the first moment anything can."""
    if policy.basis is not RetentionBasis.LAST_READ:
        return (
            f"files of {scope_label(policy.scope)} expire {duration_text(policy.max_age)} "
            "after their creation"
        )
    text = (
        f"files of {scope_label(policy.scope)} expire {duration_text(policy.max_age)} "
        "after their last read"
    )
    if policy.set_at is not None:
        text += f", none before {(policy.set_at + policy.max_age).isoformat(timespec='seconds')}"
    return text


def hold_wire(hold: LegalHold) -> dict[str, Any]:
    """A legal hold as ``--json`` prints it."""
    return {
        "kind": hold.kind.value,
        "targetId": hold.target_id,
        "mandateId": hold.mandate_id,
        "reason": hold.reason,
        "placedAt": None if hold.placed_at is None else hold.placed_at.isoformat(),
    }


def _target(file: str | None, workflow: str | None) -> tuple[str, str]:
    if (file is None) == (workflow is None):
        raise InvalidInput("give exactly one of --file ID and --workflow ID")
    return ("file", file) if file is not None else ("workflow", workflow)  # type: ignore[return-value]


@handles_errors
def retention_set(
    max_age: Annotated[
        str, typer.Option("--max-age", help="How long files are kept: 2s, 12h, 30d.")
    ],
    mandate: MandateOpt = None,
    feature_instance: FeatureOpt = None,
    basis: Annotated[
        str,
        typer.Option("--from", help="Count from: created (default) or last-read (needs audit)."),
    ] = "created",
    json_flag: JsonOpt = False,
) -> None:
    """Keep the files of a mandate or feature instance for MAX-AGE; older ones resolve as expired.

    Expired files are removed only by ``docbinder gc --apply``, after its grace
    period, and never while a legal hold names them or their workflow.
    """
    given = basis.strip().lower().replace("-", "_")
    if given not in {b.value for b in RetentionBasis}:
        raise InvalidInput(f"--from must be created or last-read, got {basis!r}")
    policy = STATE.binder().retention.set(
        STATE.scope(mandate, feature_instance), parse_duration(max_age), RetentionBasis(given)
    )
    if STATE.wants_json(json_flag):
        emit_json(policy_wire(policy))
    else:
        out.print(policy_text(policy))


@handles_errors
def retention_show(mandate: MandateOpt = None, json_flag: JsonOpt = False) -> None:
    """Show a mandate's retention policies and legal holds."""
    binder = STATE.binder()
    mandate_id = STATE.scope(mandate).mandate_id
    policies = binder.retention.policies(mandate_id)
    holds = binder.retention.holds(mandate_id)
    if STATE.wants_json(json_flag):
        emit_json(
            {"policies": [policy_wire(p) for p in policies], "holds": [hold_wire(h) for h in holds]}
        )
        return
    if not policies:
        out.print(f"mandate {mandate_id} has no retention policy: files are kept")
    for p in policies:
        out.print(policy_text(p))
    for h in holds:
        out.print(
            f"legal hold on {h.kind.value} {h.target_id}"
            + (f": {printable(h.reason)}" if h.reason else "")
        )


@handles_errors
def retention_rm(
    mandate: MandateOpt = None, feature_instance: FeatureOpt = None, json_flag: JsonOpt = False
) -> None:
    """Remove the retention policy of a mandate or feature instance (its files are kept).

    Exits with status 1 (``error:`` line) when that scope has no policy.
    """
    scope = STATE.scope(mandate, feature_instance)
    if not STATE.binder().retention.remove(scope):
        raise NotFound(
            f"{scope_label(scope)} has no retention policy to remove "
            "(check --mandate and --feature-instance; `docbinder retention show` lists them)"
        )
    if STATE.wants_json(json_flag):
        emit_json({"removed": True})
    else:
        out.print("removed the retention policy")


@handles_errors
def retention_hold(
    file: Annotated[str | None, typer.Option("--file", help="File id to hold.")] = None,
    workflow: Annotated[str | None, typer.Option("--workflow", help="Workflow id to hold.")] = None,
    reason: Annotated[str, typer.Option(help="Why (kept with the hold).")] = "",
    mandate: MandateOpt = None,
    json_flag: JsonOpt = False,
) -> None:
    """Place a legal hold on a file or a workflow: nothing it names expires while it stands."""
    kind, target = _target(file, workflow)
    hold = STATE.binder().retention.hold(kind, target, STATE.scope(mandate).mandate_id, reason)
    if STATE.wants_json(json_flag):
        emit_json(hold_wire(hold))
    else:
        out.print(f"legal hold placed on {kind} {target}")


@handles_errors
def retention_release(
    file: Annotated[str | None, typer.Option("--file", help="File id to release.")] = None,
    workflow: Annotated[
        str | None, typer.Option("--workflow", help="Workflow id to release.")
    ] = None,
    mandate: MandateOpt = None,
    json_flag: JsonOpt = False,
) -> None:
    """Lift a legal hold; the files it held expire as their policy says.

    Exits with status 1 (``error:`` line) when the mandate holds no such hold.
    """
    kind, target = _target(file, workflow)
    mandate_id = STATE.scope(mandate).mandate_id
    if not STATE.binder().retention.release(kind, target, mandate_id):
        raise NotFound(
            f"no legal hold on {kind} {target} in mandate {mandate_id} "
            "(check the id and --mandate; `docbinder retention show` lists the holds)"
        )
    if STATE.wants_json(json_flag):
        emit_json({"released": True})
    else:
        out.print(f"legal hold on {kind} {target} lifted")
