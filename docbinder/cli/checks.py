"""The checks of ``docbinder doctor`` on configuration and storage, and the bridge's self-tests.

Each check gives a :class:`Check`: ``ok``, ``warn`` or ``fail`` and one line of
detail. They only read, except the blob-store probe (one object under
``doctor/``, written and removed) and the self-tests (in-memory adapters).
The checks on stored data are in :mod:`docbinder.cli.data_checks`.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from docbinder.cli.output import masked_url
from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import Principal


@attrs.frozen
class Check:
    """One diagnosis: a name, ``ok``/``warn``/``fail``, and a sentence."""

    name: str
    status: str
    detail: str
    guards: str = ""
    """The failure mode of SPEC section 4 this check looks for, as the original log line said it."""

    def as_dict(self) -> dict[str, str]:
        """The ``--json`` form: ``name``, ``status``, ``detail`` and, if set, ``guards``."""
        out = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.guards:
            out["guards"] = self.guards
        return out


def configuration_check(settings: Any) -> Check:
    """Every setting that has a source, with the source (passwords in URLs masked)."""
    return Check(
        "configuration",
        "ok",
        "; ".join(
            f"{k}={masked_url(getattr(settings, k))} ({v})"
            for k, v in sorted(settings.sources.items())
        ),
    )


def database_checks(settings: Any) -> list[Check]:
    """Whether the metadata database answers and its schema is at head (reads only)."""
    if settings.metadata_kind != "sql":
        return [
            Check("database", "ok", f"{settings.metadata_kind} metadata store (nothing to connect)")
        ]
    from docbinder.container import migration_status

    try:
        current, head = migration_status(settings)
    except DocbinderError as exc:
        return [Check("database reachable", "fail", str(exc))]
    reachable = Check("database reachable", "ok", masked_url(settings.database_url))
    return [reachable, _migrations_check(settings, current, head)]


def _migrations_check(settings: Any, current: str | None, head: str) -> Check:
    """The schema revision against the head one; a half-applied migration is a failure."""
    stopped = _half_applied(settings) if current is None else None
    if stopped is not None:
        return Check("migrations", "fail", stopped)
    if current == head:
        return Check("migrations", "ok", f"schema at head revision {head}")
    if settings.database_url.startswith("sqlite") and current is None:
        return Check(
            "migrations",
            "warn",
            "no schema yet; the first command creates it (or run `docbinder migrate`)",
        )
    return Check(
        "migrations",
        "fail",
        f"schema at {current or 'none'}, head is {head}: run `docbinder migrate`",
    )


def _half_applied(settings: Any) -> str | None:
    from docbinder.container import half_applied_migration

    try:
        return half_applied_migration(settings)
    except DocbinderError as exc:
        return f"cannot inspect the schema: {exc}"


PROBE = b"docbinder doctor probe"
"""The bytes the blob-store probe writes and reads back."""


def inline_check(blobs: Any) -> Check | None:
    """The inline tier (ADR 0110): a probe row written, read back and removed, and what it holds.

    ``None`` for a store without the tier (a plug-in metadata store).
    """
    put_inline = getattr(blobs, "put_inline", None)
    if put_inline is None:
        return None
    key = f"doctor/inline-probe-{uuid.uuid4()}"
    try:
        put_inline(key, PROBE, committed=False)
        with blobs.open(key) as chunks:
            data = b"".join(chunks)
        blobs.delete(key)
        count, size = blobs.inline_totals()
    except DocbinderError as exc:
        return Check("inline blobs", "fail", f"the metadata database's inline_blobs: {exc}")
    if data != PROBE:
        return Check("inline blobs", "fail", "the inline probe read back different bytes")
    limit = blobs.inline_limit
    where = (
        f"files up to {limit} bytes are kept in the metadata database"
        if limit
        else "inline_blob_limit = 0: new files all go to the blob store"
    )
    return Check("inline blobs", "ok", f"{where}; it holds {count} blob(s), {size} bytes")


def blob_probe(blobs: Any) -> Check:
    """Write, read back and delete one object under ``doctor/`` in the blob store itself.

    With the inline tier the probe goes to the bulk store underneath (a small
    probe would otherwise land in the metadata database).
    """
    blobs = getattr(blobs, "bulk", blobs)
    key = f"doctor/probe-{uuid.uuid4()}"
    try:
        blobs.put(key, [PROBE])
        with blobs.open(key) as chunks:
            data = b"".join(chunks)
        blobs.delete(key)
    except DocbinderError as exc:
        return Check(
            "blob store writable", "fail", f"{blobs.url}: {exc}{checksum_hint(blobs, exc)}"
        )
    if data != PROBE:
        return Check(
            "blob store writable", "fail", f"{blobs.url}: the probe read back different bytes"
        )
    mode = getattr(blobs, "checksums", None)
    return Check("blob store writable", "ok", blobs.url + (f" (checksums {mode})" if mode else ""))


def commit_records_check(blobs: Any) -> Check | None:
    """Whether the store keeps committed-blob records (ADR 0031): a tagged probe object on S3.

    ``None`` for a store without the probe (local disk and memory keep theirs
    beside the blob and report a refusal when storing). A refusal is a
    ``warn`` naming the error code and what is missing (``s3:PutObjectTagging``,
    ``s3_content_md5``): gc's protection of files stored after a backup is
    then off.
    """
    probe = getattr(blobs, "check_commit_records", None)
    if probe is None:
        return None
    name = "committed-blob records"
    try:
        reason = probe()
    except DocbinderError as exc:
        return Check(name, "fail", f"{blobs.url}: the tagging probe failed: {exc}")
    if reason is None:
        return Check(name, "ok", f"{blobs.url}: PutObjectTagging and GetObjectTagging work")
    return Check(
        name,
        "warn",
        f"{blobs.url} refused PutObjectTagging: {reason}; no blob is recorded as committed, so "
        "gc cannot tell files stored after a restored backup from leftovers (docs/security.md)",
    )


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


def checksum_hint(blobs: Any, exc: DocbinderError) -> str:
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


def location_check(blobs: Any, store_id: str | None, locations: dict[str, str]) -> Check:
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


def leftovers_check(blobs: Any) -> Check:
    """Temp files of interrupted writes (local disk) and unfinished multipart uploads (S3), with sizes."""
    name = "leftovers of interrupted writes"
    try:
        found = [_temp_files(blobs), _uploads(blobs)]
    except DocbinderError as exc:
        return Check(name, "warn", f"could not list them: {exc}")
    kinds = [(count, size, what) for count, size, what in (f for f in found if f is not None)]
    if not kinds:
        return Check(name, "ok", "this store leaves none")
    total = sum(size for _, size, _ in kinds)
    detail = f"{' and '.join(what for _, _, what in kinds)}, {total} bytes ({human_size(total)})"
    if any(count for count, _, _ in kinds):
        return Check(
            name,
            "warn",
            f"{detail}: left by interrupted or running uploads; `docbinder gc --apply` removes "
            "those older than its --grace",
        )
    return Check(name, "ok", detail)


def _temp_files(blobs: Any) -> tuple[int, int, str] | None:
    """``(count, bytes, description)`` of a local-disk store's temp files; ``None`` for other stores."""
    stale_fn = getattr(blobs, "stale_temp_files", None)
    if stale_fn is None:
        return None
    temps = stale_fn(0)
    total = 0
    for path in temps:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return len(temps), total, f"{len(temps)} temp file(s)"


