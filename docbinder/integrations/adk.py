"""docbinder as Google ADK's artifact service (extra ``[adk]``, ADR 0014).

:class:`DocbinderArtifactService` is a subclass of ADK's ``BaseArtifactService``
(``google.adk.artifacts``) built from any :class:`~docbinder.application.DocBinder`,
so every docbinder backend serves ADK agents: SQLite, PostgreSQL, MariaDB or
memory metadata; local disk, S3 or memory blobs::

    from google.adk.runners import Runner
    from docbinder.container import build_binder
    from docbinder.integrations.adk import DocbinderArtifactService

    service = DocbinderArtifactService(build_binder(), mandate_id="acme")
    runner = Runner(app_name="reports", agent=agent, session_service=...,
                    artifact_service=service)

Scope mapping (ADR 0014): the ADK app is a feature instance, the ADK user a
docbinder user, an ADK session a workflow (created on the first session-scoped
save, each saved version attached to it as a ChatDocument, so ``docItem:``
references reach the same files); the mandate and the user's roles come from
the service's options. Each artifact version is a FileItem of a version series
(ADR 0013) whose namespace is the ADK user (user-scoped artifacts: names
starting with ``user:``, or no session) or the ADK user and session.

Semantics follow ADK's documented contract and its own services: versions
count from 0; ``load_artifact`` returns ``None`` for an absent artifact or
version; ``file_data`` parts holding an ``artifact://`` URI are references,
followed on load within the same app and user (and session, where the URI
names one) with ADK's own checks; ADK's validation helpers reject path-like
names that could escape a scope, with ADK's ``InputValidationError``.

The blocking docbinder calls run on worker threads (``anyio.to_thread``)
under one :class:`anyio.CapacityLimiter` per service, so the event loop never
waits on a database or a disk. A cancelled ``await`` waits for the call on
its thread to finish before it raises ``CancelledError`` (the call is not
abandoned): a cancelled save is then complete, with its version, and never
still in flight or half done.

Provenance (B9): with :class:`DocbinderProvenancePlugin` among the Runner's
``plugins``, an artifact a tool saves records that tool's name, ADK's
``function_call_id``, the digest of its arguments and the invocation id as
the run; without it (or for a save outside a tool) ``tool`` stays ``None``.

Code execution (ADR 0100): :class:`OutputDirCodeExecutor` is ADK's
``UnsafeLocalCodeExecutor`` that runs the model's code in an output directory
and returns the files the code wrote there as the result's ``output_files``;
ADK saves each as an artifact, so through this service they become FileItems
and ``docItem:`` references of the session's workflow, recording the sandbox
and the path the code wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import mimetypes
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from docbinder.application import DocBinder, StoredVersion
from docbinder.application.context import RunContext
from docbinder.application.provenance import ToolCall, bind_tool_call
from docbinder.domain.errors import Conflict, DocbinderError, InvalidInput, WorkflowNotFound
from docbinder.domain.model import (
    ChatWorkflow,
    Principal,
    Provenance,
    check_file_name,
    is_valid_id,
)
from docbinder.harvest.core import HARVEST_TOOL
from docbinder.harvest.sources import LocalOutputDir, OutputFile, OutputUnreadable
from docbinder.ports.metadata import UnitOfWork

try:
    import anyio
    import anyio.to_thread
    from google.adk.artifacts import artifact_util
    from google.adk.artifacts.base_artifact_service import (
        ArtifactVersion,
        BaseArtifactService,
        ensure_part,
    )
    from google.adk.code_executors.code_execution_utils import (
        CodeExecutionInput,
        CodeExecutionResult,
        File,
    )
    from google.adk.code_executors.unsafe_local_code_executor import UnsafeLocalCodeExecutor
    from google.adk.errors.input_validation_error import InputValidationError
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    from docbinder.domain.errors import MissingExtra

    raise MissingExtra("the Google ADK artifact service", "adk", "google-adk") from exc

log = logging.getLogger(__name__)

T = TypeVar("T")

USER_PREFIX = "user:"
"""ADK's prefix of user-scoped artifact names (``InMemoryArtifactService``, ``FileArtifactService``)."""

DEFAULT_MANDATE = "adk"
"""Mandate of every ADK scope when the service is given none."""

DEFAULT_MAX_THREADS = 16
"""Worker threads one service uses at most for blocking docbinder calls."""

WORKFLOW_CACHE_SIZE = 4096
"""Session workflows a service remembers (least recently used ones are looked up again)."""

