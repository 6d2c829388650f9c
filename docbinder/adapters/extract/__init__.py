"""Content extraction and MIME detection adapters (SPEC C8).

:class:`SniffingMimeDetector` decides a file's MIME type when it is stored;
:class:`DefaultContentExtractor` turns stored bytes into content parts for
consuming tools. PDF text needs the ``[extract]`` extra (``pypdf``).
"""

from docbinder.adapters.extract.extractor import DefaultContentExtractor
from docbinder.adapters.extract.mime import SniffingMimeDetector

__all__ = ["DefaultContentExtractor", "SniffingMimeDetector"]
