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
