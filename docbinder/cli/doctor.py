"""``docbinder doctor``: checks configuration, storage, and each failure mode of SPEC section 4.

Each check gives ``ok``, ``warn`` or ``fail`` and one line of detail. Checks
against stored data only read; the self-tests of the bridge run on in-memory
adapters with the configured authorizer, so doctor never writes user data (the
blob-store probe writes and removes one object under ``doctor/``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs

from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import FileItem, Principal

if TYPE_CHECKING:
    from docbinder.cli.main import State


@attrs.frozen
class Check:
    """One diagnosis: a name, ``ok``/``warn``/``fail``, and a sentence."""

    name: str
    status: str
    detail: str
    guards: str = ""
    """The failure mode of SPEC section 4 this check looks for, as the original log line said it."""

    def as_dict(self) -> dict[str, str]:
        out = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.guards:
            out["guards"] = self.guards
        return out


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


def run_doctor(state: State) -> list[Check]:
    """Run every check; never raises for a failing backend (that is a ``fail`` check)."""
    return [attrs.evolve(c, guards=GUARDS.get(c.name, "")) for c in _run_checks(state)]


def _run_checks(state: State) -> list[Check]:
    checks: list[Check] = []
    try:
        settings = state.settings
    except DocbinderError as exc:
        return [Check("configuration", "fail", str(exc))]
    checks.append(
        Check(
            "configuration",
            "ok",
            "; ".join(
                f"{k}={masked_url(getattr(settings, k))} ({v})"
                for k, v in sorted(settings.sources.items())
            ),
        )
    )
    if settings.database_url.startswith("sqlite"):
        # The embedded default is created on first use; doctor counts as a use.
        from docbinder.container import prepare_storage

        try:
            prepare_storage(settings)
        except DocbinderError as exc:
            checks.append(Check("database reachable", "fail", str(exc)))
            return checks
    checks.extend(_database_checks(settings))
    if any(c.status == "fail" for c in checks):
        return checks
    try:
        binder = state.binder(prepare=False)
    except DocbinderError as exc:
        checks.append(Check("wiring", "fail", str(exc)))
        return checks
    checks.append(
        Check("authorizer", "ok", f"{binder.authorizer.name} ({type(binder.authorizer).__name__})")
    )
    checks.append(_blob_probe(binder.blobs))
    if any(c.status == "fail" for c in checks):
        return checks
    checks.extend(_data_checks(binder, state.principal))
    checks.extend(_self_tests(binder.authorizer))
    return checks


def masked_url(value: Any) -> str:
    """``value`` as text; a URL with credentials (``scheme://user:secret@host``) has its password masked."""
    text = str(value)
    if "://" in text and "@" in text:
        from docbinder.adapters.sql.engine import safe_url

        try:
            return safe_url(text)
        except DocbinderError:
            return text
    return text


def _database_checks(settings: Any) -> list[Check]:
    if settings.metadata_kind != "sql":
        return [
            Check("database", "ok", f"{settings.metadata_kind} metadata store (nothing to connect)")
        ]
    from docbinder.container import migration_status

    try:
        current, head = migration_status(settings)
    except DocbinderError as exc:
        return [Check("database reachable", "fail", str(exc))]
    checks = [Check("database reachable", "ok", masked_url(settings.database_url))]
    stopped = None
    if current is None:
        from docbinder.container import half_applied_migration

        try:
            stopped = half_applied_migration(settings)
        except DocbinderError as exc:
            stopped = f"cannot inspect the schema: {exc}"
    if stopped is not None:
        checks.append(Check("migrations", "fail", stopped))
    elif current == head:
        checks.append(Check("migrations", "ok", f"schema at head revision {head}"))
    elif settings.database_url.startswith("sqlite") and current is None:
        checks.append(
            Check(
                "migrations",
                "warn",
                "no schema yet; the first command creates it (or run `docbinder migrate`)",
            )
        )
    else:
        checks.append(
            Check(
                "migrations",
                "fail",
                f"schema at {current or 'none'}, head is {head}: run `docbinder migrate`",
            )
        )
    return checks


def _blob_probe(blobs: Any) -> Check:
    key = f"doctor/probe-{uuid.uuid4()}"
    try:
        blobs.put(key, [b"docbinder doctor probe"])
        with blobs.open(key) as chunks:
            data = b"".join(chunks)
        blobs.delete(key)
    except DocbinderError as exc:
        return Check(
            "blob store writable", "fail", f"{blobs.url}: {exc}{_checksum_hint(blobs, exc)}"
        )
    if data != b"docbinder doctor probe":
        return Check(
            "blob store writable", "fail", f"{blobs.url}: the probe read back different bytes"
        )
    mode = getattr(blobs, "checksums", None)
    return Check("blob store writable", "ok", blobs.url + (f" (checksums {mode})" if mode else ""))


_CHECKSUM_CODES = frozenset(
    {
        "XAmzContentSHA256Mismatch",
        "InvalidDigest",
        "BadDigest",
        "NotImplemented",
        "MissingContentLength",
        "InvalidArgument",
        "InvalidRequest",
    }
)
_CHECKSUM_WORDS = ("checksum", "chunked", "trailer", "crc32", "content-sha256", "contentsha256")


def _checksum_hint(blobs: Any, exc: DocbinderError) -> str:
    """Why an S3-compatible endpoint refused the probe, when boto3's checksums are the cause.

    boto3 adds CRC checksums (``x-amz-checksum-*``, over https ``aws-chunked`` uploads)
    to every upload unless told ``when_required``; several S3-compatible services reject
    them with one of :data:`_CHECKSUM_CODES` or a message naming them.
    """
    mode = getattr(blobs, "checksums", None)
    if mode is None:
        return ""
    text = str(exc).lower()
    code = getattr(exc, "code", None)
    if code not in _CHECKSUM_CODES and not any(word in text for word in _CHECKSUM_WORDS):
        return ""
    if mode == "when_supported":
        return (
            "; the endpoint seems to reject the checksums boto3 adds to uploads by default "
            '(x-amz-checksum-*, aws-chunked): set s3_checksums = "when_required" '
            "(DOCBINDER_S3_CHECKSUMS=when_required)"
        )
    return "; checksums are already sent only when required (s3_checksums = when_required)"


def _data_checks(binder: Any, principal: Principal) -> list[Check]:
    checks: list[Check] = []
    try:
        with binder.uow_factory() as uow:
            items = list(uow.maintenance.iter_files())
            documents = list(uow.maintenance.iter_documents())
            listed = uow.files.list(principal.mandate_id, limit=50)
            database_id = uow.maintenance.database_id()
            former_ids = uow.maintenance.former_database_ids()
            locations = uow.maintenance.store_locations()
    except DocbinderError as exc:
        return [Check("stored data", "fail", str(exc))]
    wrong = [type(i).__name__ for i in listed if not isinstance(i, FileItem)]
    checks.append(
        Check(
            "listing returns FileItems",
            "fail" if wrong else "ok",
            f"backend returned {', '.join(sorted(set(wrong)))}"
            if wrong
            else f"{len(listed)} listed, all FileItem",
        )
    )
    from docbinder.ports.blobs import is_own_key

    url = binder.blobs.url
    store_id = binder.blobs.identity(create=False)
    mine = [i for i in items if i.blob_store is None or i.blob_store == store_id]
    others = len(items) - len(mine)
    missing_blobs = [i.id for i in mine if not binder.blobs.exists(i.blob_key)]
    elsewhere = f"; {others} FileItem(s) belong to another blob store" if others else ""
    from docbinder.application.use_cases.collect_garbage import NEWEST_ROWS_CHECKED

    newest = sorted(mine, key=lambda i: (i.created_at, i.id), reverse=True)[:NEWEST_ROWS_CHECKED]
    if any(i.id in missing_blobs for i in newest):
        # A store holds the blobs of its newest rows: lacking them, it is an older copy.
        elsewhere += (
            "; among them the newest, so blob_url probably points at an older copy of the "
            "store (a backup or snapshot)"
        )
    # A wrong blob_url produces exactly this state: name the setting, never a removal.
    checks.append(
        Check(
            "every FileItem has its blob",
            "warn" if missing_blobs else "ok",
            f"{len(missing_blobs)} of {len(mine)} FileItems have no blob in {url}: check "
            f"blob_url (DOCBINDER_BLOB_URL) first; the bytes may be in another store{elsewhere}"
            if missing_blobs
            else f"{len(mine)} FileItems, every blob present in {url}{elsewhere}",
        )
    )
    own_keys = {k for k in binder.blobs.keys() if is_own_key(k)}
    displaced = Counter(
        i.blob_store
        for i in items
        if i.blob_store is not None and i.blob_store != store_id and i.blob_key in own_keys
    )
    if displaced:
        # Rows of another identity whose blobs are here: the identity file was lost.
        (old, count), *_ = displaced.most_common()
        checks.append(
            Check(
                "blob store identity",
                "warn",
                f"{count} FileItem(s) recorded in blob store {old} have their blobs in {url}, "
                f"whose identity is {store_id or 'missing'}: its identity file .docbinder-store "
                f"was probably deleted or replaced; write {old} back into it (gc refuses "
                "meanwhile)",
            )
        )
    elif store_id is None and items:
        checks.append(
            Check(
                "blob store identity",
                "warn",
                f"{url} has no docbinder store identity although the database holds "
                f"{len(items)} FileItem(s): check blob_url (DOCBINDER_BLOB_URL)",
            )
        )
    checks.append(_location_check(binder.blobs, store_id, locations))
    rows_here = sum(1 for i in items if store_id is not None and i.blob_store == store_id)
    if rows_here and database_id is not None and database_id not in binder.blobs.databases():
        checks.append(
            Check(
                "blob store registration",
                "warn",
                f"this database holds {rows_here} FileItem(s) of {url} but is missing from its "
                f"registrations (.docbinder-databases/{database_id}): they were probably lost by "
                "a move or copy; restore .docbinder-databases from the original store",
            )
        )
    if former_ids:
        # A copied or moved database does not keep its id (ADR 0022): report the rotation.
        pending = database_id is None
        checks.append(
            Check(
                "database identity",
                "ok",
                (
                    "this database was copied or moved since its last write: the next write "
                    "gives it a new database id"
                    if pending
                    else f"this database has id {database_id}"
                )
                + f"; former id(s) {', '.join(former_ids)} (from before it was copied or moved) "
                "stay with the original: gc never removes blobs marked with them",
            )
        )
    ids = {i.id for i in items}
    dangling = [d.id for d in documents if d.file_id not in ids]
    checks.append(
        Check(
            "every ChatDocument has its FileItem",
            "warn" if dangling else "ok",
            f"{len(dangling)} of {len(documents)} ChatDocuments point at deleted files (they resolve as file_missing)"
            if dangling
            else f"{len(documents)} ChatDocuments, every FileItem present",
        )
    )
    keys = {i.blob_key for i in items}
    orphans = len(own_keys - keys)
    checks.append(
        Check(
            "orphan blobs",
            "warn" if orphans else "ok",
            f"{orphans} blob(s) in {url} named by no FileItem: check database_url "
            "(DOCBINDER_DATABASE_URL) first; `docbinder gc` (a dry run) lists them"
            if orphans
            else "none",
        )
    )
    checks.append(_leftovers(binder.blobs))
    return checks


def _location_check(blobs: Any, store_id: str | None, locations: dict[str, str]) -> Check:
    """The store's location against the one this database recorded (ADR 0030); reads only."""
    from docbinder.application.steps.store_registration import check_location

    name = "blob store location"
    try:
        found = check_location(blobs, store_id, locations)
    except DocbinderError as exc:
        return Check(name, "fail", f"cannot read the location of {blobs.url}: {exc}")
    if found.moved:
        return Check(
            name,
            "warn",
            f"{blobs.url} carries the identity of the store this database writes into but "
            "is not at the place where it wrote: blob_url (DOCBINDER_BLOB_URL) probably points "
            "at a copy, a backup or a moved store; check blob_url first. Meanwhile writes and "
            "gc refuse and deletes keep blobs. Only if you moved the store on purpose and "
            "retired the old place: `docbinder store adopt`",
        )
    if not found.supported:
        return Check(
            name,
            "ok",
            f"{blobs.url} cannot tell its location: copies of it are not recognised, "
            "gc relies on its other checks",
        )
    if store_id is None or found.recorded is None:
        return Check(name, "ok", "not recorded yet: recorded on the next write")
    return Check(name, "ok", f"{blobs.url} is where this database wrote")


def _leftovers(blobs: Any) -> Check:
    """Temp files of interrupted writes (local disk) and unfinished multipart uploads (S3), with sizes."""
    count = 0
    total = 0
    what: list[str] = []
    try:
        stale_fn = getattr(blobs, "stale_temp_files", None)
        if stale_fn is not None:
            temps = stale_fn(0)
            for path in temps:
                try:
                    total += path.stat().st_size
                except OSError:
                    continue
            count += len(temps)
            what.append(f"{len(temps)} temp file(s)")
        pending_fn = getattr(blobs, "pending_uploads", None)
        if pending_fn is not None:
            uploads = pending_fn(0)
            total += sum(blobs.upload_size(u) for u in uploads)
            count += len(uploads)
            what.append(f"{len(uploads)} unfinished multipart upload(s)")
    except DocbinderError as exc:
        return Check("leftovers of interrupted writes", "warn", f"could not list them: {exc}")
    if not what:
        return Check("leftovers of interrupted writes", "ok", "this store leaves none")
    detail = f"{' and '.join(what)}, {total} bytes ({_human(total)})"
    if count:
        return Check(
            "leftovers of interrupted writes",
            "warn",
            f"{detail}: left by interrupted or running uploads; `docbinder gc --apply` removes "
            "those older than its --grace",
        )
    return Check("leftovers of interrupted writes", "ok", detail)


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _self_tests(authorizer: Any) -> list[Check]:
    """Run the bridge on in-memory adapters with the configured authorizer.

    The binder comes from the composition root (:func:`docbinder.container.build_binder`
    with ``memory://`` metadata and blobs), wired exactly as a host's, and is
    closed afterwards.
    """
    from docbinder.application import UnresolvedReason
    from docbinder.container import build_binder

    with build_binder(
        database_url="memory://", blob_url="memory://", authorizer=authorizer, prepare=False
    ) as binder:
        return _bridge_self_tests(binder, UnresolvedReason)


def _bridge_self_tests(binder: Any, UnresolvedReason: Any) -> list[Check]:
    checks: list[Check] = []
    f1 = Principal("doctor-user", "doctor-mandate", "f1", roles=("member",))
    f2 = Principal("doctor-user", "doctor-mandate", "f2", roles=("member",))
    try:
        run = binder.start_new_run(f1)
        produced = run.produce_file("doctor.txt", b"doctor self-test", verb="Wrote")
        no_wf = binder.start_run(f1).resolve([produced.reference])
        checks.append(
            Check(
                "a run without workflow is named",
                "ok"
                if [u.reason for u in no_wf.unresolved] == [UnresolvedReason.NO_ACTIVE_WORKFLOW]
                else "fail",
                "a run without workflow answers no_active_workflow and logs it",
            )
        )
        shapes = [
            [produced.reference],
            [{"id": produced.document_id}],
            {"documents": [{"id": produced.document_id}]},
            produced.reference,
            f'```json\n["DOCITEM:{produced.document_id}"]\n```',
        ]
        ok = all(len(run.resolve(s).documents) == 1 for s in shapes)
        checks.append(
            Check(
                "tolerant documentList parsing",
                "ok" if ok else "fail",
                "list of strings, list of dicts, dict wrapper, single string and a code fence all resolve"
                if ok
                else "a documentList shape did not resolve",
            )
        )
        parts = run.get_content([produced.reference]).parts
        checks.append(
            Check(
                "attach yields content",
                "ok" if produced.document_id and parts else "fail",
                f"attach gave a ChatDocument and {len(parts)} content part(s)",
            )
        )
        other = binder.start_run(f2).store_file("doctor.txt", b"doctor self-test")
        ghost_free = not other.duplicate and binder.get_file(f2, other.item.id) is not None
        checks.append(
            Check(
                "duplicate check respects access",
                "ok" if ghost_free else "fail",
                "same bytes in another feature instance gave a fresh, readable FileItem"
                if ghost_free
                else "a duplicate from another feature instance was returned",
            )
        )
    except DocbinderError as exc:
        checks.append(
            Check(
                "bridge self-test",
                "fail",
                f"the configured authorizer refused the self-test ({exc}); a member must be able to create and update its own files and workflows",
            )
        )
    return checks
