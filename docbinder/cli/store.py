"""``docbinder store adopt``, ``docbinder store claim`` and ``docbinder migrate``: set-up of the blob store and the schema."""

from __future__ import annotations

from typing import Annotated

import typer

from docbinder.cli.common import JsonOpt, handles_errors
from docbinder.cli.output import emit_json, err, out
from docbinder.cli.state import STATE


@handles_errors
def store_adopt(
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Adopt even when FileItems of this store have no blob in it (it then is "
            "not a whole move of the store).",
        ),
    ] = False,
    json_flag: JsonOpt = False,
) -> None:
    """Accept the blob store at blob_url, where it is now, as the store of its identity.

    Only for a store moved on purpose (copied to a new disk, bucket or prefix
    and the old place retired): writes, deletes and gc then trust it again.
    Refuses when the store has no identity, and, unless --force, when
    FileItems of the store have no blob in it (an older copy or backup).
    """
    from docbinder.application.steps.store_registration import AdoptStoreLocation
    from docbinder.cli.setup import check_database_ready

    check_database_ready(STATE.settings)
    binder = STATE.binder(prepare=False)
    adoption = AdoptStoreLocation(binder.uow_factory, binder.blobs)(force=force)
    if STATE.wants_json(json_flag):
        emit_json(
            {
                "storeId": adoption.store_id,
                "url": adoption.url,
                "previous": adoption.previous,
                "location": adoption.location,
                "missingBlobs": adoption.missing_blobs,
            }
        )
        return
    if adoption.previous == adoption.location:
        out.print(f"blob store {adoption.url} ({adoption.store_id}) was already at this location")
    else:
        out.print(
            f"adopted blob store {adoption.url} ({adoption.store_id}) at its current location"
        )
    if adoption.missing_blobs:
        err.print(
            f"note: --force: {adoption.missing_blobs} FileItem(s) of this store have no blob "
            "in it; `docbinder gc` (a dry run) lists them"
        )


@handles_errors
def store_claim(json_flag: JsonOpt = False) -> None:
    """Make this database the owner of its id in the blob store again (after a restore).

    Only when no other copy of this database writes into the store: after a
    backup was restored in place, or once a clone was given an id of its own
    (``doctor``'s "database claim" check says when deletes are refused).
    """
    from docbinder.application.steps.database_claim import take_claim
    from docbinder.cli.setup import check_database_ready

    check_database_ready(STATE.settings)
    binder = STATE.binder(prepare=False)
    database_id = take_claim(binder.uow_factory, binder.blobs)
    if STATE.wants_json(json_flag):
        emit_json({"databaseId": database_id, "url": binder.blobs.url})
        return
    out.print(f"database id {database_id} is claimed by this database in {binder.blobs.url}")


@handles_errors
def migrate(json_flag: JsonOpt = False) -> None:
    """Create or upgrade the metadata schema (Alembic migrations)."""
    from docbinder.container import run_migrations

    revision = run_migrations(STATE.settings)
    if STATE.wants_json(json_flag):
        emit_json({"revision": revision})
    else:
        out.print(f"schema at revision {revision}")
