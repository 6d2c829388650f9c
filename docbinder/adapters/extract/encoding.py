"""Which text encoding to decode a stored text file with.

Order of evidence (after the WHATWG Encoding Standard's "BOM sniff" rule, §6
``decode``, that a byte order mark beats any declaration):

1. a UTF-8, UTF-16 or UTF-32 **byte order mark**;
2. the producer's **declared charset** (``text/csv; charset=GBK``), if Python
   knows the codec;
3. **UTF-8**, when the sample is valid UTF-8 (pure ASCII included; a
   multi-byte sequence cut at the end of the sample is allowed when the
   sample is not the whole file: ``caf\\xe9``, Windows-1252's ``café``, is no
   UTF-8 cut short), or UTF-8
   with a few stray invalid bytes among many valid multi-byte sequences;
4. for 8-bit text (no C0 control bytes other than whitespace and ESC; other
   bytes are read as UTF-8 with U+FFFD), **detection**: ``charset-normalizer``
   (the ``[extract]`` extra) proposes candidates; each candidate's decoding,
   and Windows-1252's when the bytes decode under it, is scored by
   :func:`alphabet_fit`: the share of the accented letters that stand in
   words which fit *one* language's alphabet, the same language for the whole
   sample (Western, Central and Northern European, Baltic and Turkish Latin
   alphabets, Cyrillic, Greek, Hebrew, Arabic, Thai, Chinese, Japanese,
   Korean). The best score wins; a tie goes to Windows-1252 (what undeclared
   Western text really is: ``Ça coûte très cher`` scores 1 as Windows-1252 and
   1/3 as Windows-1250's ``Ça coűte trčs cher``), then to the detector's order.
   A word that mixes scripts fits no alphabet: Chinese GBK bytes read as
   Korean CP949 mix Hangul and Han inside words and lose to GBK. Text whose
   only characters beyond ASCII are symbols as Windows-1252 (``5€``,
   ``21°C``, ``“quoted”``: :func:`western_symbols_only`) scores 1 there, as
   it would otherwise lose to any code page that reads those bytes as letters;
5. **Windows-1252** as the last resort (a superset of the printable ISO-8859-1
   characters).

Answers 4 and 5 are guesses: :attr:`TextEncoding.guessed` is true and the
content part says so.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

import attrs

from docbinder.adapters.extract.mime import BYTE_ORDER_MARKS, text_encoding

DETECT_BYTES: Final = 64 * 1024
"""How many leading bytes of a text file the encoding is decided on (64 KiB)."""

FALLBACK: Final = "cp1252"
"""The codec used when nothing else decides (Windows-1252)."""

ALWAYS_SCORED: Final = (FALLBACK, "cp1250")
"""Code pages scored whatever the detector proposes, in the order ties go: Windows-1252,
then Windows-1250 (Central European), which the detector leaves out for short samples
(``Łódź`` came back as Cyrillic CP1125, ``Čeština`` as GB18030)."""

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


def _is_utf8(sample: bytes, whole: bool = False) -> bool:
    """Valid UTF-8, or UTF-8 with stray bad bytes: at least 4 valid non-ASCII characters per error.

    Text in a legacy 8-bit or double-byte encoding almost never forms valid
    UTF-8 multi-byte sequences, so a few invalid bytes among many valid
    sequences mean damaged UTF-8, not another encoding. A sequence cut at the
    end counts as valid unless ``whole`` says the sample is the whole file.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(sample, final=whole)
    errors = text.count("\ufffd")
    if not errors:
        return True
    valid = sum(1 for char in text if char > "\x7f") - errors
    return valid >= 4 * errors


SCORED_BYTES: Final = 8 * 1024
"""How many leading bytes of the sample :func:`alphabet_fit` looks at per candidate (8 KiB)."""

