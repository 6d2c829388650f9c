"""Storage helpers of the CLI that are not part of the library's wiring."""

from __future__ import annotations

from typing import Any

from docbinder.ports.blobs import BlobStore


def remove_stale_temp_files(blobs: BlobStore, older_than: float, *, dry_run: bool) -> list[str]:
    """Temp files a killed writer left in a local-disk store (removed unless ``dry_run``)."""
    stale_fn: Any = getattr(blobs, "stale_temp_files", None)
    if stale_fn is None:
        return []
    stale = [str(p) for p in stale_fn(older_than)]
    if not dry_run and stale:
        blobs.remove_stale_temp_files(older_than)  # type: ignore[attr-defined]
    return stale


def abort_stale_uploads(blobs: BlobStore, older_than: float, *, dry_run: bool) -> list[str]:
    """Unfinished multipart uploads a killed writer left in an S3 store (aborted unless ``dry_run``).

    Returns the object keys of the uploads found; stores without multipart
    uploads give an empty list.
    """
    pending_fn: Any = getattr(blobs, "pending_uploads", None)
    if pending_fn is None:
        return []
    if dry_run:
        return [u.key for u in pending_fn(older_than)]
    aborted = blobs.abort_pending_uploads(older_than)  # type: ignore[attr-defined]
    return [u.key for u in aborted]
