"""The docbinder tool set: the tools of :mod:`docbinder.tools` behind one name-and-arguments call.

A host framework renders :attr:`DocbinderToolset.specs` in its own tool
format and forwards each call of the model to :meth:`DocbinderToolset.call`
(or :meth:`~DocbinderToolset.acall` from async code). The answer is a
:class:`ToolOutcome`: the text the model sees, the content parts a consuming
tool read (images as image parts), the ids of the files and documents
involved, and the structured result a host may pass instead of the text
(:attr:`ToolOutcome.structured`, in the shape of the tool's
:attr:`~docbinder.toolset.ToolSpec.output_schema`). A call never raises a :class:`~docbinder.domain.errors.DocbinderError`:
bad arguments and failures come back as ``is_error=True`` with docbinder's
one-line message.

Every argument goes through the coercion layer of the Python tools
(:mod:`docbinder.tools.arguments`, ADR 0020): the MCP server and every
framework integration call :meth:`DocbinderToolset.call`, so they accept the
same shapes (a Chart.js spec, a dict for a ``.json`` file, rows for ``.csv``, a
``data:`` URI, ``"pdf, html"``) and refuse the rest with the same messages.
Arguments a strict schema sends as JSON text (:attr:`ToolSpec.strict_parameters`)
are read by the same layer.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from docbinder.application.binder import Run, ToolFileResult
from docbinder.application.provenance import ToolCall, tool_call
from docbinder.application.steps.results import printable
from docbinder.application.use_cases.get_content import ContentResult
from docbinder.application.use_cases.resolve_document_list import (
    DEFAULT_SUGGESTIONS,
    DocumentSuggestion,
    Resolution,
    ResolvedDocument,
    UnresolvedReason,
    UnresolvedReference,
)
from docbinder.domain.errors import (
    BlobMissing,
    DocbinderError,
    FileItemNotFound,
    InvalidInput,
    NoActiveWorkflow,
    NotFound,
    StorageError,
    UnsafeOperation,
)
from docbinder.domain.model import ContentKind, ContentPart, FileItem
from docbinder.domain.parsing import REASON_NOT_A_REFERENCE, coerce_document_references
from docbinder.domain.reading import current_read_call
from docbinder.domain.references import DocumentItemReference, FileReference
from docbinder.tools import consuming, producing
from docbinder.tools.arguments import (
    coerce_base64,
    coerce_choice,
    coerce_int,
    coerce_string_list,
    coerce_text,
    load_json,
    refusal,
    strip_fence,
)
from docbinder.tools.datasources import DataSource
from docbinder.tools.images import ImageGenerator
from docbinder.tools.results import ToolResult
from docbinder.toolset import specs as S
from docbinder.toolset.specs import FileScope, ToolSpec

log = logging.getLogger(__name__)

DEFAULT_MAX_IMAGE_BYTES: Final = 5 << 20
"""Largest image ``read_documents`` returns as an image part, in bytes (5 MiB)."""

DEFAULT_MAX_TEXT_CHARS: Final = consuming.DEFAULT_MAX_CHARS
"""Most characters of document text one ``read_documents`` answer carries (100,000)."""

MAX_LISTED_DOCUMENTS: Final = 200
MAX_INFO_BLOCKS: Final = 20
"""``get_file_info`` on a reference naming more files describes this many, then names the rest."""
_NEXT_REFERENCES: Final = 5
"""How many of the files left out of an answer are named by their ``docItem:`` reference."""
"""Most documents ``list_documents`` (and :func:`workflow_documents`) returns, newest first."""

DEFAULT_LIST_FILES: Final = 50
"""Default number of files ``list_files`` lists."""

_MAX_ERROR_CHARS: Final = 500


@attrs.frozen
class ToolOutcome:
    """What one tool call gives back.

    ``text`` is what the model sees: for producing tools the unified tool-result
    text (SPEC C5, one block per file), for consuming tools their answer; for
    ``read_documents`` it already holds the text of every text part, with a
    one-line placeholder for each image or binary part. ``parts`` are the
    content parts ``read_documents`` read (text, image and binary
    :class:`~docbinder.domain.model.ContentPart`); a host that can show images
    sends ``text`` and then :attr:`images`. ``file_ids`` and ``document_ids``
    name the FileItems and ChatDocuments the call produced or read. With
    ``is_error`` the text is the one-line error message.

    ``structured`` is the same answer as JSON-ready data for hosts that pass
    a structured result to the model instead of the text: for a call made
    through :meth:`DocbinderToolset.call`, ``{"workflow": <id or None>, ...}``
    in the shape of the tool's :attr:`~docbinder.toolset.ToolSpec.output_schema`
    (camelCase keys), or ``{"workflow": ..., "error": <text>}`` with
    ``is_error``. It carries the references, file ids and, for the reading
    tools, the text within the same character budget as ``text`` (ADR 0055).
    ``workflow_id`` is the run's workflow (``None`` without one).
    ``produced`` holds one :class:`~docbinder.application.binder.ToolFileResult`
    per file a producing tool stored (FileItem and ChatDocument id).
    """

    text: str
    parts: tuple[ContentPart, ...] = ()
    file_ids: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    is_error: bool = False
    structured: Mapping[str, Any] | None = None
    workflow_id: str | None = None
    produced: tuple[ToolFileResult, ...] = ()

    @property
    def images(self) -> tuple[ContentPart, ...]:
        """The image parts that carry data (within the tool set's image size cap)."""
        return tuple(p for p in self.parts if p.kind == ContentKind.IMAGE and p.data is not None)


TOOLS_EXTRA_HINT: Final = (
    "it needs the tools extra (markdown-it-py, matplotlib): pip install -e '.[tools]' in the "
    "docbinder clone"
)
"""Why ``render_document`` / ``create_chart`` are left out when their packages are missing."""


def unavailable_tools() -> dict[str, str]:
    """The producing tools this environment cannot offer: tool name -> what installs it.

    ``render_document`` needs markdown-it-py and matplotlib, ``create_chart``
    matplotlib (the ``[tools]`` extra, which the ``[mcp]`` extra includes).
    Empty when both are installed. Looks the modules up without importing them.
    """
    missing: dict[str, str] = {}
    if not (_has_module("markdown_it") and _has_module("matplotlib")):
        missing["render_document"] = TOOLS_EXTRA_HINT
    if not _has_module("matplotlib"):
        missing["create_chart"] = TOOLS_EXTRA_HINT
    return missing


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class DocbinderToolset:
    """The docbinder tools for one agent run, framework-neutral.

    ``run`` binds principal and workflow (:meth:`DocBinder.start_run` /
    :meth:`DocBinder.start_new_run`). ``data_sources`` maps service names to
    :class:`~docbinder.tools.datasources.DataSource` objects: with at least
    one, ``download_from_data_source`` is offered, over those names only.
    ``image_generator`` enables ``generate_image``. ``render_document`` and
    ``create_chart`` are offered when the ``[tools]`` extra is installed
    (markdown-it-py, matplotlib). ``max_image_bytes`` caps the images
    ``read_documents`` returns as image parts; ``max_text_chars`` caps the
    document text of one ``read_documents`` answer. ``no_workflow_hint`` is
    the sentence that tells the model how to get a workflow when a reference
    meets a run without one (default: bind one with ``--workflow`` or
    ``DocBinder.start_run``; the MCP server says to pass the ``workflow``
    handle). ``file_scope`` is the host's choice of which files ``read_file``,
    ``get_file_info``, ``search_in_file_content`` and ``list_files`` answer for
    (:class:`~docbinder.toolset.specs.FileScope`): every file the principal may
    read (default, the in-process hosts), or only those a document of the run's
    workflow points at (the MCP server; a file id outside the workflow gets the
    answer of an unknown id, and a run without workflow answers with the
    ``no_workflow_hint``); the tool descriptions say which.

    Thread-safe as far as the run and adapters are (they are): calls may run
    concurrently in worker threads.
    """

    def __init__(
        self,
        run: Run,
        *,
        data_sources: Mapping[str, DataSource] | None = None,
        image_generator: ImageGenerator | None = None,
        max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        no_workflow_hint: str | None = None,
        file_scope: FileScope = FileScope.PRINCIPAL,
    ) -> None:
        self.run = run
        self.no_workflow_hint = no_workflow_hint or NO_WORKFLOW_HINT
        self.file_scope = FileScope(file_scope)
        self.data_sources: Mapping[str, DataSource] = dict(data_sources or {})
        self.image_generator = image_generator
        self.max_image_bytes = max_image_bytes
        self.max_text_chars = max_text_chars
        handlers: dict[str, tuple[ToolSpec, Callable[[dict[str, Any]], ToolOutcome]]] = {}
        handlers["write_file"] = (S.write_file_spec(), self._write_file)
        if self.data_sources:
            handlers["download_from_data_source"] = (
                S.download_spec(tuple(self.data_sources)),
                self._download,
            )
        # tools left out because a package is missing: name -> what installs it
        self.unavailable: dict[str, str] = unavailable_tools()
        if "render_document" not in self.unavailable:
            handlers["render_document"] = (S.render_document_spec(), self._render_document)
        if "create_chart" not in self.unavailable:
            handlers["create_chart"] = (S.create_chart_spec(), self._create_chart)
        if image_generator is not None:
            handlers["generate_image"] = (S.generate_image_spec(), self._generate_image)
        handlers["read_documents"] = (S.read_documents_spec(), self._read_documents)
        handlers["list_documents"] = (S.list_documents_spec(), self._list_documents)
        scope = self.file_scope
        handlers["read_file"] = (S.read_file_spec(scope), self._read_file)
        handlers["search_in_file_content"] = (S.search_spec(scope), self._search)
        handlers["get_file_info"] = (S.get_file_info_spec(scope), self._get_file_info)
        handlers["list_files"] = (S.list_files_spec(scope), self._list_files)
        self._handlers = handlers
        self.specs: tuple[ToolSpec, ...] = tuple(spec for spec, _ in handlers.values())

    @property
    def workflow_id(self) -> str | None:
        """The id of the run's workflow, or ``None``."""
        return self.run.context.workflow_id

    def spec(self, name: str) -> ToolSpec:
        """The spec of tool ``name``; :class:`KeyError` if this tool set has no such tool."""
        try:
            return self._handlers[name][0]
        except KeyError:
            raise KeyError(f"unknown tool {name!r}") from None

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        tool_call_id: str | None = None,
        model: str | None = None,
    ) -> ToolOutcome:
        """Run tool ``name`` with the model's ``arguments`` (a mapping, or its JSON text).

        ``tool_call_id`` and ``model`` are what the host gives for this call
        (its call id, the model's name), or ``None``. Files the call produces
        record them with the tool's name and the SHA-256 of ``arguments`` in
        their provenance (B9, :func:`~docbinder.application.provenance.tool_call`).

        Never raises for a docbinder error, an unknown tool or bad arguments:
        those give ``is_error=True`` and one line of text. Any other exception
        (a defect) is logged with its traceback and answered with
        ``internal error in tool <name>``. The outcome's
        :attr:`~ToolOutcome.structured` starts with ``workflow``, the run's
        workflow id; an error's is ``{"workflow": ..., "error": <text>}``.
        Error texts name no storage internals (:func:`public_message`).
        """
        entry = self._handlers.get(name) if isinstance(name, str) else None
        if entry is None:
            known = ", ".join(self._handlers)
            missing = self.unavailable.get(name) if isinstance(name, str) else None
            if missing is not None:
                outcome = _error(f"tool {name!r} is not installed here: {missing}")
            else:
                outcome = _error(f"unknown tool {name!r}; available tools: {known}")
        else:
            spec, handler = entry
            try:
                checked = _arguments(spec, arguments)
                call = ToolCall.of(name, arguments, tool_call_id=tool_call_id, model=model)
                # One read call per tool call: its budget spans every document it reads.
                with tool_call(call), consuming.tool_read_call(self.run):
                    outcome = handler(checked)
            except DocbinderError as exc:
                if isinstance(exc, StorageError | UnsafeOperation | BlobMissing):
                    log.warning("tool %s failed: %s", name, exc)
                else:
                    log.info("tool %s failed: %s", name, exc)
                outcome = _error(public_message(exc))
            except Exception:
                log.exception("tool %s failed unexpectedly", name)
                outcome = _error(f"internal error in tool {name}; the details were logged")
        return _with_workflow(outcome, self.workflow_id)

    async def acall(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        tool_call_id: str | None = None,
        model: str | None = None,
    ) -> ToolOutcome:
        """:meth:`call` in a worker thread (anyio, else asyncio), so the event loop stays free.

        With anyio, a cancelled ``await`` stops the call's conversion in progress and
        reports its unread documents as not read (ADR 0070).
        """
        work = functools.partial(self.call, name, arguments, tool_call_id=tool_call_id, model=model)
        try:
            from docbinder.application.cancelling import run_sync_cancellable
        except ImportError:  # pragma: no cover - anyio comes with every async host we support
            import asyncio

            return await asyncio.to_thread(work)
        return await run_sync_cancellable(work)

    # -- producing tools ---------------------------------------------------------------------
    def _write_file(self, args: dict[str, Any]) -> ToolOutcome:
        content: object = args["content"]
        encoding = args.get("encoding")
        if (
            encoding is not None
            and coerce_choice(encoding, "the encoding", ("text", "base64")) == "base64"
        ):
            content = coerce_base64(content, "the content (encoding 'base64')")
        return _produced(producing.write_file(self.run, args["name"], content))

    def _download(self, args: dict[str, Any]) -> ToolOutcome:
        service = coerce_text(args["service"], "the data source", example='"inbox"')
        path = coerce_text(args["path"], "the path", example='"reports/q3.pdf"')
        source = self.data_sources.get(service)
        if source is None:
            known = ", ".join(f"'{s}'" for s in self.data_sources)
            raise InvalidInput(f"unknown data source {service!r}; configured: {known}")
        try:
            return _produced(
                producing.download_from_data_source(self.run, source, path, service=service)
            )
        except DocbinderError as exc:
            # A source names its own location (a directory, a bucket) in its messages,
            # also inside a quoted path; the model gets ``<service>`` in its place.
            root = getattr(source, "root", None)
            message = public_message(exc)
            if root is not None and str(root):
                message = message.replace(str(root), f"<{service}>")
            return _error(message)

    def _render_document(self, args: dict[str, Any]) -> ToolOutcome:
        formats = args.get("formats")
        return _produced(
            producing.render_document(
                self.run,
                args["markdown"],
                name=args["name"],
                formats=("html",) if formats is None else formats,
                title=_optional_text(args, "title", example='"Q3 report"'),
            )
        )

    def _create_chart(self, args: dict[str, Any]) -> ToolOutcome:
        return _produced(
            producing.create_chart(self.run, _chart_spec(args["spec"]), name=args.get("name"))
        )

    def _generate_image(self, args: dict[str, Any]) -> ToolOutcome:
        assert self.image_generator is not None
        n, size, name = args.get("n"), args.get("size"), args.get("name")
        return _produced(
            producing.generate_image(
                self.run,
                args["prompt"],
                generator=self.image_generator,
                n=1 if n is None else n,
                size="512x512" if size is None else size,
                name="image" if name is None else name,
            )
        )

    # -- consuming tools ---------------------------------------------------------------------
    def _read_documents(self, args: dict[str, Any]) -> ToolOutcome:
        content = self.run.get_content(args["documentList"])
        return read_documents_outcome(
            content,
            max_image_bytes=self.max_image_bytes,
            max_text_chars=self.max_text_chars,
            no_workflow_hint=self.no_workflow_hint,
        )

    def _list_documents(self, args: dict[str, Any]) -> ToolOutcome:
        workflow_id = self.workflow_id
        if workflow_id is None:
            notice = f"To list a workflow's documents, {self.no_workflow_hint}."
            reachable = (
                "; stored files stay reachable by file id (list_files)"
                if self.file_scope is FileScope.PRINCIPAL
                else ""
            )
            return ToolOutcome(
                "No workflow is active in this run, so there are no documents to list"
                f"{reachable}. {notice}",
                structured={"documents": [], "truncated": False, "notice": notice},
            )
        documents = workflow_documents(self.run)
        lines = [f"Active workflow: {workflow_id}"]
        truncated = len(documents) >= MAX_LISTED_DOCUMENTS
        if not documents:
            lines.append("It has no documents yet.")
        else:
            lines.append(f"{len(documents)} document(s), newest first:")
            lines.extend(_document_line(d) for d in documents)
            if truncated:
                lines.append(f"(only the newest {MAX_LISTED_DOCUMENTS} are listed)")
        return ToolOutcome(
            "\n".join(lines),
            file_ids=tuple(d.file.id for d in documents),
            document_ids=tuple(d.document.id for d in documents),
            structured={
                "documents": [_listed_document(d) for d in documents],
                "truncated": truncated,
                "notice": None,
            },
        )

    def _read_file(self, args: dict[str, Any]) -> ToolOutcome:
        max_chars = args.get("max_chars")
        limit = coerce_int(
            consuming.DEFAULT_MAX_CHARS if max_chars is None else max_chars, "max_chars", minimum=1
        )

        def by_id(file_id: str) -> ToolOutcome:
            text = consuming.read_file(self.run, file_id, max_chars=limit)
            return ToolOutcome(
                text,
                file_ids=(file_id,),
                structured={
                    "text": text,
                    "files": [{"documentRef": None, "fileId": file_id}],
                    "unresolved": [],
                    "validReferences": [],
                },
            )

        def by_reference(
            documents: tuple[ResolvedDocument, ...], resolution: Resolution
        ) -> ToolOutcome:
            if len(documents) == 1 and resolution.ok:
                text = consuming.read_file(self.run, documents[0].file.id, max_chars=limit)
                return _read_file_outcome(text, documents, resolution)
            lines = [f"{len(documents)} file(s) match {_named(resolution)}, each under a header:"]
            budget = limit
            call = current_read_call()
            for position, document in enumerate(documents):
                if budget <= 0:
                    lines.append(_not_read_line(documents[position:], limit))
                    break
                stop = call.stop_reason() if call is not None else None
                if stop is not None:  # the tool call's budget (ADR 0071)
                    lines.append(
                        f"[{len(documents) - position} more file(s) {stop}; the next: "
                        f"{_references(documents[position:])}]"
                    )
                    break
                lines.append(_document_header(document))
                try:
                    text = consuming.read_file(self.run, document.file.id, max_chars=budget)
                except InvalidInput:  # no text (an image, a binary file)
                    lines.append(
                        f"[no text: '{printable(document.file.file_name)}' is "
                        f"{document.file.mime_type}; read it with read_documents and "
                        f"{document.document.reference}]"
                    )
                    continue
                except DocbinderError as exc:  # its blob is gone, a storage fault
                    log.info("read_file could not read %s: %s", document.document.reference, exc)
                    lines.append(f"[not read: {printable(' '.join(public_message(exc).split()))}]")
                    continue
                budget -= min(budget, len(text))
                lines.append(text)
            lines.extend(_miss_lines(resolution.unresolved, resolution.suggestions))
            return _read_file_outcome("\n".join(lines), documents, resolution)

        return self._by_file_id_or_reference("read_file", args["file_id"], by_id, by_reference)

    def _search(self, args: dict[str, Any]) -> ToolOutcome:
        query = args["query"]
        if not isinstance(query, str):
            raise refusal("the search text", query, "text", '"revenue"')
        file_ids = args.get("file_ids")
        limit = args.get("limit")
        wanted: Sequence[str] | None = (
            None
            if file_ids is None
            else coerce_string_list(file_ids, "the file ids", example='["<file id>"]')
        )
        if self.file_scope is FileScope.WORKFLOW:
            if self.workflow_id is None:
                notice = self._no_workflow_notice("search_in_file_content")
                return ToolOutcome(
                    notice, structured={"matches": [], "unsearched": [], "notice": notice}
                )
            wanted = self._workflow_file_ids(wanted)
        report = consuming.search_files(
            self.run,
            query,
            file_ids=wanted,
            limit=consuming.DEFAULT_SEARCH_LIMIT if limit is None else limit,
        )
        matches = report.matches
        unsearched = [
            {"fileId": u.file_id, "name": u.file_name, "reason": u.reason}
            for u in report.unsearched
        ]
        unsearched_lines = [
            printable(f"not searched wholly: '{u.file_name}' (file id {u.file_id}): {u.reason}")
            for u in report.unsearched
        ]
        found = [
            {
                "fileId": m.file_id,
                "name": m.file_name,
                "position": m.position,
                "lineNumber": m.line_number,
                "line": m.line,
            }
            for m in matches
        ]
        if not matches:
            return ToolOutcome(
                "\n".join([f"No line contains {query!r}.", *unsearched_lines]),
                structured={"matches": found, "unsearched": unsearched, "notice": None},
            )
        lines = [f"{len(matches)} match(es) for {query!r}:"]
        lines.extend(printable(str(m)) for m in matches)
        lines.extend(unsearched_lines)
        return ToolOutcome(
            "\n".join(lines),
            file_ids=tuple(dict.fromkeys(m.file_id for m in matches)),
            structured={"matches": found, "unsearched": unsearched, "notice": None},
        )

    def _get_file_info(self, args: dict[str, Any]) -> ToolOutcome:
        def by_id(file_id: str) -> ToolOutcome:
            item = consuming.get_file_info(self.run, file_id)
            return ToolOutcome(
                file_info_text(item),
                file_ids=(item.id,),
                structured={
                    "files": [_file_info(item, None)],
                    "more": 0,
                    "unresolved": [],
                    "validReferences": [],
                },
            )

        def by_reference(
            documents: tuple[ResolvedDocument, ...], resolution: Resolution
        ) -> ToolOutcome:
            blocks = [
                f"documentList ref: {d.document.reference}\n{file_info_text(d.file)}"
                for d in documents[:MAX_INFO_BLOCKS]
            ]
            if len(documents) > 1 or not resolution.ok:
                blocks.insert(0, f"{len(documents)} file(s) match {_named(resolution)}:")
            if len(documents) > MAX_INFO_BLOCKS:
                rest = documents[MAX_INFO_BLOCKS:]
                blocks.append(
                    f"[{len(rest)} more file(s) not shown (at most {MAX_INFO_BLOCKS} per answer); "
                    f"ask for them one at a time, the next: {_references(rest)}]"
                )
            misses = _miss_lines(resolution.unresolved, resolution.suggestions)
            if misses:
                blocks.append("\n".join(misses))
            return ToolOutcome(
                "\n\n".join(blocks),
                file_ids=tuple(d.file.id for d in documents),
                document_ids=tuple(d.document.id for d in documents),
                structured={
                    "files": [
                        _file_info(d.file, d.document.reference)
                        for d in documents[:MAX_INFO_BLOCKS]
                    ],
                    "more": max(0, len(documents) - MAX_INFO_BLOCKS),
                    **_misses(resolution),
                },
            )

        return self._by_file_id_or_reference("get_file_info", args["file_id"], by_id, by_reference)

    # -- file tools: a file id or a document reference -------------------------------------
    def _by_file_id_or_reference(
        self,
        tool: str,
        value: object,
        by_id: Callable[[str], ToolOutcome],
        by_reference: Callable[[tuple[ResolvedDocument, ...], Resolution], ToolOutcome],
    ) -> ToolOutcome:
        """Answer for the ``file_id`` of ``read_file`` / ``get_file_info``: a file id or a reference.

        A plain file id (see :func:`_plain_file_id`: text that is no reference,
        a bare UUID, one ``file:<id>``) goes to ``by_id``: with
        :attr:`FileScope.PRINCIPAL` any file the principal may read, in the
        workflow or not; with :attr:`FileScope.WORKFLOW` only a file a document
        of the run's workflow points at (one :meth:`Run.resolve` of the id), any
        other id raising the :class:`FileItemNotFound` of an unknown id.
        Anything else is resolved in the run's workflow for the run's principal
        by :meth:`Run.resolve` (the ``documentList`` parser and resolver, SPEC
        C6/C7) and goes to ``by_reference`` with one document per distinct
        file, in reference order. A bare id that names no readable file but a
        document of the workflow (the id of a ``docItem:`` reference) is
        resolved the same way.

        Raises :class:`NoActiveWorkflow` for a reference in a run without
        workflow, and for any value with :attr:`FileScope.WORKFLOW` (the
        message names ``tool`` and ends with ``no_workflow_hint``), :class:`NotFound` with the
        resolver's reasons and the valid references when nothing resolved;
        ``by_id``'s errors (:class:`FileItemNotFound`, ...) for a plain id.
        """
        scoped = self.file_scope is FileScope.WORKFLOW
        if scoped and self.workflow_id is None:
            raise NoActiveWorkflow(self._no_workflow_notice(tool))
        plain = _plain_file_id(value)
        if plain is not None and scoped:
            return self._in_workflow(plain, by_id, by_reference)
        if plain is None:
            resolution = self.run.resolve(value)
            if not resolution.documents:
                raise _nothing_resolved(resolution, self.no_workflow_hint)
            return by_reference(_distinct_files(resolution.documents), resolution)
        file_id, bare = plain
        try:
            return by_id(file_id)
        except FileItemNotFound:
            if not bare or self.workflow_id is None:
                raise
            resolution = self.run.resolve(file_id)
            if not resolution.documents:
                raise
        return by_reference(_distinct_files(resolution.documents), resolution)

    def _in_workflow(
        self,
        plain: tuple[str, bool],
        by_id: Callable[[str], ToolOutcome],
        by_reference: Callable[[tuple[ResolvedDocument, ...], Resolution], ToolOutcome],
    ) -> ToolOutcome:
        """A plain file id with :attr:`FileScope.WORKFLOW`: answered only inside the workflow.

        A bare id is resolved as given (a ChatDocument id, else the id of a file
        its documents point at), any other as ``file:<id>``; a file of no
        document of the workflow, one the principal may not read and an id that
        names nothing all raise the same :func:`unknown_file` error.
        """
        file_id, bare = plain
        resolution = self.run.resolve(file_id if bare else f"file:{file_id}")
        documents = _distinct_files(resolution.documents)
        if bare and any(d.document.id == file_id for d in documents):
            return by_reference(documents, resolution)
        if not any(d.file.id == file_id for d in documents):
            raise unknown_file(file_id)
        return by_id(file_id)

    def _workflow_file_ids(self, wanted: Sequence[str] | None) -> list[str]:
        """The ids of ``wanted`` (all when ``None``), each a file of the workflow's documents.

        Newest first when ``wanted`` is ``None``; in the given order otherwise,
        where an id of no document of the workflow raises :func:`unknown_file`.
        """
        if wanted is None:
            return [d.file.id for d in workflow_files(self.run)]
        if not wanted:
            return []
        resolution = self.run.resolve([f"file:{file_id}" for file_id in wanted])
        inside = {d.file.id for d in resolution.documents}
        for file_id in wanted:
            if file_id not in inside:
                raise unknown_file(file_id)
        return list(wanted)

    def _no_workflow_notice(self, tool: str) -> str:
        """The answer of file tool ``tool`` in a run without workflow, with :attr:`FileScope.WORKFLOW`."""
        return (
            f"{tool} answers only for the files of the call's workflow, and this call has "
            f"none: {self.no_workflow_hint}."
        )

    def _list_files(self, args: dict[str, Any]) -> ToolOutcome:
        limit = args.get("limit")
        count = (
            DEFAULT_LIST_FILES
            if limit is None
            else coerce_int(limit, "the number of files", minimum=1)
        )
        empty = "No stored files that you may read."
        if self.file_scope is FileScope.WORKFLOW:
            if self.workflow_id is None:
                notice = self._no_workflow_notice("list_files")
                return ToolOutcome(notice, structured={"files": [], "notice": notice})
            items = [d.file for d in workflow_files(self.run, limit=count)]
            empty = "The active workflow has no files yet."
        else:
            items = consuming.list_files(self.run, limit=count)
        listed = [
            {"fileId": i.id, "name": i.file_name, "mimeType": i.mime_type, "size": i.size}
            for i in items
        ]
        if not items:
            return ToolOutcome(empty, structured={"files": listed, "notice": None})
        lines = [f"{len(items)} file(s), newest first:"]
        lines.extend(
            f"file id: {i.id}  '{printable(i.file_name)}' ({i.mime_type}, {i.size} bytes)"
            for i in items
        )
        return ToolOutcome(
            "\n".join(lines),
            file_ids=tuple(i.id for i in items),
            structured={"files": listed, "notice": None},
        )


