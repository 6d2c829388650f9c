"""The checks of ``docbinder doctor`` on stored data: rows against blobs, for each failure mode.

Everything is read first, in one read of the metadata (:class:`Snapshot`), and
then each check is a function of that snapshot and the blob store. For a state
a wrong setting can produce (a blob store at the wrong URL, a copied database)
the check names the setting to look at, never a command that deletes (ADR 0012).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs

from docbinder.cli.checks import Check, leftovers_check, location_check
from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import ChatDocument, FileItem, Principal

LISTED = 50
"""FileItems the listing check asks the metadata store for."""


@attrs.frozen
class Snapshot:
    """What the data checks read from the metadata store, in one unit of work.

    ``items``: every FileItem; ``documents``: every ChatDocument; ``listed``: what
    a listing of the principal's mandate returns (the backend's own objects);
    ``database_id`` and ``former_ids``: this database's identity (ADR 0022);
    ``locations``: blob store id -> location this database recorded (ADR 0030).
    """

    items: list[FileItem]
    documents: list[ChatDocument]
    listed: list[Any]
    database_id: str | None
    former_ids: list[str]
    locations: dict[str, str]


@attrs.frozen
class StoreView:
    """The blob store as the checks see it: its URL and identity, its own keys, the rows it holds."""

    url: str
    store_id: str | None
    own_keys: set[str]
    mine: list[FileItem]
    """FileItems recorded in this store (or before stores were recorded)."""


def data_checks(binder: Any, principal: Principal) -> list[Check]:
    """Every check on stored data; a failing read of the metadata is one ``fail`` check."""
    try:
        snapshot = read_snapshot(binder, principal)
    except DocbinderError as exc:
        return [Check("stored data", "fail", str(exc))]
    blobs = binder.blobs
    view = _store_view(blobs, snapshot)
    claim = claim_check(binder)
    presence = blob_presence_check(blobs, snapshot, view)
    if claim.status == "fail" and presence.status != "ok":
        presence = attrs.evolve(
            presence,
            detail=presence.detail
            + "; a clone of this database deleted or changed files in the store (see the "
            "database claim check), so it may have freed them rather than blob_url being wrong",
        )
    checks = [listing_check(snapshot), claim, presence]
    checks.extend(identity_checks(snapshot, view))
    checks.append(location_check(blobs, view.store_id, snapshot.locations))
    checks.extend(registration_checks(blobs, snapshot, view))
    checks.extend(database_identity_checks(snapshot))
    checks.append(documents_check(snapshot))
    checks.append(orphans_check(snapshot, view))
    checks.append(leftovers_check(blobs))
    return checks


def read_snapshot(binder: Any, principal: Principal) -> Snapshot:
    """Read everything the checks need in one unit of work; raises what the store raises."""
    with binder.uow_factory() as uow:
        return Snapshot(
            items=list(uow.maintenance.iter_files()),
            documents=list(uow.maintenance.iter_documents()),
            listed=list(uow.files.list(principal.mandate_id, limit=LISTED)),
            database_id=uow.maintenance.database_id(),
            former_ids=list(uow.maintenance.former_database_ids()),
            locations=dict(uow.maintenance.store_locations()),
        )


def _store_view(blobs: Any, snapshot: Snapshot) -> StoreView:
    from docbinder.ports.blobs import is_own_key

    store_id = blobs.identity(create=False)
    mine = [i for i in snapshot.items if i.blob_store is None or i.blob_store == store_id]
    own_keys = {k for k in blobs.keys() if is_own_key(k)}
    return StoreView(blobs.url, store_id, own_keys, mine)


def listing_check(snapshot: Snapshot) -> Check:
    """A listing returns FileItems, not the backend's own objects."""
    wrong = sorted({type(i).__name__ for i in snapshot.listed if not isinstance(i, FileItem)})
    if wrong:
        return Check("listing returns FileItems", "fail", f"backend returned {', '.join(wrong)}")
    return Check("listing returns FileItems", "ok", f"{len(snapshot.listed)} listed, all FileItem")


def blob_presence_check(blobs: Any, snapshot: Snapshot, view: StoreView) -> Check:
    """Every FileItem of this store has its blob; if not, name ``blob_url`` first."""
    from docbinder.application.use_cases.collect_garbage import NEWEST_ROWS_CHECKED

    missing = {i.id for i in view.mine if not blobs.exists(i.blob_key)}
    others = len(snapshot.items) - len(view.mine)
    elsewhere = f"; {others} FileItem(s) belong to another blob store" if others else ""
    newest = sorted(view.mine, key=lambda i: (i.created_at, i.id), reverse=True)
    if any(i.id in missing for i in newest[:NEWEST_ROWS_CHECKED]):
        # A store holds the blobs of its newest rows: lacking them, it is an older copy.
        elsewhere += (
            "; among them the newest, so blob_url probably points at an older copy of the "
            "store (a backup or snapshot)"
        )
    name = "every FileItem has its blob"
    if not missing:
        is_inline = getattr(blobs, "is_inline", None)
        inline = sum(1 for i in view.mine if is_inline(i.blob_key)) if is_inline else 0
        where = f" or the metadata database ({inline} of them, inline_blob_limit)" if inline else ""
        return Check(
            name,
            "ok",
            f"{len(view.mine)} FileItems, every blob present in {view.url}{where}{elsewhere}",
        )
    # A wrong blob_url produces exactly this state: name the setting, never a removal.
    return Check(
        name,
        "warn",
        f"{len(missing)} of {len(view.mine)} FileItems have no blob in {view.url}: check "
        f"blob_url (DOCBINDER_BLOB_URL) first; the bytes may be in another store{elsewhere}",
    )