REFERENCE_MIME = "text/uri-list"
"""MIME type of the FileItem that stores a ``file_data`` part (its bytes are the URI, RFC 2483)."""

_PART_TEXT = "text"
_PART_INLINE = "inline"
_PART_FILE = "file"


@attrs.frozen
class _Scope:
    """Where one ADK artifact lives in docbinder: principal, series name, namespace."""

    principal: Principal
    name: str
    namespace: str
    session_id: str | None

    @property
    def user_scoped(self) -> bool:
        return self.session_id is None


def check_adk_id(value: object, field: str) -> str:
    """The one rule for ``app_name``, ``user_id`` and ``session_id``; ``InputValidationError`` otherwise.

    ADK's own segment check first (``artifact_util.validate_path_segment``:
    no ``/``, ``\\``, ``..``, NUL), then docbinder's id rule
    (:func:`~docbinder.domain.model.is_valid_id`): 1 to 128 characters, no
    whitespace, no control character (C0, DEL, C1) and no invisible format
    character (zero-width space, BOM, word joiner, ...) anywhere, so ``"invoice-7\\n"`` and
    ``" alice"`` are refused, never stored under a namespace of their own next
    to ``"invoice-7"``. Nothing is normalised: the value checked is the one
    the workflow id and the version namespace are made from (ADR 0076).
    """
    if not isinstance(value, str):
        raise InputValidationError(f"{field} must be a string")
    artifact_util.validate_path_segment(value, field)
    if not is_valid_id(value):
        raise InputValidationError(
            f"{field} {value!r} must be 1 to 128 characters without whitespace, control or "
            "invisible format characters (none around it either)"
        )
    return value