# -- shared rendering --------------------------------------------------------------------------


def workflow_documents(
    run: Run, *, limit: int = MAX_LISTED_DOCUMENTS
) -> tuple[ResolvedDocument, ...]:
    """The readable documents of the run's workflow, newest first, at most ``limit``.

    Each comes with its current FileItem (access-checked like ``read_documents``;
    documents whose file was deleted, is unreadable or lost its blob are left
    out). Empty without a workflow. Errors: :class:`StorageError`.
    """
    workflow_id = run.context.workflow_id
    if workflow_id is None or limit < 1:
        return ()
    messages = run.binder.list_messages(run.principal, workflow_id)
    newest: list[str] = []
    for message in reversed(messages):
        for document in reversed(message.documents):
            newest.append(document.reference)
            if len(newest) >= limit:
                break
        if len(newest) >= limit:
            break
    if not newest:
        return ()
    return run.resolve(newest).documents


def workflow_files(run: Run, *, limit: int | None = None) -> tuple[ResolvedDocument, ...]:
    """The readable files of the run's workflow, newest first: each file's newest document.

    One :class:`ResolvedDocument` per FileItem that a document of the
    workflow points at (the file read-checked as ``read_documents`` checks
    it; deleted or unreadable files are left out), at most ``limit``. Empty
    without a workflow. Errors: :class:`StorageError`.
    """
    workflow_id = run.context.workflow_id
    if workflow_id is None or (limit is not None and limit < 1):
        return ()
    newest: list[str] = []
    seen: set[str] = set()
    for message in reversed(run.binder.list_messages(run.principal, workflow_id)):
        for document in reversed(message.documents):
            if document.file_id in seen:
                continue
            seen.add(document.file_id)
            newest.append(document.reference)
        if limit is not None and len(newest) >= limit:
            break
    if not newest:
        return ()
    return run.resolve(newest[:limit]).documents


