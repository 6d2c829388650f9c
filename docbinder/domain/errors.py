"""The one error tree of docbinder.

Every error raised by docbinder derives from :class:`DocbinderError`. Where a
caller would naturally catch a builtin, the error also derives from that builtin
(for example :class:`FileItemNotFound` is a :class:`FileNotFoundError`), so code
that knows nothing about docbinder still handles it sensibly. The shape follows
PEP 249's idea of one root with a few well-named branches.

Adapters translate driver errors (SQLAlchemy, botocore, ``OSError``) into these
classes at their boundary; nothing above the adapters sees a driver error.
"""

from __future__ import annotations

from datetime import datetime


class DocbinderError(Exception):
    """Root of every error docbinder raises."""


class InvalidInput(DocbinderError, ValueError):
    """A value given to a public entry point is malformed (bad name, bad id, bad URL)."""


class AmbiguousName(InvalidInput):
    """A name matched no file exactly and several that look the same (Unicode normalisation).

    ``name`` is the name asked for; ``candidates`` the stored spellings that are
    canonically equivalent to it (Unicode UAX #15), in the order found. The
    message shows each with its code points escaped, so the difference is visible.
    """

    def __init__(self, name: str, candidates: tuple[str, ...], where: str) -> None:
        shown = ", ".join(ascii(c) for c in candidates)
        super().__init__(
            f"{name!a} matches no name in {where} exactly and {len(candidates)} that "
            f"look the same: {shown}; give the exact spelling"
        )
        self.name = name
        self.candidates = candidates


class ConfigurationError(DocbinderError, ValueError):
    """Configuration is missing or contradictory; the message names the setting."""


def install_line(extra: str) -> str:
    """The command that installs ``extra``: ``pip install -e '.[s3]'`` in a clone of docbinder.

    docbinder is installed from a clone of its repository; no package of that name is
    published under this project's control, so a line naming one could install a
    stranger's code (docs/adr/0069-install-lines-from-a-clone-and-generated-references.md).
    """
    return f"pip install -e '.[{extra}]'"


class MissingExtra(ConfigurationError, ImportError):
    """An optional backend was selected but its pip extra is not installed.

    The message names the extra and the line that installs it from a clone:
    ``... install it from a clone of docbinder with pip install -e '.[s3]'``.
    """

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the optional dependency {module!r}: "
            f"install it from a clone of docbinder with {install_line(extra)}"
        )
        self.feature = feature
        self.extra = extra
        self.module = module


class AccessDenied(DocbinderError, PermissionError):
    """The principal may not perform the action on the resource."""


class NotFound(DocbinderError, LookupError):
    """A requested entity does not exist or is not visible to the caller.

    Absence and invisibility give the same error and the same message, so an
    error never reveals that an id exists (no existence oracle).
    """


class FileItemNotFound(NotFound, FileNotFoundError):
    """No readable FileItem with that id."""


class FileExpired(FileItemNotFound):
    """The FileItem passed its retention period (B5): its content is no longer served.

    It resolves as ``expired``; ``gc`` removes it after its grace period.
    ``expired_at`` is when its period ended (aware UTC). A subclass of
    :class:`FileItemNotFound`: a caller that handles a missing file handles
    this one; the HTTP layer answers 410.
    """

    def __init__(self, message: str, *, expired_at: datetime) -> None:
        super().__init__(message)
        self.expired_at = expired_at


class WorkflowNotFound(NotFound):
    """No readable workflow with that id."""


class BlobMissing(DocbinderError, FileNotFoundError):
    """Metadata names a blob that the blob store does not hold."""


class NoActiveWorkflow(DocbinderError, RuntimeError):
    """An operation needs a bound workflow and the run context has none (SPEC C4)."""


class Conflict(DocbinderError):
    """A uniqueness rule of the metadata store was violated."""


class DuplicateFileItem(Conflict):
    """Another FileItem already holds the same duplicate key (SPEC C2)."""


class DuplicateLabel(Conflict):
    """The ``documents_label`` is already used in that workflow (SPEC C3)."""


class FileStillReferenced(Conflict):
    """A FileItem that ChatDocuments refer to was to be deleted without ``force``.

    ``references`` is the number of ChatDocuments (in any workflow) that point at it.
    """

    def __init__(self, file_id: str, references: int) -> None:
        super().__init__(
            f"file {file_id} is referred to by {references} document(s) in workflows; "
            "deleting it makes them resolve as file_missing (delete it with force to do so anyway: "
            "force=True in Python, --force on the command line)"
        )
        self.file_id = file_id
        self.references = references


class FileUnderLegalHold(Conflict):
    """A FileItem a legal hold names (itself, or a workflow showing it) was to be deleted or changed (B5).

    Deleting it (``files rm``, a version delete) or replacing its content
    (``update_file`` replace or append) is refused.

    ``force`` does not override it: the hold is lifted first (``docbinder
    retention release``), by the mandate that placed it (ADR 0142).
    """

    def __init__(
        self, file_id: str, kind: str, target_id: str, reason: str, mandate_id: str
    ) -> None:
        what = "it" if kind == "file" else f"workflow {target_id}, which shows it,"
        why = f" ({reason!r})" if reason else ""
        super().__init__(
            f"file {file_id} is under a legal hold{why}: {what} is held; nothing was deleted "
            f"or changed. Lift the hold first: docbinder retention release --{kind} "
            f"{target_id} --mandate {mandate_id}"
        )
        self.file_id = file_id
        self.kind = kind
        self.target_id = target_id


