"""In-memory adapters for every port: for unit tests and ``memory://`` URLs."""

from docbinder.adapters.memory.blobs import MemoryBlobStore
from docbinder.adapters.memory.extraction_cache import MemoryExtractionCache
from docbinder.adapters.memory.metadata import MemoryMetadataStore, MemoryUnitOfWork

__all__ = [
    "MemoryBlobStore",
    "MemoryExtractionCache",
    "MemoryMetadataStore",
    "MemoryUnitOfWork",
]
