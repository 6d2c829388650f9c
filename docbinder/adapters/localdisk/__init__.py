"""Local-disk blob store (``file:///...``): atomic writes under a root directory (SPEC C13)."""

from docbinder.adapters.localdisk.blobs import DEFAULT_STALE_AFTER, LocalDiskBlobStore

__all__ = ["DEFAULT_STALE_AFTER", "LocalDiskBlobStore"]
