"""Content extraction and MIME detection adapters (SPEC C8).

:class:`SniffingMimeDetector` decides a file's MIME type when it is stored;
:class:`DefaultContentExtractor` turns stored bytes into content parts for
consuming tools. PDF, Office, OpenDocument, EPUB, RTF and e-mail text, HTML as
Markdown and encoding detection need the ``[extract]`` extra (ADR 0019); OCR of
scans and images (:class:`TesseractRecognizer`) the ``[ocr]`` extra (ADR 0064).
"""

from docbinder.adapters.extract.extractor import DefaultContentExtractor
from docbinder.adapters.extract.mime import SniffingMimeDetector
from docbinder.adapters.extract.ocr import TesseractRecognizer

__all__ = ["DefaultContentExtractor", "SniffingMimeDetector", "TesseractRecognizer"]