def unknown_file(file_id: str) -> FileItemNotFound:
    """The error of a file id the call cannot use, whatever the reason (as :meth:`Run.get_file`'s).

    The same text for an id that names no file, a file the caller may not
    read and, with :attr:`FileScope.WORKFLOW`, a file outside the call's
    workflow: the answer tells nothing about files elsewhere.
    """
    return FileItemNotFound(f"file {file_id} not found")


def _document_line(document: ResolvedDocument) -> str:
    item = document.file
    return (
        f"{document.document.reference}  '{printable(item.file_name)}' "
        f"({item.mime_type}, {item.size} bytes)  file id: {item.id}"
    )


def file_info_text(item: FileItem) -> str:
    """The ``get_file_info`` answer: one ``key: value`` line per metadata field."""
    lines = [
        f"file id: {item.id}",
        f"name: {printable(item.file_name)}",
        f"MIME type: {item.mime_type}",
        f"size: {item.size} bytes",
        f"SHA-256: {item.sha256}",
        f"created by: {item.created_by}",
        f"created at: {item.created_at.isoformat()}",
    ]
    if item.folder:
        lines.append(f"folder: {printable(item.folder)}")
    if item.tags:
        lines.append(f"tags: {', '.join(printable(t) for t in item.tags)}")
    lines.extend(provenance_lines(item))
    return "\n".join(lines)