def _uploads(blobs: Any) -> tuple[int, int, str] | None:
    """``(count, bytes, description)`` of an S3 store's unfinished uploads; ``None`` for other stores."""
    pending_fn = getattr(blobs, "pending_uploads", None)
    if pending_fn is None:
        return None
    uploads = pending_fn(0)
    total = sum(blobs.upload_size(u) for u in uploads)
    return len(uploads), total, f"{len(uploads)} unfinished multipart upload(s)"


def human_size(size: int) -> str:
    """``size`` bytes as ``"512 B"``, ``"1.5 KiB"``, ``"2.0 MiB"`` or ``"3.1 GiB"`` (IEC units)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def self_tests(authorizer: Any) -> list[Check]:
    """Run the bridge on in-memory adapters with the configured authorizer.

    The binder comes from the composition root (:func:`docbinder.container.build_binder`
    with ``memory://`` metadata and blobs), wired exactly as a host's, and is
    closed afterwards.
    """
    from docbinder.container import build_binder

    with build_binder(
        database_url="memory://", blob_url="memory://", authorizer=authorizer, prepare=False
    ) as binder:
        checks: list[Check] = []
        try:
            _bridge_self_tests(binder, checks)
        except DocbinderError as exc:
            checks.append(
                Check(
                    "bridge self-test",
                    "fail",
                    f"the configured authorizer refused the self-test ({exc}); a member must be able to create and update its own files and workflows",
                )
            )
        return checks


def _bridge_self_tests(binder: Any, checks: list[Check]) -> None:
    """Append each self-test's check to ``checks`` as it passes or fails; an authorizer's refusal raises."""
    from docbinder.application import UnresolvedReason

    f1 = Principal("doctor-user", "doctor-mandate", "f1", roles=("member",))
    f2 = Principal("doctor-user", "doctor-mandate", "f2", roles=("member",))
    run = binder.start_new_run(f1)
    produced = run.produce_file("doctor.txt", b"doctor self-test", verb="Wrote")
    no_wf = binder.start_run(f1).resolve([produced.reference])
    named = [u.reason for u in no_wf.unresolved] == [UnresolvedReason.NO_ACTIVE_WORKFLOW]
    checks.append(
        Check(
            "a run without workflow is named",
            "ok" if named else "fail",
            "a run without workflow answers no_active_workflow and logs it",
        )
    )
    checks.append(_parsing_check(run, produced))
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


def _parsing_check(run: Any, produced: Any) -> Check:
    """The documentList shapes models send all resolve to the document just attached."""
    shapes = [
        [produced.reference],
        [{"id": produced.document_id}],
        {"documents": [{"id": produced.document_id}]},
        produced.reference,
        f'```json\n["DOCITEM:{produced.document_id}"]\n```',
    ]
    ok = all(len(run.resolve(s).documents) == 1 for s in shapes)
    return Check(
        "tolerant documentList parsing",
        "ok" if ok else "fail",
        "list of strings, list of dicts, dict wrapper, single string and a code fence all resolve"
        if ok
        else "a documentList shape did not resolve",
    )
