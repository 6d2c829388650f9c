"""Sandbox paths in a model's text become ``docItem:`` references of harvested files.

A model that ran code writes ``sandbox:/mnt/data/chart.png``, ``/mnt/data/chart.png``
or ``./outputs/table.csv`` into its answer, bare or as the target of a Markdown
link or image; outside the sandbox those lead nowhere. :func:`rewrite_links`
replaces each path a :class:`~docbinder.harvest.core.HarvestReport` knows by
the file's ``docItem:`` reference, and by a signed download link as well when
the binder has link keys and a ``public_url`` (``docbinder serve``). Paths it
does not know stay as they are and are listed in the result.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Mapping

import attrs

from docbinder.application.binder import Run
from docbinder.application.use_cases.mint_link import TOOL_LINK_SECONDS
from docbinder.domain.errors import DocbinderError
from docbinder.harvest.core import HarvestReport

log = logging.getLogger(__name__)

_PATH_CHARS = r"[^\s()\[\]<>\"'`]"
_SANDBOX_PATH = re.compile(
    r"(?:sandbox:(?P<sandbox>/?" + _PATH_CHARS + r"+)"
    r"|(?<![\w/.:~-])(?P<absolute>/" + _PATH_CHARS + r"+)"
    r"|(?<![\w/.:~-])(?P<relative>\./" + _PATH_CHARS + r"+))"
)
"""A sandbox path: ``sandbox:<path>``, an absolute path (``/mnt/data/x.png``; not inside a
URL or a word), or a ``./relative/path``. Trailing sentence punctuation is trimmed."""

_TRAILING = ".,;:!?"


@attrs.frozen
class Rewritten:
    """One replaced path: ``original`` as it stood in the text, the ``reference``, the ``url`` if any."""

    original: str
    reference: str
    url: str | None = None


@attrs.frozen
class RewriteResult:
    """The rewritten ``text``; ``rewritten`` paths in order; ``unknown`` paths left as they were."""

    text: str
    rewritten: tuple[Rewritten, ...] = ()
    unknown: tuple[str, ...] = ()


def rewrite_links(
    text: str,
    harvested: HarvestReport | Mapping[str, str],
    *,
    run: Run | None = None,
    with_links: bool = True,
) -> RewriteResult:
    """Replace the sandbox paths in ``text`` that name harvested files.

    ``harvested`` is a :class:`HarvestReport` (or a mapping of sandbox path
    to ``docItem:`` reference). A path in the text matches a harvested path
    when they are equal after dropping ``sandbox:`` and ``./`` and
    normalising (``posixpath.normpath``), or when the text's path is a
    trailing part of exactly one harvested path (``./outputs/x.csv`` for
    ``/work/outputs/x.csv``); two candidates are ambiguous and the path is
    left alone (listed in ``unknown``).

    A path inside another URL or its query (``https://host/?d=(/mnt/data/x)``) is
    left as it is and listed in ``unknown``: a link put there would reach that host.
    A bare path becomes ``docItem:<id>``; a Markdown link or image target
    becomes the download link when ``run`` is given, ``with_links`` is true
    and the binder mints links (link keys and ``public_url`` set), else the
    ``docItem:`` reference. A bare path then reads ``docItem:<id> (<url>)``.
    Never raises for a link that cannot be minted (logged; the reference stays).
    """
    references = harvested.references if isinstance(harvested, HarvestReport) else dict(harvested)
    index = {_normal(path): ref for path, ref in references.items()}
    rewritten: list[Rewritten] = []
    unknown: list[str] = []
    links: dict[str, str | None] = {}
    out: list[str] = []
    position = 0
    for match in _SANDBOX_PATH.finditer(text):
        raw = match.group(0)
        trimmed = raw.rstrip(_TRAILING)
        end = match.start() + len(trimmed)
        path = match.group("sandbox") or match.group("absolute") or match.group("relative")
        path = path[: len(path) - (len(raw) - len(trimmed))]
        reference = None if _inside_another_url(text, match.start()) else _lookup(index, path)
        if reference is None:
            unknown.append(trimmed)
            continue
        in_markdown_target = (
            match.start() > 0 and text[match.start() - 1] == "(" and (text[end : end + 1] == ")")
        )
        if reference not in links:
            links[reference] = _link(run, reference) if (run is not None and with_links) else None
        url = links[reference]
        if in_markdown_target:
            replacement = url or reference
        else:
            replacement = f"{reference} ({url})" if url else reference
        out.append(text[position : match.start()])
        out.append(replacement)
        position = end
        rewritten.append(Rewritten(trimmed, reference, url))
    out.append(text[position:])
    return RewriteResult("".join(out), tuple(rewritten), tuple(unknown))


def _inside_another_url(text: str, start: int) -> bool:
    """Whether the path at ``start`` stands inside another URL or its query (left as it is).

    The word the path is part of (up to the whitespace before it) holding ``://``, ``?``,
    ``=`` or ``&`` before the path means the path is data of another link
    (``![](https://host/pixel?d=(/mnt/data/x))``): a download link put there would be
    sent to that host.
    """
    word_start = max(text.rfind(space, 0, start) for space in " \t\r\n") + 1
    before = text[word_start:start]
    return any(mark in before for mark in ("://", "?", "=", "&"))


def _normal(path: str) -> str:
    if path.startswith("sandbox:"):
        path = path[len("sandbox:") :]
    normal = posixpath.normpath(path)
    return normal[2:] if normal.startswith("./") else normal


def _lookup(index: Mapping[str, str], path: str) -> str | None:
    wanted = _normal(path)
    if wanted in index:
        return index[wanted]
    tail = wanted.lstrip("/")
    if not tail or tail.startswith(".."):
        return None
    found = {ref for known, ref in index.items() if known == tail or known.endswith("/" + tail)}
    return found.pop() if len(found) == 1 else None


def _link(run: Run, reference: str) -> str | None:
    mint = run.binder.mint_link
    if mint.keys is None or not mint.base_url:
        return None
    try:
        return run.link_for(reference, expires_in=min(TOOL_LINK_SECONDS, mint.max_expiry)).url
    except DocbinderError as exc:
        log.warning("no download link for %s: %s", reference, exc)
        return None