def provenance_lines(item: FileItem) -> list[str]:
    """The provenance lines of ``get_file_info``: the producing tool (or that none was declared)."""
    p = item.provenance
    if p.tool is None:
        lines = ["produced by: no tool declared"]
    else:
        call = f" (call {printable(p.tool_call_id)})" if p.tool_call_id else ""
        lines = [f"produced by: tool {printable(p.tool)}{call}"]
    if p.model:
        lines.append(f"model: {printable(p.model)}")
    if p.args_sha256:
        lines.append(f"arguments SHA-256: {p.args_sha256}")
    if p.run_id:
        lines.append(f"run: {printable(p.run_id)}")
    if p.message_id:
        lines.append(f"message: {p.message_id}")
    if p.parents:
        lines.append(f"made from file(s): {', '.join(p.parents)}")
    if p.sandbox_id or p.source_path:
        where = f" {printable(p.source_path)}" if p.source_path else ""
        box = f" of sandbox {printable(p.sandbox_id)}" if p.sandbox_id else ""
        lines.append(f"harvested from:{where}{box}")
    return lines


def read_documents_outcome(
    content: ContentResult,
    *,
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    no_workflow_hint: str | None = None,
) -> ToolOutcome:
    """Render a :class:`ContentResult` as the ``read_documents`` answer.

    Text: one header line per document (``docItem:<id> '<name>' (<MIME>,
    <size> bytes, file id <id>)``), the text of its text parts (PDF pages
    introduced by ``[page N]``), a placeholder line for each image or binary
    part, then one ``Unresolved:`` line per reference that failed (reference,
    reason code, sentence) and one ``Valid references:`` line; when a
    reference failed because the run has no workflow, one more line says how
    to get one (``no_workflow_hint``). Text beyond ``max_text_chars``
    characters is cut with a ``[truncated ...]`` note. ``parts``: every text
    part, and each image part whose data is at most ``max_image_bytes`` bytes
    (larger images are named in the text only). ``structured``: each
    document's reference, ids, name, MIME type, size and the text below its
    header (the same characters, within the same budget), the misses and the
    valid references (the ``read_documents`` entry of
    :data:`~docbinder.toolset.specs.OUTPUT_SCHEMAS`). A document with the same
    bytes as an earlier one (``same_as``) is shown once: its body is the line
    ``[same content as <reference>, shown once above]`` and its size is that
    document's. Documents the call's budget left unread are ``Unresolved:``
    lines with reason ``not_read``; when every reference resolved (the misses
    are documents not read, not references to correct) no ``Valid references:``
    line follows them.
    """
    lines: list[str] = []
    parts: list[ContentPart] = []
    documents: list[dict[str, Any]] = []
    sizes: dict[str, int] = {}
    budget = max_text_chars
    cut = False
    total = len(content.documents) + len(content.unresolved)
    if total == 0:
        lines.append(
            "documentList held no document reference; pass references like "
            '["docItem:<id>"] (list_documents shows them).'
        )
    else:
        lines.append(
            f"Read {len(content.documents)} document(s); {len(content.unresolved)} unresolved."
        )
    for doc in content.documents:
        size = _size_of(doc.parts)
        if doc.same_as is not None:  # the same bytes: the earlier document's size
            size = sizes.get(doc.same_as, size)
        else:
            sizes[doc.reference] = size
        lines.append(
            f"--- docItem:{doc.document_id} '{printable(doc.file_name)}' "
            f"({doc.mime_type}, {size} bytes, file id {doc.file_id}) ---"
        )
        body: list[str] = []
        if doc.same_as is not None:
            body.append(f"[same content as {doc.same_as}, shown once above]")
        for part in doc.parts:
            if part.kind == ContentKind.TEXT and part.text is not None:
                marks = [part.position] if part.position else []
                if part.ocr:
                    confidence = part.ocr_confidence
                    marks.append(
                        "read by OCR"
                        + (f", confidence {confidence:.2f}" if confidence is not None else "")
                    )
                if marks:
                    body.append(f"[{', '.join(marks)}]")
                if part.note:
                    body.append(f"[note: {part.note}]")
                parts.append(part)
                if cut:
                    continue
                text = part.text
                if len(text) > budget:
                    cut = True
                    text = text[:budget] + (
                        f"\n[truncated: this answer carries at most {max_text_chars} characters "
                        "of text; use read_file with the file id for the rest]"
                    )
                budget -= min(budget, len(part.text))
                body.append(text)
            elif part.kind == ContentKind.IMAGE:
                if part.data is None:
                    body.append(
                        f"[image '{printable(part.file_name)}' ({part.mime_type}, {part.size} "
                        "bytes) is too large to read]"
                    )
                elif len(part.data) > max_image_bytes:
                    body.append(
                        f"[image '{printable(part.file_name)}' ({part.mime_type}, "
                        f"{len(part.data)} bytes) is larger than the {max_image_bytes}-byte "
                        "limit for images and is not included]"
                    )
                else:
                    body.append(
                        f"[image '{printable(part.file_name)}' ({part.mime_type}, "
                        f"{len(part.data)} bytes)]"
                    )
                    parts.append(part)
            else:
                note = f": {part.text}" if part.text else ""
                body.append(
                    f"[binary file '{printable(part.file_name)}' ({part.mime_type}, "
                    f"{part.size} bytes) has no text to show{note}]"
                )
        lines.extend(body)
        documents.append(
            {
                "documentRef": f"docItem:{doc.document_id}",
                "fileId": doc.file_id,
                "name": doc.file_name,
                "mimeType": doc.mime_type,
                "size": size,
                "text": "\n".join(body),
            }
        )
    lines.extend(
        _miss_lines(
            content.unresolved,
            content.resolution.suggestions,
            suggest=bool(content.resolution.unresolved),
        )
    )
    notice = _no_workflow_notice(content.unresolved, no_workflow_hint)
    if notice is not None:
        lines.append(notice)
    return ToolOutcome(
        "\n".join(lines),
        tuple(parts),
        file_ids=tuple(dict.fromkeys(d.file_id for d in content.documents)),
        document_ids=tuple(d.document_id for d in content.documents),
        structured={
            "documents": documents,
            "unresolved": _unresolved_entries(content.unresolved),
            "validReferences": _valid_entries(content.unresolved, content.resolution.suggestions),
            "truncated": cut,
            "notice": notice,
        },
    )


