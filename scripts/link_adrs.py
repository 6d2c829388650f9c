"""Turn the bare ADR numbers of Markdown pages into links to the ADRs.

``python scripts/link_adrs.py README.md docs/*.md`` rewrites ``ADR 0026`` as
``[ADR 0026](adr/0026-workflow-counters.md)`` (the path relative to each page) and
``ADRs 0011, 0012`` as two links; numbers inside code spans and code blocks are left
alone, as are numbers that are links already. ``tests/docs/test_site.py`` fails on any
bare number this would link.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADR_DIR = ROOT / "docs" / "adr"

# "ADR 0026", "ADRs 0011, 0012", "ADR 0025, 0048 and 0053" not already inside "[...]"
MENTION = re.compile(
    r"(?<!\[)\b(?P<word>ADRs?)\s+(?P<numbers>\d{4}(?:(?:,\s+and\s+|,\s+|\s+and\s+)\d{4})*)\b"
)
_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def adr_files() -> dict[str, Path]:
    """ADR number -> its file."""
    return {p.name[:4]: p for p in ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md")}


def link(text: str, page: Path) -> str:
    """``text`` of ``page`` with every bare ADR number linked; unknown numbers stay as they are."""
    files = adr_files()

    def href(number: str) -> str | None:
        target = files.get(number)
        return os.path.relpath(target, page.parent) if target else None

    def replace(found: re.Match[str]) -> str:
        numbers = re.split(r"(,\s+and\s+|,\s+|\s+and\s+)", found["numbers"])
        if any(href(n) is None for n in numbers[::2]):
            return found.group(0)
        first, *rest = numbers
        out = f"[{found['word']} {first}]({href(first)})"
        for separator, number in zip(rest[::2], rest[1::2], strict=True):
            out += f"{separator}[{number}]({href(number)})"
        return out

    pieces = _CODE.split(text)
    return "".join(
        piece if index % 2 else MENTION.sub(replace, piece) for index, piece in enumerate(pieces)
    )


def bare_mentions(text: str) -> list[str]:
    """The ADR mentions of ``text`` (outside code) that are not links."""
    pieces = _CODE.split(text)
    return [
        m.group(0) for i, piece in enumerate(pieces) if not i % 2 for m in MENTION.finditer(piece)
    ]


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name).resolve()
        before = path.read_text(encoding="utf-8")
        after = link(before, path)
        if after != before:
            path.write_text(after, encoding="utf-8")
            print(f"{name}: linked")