class UnsafeOperation(DocbinderError, RuntimeError):
    """A destructive operation was refused because its input looks like a configuration mistake.

    The message names the likely misconfiguration (which setting to check);
    ``force`` overrides it.
    """


class StoreMoved(UnsafeOperation):
    """The blob store is not where this database's files were stored: a copy, a backup or a move.

    Raised by writes (before anything is written) and by ``gc --apply``
    (before anything is marked or removed) when the connected blob store's
    location differs from the one the metadata database recorded for its
    identity (ADR 0030). ``force`` never overrides it; ``docbinder store
    adopt`` accepts a store moved on purpose.
    """


class DatabaseCloned(UnsafeOperation):
    """Another metadata database holds this database's identity in the blob store: one of them is a clone.

    A volume clone or disk image of a database keeps everything its identity
    is made of (the id stored inside it, and for SQLite the file's device and
    inode), so the blob store arbitrates: it keeps a claim record per
    database id, and each destructive operation (``files rm``, a content
    update, a version delete, ``gc --apply``) first checks that the store's
    claim is one this database wrote, then writes a new one (ADR 0075).
    Raised, before anything is deleted or changed, when the claim was
    written by another database with the same id. ``force`` never overrides
    it; ``docbinder store reidentify`` on the copy gives it an id of its own.
    ``database_id`` is the shared id.
    """

    def __init__(self, message: str, database_id: str) -> None:
        super().__init__(message)
        self.database_id = database_id


class CountersWouldGoBack(Conflict):
    """A change of a workflow's round/task/action would put them behind where they are.

    ``current`` and ``requested`` are the stored and the refused
    :class:`~docbinder.domain.counters.WorkflowCounters`; nothing was changed
    (ADR 0026). Usually another run of the workflow advanced it first.
    """

    def __init__(self, current: object, requested: object) -> None:
        super().__init__(
            f"the workflow is at {current}; {requested} would go back, nothing was changed"
        )
        self.current = current
        self.requested = requested


class VersionTaken(Conflict):
    """Another save took that version number of the file name first; the save retries (B1)."""


class StorageError(DocbinderError, OSError):
    """A storage backend (database or blob store) failed; the cause is chained."""


class AuditEventUnreadable(StorageError):
    """A stored audit event's row cannot be read back as an event (a value no event has).

    ``seq`` is the row's place in the chain as far as it can be read (``None``:
    not even that); ``audit verify`` reports the row as a changed event (B11).
    """

    def __init__(self, message: str, *, seq: int | None) -> None:
        super().__init__(message)
        self.seq = seq


class TransactionAborted(StorageError):
    """The database aborted the transaction to end a deadlock or a serialization failure.

    Nothing of the unit of work was committed, and running the whole unit
    again may succeed: PostgreSQL SQLSTATE ``40P01`` (deadlock detected) and
    ``40001`` (serialization failure), MariaDB/MySQL error 1213 (deadlock
    found when trying to get lock; the server rolled the transaction back).
    The use cases that write run their units again a bounded number of
    times (:data:`~docbinder.application.steps.transient.TRANSIENT_ATTEMPTS`)
    before this reaches the caller. No other error is retried.
    """


class SizeLimitExceeded(DocbinderError, ValueError):
    """A stream was longer than the configured maximum size in bytes; nothing was kept."""

    def __init__(self, limit: int, name: str | None = None) -> None:
        what = f"{name} exceeds" if name else "input exceeds"
        super().__init__(f"{what} the size limit of {limit} bytes; nothing was stored")
        self.limit = limit
        self.name = name


class QuotaExceeded(DocbinderError, ValueError):
    """A store or content change would pass a quota of its mandate or feature instance (B12).

    Nothing was kept. The message names the quota, the limit and the usage in
    words a person or a model can act on; the HTTP layer answers it with 413
    (one file too large) or 409 (the scope is full). ``quota`` is
    ``"max_bytes"``, ``"max_files"`` or ``"max_file_size"``; ``limit`` and
    ``used`` are in bytes (files for ``max_files``).
    """

    def __init__(self, message: str, *, quota: str, limit: int, used: int) -> None:
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.used = used

    @property
    def http_status(self) -> int:
        """413 when one file is larger than ``max_file_size``, else 409."""
        return 413 if self.quota == "max_file_size" else 409


class BinderClosed(DocbinderError, RuntimeError):
    """The binder (or the store behind it) was closed; build a new one to go on.

    Raised by :class:`~docbinder.application.binder.DocBinder` and its runs after
    :meth:`~docbinder.application.binder.DocBinder.close`, and by a closed SQL
    metadata store for every new unit of work. Closing releases connection
    pools and worker threads; nothing stored is affected.
    """


class ProviderUploadForbidden(AccessDenied):
    """A tenant's setting forbids handing its files to a model provider's Files API (B22).

    ``setting`` names the setting that refused (``provider_uploads_denied``) and
    ``scope`` the tenant (``mandate`` or ``mandate/feature-instance``) it lists.
    """

    def __init__(self, message: str, *, setting: str, scope: str) -> None:
        super().__init__(message)
        self.setting = setting
        self.scope = scope


class ProviderError(DocbinderError, OSError):
    """A model provider's Files API failed or answered what its documentation does not describe (B22).

    ``provider`` is ``openai``, ``anthropic`` or ``gemini``; ``status`` the HTTP
    status when the provider answered one (``None`` for a connection failure).
    """

    def __init__(self, message: str, *, provider: str, status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