NO_WORKFLOW_HINT: Final = (
    "bind a workflow: `docbinder mcp --workflow ID`, in Python "
    "`DocBinder.start_run(principal, workflow_id)`"
)
"""How a run without workflow gets one, for the in-process hosts (see ``no_workflow_hint``)."""


def _no_workflow_notice(unresolved: Sequence[UnresolvedReference], hint: str | None) -> str | None:
    """The one line that says how to get a workflow, when a reference met a run without one."""
    if not any(m.reason is UnresolvedReason.NO_ACTIVE_WORKFLOW for m in unresolved):
        return None
    return f"References resolve in a workflow and this call has none: {hint or NO_WORKFLOW_HINT}."


_STORAGE_FAULT: Final = (
    "the document's file content could not be read from storage (the cause is in the server log)"
)


def _miss_message(miss: UnresolvedReference) -> str:
    """The sentence of a miss for the model: a storage fault's cause stays in the log."""
    if miss.reason is UnresolvedReason.STORAGE_FAULT:
        return _STORAGE_FAULT
    return miss.message


def _unresolved_entries(unresolved: Sequence[UnresolvedReference]) -> list[dict[str, str]]:
    return [
        {"reference": miss.reference, "reason": miss.reason.value, "message": _miss_message(miss)}
        for miss in unresolved
    ]


