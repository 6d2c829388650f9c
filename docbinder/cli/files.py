"""``docbinder files ls | show | cat | rm``: list, inspect, read and delete stored files."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer

from docbinder.cli.common import JsonOpt, handles_errors, nothing_stored_yet
from docbinder.cli.output import clean, emit_json, err, out
from docbinder.cli.state import STATE
from docbinder.domain.errors import AccessDenied, InvalidInput

if TYPE_CHECKING:
    from docbinder.domain.references import DocumentReference

_REFERENCE_PREFIXES = (
    "docitem",
    "doc_item",
    "doc-item",
    "doclist",
    "doc_list",
    "doc-list",
    "file:",
)

WorkflowOpt = Annotated[
    str | None,
    typer.Option(
        "--workflow",
        "-w",
        help="Workflow a docItem:<id> or docList:<label> reference is resolved in.",
    ),
]


@handles_errors
def files_ls(
    limit: Annotated[int, typer.Option(help="At most this many files.")] = 100,
    json_flag: JsonOpt = False,
) -> None:
    """List the files the identity may read, newest first."""
    items = [] if nothing_stored_yet() else STATE.binder().list_files(STATE.principal, limit=limit)
    if STATE.wants_json(json_flag):
        emit_json(items)
        return
    # One line per file, id first, so ids stay whole at any width (as in ``workflow show``).
    for item in items:
        out.print(
            f"{item.id}  {item.file_name}  ({item.size} bytes, {item.mime_type})  "
            f"scope {item.scope}  by {item.created_by}"
        )
    if not items:
        out.print("no files")


def file_id_of(text: str, workflow: str | None, command: str) -> str:
    """The FileItem id that ``text`` names for ``docbinder files <command>``.

    ``text`` is a file id, ``file:<id>``, or one document reference in any shape the
    documentList parser reads (``docItem:<id>``, ``docList:<label>``, also quoted,
    bracketed or in odd case; :mod:`docbinder.domain.parsing`). A document reference
    names a ChatDocument of one workflow, so it is resolved in ``workflow`` with the
    CLI identity, as ``docbinder resolve`` would, and gives the id of its file. Text
    that holds no reference is taken as a file id as it is.

    Raises :class:`InvalidInput` for several references, an unusable one, a
    ``docList`` whose documents point at several files, or a document reference
    without ``workflow`` (the message names the command to run);
    :class:`~docbinder.domain.errors.WorkflowNotFound`, :class:`AccessDenied` or
    :class:`NotFound` when the reference does not resolve in the workflow.
    """
    from docbinder.domain.parsing import coerce_document_references
    from docbinder.domain.references import DocumentItemReference, FileReference

    stripped = text.strip()
    parsed = coerce_document_references(stripped)
    if len(parsed.references) != 1 or parsed.rejected:
        if not stripped.lower().lstrip("[(<{'\"`* ").startswith(_REFERENCE_PREFIXES):
            return text  # no reference in it: a file id, looked up as given
        raise InvalidInput(
            f"{stripped} is not one file id or document reference; give a file id, "
            "file:<id>, docItem:<id> or docList:<label>"
        )
    [reference] = parsed.references
    if isinstance(reference, FileReference):
        return reference.file_id
    if isinstance(reference, DocumentItemReference) and reference.bare:
        return text  # a bare id: the file id the tool-result block shows next to it
    if workflow is None:
        import shlex

        raise InvalidInput(
            f"{reference} is a document reference, resolved within its workflow: run "
            f"docbinder files {command} {shlex.quote(str(reference))} --workflow WORKFLOW_ID "
            "(docbinder workflow ls lists the workflow ids)"
        )
    return _file_of_document(reference, workflow)


def _file_of_document(reference: DocumentReference, workflow: str) -> str:
    """The one file id the documents ``reference`` names in ``workflow`` point at."""
    from docbinder.application import UnresolvedReason
    from docbinder.domain.errors import NotFound

    resolution = STATE.start_run(workflow).resolve(str(reference))
    if resolution.unresolved:
        miss = resolution.unresolved[0]
        error = AccessDenied if miss.reason is UnresolvedReason.ACCESS_DENIED else NotFound
        raise error(f"{reference} in workflow {workflow}: {miss.message}")
    file_ids = list(dict.fromkeys(resolved.file.id for resolved in resolution.documents))
    if len(file_ids) != 1:
        raise InvalidInput(
            f"{reference} names documents of {len(file_ids)} files in workflow {workflow} "
            f"({', '.join(file_ids)}); give one of these file ids"
        )
    return file_ids[0]


@handles_errors
def files_show(file_id: str, workflow: WorkflowOpt = None, json_flag: JsonOpt = False) -> None:
    """Show one file's metadata.

    FILE_ID is a file id, ``file:<id>``, or a ``docItem:<id>`` / ``docList:<label>``
    reference with --workflow.
    """
    item = STATE.binder().get_file(STATE.principal, file_id_of(file_id, workflow, "show"))
    if STATE.wants_json(json_flag):
        emit_json(item)
        return
    from docbinder.serialization import to_wire

    for key, value in to_wire(item).items():
        out.print(
            f"{key:>10}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}"
        )


@handles_errors
def files_cat(file_id: str, workflow: WorkflowOpt = None, json_flag: JsonOpt = False) -> None:
    """Write one file's bytes to stdout (``--json``: metadata and base64 ``data`` in one document).

    FILE_ID as for ``files show``. A file that is not text is not written to a
    terminal (it would garble it): redirect stdout to a file or a pipe.
    """
    binder = STATE.binder()
    file_id = file_id_of(file_id, workflow, "cat")
    if not STATE.wants_json(json_flag) and sys.stdout.isatty():
        from docbinder.domain.mime import is_textual_mime

        item = binder.get_file(STATE.principal, file_id)
        if not is_textual_mime(item.mime_type.lower()):
            raise InvalidInput(
                f"{clean(item.file_name, multiline=False)!r} is {item.mime_type}, not text: it is not "
                f"written to a terminal; redirect it (docbinder files cat {item.id} > FILE) "
                "or use --json"
            )
    if STATE.wants_json(json_flag):
        import base64

        item = binder.get_file(STATE.principal, file_id)
        with binder.open_file(STATE.principal, file_id) as chunks:
            data = b"".join(chunks)
        emit_json({"file": item, "base64": base64.b64encode(data).decode("ascii")})
        return
    sink: BinaryIO = sys.stdout.buffer
    with binder.open_file(STATE.principal, file_id) as chunks:
        for chunk in chunks:
            sink.write(chunk)
    sink.flush()


@handles_errors
def files_rm(
    file_id: str,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even if workflow documents refer to the file (they then "
            "resolve as file_missing).",
        ),
    ] = False,
    workflow: WorkflowOpt = None,
    json_flag: JsonOpt = False,
) -> None:
    """Delete one file (metadata, then its blob); refuses while documents refer to it.

    FILE_ID as for ``files show``; a document reference deletes the file it points at.
    """
    file_id = file_id_of(file_id, workflow, "rm")
    binder = STATE.binder()
    references = binder.count_file_references(STATE.principal, file_id)
    item = binder.delete_file(STATE.principal, file_id, force=force)
    if STATE.wants_json(json_flag):
        emit_json({"deleted": item.id, "references": references})
        return
    out.print(f"deleted {item.id} ({item.file_name})")
    if references:
        err.print(
            f"warning: {references} document(s) in workflows referred to it; they now resolve "
            "as file_missing and `workflow show` marks them"
        )


@handles_errors
def files_link(
    file_id: str,
    expires: Annotated[
        str, typer.Option("--expires", help="Lifetime: seconds or 90s, 10m, 2h, 1d.")
    ] = "10m",
    audience: Annotated[
        str | None, typer.Option(help="Only a redemption stating this audience is served.")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="The link works once.")] = False,
    workflow: WorkflowOpt = None,
    json_flag: JsonOpt = False,
) -> None:
    """Mint a signed, expiring download link to a file (needs link_keys and public_url).

    FILE_ID is a file id, ``file:<id>``, or a ``docItem:<id>`` reference with --workflow.
    """
    target = file_id_of(file_id, workflow, "link")
    link = STATE.start_run(None).link_for(target, expires_in=expires, audience=audience, once=once)
    if STATE.wants_json(json_flag):
        emit_json(
            {
                "url": link.url,
                "expiresAt": link.expires_at.isoformat(),
                "linkId": link.link_id,
                "fileId": link.file.id,
                "once": link.once,
                "audience": link.audience,
            }
        )
        return
    out.print(link.url, markup=False, soft_wrap=True)
    err.print(f"expires {link.expires_at.isoformat()}", markup=False)
