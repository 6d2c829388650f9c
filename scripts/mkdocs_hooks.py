"""MkDocs hooks of the docs site (``mkdocs.yml``): the index of the decisions, made at build time.

``docs/adr/index.md`` lists every ADR in ``docs/adr/`` with its title and status, so a
new ADR is on the site without editing a list; the ADRs are not in the navigation
one by one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files


def adr_index(adr_dir: Path) -> str:
    """The Markdown of the decisions' index: one line per ADR, newest last."""
    lines = [
        "# Decisions",
        "",
        "The architecture decision records, one per decision someone would otherwise guess.",
        "A later ADR that undoes an earlier one says so at the top of the earlier one.",
        "",
    ]
    for path in sorted(adr_dir.glob("[0-9][0-9][0-9][0-9]-*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)
        status = re.search(r"(?im)^\W*status\W*:?\W*(.+)$", text)
        suffix = f" — {status[1].strip(' *_')}" if status else ""
        lines.append(f"- [{title}]({path.name}){suffix}")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """A link to the ``adr/`` directory (what GitHub shows as a listing) goes to the index."""
    return re.sub(r"\]\(((?:\.\./)*(?:docs/)?adr/)\)", r"](\1index.md)", markdown)


def on_files(files: Files, config: Any) -> Files:
    """Add the generated ``adr/index.md`` to the site's files."""
    docs = Path(config["docs_dir"])
    files.append(File.generated(config, "adr/index.md", content=adr_index(docs / "adr")))
    return files