class DocbinderArtifactService(BaseArtifactService):
    """ADK artifact service over a :class:`DocBinder` (every method of ``BaseArtifactService``).

    ``binder``: any DocBinder. Options: ``mandate_id`` (the mandate of every
    ADK app; default :data:`DEFAULT_MANDATE`), ``roles`` (the roles ADK users
    get, default ``("member",)``), ``attach_to_session`` (default ``True``:
    record each session-scoped version as a ChatDocument of the session's
    workflow), ``max_threads`` (worker threads for blocking calls, default
    :data:`DEFAULT_MAX_THREADS`).

    Errors: ADK's ``InputValidationError`` (a ``ValueError``) for names, ids
    and parts ADK's own services reject, plus ids docbinder cannot hold:
    one rule for app name, user id and session id (:func:`check_adk_id`: at
    most 128 characters, no whitespace or control character, also none
    around the id);
    docbinder's errors (``AccessDenied``, ``StorageError``,
    ``SizeLimitExceeded``) from the backends.
    """

    def __init__(
        self,
        binder: DocBinder,
        *,
        mandate_id: str = DEFAULT_MANDATE,
        roles: tuple[str, ...] = ("member",),
        attach_to_session: bool = True,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        if not is_valid_id(mandate_id):
            raise InvalidInput(f"mandate_id {mandate_id!r} is not a valid id")
        if max_threads < 1:
            raise InvalidInput("max_threads must be at least 1")
        self.binder = binder
        self.mandate_id = mandate_id
        self.roles = tuple(roles)
        self.attach_to_session = attach_to_session
        self._limiter = anyio.CapacityLimiter(max_threads)
        self._workflows: OrderedDict[str, ChatWorkflow] = OrderedDict()
        self._workflows_lock = threading.Lock()

    # -- the BaseArtifactService methods -------------------------------------------------

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save ``artifact`` as the next version of ``filename``; return its number (0 first).

        Accepts text parts, ``inline_data`` parts (``data`` required) and
        ``file_data`` parts (an ``artifact://`` reference, checked to stay
        within this app, user and session, or any other URI kept as given).
        ``custom_metadata`` is stored as a JSON object. Raises
        ``InputValidationError`` for anything else.
        """
        scope = self._scope(app_name, user_id, filename, session_id)
        part = ensure_part(artifact)
        data, mime_type, host = self._encode(part, app_name, user_id, session_id)
        metadata = dict(custom_metadata or {})
        provenance = _CODE_OUTPUTS.take(app_name, user_id, session_id, filename, data)
        return await self._run(
            lambda: self._save_sync(scope, filename, data, mime_type, metadata, host, provenance)
        )

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        """The latest (or the given) version as a ``types.Part``; ``None`` if absent.

        References are followed (at most ADK's reference depth) within the
        caller's app, user and session.
        """
        return await self._run(
            lambda: self._load_sync(
                app_name,
                user_id,
                filename,
                session_id,
                version,
                artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH,
            )
        )

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        """Names of the session's artifacts plus the user's, sorted, as they were saved.

        A user-scoped artifact saved without a session is listed under its
        bare name (as ``FileArtifactService`` does); saved as ``user:<name>``
        it is listed with the prefix.
        """
        namespaces = [self._scope(app_name, user_id, "user:probe", None)]
        if session_id is not None:
            namespaces.append(self._scope(app_name, user_id, "probe", session_id))

        def keys() -> list[str]:
            found: set[str] = set()
            for scope in namespaces:
                for stored in self.binder.versions.latest_of_each(scope.principal, scope.namespace):
                    found.add(stored.item.file_name)
            return sorted(found)

        return await self._run(keys)

    async def delete_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> None:
        """Delete every version of ``filename`` (nothing happens if it is absent).

        Raises docbinder's ``AccessDenied`` if the ADK user may read but not
        delete it (then nothing is deleted).
        """
        scope = self._scope(app_name, user_id, filename, session_id)
        await self._run(
            lambda: self.binder.versions.delete(scope.principal, scope.name, scope.namespace)
        )

    async def list_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[int]:
        """The version numbers of ``filename``, ascending; ``[]`` if absent."""
        scope = self._scope(app_name, user_id, filename, session_id)
        stored = await self._run(
            lambda: self.binder.versions.list(scope.principal, scope.name, scope.namespace)
        )
        return [s.number for s in stored]

    async def list_artifact_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[ArtifactVersion]:
        """``ArtifactVersion`` of every version, ascending; ``[]`` if absent."""
        scope = self._scope(app_name, user_id, filename, session_id)
        stored = await self._run(
            lambda: self.binder.versions.list(scope.principal, scope.name, scope.namespace)
        )
        return [self._artifact_version(app_name, user_id, scope, s) for s in stored]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        """``ArtifactVersion`` of the latest (or the given) version; ``None`` if absent.

        ``canonical_uri`` is the version's ``artifact://`` URI (ADK's
        ``get_artifact_uri``), which a ``file_data`` part may reference;
        ``create_time`` is in Unix seconds.
        """
        scope = self._scope(app_name, user_id, filename, session_id)
        stored = await self._run(lambda: self._find(scope, version))
        return None if stored is None else self._artifact_version(app_name, user_id, scope, stored)

    # -- docbinder side (blocking, on worker threads) ------------------------------------

    async def _run(self, call: Callable[[], T]) -> T:
        """Run ``call`` on a worker thread; a cancelled caller still waits for it to finish.

        ADK cancels with ``Task.cancel()``, which anyio's thread call does not
        hold back (it would return at once and leave the save running). The
        call is therefore shielded, and on cancellation awaited to its end
        before ``CancelledError`` propagates: the caller then sees a save
        that is complete, never one still in flight.
        """
        inner = asyncio.ensure_future(anyio.to_thread.run_sync(call, limiter=self._limiter))
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            while not inner.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([inner])
            if not inner.cancelled() and inner.exception() is not None:
                log.warning("a cancelled artifact call failed as well: %s", inner.exception())
            raise

    def _save_sync(
        self,
        scope: _Scope,
        filename: str,
        data: bytes,
        mime_type: str,
        metadata: dict[str, Any],
        host: dict[str, Any],
        provenance: Provenance | None = None,
    ) -> int:
        attach: Callable[[UnitOfWork, StoredVersion], None] | None = None
        if not scope.user_scoped and self.attach_to_session:
            try:
                workflow = self._session_workflow(scope)
            except DocbinderError as exc:  # the save goes on without the ChatDocument (C3)
                log.warning(
                    "artifact %r will not be attached: no workflow for session %r (%s)",
                    filename,
                    scope.session_id,
                    exc,
                )
            else:
                attach = self._attacher(RunContext(scope.principal, workflow), filename)
        try:
            stored, _ = self.binder.versions.save_with(
                scope.principal,
                scope.name,
                data,
                namespace=scope.namespace,
                file_name=filename,
                mime_type=mime_type,
                user_metadata=metadata,
                host_data=host,
                then=attach,
                provenance=provenance,
            )
        except InvalidInput as exc:
            raise InputValidationError(str(exc)) from exc
        return stored.number

    def _attacher(
        self, context: RunContext, filename: str
    ) -> Callable[[UnitOfWork, StoredVersion], None]:
        attach_file = self.binder.attach_file

        def attach(uow: UnitOfWork, stored: StoredVersion) -> None:
            label = f"artifact:{filename[:400]}#v{stored.number}"
            try:
                attach_file.prepare(context, label=label).add(uow, [stored.item])
            except Exception as exc:  # the save goes on without the ChatDocument
                log.warning(
                    "artifact %r version %d saved but not attached to workflow %s: %s",
                    filename,
                    stored.number,
                    context.workflow.id if context.workflow else None,
                    exc,
                )

        return attach

    def _session_workflow(self, scope: _Scope) -> ChatWorkflow:
        """The workflow of the ADK session (created on first use); cached per service."""
        payload = json.dumps(
            [
                self.mandate_id,
                scope.principal.feature_instance_id,
                scope.principal.user_id,
                scope.session_id,
            ],
            ensure_ascii=False,
        )
        workflow_id = "adk-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:48]
        with self._workflows_lock:
            cached = self._workflows.get(workflow_id)
            if cached is not None:
                self._workflows.move_to_end(workflow_id)
                return cached
        binder = self.binder
        try:
            workflow = binder.get_workflow(scope.principal, workflow_id)
        except WorkflowNotFound:
            try:
                workflow = binder.create_workflow(scope.principal, workflow_id)
            except Conflict:  # created by a concurrent save meanwhile
                workflow = binder.get_workflow(scope.principal, workflow_id)
        with self._workflows_lock:
            self._workflows[workflow_id] = workflow
            while len(self._workflows) > WORKFLOW_CACHE_SIZE:
                self._workflows.popitem(last=False)
        return workflow

    def _find(self, scope: _Scope, version: int | None) -> StoredVersion | None:
        versions = self.binder.versions
        if version is None:
            return versions.latest(scope.principal, scope.name, scope.namespace)
        return versions.get(scope.principal, scope.name, version, scope.namespace)

    def _load_sync(
        self,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None,
        version: int | None,
        depth: int,
    ) -> types.Part | None:
        scope = self._scope(app_name, user_id, filename, session_id)
        stored = self._find(scope, version)
        if stored is None:
            return None
        data = self.binder.versions.read(scope.principal, stored)
        host = stored.version.host_data
        kind = host.get("part")
        if kind == _PART_TEXT:
            return types.Part(text=data.decode("utf-8"))
        if kind == _PART_FILE:
            uri = data.decode("utf-8")
            if uri.startswith("artifact://"):
                target = artifact_util.resolve_artifact_reference(
                    file_uri=uri,
                    app_name=app_name,
                    user_id=user_id,
                    session_id=session_id,
                    remaining_depth=depth,
                )
                return self._load_sync(
                    target.app_name,
                    target.user_id,
                    target.filename,
                    target.session_id,
                    target.version,
                    depth - 1,
                )
            return types.Part(
                file_data=types.FileData(file_uri=uri, mime_type=host.get("mime_type"))
            )
        part = types.Part(
            inline_data=types.Blob(
                mime_type=host.get("mime_type", stored.item.mime_type),
                data=data,
                display_name=host.get("display_name"),
            )
        )
        if artifact_util._is_rewind_tombstone(part):
            return None
        return part

    # -- mapping -------------------------------------------------------------------------

    def _scope(self, app_name: str, user_id: str, filename: str, session_id: str | None) -> _Scope:
        """Validate the ADK coordinates (ADK's helpers first) and map them to docbinder's."""
        check_adk_id(app_name, "app_name")
        check_adk_id(user_id, "user_id")
        if session_id is not None:
            # Checked even for a user-scoped name: one answer for a padded id everywhere.
            check_adk_id(session_id, "session_id")
        if not isinstance(filename, str) or not filename:
            raise InputValidationError("filename must not be empty.")
        user_scoped = session_id is None or filename.startswith(USER_PREFIX)
        name = filename[len(USER_PREFIX) :] if filename.startswith(USER_PREFIX) else filename
        artifact_util.validate_path_segment(name, "filename")
        try:
            check_file_name(name)
        except InvalidInput as exc:
            raise InputValidationError(str(exc)) from exc
        principal = Principal(user_id, self.mandate_id, app_name, self.roles)
        if user_scoped:
            return _Scope(principal, name, json.dumps(["adk-user", user_id]), None)
        assert session_id is not None
        namespace = json.dumps(["adk-session", user_id, session_id], ensure_ascii=False)
        return _Scope(principal, name, namespace, session_id)

    def _encode(
        self, part: types.Part, app_name: str, user_id: str, session_id: str | None
    ) -> tuple[bytes, str, dict[str, Any]]:
        """``(bytes, MIME type, host data)`` to store for ``part``; ``InputValidationError`` if unsupported."""
        if part.inline_data is not None:
            if part.inline_data.data is None:
                raise InputValidationError("Artifact inline_data must contain data.")
            mime = part.inline_data.mime_type or "application/octet-stream"
            # The declared type is kept as given (the FileItem's may be the sniffed one).
            host: dict[str, Any] = {"part": _PART_INLINE, "mime_type": mime}
            if part.inline_data.display_name is not None:
                host["display_name"] = part.inline_data.display_name
            return part.inline_data.data, mime, host
        if part.text is not None:
            host = {"part": _PART_TEXT, "mime_type": "text/plain"}
            return part.text.encode("utf-8"), "text/plain", host
        file_data = part.file_data
        if file_data is not None and file_data.file_uri:
            if artifact_util.is_artifact_ref(part):
                parsed = artifact_util.parse_artifact_uri(file_data.file_uri)
                if parsed is None:
                    raise InputValidationError(
                        f"Invalid artifact reference URI: {file_data.file_uri}"
                    )
                artifact_util.validate_artifact_reference_scope(
                    app_name=app_name, user_id=user_id, session_id=session_id, parsed_uri=parsed
                )
            host = {"part": _PART_FILE, "mime_type": file_data.mime_type}
            return file_data.file_uri.encode("utf-8"), REFERENCE_MIME, host
        raise InputValidationError("Not supported artifact type.")

    def _artifact_version(
        self, app_name: str, user_id: str, scope: _Scope, stored: StoredVersion
    ) -> ArtifactVersion:
        host = stored.version.host_data
        # A file_data part reports the MIME type it was saved with (None for an
        # artifact:// reference, whose type is known only once it is loaded).
        mime = host.get("mime_type")
        return ArtifactVersion(
            version=stored.number,
            canonical_uri=artifact_util.get_artifact_uri(
                app_name=app_name,
                user_id=user_id,
                filename=stored.item.file_name,
                version=stored.number,
                session_id=scope.session_id,
            ),
            custom_metadata=dict(stored.version.user_metadata),
            create_time=stored.item.created_at.timestamp(),
            mime_type=mime,
        )


class DocbinderProvenancePlugin(BasePlugin):
    """An ADK plugin that declares each tool call to docbinder, so saved artifacts carry provenance (B9).

    ``before_tool_callback`` binds a :class:`~docbinder.application.provenance.ToolCall`
    of the tool's name, ``tool_context.function_call_id``, the SHA-256 of
    ``tool_args`` and ``tool_context.invocation_id`` (the run) for the tool's
    own task; ADK runs the tool in that task, so the artifacts it saves
    through :class:`DocbinderArtifactService` record it. The call is unbound
    after the tool, also when it failed. ADK gives a tool no model name:
    ``model`` stays ``None``. Changes nothing ADK does (every callback returns
    ``None``).
    """

    def __init__(self, name: str = "docbinder_provenance") -> None:
        super().__init__(name=name)

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        bind_tool_call(
            ToolCall.of(
                getattr(tool, "name", None) or type(tool).__name__,
                tool_args,
                tool_call_id=getattr(tool_context, "function_call_id", None),
                run_id=getattr(tool_context, "invocation_id", None),
            )
        )
        return None

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> dict[str, Any] | None:
        bind_tool_call(None)
        return None

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> dict[str, Any] | None:
        bind_tool_call(None)
        return None


CODE_OUTPUT_MEMORY = 1024
"""Output files an :class:`OutputDirCodeExecutor` remembers until ADK saves them as artifacts."""


class _CodeOutputs:
    """Provenance of files a code executor returned, until ADK saves them through the service.

    ADK runs ``execute_code`` on a worker thread and saves its output files
    afterwards in the agent's task, so no context variable reaches the save;
    the executor notes each file (app, user, session, name and SHA-256 of the
    bytes) and the save takes it. Only a save of exactly those bytes under
    that name gets it; the oldest notes are dropped past :data:`CODE_OUTPUT_MEMORY`.
    """

    def __init__(self) -> None:
        self._notes: OrderedDict[tuple[str, str, str | None, str, str], Provenance] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(
        app: str, user: str, session: str | None, name: str, data: bytes
    ) -> tuple[str, str, str | None, str, str]:
        return (app, user, session, name, hashlib.sha256(data).hexdigest())

    def note(
        self, app: str, user: str, session: str | None, name: str, data: bytes, p: Provenance
    ) -> None:
        with self._lock:
            self._notes[self._key(app, user, session, name, data)] = p
            while len(self._notes) > CODE_OUTPUT_MEMORY:
                self._notes.popitem(last=False)

    def take(
        self, app: str, user: str, session: str | None, name: str, data: bytes
    ) -> Provenance | None:
        if not self._notes:
            return None
        with self._lock:
            return self._notes.pop(self._key(app, user, session, name, data), None)


_CODE_OUTPUTS = _CodeOutputs()


class OutputDirCodeExecutor(UnsafeLocalCodeExecutor):
    """ADK's ``UnsafeLocalCodeExecutor`` whose new or changed files become the result's ``output_files``.

    ``output_dir`` (required) is the directory the model's code runs in (its
    working directory: the code is started with an ``os.chdir`` into it, one
    line before the model's code, so a traceback's line numbers are one
    higher than the model's). After each execution every regular file under
    it that is new or changed (size or modification time, compared with a
    snapshot taken before) is returned as an ADK ``File`` named by its path
    relative to ``output_dir`` with ``/`` replaced by ``_`` (ADK artifact
    names are one path segment). ADK saves each through its artifact service;
    with :class:`DocbinderArtifactService` the FileItem records
    ``tool`` ``code_execution``, the invocation as the run, ``sandbox_id``
    (default ``adk:<output_dir>``) and the file's path as ``source_path``.
    Links, special files, names with control characters and files larger
    than ``max_file_size`` bytes are left out (logged), as by
    :class:`~docbinder.harvest.sources.LocalOutputDir`. Like its base class it
    runs code unsandboxed on this machine: for trusted code and tests only.
    """

    output_dir: str
    sandbox_id: str = ""
    max_file_size: int = 64 << 20

    def execute_code(
        self, invocation_context: Any, code_execution_input: CodeExecutionInput
    ) -> CodeExecutionResult:
        root = os.path.abspath(self.output_dir)
        os.makedirs(root, exist_ok=True)
        source = LocalOutputDir(root, sandbox_id=self.sandbox_id or f"adk:{root}"[:255])
        before = _snapshot(source)
        prefix = f"import os as _docbinder_os; _docbinder_os.chdir({root!r}); del _docbinder_os\n"
        result: CodeExecutionResult = super().execute_code(
            invocation_context,
            dataclasses.replace(code_execution_input, code=prefix + code_execution_input.code),
        )
        files = list(result.output_files)
        session = getattr(getattr(invocation_context, "session", None), "id", None)
        app = getattr(invocation_context, "app_name", "")
        user = getattr(invocation_context, "user_id", "")
        for entry in source.outputs():
            if not isinstance(entry, OutputFile):
                log.warning("code output %s left out: %s", entry.path, entry.reason)
                continue
            mark = _mark(root, entry.path)
            if mark is None or before.get(entry.path) == mark:
                continue
            data = _read(entry, self.max_file_size)
            if data is None:
                continue
            name = os.path.relpath(entry.path, root).replace(os.sep, "_")
            mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
            files.append(File(name=name, content=data, mime_type=mime))
            _CODE_OUTPUTS.note(
                app,
                user,
                session,
                name,
                data,
                Provenance(
                    tool=HARVEST_TOOL,
                    run_id=getattr(invocation_context, "invocation_id", None),
                    sandbox_id=source.sandbox_id,
                    source_path=entry.path,
                ),
            )
        return dataclasses.replace(result, output_files=files)


def _mark(root: str, path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _snapshot(source: LocalOutputDir) -> dict[str, tuple[int, int] | None]:
    root = os.fspath(source.root)
    return {
        entry.path: _mark(root, entry.path)
        for entry in source.outputs()
        if isinstance(entry, OutputFile)
    }


def _read(entry: OutputFile, limit: int) -> bytes | None:
    if entry.size is not None and entry.size > limit:
        log.warning("code output %s left out: %d bytes, over %d", entry.path, entry.size, limit)
        return None
    try:
        with entry.open() as stream:
            data = stream.read(limit + 1)
    except (OSError, OutputUnreadable) as exc:
        log.warning("code output %s left out: %s", entry.path, exc)
        return None
    if len(data) > limit:
        log.warning("code output %s left out: over %d bytes", entry.path, limit)
        return None
    return data