def _valid_entries(
    unresolved: Sequence[UnresolvedReference], suggestions: Sequence[DocumentSuggestion]
) -> list[dict[str, str]]:
    if not unresolved:
        return []
    return [{"documentRef": s.reference, "name": s.file_name} for s in suggestions]


def _misses(resolution: Resolution) -> dict[str, list[dict[str, str]]]:
    """The ``unresolved`` and ``validReferences`` entries of a structured result."""
    return {
        "unresolved": _unresolved_entries(resolution.unresolved),
        "validReferences": _valid_entries(resolution.unresolved, resolution.suggestions),
    }


def _miss_lines(
    unresolved: Sequence[UnresolvedReference],
    suggestions: Sequence[DocumentSuggestion],
    *,
    suggest: bool = True,
) -> list[str]:
    """One ``Unresolved:`` line per failed reference, then the ``Valid references:`` line.

    ``suggest=False`` leaves the ``Valid references:`` line out: every reference
    resolved and the misses are documents that were not read (the resolver
    suggests nothing then, and "no readable documents" would be false).
    """
    if not unresolved:
        return []
    lines = [
        f"Unresolved: {printable(_short(miss.reference))} ({miss.reason.value}): "
        f"{_miss_message(miss)}"
        for miss in unresolved
    ]
    if suggest:
        lines.append(_valid_references(suggestions))
    return lines


