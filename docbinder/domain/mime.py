"""MIME type rules every layer shares: the syntax of a MIME type and which ones are text.

Pure functions (RFC 6838 §4.2 names, RFC 6839 structured-syntax suffixes); the
sniffing detector (:mod:`docbinder.adapters.extract.mime`), the tools and the
integrations use them.
"""

from __future__ import annotations

import re

_MIME_RE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")


def normalize_mime(value: object) -> str | None:
    """Return ``value`` as a lowercase ``type/subtype`` if it is a valid MIME type, else ``None``.

    Parameters after ``;`` (``text/plain; charset=utf-8``) are dropped. The
    syntax is RFC 6838 §4.2 (restricted names of at most 127 characters).
    Never raises.
    """
    if not isinstance(value, str):
        return None
    candidate = value.split(";", 1)[0].strip().lower()
    if _MIME_RE.match(candidate):
        return candidate
    return None


def mime_essence(value: str) -> str:
    """The lowercase ``type/subtype`` of a MIME type, without parameters (``; charset=...``)."""
    return value.split(";", 1)[0].strip().lower()


def is_textual_mime(mime: str) -> bool:
    """Whether a (normalised) MIME type names a text format.

    True for ``text/*``, JSON, XML, YAML and JavaScript types, and the
    structured-syntax suffixes ``+json``, ``+xml`` and ``+yaml`` (RFC 6839).
    """
    if mime.startswith("text/"):
        return True
    return mime in {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/javascript",
        "application/x-ndjson",
    } or mime.endswith(("+json", "+xml", "+yaml"))


def served_content_type(mime: str) -> str:
    """The ``Content-Type`` a stored file's bytes are sent with: ``mime``, text types with ``charset=utf-8``.

    A FileItem keeps its type without parameters (:func:`normalize_mime`), and a
    text type without a charset is read as US-ASCII (RFC 2046 §4.1.2) or as the
    browser's legacy default, which turns ``Zürich`` into ``ZÃ¼rich``. Text is
    taken as UTF-8 wherever docbinder reads it (extraction, MCP resources), so
    that is what the answer declares (RFC 6657 §4: the charset parameter).
    """
    return f"{mime}; charset=utf-8" if is_textual_mime(mime) else mime
