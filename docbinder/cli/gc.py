"""``docbinder gc``: orphan blobs, FileItems without blob and leftovers of interrupted writes.

The steps: check the options, check that the database exists at the head
schema (gc never creates or migrates one), collect (a dry run unless
``--apply``), then print the report as JSON or as lines for people. What gc
keeps and why is in :class:`~docbinder.application.use_cases.collect_garbage.CollectGarbage`
and ADR 0012/0022.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any

import attrs
import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import emit_json, err, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import InvalidInput

if TYPE_CHECKING:
    from docbinder.application import DocBinder


@attrs.frozen
class Collection:
    """What one gc run found (or removed): the use case's report and the leftovers.

    ``report`` is the :class:`~docbinder.application.use_cases.collect_garbage.CollectGarbage`
    report; ``temp_files`` are paths of stale temp files, ``uploads`` object keys of
    unfinished multipart uploads, ``stale_cache`` a count of cached extractions of
    content no FileItem has; ``blob_url`` is the store's URL and ``grace`` the
    ``--grace`` in seconds.
    """

    report: Any
    temp_files: list[str]
    uploads: list[str]
    stale_cache: int
    blob_url: str
    grace: float


@handles_errors
def gc(
    apply: Annotated[
        bool, typer.Option("--apply", help="Remove what is found (without it: a dry run).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would be removed (the default).")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Apply even when the run looks like a configuration mistake (an empty "
            "database or store, more than half of the rows or blobs at once, a lost store "
            "identity or registration). Never lowers the grace floor.",
        ),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            help="Keep orphan blobs, temp files and unfinished uploads younger than this many "
            "seconds, and remove a FileItem without blob only once it was marked at least this "
            "long ago; a store still running may own them, so keep it above your longest upload. "
            "--apply refuses less than 300 s unless --below-grace-floor."
        ),
    ] = 3600.0,
    below_grace_floor: Annotated[
        bool,
        typer.Option(
            "--below-grace-floor",
            help="Allow --grace below 300 s with --apply: only while no docbinder process "
            "stores or updates files in this blob store (a running store can lose its file).",
        ),
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Find orphan blobs and FileItems without blob of the connected store; --apply removes them.

    Never creates or migrates a database. Considers only FileItems recorded
    in the connected blob store and only keys of docbinder's own layout. A
    FileItem without blob is marked first and removed by a later --apply after
    the grace period. Removes only blobs whose mark proves this store wrote
    them for this database, and never one the store records as committed (a
    FileItem named it once: reported). Refuses (exit 1) when the removal looks like a
    wrong setting, unless --force, and a grace below 300 s unless
    --below-grace-floor.
    """
    from docbinder.cli.setup import check_database_ready

    _check_options(apply=apply, dry_run=dry_run, force=force, grace=grace)
    check_database_ready(STATE.settings)
    found = collect(
        STATE.binder(prepare=False),
        apply=apply,
        grace=grace,
        force=force,
        below_grace_floor=below_grace_floor,
    )
    if STATE.wants_json(json_flag):
        emit_json(as_wire(found))
        return
    print_collection(found)


def _check_options(*, apply: bool, dry_run: bool, force: bool, grace: float) -> None:
    """:class:`InvalidInput` for a bad ``--grace`` or contradicting flags; a note for a lone --force."""
    if not math.isfinite(grace) or grace < 0:
        raise InvalidInput(f"--grace must be a finite number of seconds >= 0, got {grace}")
    if apply and dry_run:
        raise InvalidInput("--apply and --dry-run contradict each other: give one")
    if force and not apply:
        err.print("note: --force takes effect only with --apply; this is a dry run", markup=False)