def identity_checks(snapshot: Snapshot, view: StoreView) -> list[Check]:
    """A lost or replaced identity file, or a store without identity beside stored rows."""
    displaced = Counter(
        i.blob_store
        for i in snapshot.items
        if i.blob_store is not None
        and i.blob_store != view.store_id
        and i.blob_key in view.own_keys
    )
    if displaced:
        # Rows of another identity whose blobs are here: the identity file was lost.
        (old, count), *_ = displaced.most_common()
        return [
            Check(
                "blob store identity",
                "warn",
                f"{count} FileItem(s) recorded in blob store {old} have their blobs in "
                f"{view.url}, whose identity is {view.store_id or 'missing'}: its identity file "
                f".docbinder-store was probably deleted or replaced; write {old} back into it "
                "(gc refuses meanwhile)",
            )
        ]
    if view.store_id is None and snapshot.items:
        return [
            Check(
                "blob store identity",
                "warn",
                f"{view.url} has no docbinder store identity although the database holds "
                f"{len(snapshot.items)} FileItem(s): check blob_url (DOCBINDER_BLOB_URL)",
            )
        ]
    return []


def registration_checks(blobs: Any, snapshot: Snapshot, view: StoreView) -> list[Check]:
    """This database's registration in the store it holds rows of (ADR 0022)."""
    rows_here = sum(
        1 for i in snapshot.items if view.store_id is not None and i.blob_store == view.store_id
    )
    database_id = snapshot.database_id
    if not rows_here or database_id is None or database_id in blobs.databases():
        return []
    return [
        Check(
            "blob store registration",
            "warn",
            f"this database holds {rows_here} FileItem(s) of {view.url} but is missing from its "
            f"registrations (.docbinder-databases/{database_id}): they were probably lost by "
            "a move or copy; restore .docbinder-databases from the original store",
        )
    ]


def claim_check(binder: Any) -> Check:
    """Whether this database still holds the claim on its id in the blob store (ADR 0075).

    ``fail`` names a clone: another database with the same id (a volume
    clone, a disk image) deleted or changed files in the store since this
    one last did; missing blobs are then more likely its doing than a wrong
    ``blob_url``.
    """
    from docbinder.application.steps.database_claim import cloned_message, read_claim

    name = "database claim in the blob store"
    try:
        state = read_claim(binder.uow_factory, binder.blobs)
    except DocbinderError as exc:
        return Check(name, "fail", f"cannot read the claim: {exc}")
    if not state.supported:
        return Check(name, "ok", "the blob store keeps no claim records: not checked")
    if state.database_id is None:
        return Check(name, "ok", "this database has no id yet (it takes one on its first write)")
    if state.cloned:
        return Check(
            name,
            "fail",
            f"this database (id {state.database_id}) or another one is a clone: "
            + cloned_message(binder.blobs.url, state.database_id)
            + "; files rm, content updates, version deletes and gc --apply are refused here",
        )
    if state.held is None:
        return Check(
            name,
            "ok",
            f"no claim on id {state.database_id} yet (the first delete or update writes it)",
        )
    return Check(name, "ok", f"id {state.database_id} is claimed by this database")


def database_identity_checks(snapshot: Snapshot) -> list[Check]:
    """A copied or moved database does not keep its id (ADR 0022): report the rotation."""
    if not snapshot.former_ids:
        return []
    now = (
        "this database was copied or moved since its last write: the next write "
        "gives it a new database id"
        if snapshot.database_id is None
        else f"this database has id {snapshot.database_id}"
    )
    return [
        Check(
            "database identity",
            "ok",
            now + f"; former id(s) {', '.join(snapshot.former_ids)} (from before it was copied "
            "or moved) stay with the original: gc never removes blobs marked with them",
        )
    ]


def documents_check(snapshot: Snapshot) -> Check:
    """Every ChatDocument points at a FileItem that exists."""
    ids = {i.id for i in snapshot.items}
    dangling = [d.id for d in snapshot.documents if d.file_id not in ids]
    name = "every ChatDocument has its FileItem"
    if dangling:
        return Check(
            name,
            "warn",
            f"{len(dangling)} of {len(snapshot.documents)} ChatDocuments point at deleted files (they resolve as file_missing)",
        )
    return Check(name, "ok", f"{len(snapshot.documents)} ChatDocuments, every FileItem present")


def orphans_check(snapshot: Snapshot, view: StoreView) -> Check:
    """Blobs of docbinder's layout that no FileItem names; name ``database_url`` first."""
    orphans = len(view.own_keys - {i.blob_key for i in snapshot.items})
    if not orphans:
        return Check("orphan blobs", "ok", "none")
    return Check(
        "orphan blobs",
        "warn",
        f"{orphans} blob(s) in {view.url} named by no FileItem: check database_url "
        "(DOCBINDER_DATABASE_URL) first; `docbinder gc` (a dry run) lists them",
    )
