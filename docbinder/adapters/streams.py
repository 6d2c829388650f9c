"""Stream helpers shared by the blob adapters (re-exported from the blob port)."""

from docbinder.ports.blobs import CHUNK_SIZE, iter_chunks

__all__ = ["CHUNK_SIZE", "iter_chunks"]