def collect(
    binder: DocBinder, *, apply: bool, grace: float, force: bool, below_grace_floor: bool
) -> Collection:
    """Run the collection on ``binder``'s stores (a dry run unless ``apply``); nothing is printed."""
    from docbinder.cli.setup import abort_stale_uploads, remove_stale_temp_files

    dry_run = not apply
    report = binder.collect_garbage(
        dry_run=dry_run,
        grace_seconds=grace,
        force=force,
        allow_short_grace=below_grace_floor,
    )
    temp = remove_stale_temp_files(binder.blobs, grace, dry_run=dry_run)
    uploads = abort_stale_uploads(binder.blobs, grace, dry_run=dry_run)
    # Cached extractions only hold what can be extracted again: pruning the
    # entries of hashes no FileItem has never loses data.
    pruned = (
        binder.prune_extraction_cache(dry_run=dry_run)
        if binder.prune_extraction_cache is not None
        else None
    )
    stale_cache = len(pruned.stale_hashes) if pruned is not None else 0
    return Collection(report, temp, uploads, stale_cache, binder.blobs.url, grace)


def as_wire(found: Collection) -> dict[str, Any]:
    """The ``--json`` document: every field of the report, camelCase."""
    report = found.report
    return {
        "dryRun": report.dry_run,
        "orphanBlobs": list(report.orphan_blobs),
        "youngBlobs": list(report.young_blobs),
        "orphanRows": list(report.orphan_rows),
        "expiredRows": list(report.expired_rows),
        "markedRows": list(report.marked_rows),
        "staleTempFiles": found.temp_files,
        "staleUploads": found.uploads,
        "staleCacheEntries": found.stale_cache,
        "bytesFreed": report.bytes_freed,
        "storeId": report.store_id,
        "otherStoreRows": dict(report.foreign_rows),
        "unattributedRows": report.unattributed_rows,
        "adoptedRows": report.adopted_rows,
        "otherKeys": report.other_keys,
        "refusal": report.refusal,
        "forced": report.forced,
        "otherDatabaseBlobs": report.other_database_blobs,
        "unprovenBlobs": list(report.unproven_blobs),
        "displacedRows": dict(report.displaced_rows),
        "belowGraceFloor": report.short_grace,
        "formerDatabaseBlobs": report.former_database_blobs,
        "databaseMoved": report.database_moved,
        "storeMoved": report.store_moved,
        "locationChecked": report.location_checked,
        "committedBlobs": list(report.committed_blobs),
        "providerCopiesDeleted": report.provider_copies_deleted,
        "providerCopiesKept": report.provider_copies_kept,
        "inlineBlobs": report.inline_blobs,
        "inlineBytes": report.inline_bytes,
    }


def print_collection(found: Collection) -> None:
    """The report for people: what was (or would be) removed, what was kept and why."""
    _print_removed(found)
    _print_marked(found)
    _print_untouched(found)
    _print_warnings(found)
    report = found.report
    if report.inline_blobs:
        out.print(
            f"{report.inline_blobs} blob(s) ({report.inline_bytes} bytes) are kept in the "
            "metadata database (inline_blob_limit, docs/storage.md); gc checks and removes "
            "them by the same rules as the blob store's"
        )


def _print_removed(found: Collection) -> None:
    report = found.report
    if report.dry_run:
        out.print("dry run: nothing was changed (`docbinder gc --apply` removes)")
    verb = "would remove" if report.dry_run else "removed"
    out.print(
        f"{verb} {len(report.orphan_blobs)} orphan blob(s) ({report.bytes_freed} bytes), "
        f"{len(report.orphan_rows)} FileItem(s) without blob, {len(found.temp_files)} stale "
        f"temp file(s), {len(found.uploads)} unfinished upload(s), {found.stale_cache} cached "
        f"extraction(s) of content no FileItem has; kept {len(report.young_blobs)} orphan "
        f"blob(s) younger than {found.grace:g} s"
    )
    for key in report.orphan_blobs:
        out.print(f"  blob {key}")
    for file_id in report.orphan_rows:
        out.print(f"  file {file_id}")
    if report.expired_rows:
        out.print(
            f"{verb} {len(report.expired_rows)} FileItem(s) past their retention period "
            f"by more than {found.grace:g} s (not under a legal hold)"
        )
        for file_id in report.expired_rows:
            out.print(f"  expired file {file_id}")
    if report.provider_copies_deleted or report.provider_copies_kept:
        done = "" if report.dry_run else f"deleted {report.provider_copies_deleted}, "
        out.print(
            f"copies of deleted FileItems at model providers: {done}"
            f"{report.provider_copies_kept} still to delete (their provider is not registered "
            "in this process or refused; a later run tries again)"
        )