_LATIN_ALPHABETS: Final[dict[str, str]] = {
    # The letters beyond ASCII of each language's alphabet, lower case (loanword letters left out).
    "fr": "àâæçéèêëîïôœùûüÿ",
    "es": "áéíóúüñ",
    "pt": "áâãàçéêíóôõú",
    "it": "àèéìíîòóùú",
    "de": "äöüß",
    "nl": "áàäéèëíïóöúüĳ",
    "ca": "àçèéíïòóúü",
    "sv": "åäöé",
    "da-no": "æøåéèêóòô",
    "fi": "äöåšž",
    "is": "áðéíóúýþæö",
    "cs": "áčďéěíňóřšťúůýž",
    "sk": "áäčďéíĺľňóôŕšťúýž",
    "pl": "ąćęłńóśźż",
    "hu": "áéíóöőúüű",
    "ro": "ăâîșțşţ",
    "hr-sl": "čćđšž",
    "tr": "çğıöşüâî",
    "lt": "ąčęėįšųūž",
    "lv": "āčēģīķļņšūž",
    "et": "äöõüšž",
}

_SCRIPT_RANGES: Final[dict[str, tuple[tuple[int, int], ...]]] = {
    "cyrillic": ((0x0400, 0x052F),),
    "greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "hebrew": ((0x0590, 0x05FF),),
    "arabic": ((0x0600, 0x06FF), (0x0750, 0x077F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "thai": ((0x0E00, 0x0E7F),),
    # Han ideographs (with extension A and compatibility ideographs), full-width letters
    "zh": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF21, 0xFF5A)),
    # Han, hiragana, katakana (full and half width), full-width letters
    "ja": (
        (0x3040, 0x30FF),
        (0x3400, 0x4DBF),
        (0x4E00, 0x9FFF),
        (0xF900, 0xFAFF),
        (0xFF21, 0xFF5A),
        (0xFF66, 0xFF9F),
    ),
    # Hangul syllables and jamo, full-width letters; no Han (see the module documentation)
    "ko": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7A3), (0xFF21, 0xFF5A)),
}

_ALPHABET_NAMES: Final = (*_LATIN_ALPHABETS, *_SCRIPT_RANGES)
_LATIN_SETS: Final = {name: frozenset(letters) for name, letters in _LATIN_ALPHABETS.items()}
_ACCENTED_WORD = re.compile(r"[^\W\d_]*[^\x00-\x7f\W\d_][^\W\d_]*")


def _alphabets_of(char: str) -> int:
    """A bit mask of the alphabets (:data:`_ALPHABET_NAMES` order) that hold ``char``."""
    if not char.isalpha():
        return 0
    lower, code = char.lower(), ord(char)
    mask = 0
    for bit, name in enumerate(_ALPHABET_NAMES):
        latin = _LATIN_SETS.get(name)
        if latin is not None:
            held = lower in latin
        else:
            held = any(low <= code <= high for low, high in _SCRIPT_RANGES[name])
        if held:
            mask |= 1 << bit
    return mask


def alphabet_fit(text: str, _words: dict[str, tuple[int, int]] | None = None) -> float | None:
    """How well ``text`` reads as one language: a share from 0.0 to 1.0, or ``None``.

    Each run of letters that holds a letter beyond ASCII is a word; a word fits
    an alphabet when all its letters beyond ASCII belong to it (ASCII letters
    fit every alphabet). The answer is, for the alphabet that fits best, the
    share of all letters beyond ASCII that stand in fitting words; ``None``
    when ``text`` has no such letter (nothing to judge by). ``_words`` may pass
    a dict that remembers words across calls of one detection.
    """
    words: dict[str, tuple[int, int]] = {} if _words is None else _words
    weights = [0] * len(_ALPHABET_NAMES)
    total = 0
    for match in _ACCENTED_WORD.finditer(text):
        word = match.group()
        known = words.get(word)
        if known is None:
            known = words[word] = _word_alphabets(word)
        mask, count = known
        total += count
        if not mask:
            continue
        for bit in range(len(weights)):
            if mask >> bit & 1:
                weights[bit] += count
    if not total:
        return None
    return max(weights) / total


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def western_symbols_only(text: str) -> bool:
    """Whether ``text``'s characters beyond ASCII are all symbols standing among ASCII text.

    Western text without accented letters still holds ``€ ° “ ” – … ™ ©``: as
    Windows-1252 those bytes are symbols and :func:`alphabet_fit` has nothing
    to judge by, while another code page reads the same bytes as letters that
    fit some alphabet (``€`` as Cyrillic ``А``, ``°C`` as one Han character).
    True when there is at least one character beyond ASCII, none of them is a
    letter, and at least half of their runs are a single character (a symbol
    in running text; double-byte text read this way gives runs of two).
    """
    runs = [m.group() for m in _NON_ASCII_RUN.finditer(text)]
    if not runs:
        return False
    if any(char.isalpha() for run in runs for char in run):
        return False
    return 2 * sum(1 for run in runs if len(run) == 1) >= len(runs)


