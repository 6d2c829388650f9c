"""Names that look the same: exact match first, then one canonically equivalent name.

A file name typed on a keyboard or written by a model is in Unicode
Normalization Form C (``ä`` as one code point); the same name stored by macOS
or a synced share is often in Form D (``a`` + U+0308). The two are
*canonically equivalent* (Unicode Standard Annex #15, "Unicode Normalization
Forms": same characters, same rendering), yet compare unequal as strings.
:func:`match_name` is the one rule every name lookup of docbinder uses (data
sources, ``docList:<label>``): the exact spelling wins; failing that, the one
stored name with the same NFC form; several such names are refused
(:class:`~docbinder.domain.errors.AmbiguousName`), never guessed between.
Compatibility forms (NFKC: ``ﬁ`` vs ``fi``, full-width letters) and case are
not folded: those are different names.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from docbinder.domain.errors import AmbiguousName


def canonical(name: str) -> str:
    """``name`` in Unicode Normalization Form C (UAX #15), the form keyboards produce."""
    return unicodedata.normalize("NFC", name)


def spellings(name: str) -> tuple[str, ...]:
    """The NFC and NFD spellings of ``name`` other than ``name`` itself (zero, one or two).

    What a lookup by exact key (a database index, an S3 key) can try after the
    exact spelling missed. A name in a mixed form has both; an ASCII name none.
    """
    if name.isascii():
        return ()
    found: list[str] = []
    for form in ("NFC", "NFD"):
        other = unicodedata.normalize(form, name)
        if other != name and other not in found:
            found.append(other)
    return tuple(found)


def match_name(wanted: str, names: Iterable[str], *, where: str) -> str | None:
    """The name of ``names`` that ``wanted`` denotes, or ``None``.

    ``wanted`` itself if it is among ``names``; else the single name whose NFC
    form equals ``wanted``'s. Raises :class:`AmbiguousName` (naming ``where``,
    e.g. ``"data source /srv/files"``) when several names are canonically
    equivalent to ``wanted`` and none is it exactly. ``names`` is read once.
    """
    target = canonical(wanted)
    equivalent: list[str] = []
    for name in names:
        if name == wanted:
            return name
        if name not in equivalent and canonical(name) == target:
            equivalent.append(name)
    if len(equivalent) > 1:
        raise AmbiguousName(wanted, tuple(equivalent), where)
    return equivalent[0] if equivalent else None