def _valid_references(suggestions: Sequence[DocumentSuggestion], limit: int | None = None) -> str:
    """The ``Valid references:`` line: the most recent readable documents, at most ``limit``.

    The resolver suggests at most
    :data:`~docbinder.application.use_cases.resolve_document_list.DEFAULT_SUGGESTIONS`; when the line
    may not name them all, it says so and points at ``list_documents``.
    """
    if not suggestions:
        return "Valid references: none (the active workflow has no readable documents)"
    shown = suggestions[:limit]
    valid = ", ".join(f"{s.reference} ('{printable(s.file_name)}')" for s in shown)
    if len(suggestions) > len(shown) or len(suggestions) >= DEFAULT_SUGGESTIONS:
        # Said first: a tool error is cut at 500 characters.
        return f"Valid references (the most recent only; list_documents lists them all): {valid}"
    return f"Valid references: {valid}"


_NO_WORKFLOW: Final = (
    "{named} is a document reference, resolved in the active workflow, and this run has no "
    "workflow; pass the file id instead (the `file id:` line of a tool result, or list_files), "
    "or {hint}"
)


def _nothing_resolved(resolution: Resolution, hint: str = NO_WORKFLOW_HINT) -> DocbinderError:
    """The error of a ``file_id`` reference that resolved to no document: the resolver's reasons.

    Without a workflow the message ends with ``hint`` (how to get one).
    """
    named = _named(resolution)
    if any(m.reason is UnresolvedReason.NO_ACTIVE_WORKFLOW for m in resolution.unresolved):
        return NoActiveWorkflow(_NO_WORKFLOW.format(named=named, hint=hint))
    misses = "; ".join(
        f"{printable(_short(m.reference, 80))} ({m.reason.value}): {_miss_message(m)}"
        for m in resolution.unresolved[:3]
    )
    if len(resolution.unresolved) > 3:
        misses += f"; {len(resolution.unresolved) - 3} more"
    return NotFound(
        f"no document found for {named}: {misses or 'no reference given'}. "
        f"{_valid_references(resolution.suggestions, 5)}"
    )


def _named(resolution: Resolution) -> str:
    """The references of ``resolution`` for a message (the first three, canonical)."""
    canonical = resolution.references.canonical()
    if not canonical:
        rejected = [printable(_short(r.raw, 80)) for r in resolution.references.rejected[:3]]
        return ", ".join(rejected) or "the file id"
    shown = ", ".join(canonical[:3])
    return shown if len(canonical) <= 3 else f"{shown} (+{len(canonical) - 3} more)"


def _distinct_files(documents: Sequence[ResolvedDocument]) -> tuple[ResolvedDocument, ...]:
    """The first document of each FileItem, in order (``file:<id>`` may match several)."""
    seen: dict[str, ResolvedDocument] = {}
    for document in documents:
        seen.setdefault(document.file.id, document)
    return tuple(seen.values())


def _references(documents: Sequence[ResolvedDocument]) -> str:
    """The first :data:`_NEXT_REFERENCES` ``docItem:`` references of ``documents``, comma-separated."""
    named = ", ".join(d.document.reference for d in documents[:_NEXT_REFERENCES])
    return named + (", ..." if len(documents) > _NEXT_REFERENCES else "")


def _not_read_line(documents: Sequence[ResolvedDocument], limit: int) -> str:
    """The one line for the files a ``read_file`` answer had no room left for."""
    return (
        f"[{len(documents)} more file(s) not read: this answer already holds max_chars={limit} "
        f"characters; read them one at a time with read_file, the next: {_references(documents)}]"
    )


def _document_header(document: ResolvedDocument) -> str:
    item = document.file
    return (
        f"--- {document.document.reference} '{printable(item.file_name)}' "
        f"({item.mime_type}, {item.size} bytes, file id {item.id}) ---"
    )


def _read_file_outcome(
    text: str, documents: Sequence[ResolvedDocument], resolution: Resolution
) -> ToolOutcome:
    return ToolOutcome(
        text,
        file_ids=tuple(d.file.id for d in documents),
        document_ids=tuple(d.document.id for d in documents),
        structured={
            "text": text,
            "files": [
                {"documentRef": d.document.reference, "fileId": d.file.id} for d in documents
            ],
            **_misses(resolution),
        },
    )


def _listed_document(document: ResolvedDocument) -> dict[str, Any]:
    """A document of ``list_documents`` in the structured result."""
    item = document.file
    return {
        "documentRef": document.document.reference,
        "fileId": item.id,
        "name": item.file_name,
        "mimeType": item.mime_type,
        "size": item.size,
    }


def _file_info(item: FileItem, reference: str | None) -> dict[str, Any]:
    """A file of ``get_file_info`` in the structured result."""
    return {
        "documentRef": reference,
        "fileId": item.id,
        "name": item.file_name,
        "mimeType": item.mime_type,
        "size": item.size,
        "sha256": item.sha256,
        "createdBy": item.created_by,
        "createdAt": item.created_at.isoformat(),
        "folder": item.folder,
        "tags": list(item.tags),
        "provenance": provenance_wire(item),
    }


def provenance_wire(item: FileItem) -> dict[str, Any]:
    """The FileItem's provenance as the wire shows it: every key, ``None`` for what was not declared."""
    p = item.provenance
    return {
        "tool": p.tool,
        "toolCallId": p.tool_call_id,
        "argsSha256": p.args_sha256,
        "runId": p.run_id,
        "workflowId": p.workflow_id,
        "messageId": p.message_id,
        "model": p.model,
        "parents": list(p.parents),
        "sandboxId": p.sandbox_id,
        "sourcePath": p.source_path,
    }


def produced_file(item: FileItem, document_id: str | None) -> dict[str, Any]:
    """One file of a producing tool's structured result (``PRODUCED_FILE_SCHEMA``).

    ``documentRef`` is ``docItem:<document_id>`` (``None`` when the file was
    not attached); ``version`` is ``None``: the tools of this set store
    files, they save no versions of a name.
    """
    return {
        "documentRef": f"docItem:{document_id}" if document_id else None,
        "fileId": item.id,
        "name": item.file_name,
        "mimeType": item.mime_type,
        "size": item.size,
        "sha256": item.sha256,
        "version": None,
    }