def _word_alphabets(word: str) -> tuple[int, int]:
    """The alphabets that fit ``word`` (a bit mask) and its number of letters beyond ASCII."""
    mask, count = (1 << len(_ALPHABET_NAMES)) - 1, 0
    for char in word:
        if char.isascii():
            if not char.isalpha():
                mask = 0  # "x²" and the like: not a word of any alphabet
            continue
        mask &= _alphabets_of(char)
        count += 1
    return mask, count


def _decodes(sample: bytes, codec: str) -> str | None:
    """``sample`` decoded strictly with ``codec`` (a sequence cut at the end is dropped)."""
    try:
        return codecs.getincrementaldecoder(codec)(errors="strict").decode(sample, final=False)
    except (UnicodeDecodeError, LookupError):
        return None


def _detect(sample: bytes) -> str | None:
    """The codec to decode 8-bit ``sample`` with, or ``None`` (no extra / no answer).

    See step 4 of the module documentation.
    """
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return None
    try:
        proposed = [str(m.encoding) for m in from_bytes(sample)]
    except Exception:
        return None
    scored = sample[:SCORED_BYTES]
    candidates: list[tuple[float, int, str]] = []
    fits: dict[str, float | None] = {}
    words: dict[str, tuple[int, int]] = {}
    seen: set[str] = set()
    for rank, codec in enumerate([*ALWAYS_SCORED, *proposed]):
        name = codecs.lookup(codec).name
        if name in seen:
            continue
        seen.add(name)
        text = _decodes(scored, codec)
        if text is None:
            continue
        fit = fits[text] if text in fits else fits.setdefault(text, alphabet_fit(text, words))
        if fit is None and not rank and western_symbols_only(text):
            fit = 1.0  # "5 €", "21°C", “quoted”: what undeclared Western text holds
        candidates.append((-1.0 if fit is None else fit, -rank, codec))
    if not proposed:
        return None
    if not candidates:
        return proposed[0]
    return max(candidates)[2]


def detection_available() -> bool:
    """Whether ``charset-normalizer`` (the ``[extract]`` extra) is installed."""
    try:
        import charset_normalizer  # noqa: F401
    except ImportError:
        return False
    return True


def choose_encoding(
    sample: bytes, declared: str | None = None, *, whole: bool = False
) -> TextEncoding:
    """Decide how to decode a text file from its leading bytes and its declared MIME type.

    ``sample`` holds up to :data:`DETECT_BYTES` leading bytes; ``whole`` says
    it is the whole file (so a UTF-8 lead byte at its end was not cut off: the
    file ends there); ``declared`` is the FileItem's MIME type, which may carry
    a ``charset`` parameter. See the module documentation for the order of
    evidence. Never raises.
    """
    for bom, name in BYTE_ORDER_MARKS:
        if sample.startswith(bom):
            return TextEncoding(name, False, "bom")
    charset = declared_charset(declared)
    if charset is not None:
        return TextEncoding(charset, False, "declared")
    if _is_utf8(sample, whole) or text_encoding(sample, whole=whole) != "latin-1":
        # Valid UTF-8; or bytes with control characters, which are no legacy text either:
        # read as UTF-8 with U+FFFD for the bad bytes.
        return TextEncoding("utf-8", False, "utf-8")
    detected = _detect(sample)
    if detected is not None:
        return TextEncoding(detected, True, "detected")
    return TextEncoding(FALLBACK, True, "fallback")
