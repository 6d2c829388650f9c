"""Optical character recognition with Tesseract: :class:`TesseractRecognizer` (the OCR port).

Tesseract (Apache-2.0) is run in the converter process through ``tesserocr``,
which links the engine into Python (its wheels carry ``libtesseract``); the
language data (``<lang>.traineddata``) comes from the operating system's
package (Debian/Ubuntu ``tesseract-ocr`` and ``tesseract-ocr-<lang>``, Homebrew
``tesseract``). Both are the ``ocr`` extra (from a clone: ``pip install -e
'.[ocr]'``, plus the OS package); without them :meth:`TesseractRecognizer.problem`
says which part is missing and pages without a text layer report that they
gave nothing. ADR 0064 records the choice of engine.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from typing import Any, Final

import attrs

from docbinder.domain.errors import ConfigurationError
from docbinder.ports.extractor import RecognitionSession, RecognizedText

TESSDATA_DIRS: Final = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
    "/opt/local/share/tessdata",
)
"""Where the OS packages put Tesseract's language data (Debian/Ubuntu, Fedora, Homebrew, MacPorts)."""

OCR_EXTRA_HINT: Final = "the ocr extra (from a clone: pip install -e '.[ocr]')"
"""How to install the OCR libraries, for notes and errors."""

_LANGUAGES = re.compile(r"[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*")


@attrs.frozen
class TesseractRecognizer:
    """:class:`~docbinder.ports.extractor.TextRecognizer` over Tesseract (``tesserocr``).

    ``languages`` is Tesseract's language list (``"eng"``, ``"eng+deu"``);
    ``tessdata`` the directory holding ``<lang>.traineddata`` (``None``: the
    first of :data:`TESSDATA_DIRS` that holds them all). The engine runs with
    its default page segmentation (automatic) and its LSTM recognizer.
    Raises :class:`~docbinder.domain.errors.ConfigurationError` for a
    malformed ``languages`` value.
    """

    languages: str = "eng"
    tessdata: str | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.languages, str) or not _LANGUAGES.fullmatch(self.languages):
            raise ConfigurationError(
                f"OCR languages must look like 'eng' or 'eng+deu', got {self.languages!r}"
            )

    @property
    def engine(self) -> str:
        """``tesseract (tesserocr <version>) <languages>``, or ``tesseract (not installed)``."""
        binding = _binding_version()
        if binding is None:
            return "tesseract (not installed)"
        return f"tesseract (tesserocr {binding}) {self.languages}"

    def data_dir(self) -> str | None:
        """The directory with every language's ``.traineddata``, or ``None``."""
        for directory in (self.tessdata,) if self.tessdata else TESSDATA_DIRS:
            if all(
                os.path.isfile(os.path.join(directory, f"{lang}.traineddata"))
                for lang in self.languages.split("+")
            ):
                return directory
        return None

    def problem(self) -> str | None:
        """Why OCR cannot run here, or ``None``: the library or the language data is missing."""
        if importlib.util.find_spec("tesserocr") is None:
            return f"OCR needs {OCR_EXTRA_HINT} and Tesseract (apt-get install tesseract-ocr)"
        if self.data_dir() is None:
            where = self.tessdata or ", ".join(TESSDATA_DIRS)
            packages = " ".join(f"tesseract-ocr-{lang}" for lang in self.languages.split("+"))
            return (
                f"OCR needs Tesseract's language data for {self.languages!r}, not found in "
                f"{where} (Debian/Ubuntu: apt-get install {packages})"
            )
        return None

    @contextmanager
    def session(self) -> Iterator[RecognitionSession]:
        """Load Tesseract with the language data once for the pages of one document.

        Raises :class:`~docbinder.domain.errors.ConfigurationError` with the
        sentence of :meth:`problem` when the library or the data is missing.
        """
        problem = self.problem()
        if problem is not None:
            raise ConfigurationError(problem)
        import tesserocr

        directory = self.data_dir()
        assert directory is not None
        api = tesserocr.PyTessBaseAPI(path=directory + os.sep, lang=self.languages)
        try:
            yield _TesseractSession(api)
        finally:
            api.End()


class _TesseractSession:
    """One loaded ``PyTessBaseAPI``: each :meth:`read` recognizes one image."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def read(
        self, pixels: bytes, width: int, height: int, *, dpi: int, timeout: float
    ) -> RecognizedText:
        """See :meth:`~docbinder.ports.extractor.RecognitionSession.read`."""
        api = self._api
        api.SetImageBytes(pixels, width, height, 1, width)
        api.SetSourceResolution(dpi)
        complete = bool(api.Recognize(timeout=max(1, int(timeout * 1000))))
        text = api.GetUTF8Text() if complete else ""
        confidence = api.MeanTextConf() if complete and text.strip() else None
        api.Clear()
        return RecognizedText(
            text=_tidy(text),
            confidence=None if confidence is None or confidence < 0 else confidence / 100,
            complete=complete,
        )


@functools.cache
def _binding_version() -> str | None:
    """The installed ``tesserocr`` version (``None``: not installed), read once per process
    like the converter libraries' versions of the extraction cache key."""
    try:
        return distribution_version("tesserocr")
    except PackageNotFoundError:
        return None


def _tidy(text: str) -> str:
    """Tesseract's text with trailing spaces and runs of blank lines removed."""
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n")
