"""Storage helpers of the CLI that are not part of the library's wiring."""

from __future__ import annotations

from typing import Any

from docbinder.config import Settings
from docbinder.domain.errors import ConfigurationError
from docbinder.ports.blobs import BlobStore


def check_database_ready(settings: Settings) -> None:
    """Raise :class:`ConfigurationError` unless the metadata database exists at the head schema.

    Connects without creating anything: a missing SQLite file is reported
    before any connection (SQLite would create it), and a schema that is not
    at head is reported instead of migrated. A destructive command (``gc``)
    on a database it would have to create or migrate is looking at the
    wrong database.
    """
    if settings.metadata_kind != "sql":
        return
    from docbinder.container import migration_status, sqlite_file

    path = sqlite_file(settings)
    if path is not None and not path.is_file():
        raise ConfigurationError(
            f"the database {path} does not exist: check database_url "
            "(DOCBINDER_DATABASE_URL) or --home; gc never creates a database"
        )
    current, head = migration_status(settings)
    if current != head:
        raise ConfigurationError(
            f"the database schema is at revision {current or 'none'}, not {head}: check "
            "database_url (DOCBINDER_DATABASE_URL), or run `docbinder migrate` first; "
            "gc never migrates"
        )


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
