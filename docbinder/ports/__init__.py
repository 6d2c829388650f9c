"""Ports: the interfaces the use cases need, as ``typing.Protocol`` classes.

Host applications may pass any object that has these methods; adapters in
:mod:`docbinder.adapters` implement them for memory, SQL, local disk and S3.
"""

from docbinder.ports.authorizer import Authorizer
from docbinder.ports.blobs import BlobStore
from docbinder.ports.extractor import ContentExtractor, ExtractionCache, MimeDetector
from docbinder.ports.metadata import (
    FileRepository,
    MaintenanceRepository,
    UnitOfWork,
    UnitOfWorkFactory,
    VersionRepository,
    WorkflowRepository,
)
from docbinder.ports.system import Clock, IdFactory

__all__ = [
    "Authorizer",
    "BlobStore",
    "Clock",
    "ContentExtractor",
    "ExtractionCache",
    "FileRepository",
    "IdFactory",
    "MaintenanceRepository",
    "MimeDetector",
    "UnitOfWork",
    "UnitOfWorkFactory",
    "VersionRepository",
    "WorkflowRepository",
]