def _print_marked(found: Collection) -> None:
    report = found.report
    if not report.marked_rows:
        return
    out.print(
        f"{'would mark' if report.dry_run else 'marked'} {len(report.marked_rows)} "
        f"FileItem(s) whose blob is missing; a later `gc --apply` removes them once marked "
        f"for {found.grace:g} s, if the blob is still missing:"
    )
    for file_id in report.marked_rows:
        out.print(f"  file {file_id}")


def _print_untouched(found: Collection) -> None:
    """What gc left alone because it may belong to another store or database."""
    from docbinder.application.use_cases.collect_garbage import COMMITTED_ORPHANS_HINT

    report = found.report
    for store, count in report.foreign_rows:
        out.print(f"not touched: {count} FileItem(s) of another blob store ({store})")
    for count, line in _untouched_counts(found):
        if count:
            out.print(line)
    if report.database_moved:
        out.print(
            "note: this database was copied or moved since its last write: it gets a new "
            "database id on the next write"
        )
    _print_keys(
        report.unproven_blobs,
        f"not touched: {len(report.unproven_blobs)} file(s) in docbinder's layout that this "
        "store cannot prove it wrote (no or another store's provenance mark: put there by "
        "something else, copied without their marks, or written before marks existed; "
        "or a compact mark of a database not registered in this store):",
    )
    _print_keys(
        report.committed_blobs,
        f"not touched: {len(report.committed_blobs)} blob(s) this database committed are "
        f"named by no FileItem: {COMMITTED_ORPHANS_HINT}:",
    )


def _untouched_counts(found: Collection) -> list[tuple[int, str]]:
    """``(count, line)`` for each kind of object gc does not touch; a line is printed if its count is not 0."""
    report = found.report
    return [
        (
            report.unattributed_rows,
            f"not touched: {report.unattributed_rows} older FileItem(s) whose blob is not in "
            f"{found.blob_url} (they may belong to another store)",
        ),
        (
            report.other_keys,
            f"not touched: {report.other_keys} object(s) in {found.blob_url} that "
            "docbinder did not write",
        ),
        (
            report.other_database_blobs,
            f"not touched: {report.other_database_blobs} blob(s) written by another metadata "
            "database sharing this store (its own gc collects them)",
        ),
        (
            report.former_database_blobs,
            f"not touched: {report.former_database_blobs} blob(s) marked with an id this "
            "database had before it was copied or moved (the database it was copied from "
            "may still use them)",
        ),
    ]


def _print_keys(keys: Any, heading: str) -> None:
    if not keys:
        return
    out.print(heading)
    for key in keys:
        out.print(f"  blob {key}")


def _print_warnings(found: Collection) -> None:
    """On stderr: a refusal ``--apply`` would meet, what ``--force`` overrode, a short grace."""
    from docbinder.application.use_cases.collect_garbage import MIN_GRACE_SECONDS

    report = found.report
    grace = found.grace
    if report.refusal and report.dry_run:
        err.print(f"warning: `gc --apply` would refuse: {report.refusal}")
    if report.forced:
        err.print(f"note: --force overrode: {report.refusal}")
    if report.short_grace:
        err.print(
            f"note: --below-grace-floor: ran with a grace of {grace:g} s, below the floor of "
            f"{MIN_GRACE_SECONDS} s"
        )
    elif report.dry_run and grace < MIN_GRACE_SECONDS:
        err.print(
            f"warning: `gc --apply --grace {grace:g}` would refuse: below the floor of "
            f"{MIN_GRACE_SECONDS} s (--below-grace-floor, only while nothing writes)"
        )