def _plain_file_id(value: object) -> tuple[str, bool] | None:
    """``(file id, bare)`` when ``value`` is one plain file id, else ``None`` (a reference).

    A plain file id is text the ``documentList`` parser reads as no reference at
    all (any id docbinder does not shape like a reference, looked up as given,
    as ever), one bare UUID (``bare``: it may also be a document id) or one
    ``file:<id>``. Empty or non-text ``value`` that holds no reference raises
    :class:`InvalidInput` as a file id always did.
    """
    if not isinstance(value, str):
        if coerce_document_references(value).references:
            return None
        return _file_id(value), False  # refused: neither text nor a reference
    text = _file_id(value)
    parsed = coerce_document_references(text)
    if not parsed.references:
        if all(r.reason == REASON_NOT_A_REFERENCE for r in parsed.rejected):
            return text, False
        return None
    if len(parsed.references) != 1 or parsed.rejected:
        return None
    [reference] = parsed.references
    if isinstance(reference, FileReference):
        return reference.file_id, False
    if isinstance(reference, DocumentItemReference) and reference.bare:
        return reference.document_id, True
    return None


def _size_of(parts: Sequence[ContentPart]) -> int:
    return parts[0].size if parts else 0


def _short(value: str, limit: int = 120) -> str:
    return value if len(value) <= limit else value[:limit] + "…"


# -- arguments ---------------------------------------------------------------------------------


_BLOB_MISSING: Final = (
    "the stored bytes of this file are missing from the blob store; an operator can find "
    "the cause with `docbinder doctor`"
)
_STORAGE_FAILED: Final = (
    "the store could not complete this request (a storage fault; the cause is in the server "
    "log); try again, or ask an operator to run `docbinder doctor`"
)


def public_message(exc: DocbinderError) -> str:
    """What a model or a remote client is told of ``exc``: no storage key, path or store URL.

    A missing blob's message names the blob key and the store's URL (a
    directory, a bucket); a :class:`StorageError` carries the driver's words
    (paths, bucket names, SQL); an :class:`UnsafeOperation` names store
    locations. Those go to the log (the caller logs ``exc``); the answer is
    a fixed sentence that says where to look. Every other error's message
    is about the caller's own input or rights and is returned as is.
    """
    if isinstance(exc, BlobMissing):
        return _BLOB_MISSING
    if isinstance(exc, StorageError | UnsafeOperation):
        return _STORAGE_FAILED
    return str(exc) or type(exc).__name__


def _error(message: str) -> ToolOutcome:
    """A one-line tool error: whitespace collapsed, non-printable characters escaped, cut at 500."""
    line = printable(" ".join(message.split()))
    if len(line) > _MAX_ERROR_CHARS:
        line = line[:_MAX_ERROR_CHARS] + "…"
    return ToolOutcome(line, is_error=True)


def _with_workflow(outcome: ToolOutcome, workflow_id: str | None) -> ToolOutcome:
    """``outcome`` with its workflow: ``workflow_id`` set and first in ``structured``."""
    body: Mapping[str, Any] = (
        {"error": outcome.text} if outcome.is_error else (outcome.structured or {})
    )
    return attrs.evolve(
        outcome, workflow_id=workflow_id, structured={"workflow": workflow_id, **body}
    )


_CHART_KEYS: Final = frozenset(
    {
        "kind",
        "type",
        "chart_type",
        "chartType",
        "series",
        "title",
        "x_label",
        "y_label",
        "data",
        "layout",
        "mark",
        "encoding",
        "labels",
        "values",
        "rows",
        "options",
    }
)
"""Top-level keys of the chart dialects: a create_chart call without ``spec`` that has them
passed the chart spec itself as the arguments."""


def _arguments(spec: ToolSpec, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The model's arguments checked against ``spec``: unknown or missing ones are refused.

    ``arguments`` may be JSON text (whitespace and a code fence around it are
    removed). ``create_chart`` arguments without ``spec`` whose keys belong to
    a chart dialect (``kind``/``series``, Chart.js ``type``/``data``, ...) are
    the chart spec itself, flattened: they become ``spec``.
    """
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        text = strip_fence(arguments)
        try:
            parsed: Any = load_json(text) if text else {}
        except ValueError as exc:
            raise InvalidInput(
                f"the arguments of {spec.name} are not a JSON object ({exc})"
            ) from None
        arguments = parsed
    if not isinstance(arguments, Mapping):
        raise InvalidInput(f"the arguments of {spec.name} must be a JSON object")
    properties = spec.parameters.get("properties", {})
    chart_keys: list[str] = []
    if spec.name == "create_chart" and arguments.get("spec") is None:
        flat = {k: v for k, v in arguments.items() if k not in properties and v is not None}
        chart_keys = [str(key) for key in flat if key in _CHART_KEYS]
        if flat and len(chart_keys) == len(flat):
            arguments = {"spec": _without_nulls(flat), "name": arguments.get("name")}
    unknown = [str(key) for key in arguments if key not in properties and key not in chart_keys]
    if unknown:
        expected = ", ".join(properties) or "none"
        read_as = (
            f" ({', '.join(map(repr, chart_keys))} would be read as the chart spec)"
            if chart_keys
            else ""
        )
        raise InvalidInput(
            f"unknown argument(s) {', '.join(repr(u) for u in unknown)} for {spec.name}"
            f"{read_as}; expected: {expected}"
        )
    optional = S.OPTIONAL.get(spec.name, frozenset())
    args: dict[str, Any] = {}
    for key in properties:
        value = arguments.get(key)
        if value is None and key not in optional:
            raise InvalidInput(f"missing argument {key!r} for {spec.name}")
        args[key] = value
    return args


def _file_id(value: object) -> str:
    return coerce_text(value, "the file id", example='"3f2c9a4e-..." (a `file id:` line)')


def _optional_text(args: Mapping[str, Any], key: str, *, example: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    return coerce_text(value, f"argument {key!r}", example=example, allow_empty=True) or None


def _without_nulls(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A flattened docbinder chart spec without its ``null`` fields (strict hosts send them)."""
    cleaned = dict(spec)
    series = cleaned.get("series")
    if isinstance(series, list):
        cleaned["series"] = [
            {k: v for k, v in entry.items() if v is not None}
            if isinstance(entry, Mapping)
            else entry
            for entry in series
        ]
    return cleaned


def _chart_spec(value: object) -> object:
    """``spec`` as given, with ``null`` fields of a docbinder-shaped spec left out."""
    if isinstance(value, Mapping) and "series" in value:
        return _without_nulls({k: v for k, v in value.items() if v is not None})
    return value


def _produced(result: ToolResult) -> ToolOutcome:
    files = [produced_file(f.item, f.document_id) for f in result.files]
    files.extend(produced_file(item, None) for item in result.updated)
    return ToolOutcome(
        result.text,
        file_ids=result.file_ids,
        document_ids=tuple(f.document_id for f in result.files if f.document_id is not None),
        structured={"files": files},
        produced=result.files,
    )
