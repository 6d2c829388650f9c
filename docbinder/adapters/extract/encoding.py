"""Which text encoding to decode a stored text file with.

Order of evidence (after the WHATWG Encoding Standard's "BOM sniff" rule, §6
``decode``, that a byte order mark beats any declaration):

1. a UTF-8, UTF-16 or UTF-32 **byte order mark**;
2. the producer's **declared charset** (``text/csv; charset=GBK``), if Python
   knows the codec;
3. **UTF-8**, when the sample is valid UTF-8 (pure ASCII included; a
   multi-byte sequence cut at the end of the sample is allowed), or UTF-8
   with a few stray invalid bytes among many valid multi-byte sequences;
4. for 8-bit text (no C0 control bytes other than whitespace and ESC; other
   bytes are read as UTF-8 with U+FFFD), **detection** with ``charset-normalizer`` (the ``[extract]`` extra) over the
   sample; among the candidates that decode with the least "chaos", one whose
   decoding mixes Hangul and Han ideographs inside one word is passed over
   (that mix is the signature of Chinese GBK bytes read as Korean CP949, which
   the detector otherwise ties on short samples);
5. **Windows-1252** as the last resort (a superset of the printable ISO-8859-1
   characters).

Answers 4 and 5 are guesses: :attr:`TextEncoding.guessed` is true and the
content part says so.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from typing import Final

import attrs

from docbinder.adapters.extract.mime import BYTE_ORDER_MARKS, text_encoding

DETECT_BYTES: Final = 64 * 1024
"""How many leading bytes of a text file the encoding is decided on (64 KiB)."""

FALLBACK: Final = "cp1252"
"""The codec used when nothing else decides (Windows-1252)."""

_CHARSET_RE = re.compile(
    r";\s*charset\s*=\s*\"?([A-Za-z0-9][A-Za-z0-9!#$%&'+^_`{}~.-]{0,39})", re.IGNORECASE
)


@attrs.frozen
class TextEncoding:
    """A decision: ``codec`` (a Python codec name), whether it was ``guessed``, and ``source``.

    ``source`` is one of ``"bom"``, ``"declared"``, ``"utf-8"``, ``"detected"``,
    ``"fallback"``.
    """

    codec: str
    guessed: bool
    source: str


def declared_charset(mime_type: str | None) -> str | None:
    """The ``charset`` parameter of a MIME type, lowercased, if Python knows that codec.

    ``"text/csv; charset=GBK"`` gives ``"gbk"``; an unknown or missing charset
    gives ``None``. The parameter syntax is RFC 2045 §5.1. Never raises.
    """
    if not isinstance(mime_type, str):
        return None
    match = _CHARSET_RE.search(mime_type)
    if match is None:
        return None
    label = match.group(1).lower()
    try:
        codecs.lookup(label)
    except LookupError:
        return None
    return label


def _is_utf8(sample: bytes) -> bool:
    """Valid UTF-8, or UTF-8 with stray bad bytes: at least 4 valid non-ASCII characters per error.

    Text in a legacy 8-bit or double-byte encoding almost never forms valid
    UTF-8 multi-byte sequences, so a few invalid bytes among many valid
    sequences mean damaged UTF-8, not another encoding.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(sample, final=False)
    errors = text.count("\ufffd")
    if not errors:
        return True
    valid = sum(1 for char in text if char > "\x7f") - errors
    return valid >= 4 * errors


def _mixes_hangul_and_han(text: str) -> bool:
    """Whether some word holds both Hangul syllables and Han ideographs."""
    for word in re.findall(r"\w+", text):
        has_hangul = has_han = False
        for char in word:
            if "\uac00" <= char <= "\ud7a3":
                has_hangul = True
            elif unicodedata.name(char, "").startswith("CJK UNIFIED IDEOGRAPH"):
                has_han = True
            if has_hangul and has_han:
                return True
    return False


def _detect(sample: bytes) -> str | None:
    """The codec charset-normalizer picks for ``sample``, or ``None`` (no extra / no answer)."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return None
    try:
        matches = list(from_bytes(sample))
    except Exception:
        return None
    if not matches:
        return None
    best = matches[0]
    tied = [m for m in matches if abs(m.chaos - best.chaos) < 0.01]
    for match in tied:
        if not _mixes_hangul_and_han(str(match)):
            return str(match.encoding)
    return str(best.encoding)


def detection_available() -> bool:
    """Whether ``charset-normalizer`` (the ``[extract]`` extra) is installed."""
    try:
        import charset_normalizer  # noqa: F401
    except ImportError:
        return False
    return True


def choose_encoding(sample: bytes, declared: str | None = None) -> TextEncoding:
    """Decide how to decode a text file from its leading bytes and its declared MIME type.

    ``sample`` holds up to :data:`DETECT_BYTES` leading bytes; ``declared`` is
    the FileItem's MIME type, which may carry a ``charset`` parameter. See the
    module documentation for the order of evidence. Never raises.
    """
    for bom, name in BYTE_ORDER_MARKS:
        if sample.startswith(bom):
            return TextEncoding(name, False, "bom")
    charset = declared_charset(declared)
    if charset is not None:
        return TextEncoding(charset, False, "declared")
    if _is_utf8(sample) or text_encoding(sample) != "latin-1":
        # Valid UTF-8; or bytes with control characters, which are no legacy text either:
        # read as UTF-8 with U+FFFD for the bad bytes.
        return TextEncoding("utf-8", False, "utf-8")
    detected = _detect(sample)
    if detected is not None:
        return TextEncoding(detected, True, "detected")
    return TextEncoding(FALLBACK, True, "fallback")
