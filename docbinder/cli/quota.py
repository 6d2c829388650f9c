"""``docbinder quota set | show | rm``: limits per mandate and feature instance (feature row B12)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import emit_json, out
from docbinder.cli.state import STATE
from docbinder.domain.governance import Quota, scope_label

MandateOpt = Annotated[
    str | None,
    typer.Option("--mandate", help="Mandate of the quota (default: the global --mandate)."),
]
FeatureOpt = Annotated[
    str | None,
    typer.Option(
        "--feature-instance", help="Feature instance of the quota (omit: the whole mandate)."
    ),
]


def quota_wire(quota: Quota) -> dict[str, Any]:
    """A quota as ``--json`` prints it: scope, limits (``null``: none) and usage."""
    return {
        "mandateId": quota.scope.mandate_id,
        "featureInstanceId": quota.scope.feature_instance_id,
        "maxBytes": quota.max_bytes,
        "maxFiles": quota.max_files,
        "maxFileSize": quota.max_file_size,
        "usedBytes": quota.used_bytes,
        "usedFiles": quota.used_files,
    }


def _print(quota: Quota) -> None:
    def limit(value: int | None, unit: str) -> str:
        return "no limit" if value is None else f"{value}{unit}"

    out.print(f"quota of {scope_label(quota.scope)}")
    out.print(f"  bytes: {quota.used_bytes} used of {limit(quota.max_bytes, '')}")
    out.print(f"  files: {quota.used_files} used of {limit(quota.max_files, '')}")
    out.print(f"  size of one file: {limit(quota.max_file_size, ' bytes at most')}")


@handles_errors
def quota_set(
    mandate: MandateOpt = None,
    feature_instance: FeatureOpt = None,
    max_bytes: Annotated[
        int | None, typer.Option(help="Bytes all files of the scope may hold together.")
    ] = None,
    max_files: Annotated[
        int | None, typer.Option(help="Number of files the scope may hold.")
    ] = None,
    max_file_size: Annotated[int | None, typer.Option(help="Bytes one file may have.")] = None,
    json_flag: JsonOpt = False,
) -> None:
    """Set the quota of a mandate or of one of its feature instances (replaces its limits).

    Files already stored count at once. A store that would pass a limit is
    refused with an ``error:`` line naming the quota and the usage.
    """
    quota = STATE.binder().quotas.set(
        STATE.scope(mandate, feature_instance),
        max_bytes=max_bytes,
        max_files=max_files,
        max_file_size=max_file_size,
    )
    if STATE.wants_json(json_flag):
        emit_json(quota_wire(quota))
    else:
        _print(quota)


@handles_errors
def quota_show(
    mandate: MandateOpt = None, feature_instance: FeatureOpt = None, json_flag: JsonOpt = False
) -> None:
    """Show the quota of a mandate or feature instance and what it uses now."""
    quota = STATE.binder().quotas.show(STATE.scope(mandate, feature_instance))
    if STATE.wants_json(json_flag):
        emit_json(quota_wire(quota))
    else:
        _print(quota)


@handles_errors
def quota_rm(
    mandate: MandateOpt = None, feature_instance: FeatureOpt = None, json_flag: JsonOpt = False
) -> None:
    """Remove the quota of a mandate or feature instance (its files are no longer limited)."""
    scope = STATE.scope(mandate, feature_instance)
    removed = STATE.binder().quotas.remove(scope)
    if STATE.wants_json(json_flag):
        emit_json({"removed": removed})
    elif removed:
        out.print(f"removed the quota of {scope_label(scope)}")
    else:
        out.print(f"{scope_label(scope)} has no quota")
