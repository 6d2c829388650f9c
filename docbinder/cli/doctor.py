"""``docbinder doctor``: checks configuration, storage, and each failure mode of SPEC section 4.

Each check gives ``ok``, ``warn`` or ``fail`` and one line of detail. Checks
against stored data only read; the self-tests of the bridge run on in-memory
adapters with the configured authorizer, so doctor never writes user data (the
blob-store probe writes and removes one object under ``doctor/``). The stages
run in order and stop at the first that fails: configuration, database, wiring
and blob store, then stored data and the self-tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import typer

from docbinder.cli.checks import (
    Check,
    blob_probe,
    commit_records_check,
    configuration_check,
    database_checks,
    inline_check,
    self_tests,
)
from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import clean, emit_json, out, styled
from docbinder.cli.state import STATE, State
from docbinder.domain.errors import DocbinderError
from docbinder.domain.governance import scope_label

if TYPE_CHECKING:
    from docbinder.config import Settings

GUARDS = {
    "listing returns FileItems": "a tool listing files crashes on the answer",
    "every FileItem has its blob": "reading such a file fails with 'file not found'",
    "blob store identity": "gc could take another blob store's FileItems for garbage",
    "blob store registration": "gc of one database could remove another database's blobs",
    "blob store location": (
        "gc in a copy or backup of the store could remove every file stored since the copy"
    ),
    "leftovers of interrupted writes": "disk space stays held by temp files of killed writes",
    "every ChatDocument has its FileItem": "a consuming tool gets no content for that document",
    "a run without workflow is named": "attaching fails with 'no workflow available'",
    "tolerant documentList parsing": "a model's references in an unexpected shape are refused",
    "attach yields content": "a consuming tool gets no content for a file just attached",
    "duplicate check respects access": (
        "a reused duplicate the caller cannot read: 'file not found' right after 'duplicate'"
    ),
}
"""Check name -> what a user meets when the check fails (the failure modes of SPEC section 4)."""

COLOURS = {"ok": "green", "warn": "yellow", "fail": "red"}


@handles_errors
def doctor(json_flag: JsonOpt = False) -> None:
    """Diagnose configuration, storage and the known failure modes. Exit code 1 if a check fails."""
    checks = run_doctor(STATE)
    failed = [c for c in checks if c.status == "fail"]
    if STATE.wants_json(json_flag):
        emit_json({"ok": not failed, "checks": [c.as_dict() for c in checks]})
    else:
        print_checks(checks)
    if failed:
        raise typer.Exit(1)


def print_checks(checks: list[Check]) -> None:
    """One line per check, coloured by status; a failing or warning check names what it guards."""
    for check in checks:
        line = styled(f"{check.status:>4}", COLOURS[check.status])
        line.append(" " + clean(f"{check.name}: {check.detail}", multiline=False))
        out.print(line)
        if check.status != "ok" and check.guards:
            out.print(f"       (if this fails: {check.guards})")


def run_doctor(state: State) -> list[Check]:
    """Run every check; never raises for a failing backend (that is a ``fail`` check)."""
    return [attrs.evolve(c, guards=GUARDS.get(c.name, "")) for c in _run_checks(state)]


def _failed(checks: list[Check]) -> bool:
    return any(c.status == "fail" for c in checks)


def _run_checks(state: State) -> list[Check]:
    try:
        settings = state.settings
    except DocbinderError as exc:
        return [Check("configuration", "fail", str(exc))]
    checks = [configuration_check(settings)]
    missing = state.nothing_stored()  # before the storage checks create the database
    checks.extend(_storage_checks(settings))
    if _failed(checks):
        return checks
    try:
        binder = state.binder(prepare=False)
    except DocbinderError as exc:
        return [*checks, Check("wiring", "fail", str(exc))]
    if missing is not None:  # a mistyped --home looks like a new, empty store: say which it is
        checks.append(
            Check(
                "new store",
                "warn",
                f"there was no database at {missing}; it is created now and holds nothing "
                "(if a store was expected here, check --home, DOCBINDER_HOME or "
                "DOCBINDER_DATABASE_URL)",
            )
        )
    checks.append(
        Check("authorizer", "ok", f"{binder.authorizer.name} ({type(binder.authorizer).__name__})")
    )
    checks.append(blob_probe(binder.blobs))
    if _failed(checks):
        return checks
    records = commit_records_check(binder.blobs)
    if records is not None:
        checks.append(records)
    inline = inline_check(binder.blobs)
    if inline is not None:
        checks.append(inline)
    checks.append(audit_check(binder))
    from docbinder.cli.data_checks import data_checks

    checks.extend(data_checks(binder, state.principal))
    checks.extend(self_tests(binder.authorizer))
    return checks


def audit_check(binder: Any) -> Check:
    """Whether this process records what retention from the last read needs (B5, B11).

    A warning when a policy counts from the last read and this process's audit
    log is off: its reads are not recorded, so a file only it reads expires as
    if unread.
    """
    name = "audit log"
    try:
        policies = binder.retention.from_last_read()
    except DocbinderError as exc:
        return Check(name, "fail", f"cannot read the retention policies: {exc}")
    if binder.audit_log.enabled:
        return Check(name, "ok", "on: reads, writes and refusals are recorded")
    if not policies:
        return Check(name, "ok", "off (audit = false): nothing is recorded")
    scopes = ", ".join(sorted({scope_label(p.scope) for p in policies}))
    return Check(
        name,
        "warn",
        f"off in this process, but files of {scopes} expire from their last read: reads made "
        "here are not recorded, so such files can expire while in use; set audit = true "
        "(DOCBINDER_AUDIT=true) in every process that reads them",
    )


def _storage_checks(settings: Settings) -> list[Check]:
    """The database checks; the embedded default is created first (doctor counts as a use)."""
    if settings.database_url.startswith("sqlite"):
        from docbinder.container import prepare_storage

        try:
            prepare_storage(settings)
        except DocbinderError as exc:
            return [Check("database reachable", "fail", str(exc))]
    return database_checks(settings)
